"""The page's opponents: engines in a worker process, so the server never waits on a search.

The search kernels hold the GIL, so an engine thinking in the server's own
process would freeze every other request (undo, probing) until it answered.
:class:`EngineService` runs the engines in one worker process instead
(``python -m tournament.web.engines``, JSON lines on its stdin and stdout); the
server thread that asked waits on the pipe, and :meth:`EngineService.cancel`
ends a search at once by ending the worker (a fresh one is started).

Strengths: ``easy`` (a 2-ply search with noise, no tables: a beginner should
not play endgames perfectly), ``medium`` and ``hard`` (the searcher, with the
tables), ``perfect`` (table moves wherever the tables reach, ``hard`` elsewhere).

>>> sorted(STRENGTHS)
['easy', 'hard', 'medium', 'perfect']
>>> parse_strength("expert")
Traceback (most recent call last):
...
tournament.web.state.BadRequest: unknown strength 'expert'; choose from easy, medium, hard, perfect
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, TextIO

from tournament.web.state import BadRequest

__all__ = ["DEFAULT_SECONDS", "EngineCancelled", "EngineReply", "EngineService", "MAX_SECONDS",
           "STRENGTHS", "parse_seconds", "parse_strength", "serve_requests"]

#: Strength name -> whether its engine probes the endgame tables.
STRENGTHS: dict[str, bool] = {"easy": False, "medium": True, "hard": True, "perfect": True}
#: Strength name -> engine spec for tournament.engines.registry.make_engine.
DEFAULT_SPECS: dict[str, str] = {name: name for name in STRENGTHS}
#: Seconds per move when the page does not say.
DEFAULT_SECONDS = 1.0
#: Longest think the API accepts.
MAX_SECONDS = 60.0


class EngineCancelled(RuntimeError):
    """The search was cancelled (or its worker died) before it answered."""


@dataclass(frozen=True)
class EngineReply:
    """An engine's move and how it was found."""

    move: str
    """The move in PDN notation (full capture path)."""
    seconds: float
    """Wall time the worker spent, search included."""
    source: str
    """"search", "tables", "forced", "fallback"... as the engine reports it."""


def parse_strength(text: str | None) -> str:
    """A strength name (easy, medium, hard, perfect); BadRequest otherwise.

    >>> parse_strength("hard")
    'hard'
    """
    if text not in STRENGTHS:
        raise BadRequest(f"unknown strength {text!r}; choose from {', '.join(STRENGTHS)}")
    return str(text)


def parse_seconds(value: object) -> float:
    """Seconds per move: a positive number up to MAX_SECONDS (default DEFAULT_SECONDS).

    >>> parse_seconds(None), parse_seconds("0.5")
    (1.0, 0.5)
    """
    if value is None or value == "":
        return DEFAULT_SECONDS
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise BadRequest(f"time {value!r} is not a number of seconds") from None
    if not 0 < seconds <= MAX_SECONDS:
        raise BadRequest(f"time {seconds} must be more than 0 and at most {MAX_SECONDS:g} seconds")
    return seconds


class EngineService:
    """Engines of every strength in one worker process, asked one move at a time.

    The worker is ``python -m tournament.web.engines`` speaking JSON lines on
    its standard input and output. ``tables_dir`` is given to the strengths
    that probe tables. Thread-safe: :meth:`play` blocks its caller (run it in
    a thread pool), :meth:`cancel` may be called from any thread.
    """

    def __init__(self, *, tables_dir: str | os.PathLike | None = None,
                 specs: Mapping[str, str] | None = None) -> None:
        self.tables_dir = None if tables_dir is None else str(Path(tables_dir))
        self.specs = {**DEFAULT_SPECS, **(specs or {})}
        """Engine spec played at each strength (make_engine's syntax)."""
        self._request_lock = threading.Lock()  # one search at a time
        self._state_lock = threading.Lock()  # guards the fields below
        self._process: subprocess.Popen | None = None
        self._ready = False
        self._busy = False
        self._cancelled = False

    # --- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        """Start the worker now (it imports the engines in the background)."""
        with self._state_lock:
            if self._process is None or self._process.poll() is not None:
                command = [sys.executable, "-m", "tournament.web.engines", "--specs", json.dumps(self.specs)]
                if self.tables_dir is not None:
                    command += ["--tables", self.tables_dir]
                self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                 text=True, bufsize=1)
                self._ready = False

    def close(self) -> None:
        """End the worker."""
        with self._state_lock:
            process, self._process, self._ready = self._process, None, False
        if process is not None:
            _stop(process)

    def __enter__(self) -> "EngineService":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def busy(self) -> bool:
        """Whether a search is running now."""
        return self._busy

    # --- moves -------------------------------------------------------------

    def play(self, *, fen: str, moves: list[str], rule: str, strength: str,
             seconds: float = DEFAULT_SECONDS, counter: int = 0) -> EngineReply:
        """The engine's move after ``moves`` from ``fen`` (checked legal by the caller).

        ``counter`` is the move-rule counter at ``fen``: a perfect engine plays for
        the outcome under the rule from there.

        Raises EngineCancelled when :meth:`cancel` ended the search,
        RuntimeError when the engine failed or its worker died.
        """
        with self._request_lock:
            self.start()
            with self._state_lock:
                process = self._process
                self._busy, self._cancelled = True, False
            try:
                if not self._ready:
                    self._expect(process, "ready")
                    self._ready = True
                request = {"fen": fen, "moves": list(moves), "rule": rule, "counter": counter,
                           "strength": strength, "seconds": seconds}
                process.stdin.write(json.dumps(request) + "\n")
                process.stdin.flush()
                reply = json.loads(_read_line(process))
            except (EOFError, OSError, ValueError):
                self._forget(process)
                if self._cancelled:
                    raise EngineCancelled("the engine was stopped before it answered") from None
                raise RuntimeError(f"the engine worker ended without answering (exit status "
                                   f"{process.returncode}; its errors are on the server's stderr)") from None
            finally:
                self._busy = False
        if "error" in reply:
            raise RuntimeError(f"engine {strength}: {reply['error']}")
        return EngineReply(reply["move"], reply["seconds"], reply["source"])

    @staticmethod
    def _expect(process: subprocess.Popen, word: str) -> None:
        line = _read_line(process)
        if json.loads(line) != word:
            raise EOFError(f"engine worker said {line!r}, not {word!r}")

    def cancel(self) -> bool:
        """Stop the running search (ending its worker); return whether one was running."""
        with self._state_lock:
            if not self._busy or self._process is None:
                return False
            process = self._process
            self._cancelled = True
        process.kill()
        return True

    def _forget(self, process: subprocess.Popen) -> None:
        """Drop a dead or stopped worker and start a fresh one for the next move."""
        with self._state_lock:
            if self._process is process:
                self._process, self._ready = None, False
        _stop(process)
        self.start()


def _read_line(process: subprocess.Popen) -> str:
    """One line of the worker's output; EOFError when it has ended."""
    line = process.stdout.readline()
    if not line:
        raise EOFError("engine worker ended")
    return line


def _stop(process: subprocess.Popen) -> None:
    """Ask a worker to end, then make sure it does."""
    try:
        if process.poll() is None:
            process.stdin.write("null\n")
            process.stdin.flush()
            process.wait(timeout=2)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        process.kill()
        process.wait()
    for stream in (process.stdin, process.stdout):
        try:
            stream.close()
        except OSError:
            pass


def serve_requests(source: TextIO, sink: TextIO, *, tables_dir: str | None,
                   specs: Mapping[str, str] | None = None) -> None:
    """The worker's loop: read JSON requests from ``source``, write JSON replies to ``sink``.

    A request is ``{"fen", "moves", "rule", "counter", "strength", "seconds"}``; the reply
    ``{"move", "seconds", "source"}`` or ``{"error"}``; ``null`` or the end of
    the input stops the loop. Says ``"ready"`` first, once the engines load.
    ``specs`` maps a strength to the engine spec played (default: its name).
    """
    specs = {**DEFAULT_SPECS, **(specs or {})}
    from egtb.rules.board import Move
    from tournament.engines.base import GameState, Limit
    from tournament.engines.registry import make_engine

    engines: dict[str, object] = {}

    def engine_for(strength: str):
        if strength not in engines:
            engine = make_engine(specs[strength], tables_dir=tables_dir if STRENGTHS[strength] else None)
            if strength == "perfect" and getattr(engine, "fallback", False) is None:
                engine.fallback = engine_for("hard")  # outside the tables, the strongest search
            engines[strength] = engine
        return engines[strength]

    def say(message: object) -> None:
        sink.write(json.dumps(message) + "\n")
        sink.flush()

    try:
        engine_for("easy")  # compiles or loads the search kernels before the first request
    except Exception as exc:  # reported again when "easy" is asked for
        print(f"engine worker: cannot make the easy engine: {exc}", file=sys.stderr)
    say("ready")
    for line in source:
        request = json.loads(line)
        if request is None:
            return
        started = time.perf_counter()
        try:
            engine = engine_for(request["strength"])
            state = GameState(request["fen"], tuple(request["moves"]), request["rule"],
                              start_quiet_plies=request.get("counter", 0))
            move = engine.play(state, Limit(time=request["seconds"]))
            if not isinstance(move, Move):
                move = Move.from_pdn(str(move), state.board())
            say({"move": str(move), "seconds": time.perf_counter() - started, "source": _source_of(engine)})
        except Exception as exc:  # reported to the page; the worker lives on
            say({"error": f"{type(exc).__name__}: {exc}"})


def _source_of(engine: object) -> str:
    """Where an engine's last move came from, as it reports it."""
    info = getattr(engine, "last_info", None)
    if info is not None and getattr(info, "source", None):
        return str(info.source)
    return str(getattr(engine, "last_source", "") or "search")


def main(argv: list[str] | None = None) -> int:
    """``python -m tournament.web.engines [--tables DIR]``: run the worker on stdin/stdout."""
    parser = argparse.ArgumentParser(prog="python -m tournament.web.engines",
                                     description="engine worker of the play page (JSON lines on stdin/stdout)")
    parser.add_argument("--tables", default=None)
    parser.add_argument("--specs", type=json.loads, default=None, help="JSON {strength: engine spec}")
    args = parser.parse_args(argv)
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies on the protocol stream
    try:
        serve_requests(sys.stdin, out, tables_dir=args.tables, specs=args.specs)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
