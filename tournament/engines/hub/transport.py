"""The process transport: an engine program behind start, alive, write, read and kill.

Its output lines are read by a thread into a queue, so a read can time out while
the program thinks or hangs; the last lines of its standard error are kept for
the crash message. The client (:mod:`tournament.engines.hub.client`) knows
nothing of pipes, and a test can give it any object with these methods.

>>> import sys
>>> process = EngineProcess([sys.executable, "-c", "print(input().upper())"])
>>> process.write("pong")
>>> process.read(timeout=30), process.read(timeout=30)
('PONG', None)
>>> process.exit_code(timeout=30)
0
"""

from __future__ import annotations

import os
import queue
import shlex
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Sequence

from tournament.engines.base import EngineError

__all__ = ["EngineProcess"]

STDERR_LINES = 20
"""Lines of the program's standard error kept for the crash message."""


class EngineProcess:
    """A program started in its own session with its output lines in a queue.

    ``read`` raises :class:`queue.Empty` after ``timeout`` seconds and returns None at
    the end of the output; ``kill`` ends the program and everything it started.
    """

    def __init__(self, command: Sequence[str], cwd: str | None = None) -> None:
        try:
            self.popen = subprocess.Popen(
                list(command), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, bufsize=1, start_new_session=True)
        except OSError as error:
            raise EngineError(f"cannot start engine {shlex.join(command)!r}: {error}") from error
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_LINES)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._pump_stderr, daemon=True)
        self._stderr_reader.start()

    def _pump_stdout(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(line.rstrip("\r\n"))
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            self.stderr_tail.append(line.rstrip("\r\n"))

    def alive(self) -> bool:
        """Whether the program is running."""
        return self.popen.poll() is None

    def write(self, line: str) -> None:
        """Send one line (OSError or ValueError when the program is gone)."""
        assert self.popen.stdin is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    def read(self, timeout: float | None) -> str | None:
        """The next line, None at the end of the output; queue.Empty after ``timeout`` seconds."""
        return self.lines.get(timeout=timeout)

    def exit_code(self, timeout: float) -> int | None:
        """The exit code once the program has ended within ``timeout`` seconds (None: still running);
        its last words on standard error are read in by then."""
        try:
            code = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._stderr_reader.join(timeout=timeout)
        return code

    def quit(self, line: str, *, grace: float) -> None:
        """Send ``line`` (the protocol's quit) and give the program ``grace`` seconds to end, then kill it."""
        if self.alive():
            try:
                self.write(line)
                self.popen.wait(timeout=grace)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                pass
        self.kill()

    def kill(self) -> None:
        """End the program and its process group at once, and reap it."""
        if self.alive():
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.popen.kill()
        self.popen.wait()
