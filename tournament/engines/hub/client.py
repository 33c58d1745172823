"""The Hub client: an external program speaking Hub, as an Engine to the runner.

>>> import sys
>>> from egtb import Board
>>> from tournament.engines.base import GameState, Limit
>>> with HubEngine([sys.executable, "-m", "tournament.cli", "hub-engine", "random"]) as engine:
...     result = engine.play(GameState.from_board(Board()), Limit(depth=2))
...     engine.reported_name
'random'
>>> result.move in Board().legal_moves()
True
"""

from __future__ import annotations

import logging
import queue
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tournament.engines.base import (
    Engine, EngineError, EngineTimeoutError, GameState, IllegalEngineMoveError, Limit, PlayResult,
)
from tournament.engines.hub.protocol import (
    MOVE_RULE_PARAM, level_line, parse_fields, parse_hub_move, parse_score, position_line, quote,
)
from tournament.engines.hub.transport import EngineProcess

if TYPE_CHECKING:  # the board loads the move generator's numba kernels; a game's board is made by its GameState
    from egtb.rules.board import Board

__all__ = ["HANDSHAKE_TIMEOUT", "HubEngine", "QUIT_GRACE", "TIME_MARGIN"]

logger = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 30.0
"""Seconds allowed for the "hub" ... "wait" and "init" ... "ready" handshakes: generous, as a
program may load an opening book or tables first, and a busy machine starts processes slowly."""
TIME_MARGIN = 1.0
"""Seconds an engine may exceed its move time before it is declared lost on time."""
QUIT_GRACE = 1.0
"""Seconds "quit" gets before the process is killed."""


class HubEngine(Engine):
    """An external engine speaking the Hub protocol over standard input and output.

    The process starts at once (handshake: ``hub`` ... ``wait``, ``init`` ...
    ``ready``) and again at the next :meth:`new_game` if it has died. Faults
    raise :class:`EngineError` (crash, garbage; the message quotes what the engine
    said), :class:`IllegalEngineMoveError` (a well-formed move that is not legal)
    or :class:`EngineTimeoutError` (no answer within the move time or the clock
    left, plus ``time_margin``; the process is then killed).

    ``name`` is our label (default: the name the program reports, else the
    program's file name); :attr:`reported_name` is the name the program gave in
    its ``id`` line. ``on_warning`` receives what the program reported with
    ``warning`` or ``error`` lines outside a search (such as a refused option).
    ``start`` makes the process (tests give a fake; default :class:`EngineProcess`).
    """

    persistent = True

    def __init__(self, command: Sequence[str] | str, *, name: str | None = None, cwd: str | Path | None = None,
                 options: dict[str, str] | None = None, handshake_timeout: float = HANDSHAKE_TIMEOUT,
                 time_margin: float = TIME_MARGIN, on_warning: Callable[[str], None] | None = None,
                 start: Callable[[Sequence[str], str | None], EngineProcess] = EngineProcess) -> None:
        self.command = shlex.split(command) if isinstance(command, str) else list(command)
        self.cwd = None if cwd is None else str(cwd)
        self.options = dict(options or {})
        self.handshake_timeout = handshake_timeout
        self.time_margin = time_margin
        self.on_warning = on_warning
        self.id: dict[str, str] = {}
        self.params: dict[str, dict[str, str]] = {}
        self.warnings: list[str] = []
        """What the program reported in ``warning`` / ``error`` lines outside a search."""
        self._start_process = start
        self._process: EngineProcess | None = None
        self._label = name
        self.name = name or Path(self.command[0]).name
        self._start()

    @property
    def reported_name(self) -> str:
        """The name the program gave in its ``id`` line ("" when it gave none)."""
        return self.id.get("name", "")

    # process life

    def _start(self) -> None:
        self._process = self._start_process(self.command, self.cwd)
        try:
            self._handshake()
        except BaseException:
            self._stop_process(graceful=False)  # a program that failed its handshake is not kept
            raise

    def _handshake(self) -> None:
        """``hub`` ... ``wait`` (who it is, its params), the options, then ``init`` ... ``ready``."""
        deadline = time.monotonic() + self.handshake_timeout
        self._send("hub")
        while True:
            command, fields = self._receive(deadline, "the hub handshake")
            if command == "wait":
                break
            if command == "id":
                self.id.update(fields)
            elif command == "param" and "name" in fields:
                self.params[fields["name"]] = fields
        if self._label is None:
            self.name = self.reported_name or self.name
        for key, value in self.options.items():
            self._send(f"set-param name={key} value={quote(value)}")
        self._send("init")
        while True:
            command, fields = self._receive(deadline, "init")
            if command == "ready":
                break
            if command in ("warning", "error"):
                self._warn(fields.get("message", " ".join(f"{k}={v}" for k, v in fields.items())))

    def _warn(self, message: str) -> None:
        """Keep and pass on what the program warned about."""
        text = f"{self.name}: {message}"
        self.warnings.append(text)
        logger.warning("%s", text)
        if self.on_warning is not None:
            self.on_warning(text)

    def alive(self) -> bool:
        """Whether the process is running."""
        return self._process is not None and self._process.alive()

    def new_game(self) -> None:
        if not self.alive():
            self._stop_process()
            self._start()
        self._send("new-game")

    def close(self) -> None:
        self._stop_process()

    def kill(self) -> None:
        """End the program at once; safe from another thread while :meth:`play` waits for its move.

        That ``play`` raises :class:`EngineError` (the program ended); the next :meth:`new_game`
        starts the program again. (Hub's own ``stop`` asks for the best move so far instead, which
        an engine that searches without reading its input cannot give.)
        """
        process = self._process
        if process is not None:
            process.kill()

    def _stop_process(self, *, graceful: bool = True) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if graceful:
            process.quit("quit", grace=QUIT_GRACE)
        else:
            process.kill()

    # messages

    def _send(self, line: str) -> None:
        if self._process is None:
            raise EngineError(f"engine {self.name!r} is not running")
        logger.debug("%s << %s", self.name, line)
        try:
            self._process.write(line)
        except (BrokenPipeError, OSError, ValueError) as error:
            raise EngineError(f"engine {self.name!r} crashed{self._crash_detail()}") from error

    def _receive(self, deadline: float | None, waiting_for: str) -> tuple[str, dict[str, str]]:
        """The next non-empty line as (command, fields); raises on end of output or deadline."""
        process = self._process  # this one's output, even if kill() or close() ends it meanwhile
        if process is None:
            raise EngineError(f"engine {self.name!r} is not running")
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                line = process.read(timeout)
            except queue.Empty:
                self._stop_process(graceful=False)  # its state is unknown: no quit, just kill
                raise EngineTimeoutError(f"engine {self.name!r} did not answer in time during {waiting_for}") from None
            if line is None:
                raise EngineError(f"engine {self.name!r} crashed during {waiting_for}{self._crash_detail()}")
            logger.debug("%s >> %s", self.name, line)
            command, _, rest = line.strip().partition(" ")
            if command:
                return command, parse_fields(rest)

    def _crash_detail(self) -> str:
        process = self._process
        if process is None:
            return ""
        code = process.exit_code(timeout=1.0)
        tail = " | ".join(list(process.stderr_tail)[-3:])
        return f" (exit code {code}{'; stderr: ' + tail if tail else ''})"

    # playing

    def play(self, state: GameState, limit: Limit) -> PlayResult:
        if not self.alive():
            raise EngineError(f"engine {self.name!r} is not running{self._crash_detail()}")
        board = state.board()
        self._send(position_line(state, move_rule=MOVE_RULE_PARAM in self.params))
        level = level_line(limit)
        if level:
            self._send(level)
        self._send("go think")
        allowed = limit.time_allowed()  # the clock, not the share a move should aim at: the engine plans its time
        deadline = None if allowed is None else time.monotonic() + allowed + self.time_margin
        info: dict[str, str] = {}
        while True:
            command, fields = self._receive(deadline, "its move")
            if command == "done":
                return PlayResult(self._move_of(fields.get("move", ""), board), parse_score(info), info)
            if command == "info":
                info = fields
            elif command == "error":
                raise EngineError(f"engine {self.name!r} reported an error: {fields.get('message', fields)}")
            elif command == "warning":
                self._warn(fields.get("message", str(fields)))
            else:
                logger.warning("%s: unexpected line during search: %s %s", self.name, command, fields)

    def _move_of(self, text: str, board: Board):
        """The legal move the engine's ``done move=`` names; its fault otherwise."""
        try:
            return parse_hub_move(text, board)
        except ValueError as error:
            from egtb.rules.notation import is_move_text
            fault = IllegalEngineMoveError if is_move_text(text.strip().strip('"')) else EngineError
            raise fault(f"engine {self.name!r} answered 'done move={text}': {error}") from None
