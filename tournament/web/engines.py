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

One search runs at a time. :meth:`EngineService.cancel` names the page's game:
it stops that game's search and no other game's.

>>> EngineService().cancel(game="g1")  # nothing running
False
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

from tournament.web.inputs import DEFAULT_SECONDS, STRENGTHS

__all__ = ["DEFAULT_SPECS", "EngineCancelled", "EngineReply", "EngineService", "serve_requests"]

#: Strength name -> engine spec for tournament.engines.registry.make_engine. "hard" searches
#: as deep as the page's thinking time allows (the tournament's "hard" stops at depth 10).
DEFAULT_SPECS: dict[str, str] = {"easy": "easy", "medium": "medium", "hard": "depth=60", "perfect": "perfect"}


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
        self._searching: str | None = None  # the game whose search runs now
        self._cancelled = False
        self._waiting: dict[str, int] = {}  # game -> its requests waiting for the search in progress
        self._cancels: dict[str, int] = {}  # game -> how many times it was cancelled

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
        return self._searching is not None

    # --- moves -------------------------------------------------------------

    def play(self, *, fen: str, moves: list[str], rule: str, strength: str,
             seconds: float = DEFAULT_SECONDS, counter: int = 0, game: str = "") -> EngineReply:
        """The engine's move after ``moves`` from ``fen`` (checked legal by the caller).

        ``counter`` is the move-rule counter at ``fen``: a perfect engine plays for
        the outcome under the rule from there. ``game`` is the page's id of the
        game, which a cancel names.

        Raises EngineCancelled when :meth:`cancel` ended the search (or cancelled
        its game while it waited for another game's search), RuntimeError when the
        engine failed or its worker died.
        """
        with self._state_lock:
            cancels = self._cancels.get(game, 0)
            self._waiting[game] = self._waiting.get(game, 0) + 1
        try:
            with self._request_lock:
                with self._state_lock:
                    if self._cancels.get(game, 0) != cancels:
                        raise EngineCancelled("the engine was stopped before it answered")
                    self._searching, self._cancelled = game, False
                try:
                    reply = self._ask(fen=fen, moves=moves, rule=rule, strength=strength, seconds=seconds,
                                      counter=counter)
                finally:
                    self._searching = None
        finally:
            with self._state_lock:
                self._waiting[game] -= 1
                if not self._waiting[game]:
                    del self._waiting[game]
        if "error" in reply:
            raise RuntimeError(f"engine {strength}: {reply['error']}")
        return EngineReply(reply["move"], reply["seconds"], reply["source"])

    def _ask(self, **request: object) -> dict:
        """One request to the worker (started if needed) and its reply; the caller holds the request lock."""
        self.start()
        process = self._process
        try:
            if not self._ready:
                self._expect(process, "ready")
                self._ready = True
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            return json.loads(_read_line(process))
        except (EOFError, OSError, ValueError):
            self._forget(process)
            if self._cancelled:
                raise EngineCancelled("the engine was stopped before it answered") from None
            raise RuntimeError(f"the engine worker ended without answering (exit status "
                               f"{process.returncode}; its errors are on the server's stderr)") from None

    @staticmethod
    def _expect(process: subprocess.Popen, word: str) -> None:
        line = _read_line(process)
        if json.loads(line) != word:
            raise EOFError(f"engine worker said {line!r}, not {word!r}")

    def cancel(self, *, game: str = "") -> bool:
        """Stop ``game``'s search (ending the worker if it runs now); return whether it had one.

        Another game's search runs on; a request of ``game`` still waiting for
        it is answered with EngineCancelled when its turn comes.
        """
        with self._state_lock:
            running = self._searching == game and self._process is not None
            if not running and not self._waiting.get(game):
                return False
            self._cancels[game] = self._cancels.get(game, 0) + 1
            if not running:
                return True
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
