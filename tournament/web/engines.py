"""The page's opponents: Hub engine processes, so the server never waits on a search.

The search kernels hold the GIL, so an engine thinking in the server's own
process would freeze every other request (undo, probing) until it answered.
:class:`EngineService` runs each strength as a process of its own,
``tournament hub-engine SPEC``, and talks to it with the Hub client
(:class:`~tournament.engines.hub.HubEngine`), as a tournament talks to an
external engine: the game's start, its moves, the move rule and its counter go
in a ``pos`` command, the thinking time in ``level``, and the move comes back
with where it came from (``info source=``). The server thread that asked waits
on the pipe, and :meth:`EngineService.cancel` ends a search at once by ending
that process (a fresh one is started).

Strengths: ``easy`` (a 2-ply search with noise, no tables: a beginner should
not play endgames perfectly), ``medium`` and ``hard`` (the searcher, with the
tables), ``perfect`` (table moves wherever the tables reach, ``hard`` elsewhere).

One search runs at a time. :meth:`EngineService.cancel` names the page's game:
it stops that game's search and no other game's.

>>> EngineService().cancel(game="g1")  # nothing running
False
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tournament.engines.base import EngineError, GameState, Limit
from tournament.engines.hub import HubEngine
from tournament.web.inputs import DEFAULT_SECONDS, STRENGTHS

__all__ = ["DEFAULT_SPECS", "START_TIMEOUT", "THINK_MARGIN", "EngineCancelled", "EngineReply", "EngineService"]

log = logging.getLogger(__name__)

#: Strength name -> engine spec for ``tournament hub-engine``. "hard" searches as deep as the
#: page's thinking time allows (the tournament's "hard" stops at depth 10); "perfect" plays the
#: "hard" spec outside the tables.
DEFAULT_SPECS: dict[str, str] = {"easy": "easy", "medium": "medium", "hard": "depth=60", "perfect": "perfect"}
#: Seconds a search may run past its thinking time before it counts as an engine fault (its
#: process is then ended): generous, as the first move of a fresh install may compile kernels
#: and a busy machine makes every process slow; the page's undo cancels sooner.
THINK_MARGIN = 30.0
#: Seconds an engine process may take to start and answer the handshake (it loads, or on a fresh
#: install compiles, the search kernels first).
START_TIMEOUT = 180.0


class EngineCancelled(RuntimeError):
    """The search was cancelled before it answered."""


@dataclass(frozen=True)
class EngineReply:
    """An engine's move and how it was found."""

    move: str
    """The move in PDN notation (full capture path)."""
    seconds: float
    """Wall time from the question to the answer, search included."""
    source: str
    """"search", "tables", "forced", "fallback"... as the engine reports it."""


class EngineService:
    """Engines of every strength, each in its own Hub process, asked one move at a time.

    ``tables_dir`` is given to the strengths that probe tables; ``specs`` overrides
    the engine spec played at a strength. Thread-safe: :meth:`play` blocks its
    caller (run it in a thread pool), :meth:`cancel` may be called from any thread.
    Engine faults (a process that cannot start, crashes, answers garbage or
    overruns its time) raise :class:`~tournament.engines.base.EngineError` with
    the engine's own words.
    """

    def __init__(self, *, tables_dir: str | os.PathLike | None = None, specs: Mapping[str, str] | None = None,
                 time_margin: float = THINK_MARGIN) -> None:
        self.tables_dir = None if tables_dir is None else str(Path(tables_dir))
        self.specs = {**DEFAULT_SPECS, **(specs or {})}
        """Engine spec played at each strength (``tournament hub-engine``'s syntax)."""
        self.time_margin = time_margin
        self._engines: dict[str, HubEngine] = {}  # strength -> its process
        self._start_locks = {strength: threading.Lock() for strength in self.specs}  # one start of each at a time
        self._request_lock = threading.Lock()  # one search at a time
        self._state_lock = threading.Lock()  # guards the fields below
        self._closed = False
        self._searching: str | None = None  # the game whose search runs now
        self._search_engine: HubEngine | None = None  # the engine searching for it, once it has started
        self._cancelled = False
        self._waiting: dict[str, int] = {}  # game -> its requests waiting for the search in progress
        self._cancels: dict[str, int] = {}  # game -> how many times it was cancelled

    # --- lifecycle ---------------------------------------------------------

    def command(self, strength: str) -> list[str]:
        """The command line of the process playing ``strength``.

        >>> EngineService(tables_dir="t").command("perfect")[3:]
        ['hub-engine', 'perfect', '--tables', 't', '--option', 'fallback=depth=60']
        """
        spec = self.specs[strength]
        command = [sys.executable, "-m", "tournament.cli", "hub-engine", spec]
        if self.tables_dir is not None and STRENGTHS.get(strength, True):
            command += ["--tables", self.tables_dir]
        if spec == "perfect":
            command += ["--option", f"fallback={self.specs['hard']}"]  # outside the tables, the strongest search
        return command

    def start(self, *, strengths: Iterable[str] | None = None) -> None:
        """Start the processes of ``strengths`` (default: every one) in the background, one after
        another, so that a first move need not wait for its engine to load."""
        names = list(self.specs if strengths is None else strengths)
        threading.Thread(target=self._warm, args=(names,), name="engine start", daemon=True).start()

    def _warm(self, strengths: list[str]) -> None:
        for strength in strengths:
            if self._closed:
                return
            try:
                self._engine(strength)
            except (EngineError, EngineCancelled) as exc:  # told again when a move is asked of it
                log.warning("%s", exc)

    def close(self) -> None:
        """End every engine process (a search in progress ends with EngineError)."""
        with self._state_lock:
            self._closed = True
            engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            engine.kill()  # at once: a search may be running
            engine.close()

    def __enter__(self) -> "EngineService":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def busy(self) -> bool:
        """Whether an engine is searching now (its process started and asked for a move)."""
        return self._search_engine is not None

    def _engine(self, strength: str) -> HubEngine:
        """The running process of ``strength``, started (or started again) if needed.

        Starts are serialised per strength, not with the searches: a move of one strength
        waits for its own engine's start only.
        """
        if strength not in self._start_locks:
            raise ValueError(f"unknown strength {strength!r}; the engines are {', '.join(self.specs)}")
        with self._start_locks[strength]:
            engine = self._engines.get(strength)
            if engine is not None and engine.alive():
                return engine
            if engine is None:
                engine = HubEngine(self.command(strength), name=strength, time_margin=self.time_margin,
                                   handshake_timeout=START_TIMEOUT)
            else:
                engine.new_game()  # a process that was cancelled or died: a new one
            with self._state_lock:
                if not self._closed:
                    self._engines[strength] = engine
                    return engine
            engine.close()
            raise EngineCancelled("the engines were closed")

    # --- moves -------------------------------------------------------------

    def play(self, *, fen: str, moves: list[str], rule: str, strength: str,
             seconds: float = DEFAULT_SECONDS, counter: int = 0, game: str = "") -> EngineReply:
        """The engine's move after ``moves`` from ``fen`` (checked legal by the caller).

        ``counter`` is the move-rule counter at ``fen``: a perfect engine plays for
        the outcome under the rule from there. ``game`` is the page's id of the
        game, which a cancel names.

        Raises EngineCancelled when :meth:`cancel` ended the search (or cancelled
        its game while it waited for another game's search), EngineError when the
        engine failed.
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
                    state = GameState(fen, tuple(moves), rule, start_quiet_plies=counter)
                    return self._ask(strength, state, Limit(time=seconds))
                finally:
                    with self._state_lock:
                        self._searching, self._search_engine = None, None
        finally:
            with self._state_lock:
                self._waiting[game] -= 1
                if not self._waiting[game]:
                    del self._waiting[game]

    def _ask(self, strength: str, state: GameState, limit: Limit) -> EngineReply:
        """One move of ``strength``'s engine (started if need be); the caller holds the request lock."""
        engine = self._engine(strength)
        with self._state_lock:
            if self._cancelled:  # cancelled while its process started
                raise EngineCancelled("the engine was stopped before it answered")
            self._search_engine = engine
        started = time.perf_counter()
        try:
            result = engine.play(state, limit)
        except EngineError:
            if not engine.alive():
                self.start(strengths=[strength])  # a fresh process for the next move, in the background
            if self._cancelled:
                raise EngineCancelled("the engine was stopped before it answered") from None
            raise
        if self._cancelled:  # it answered as the cancel came: the page no longer wants the move
            raise EngineCancelled("the engine was stopped before it answered")
        return EngineReply(str(result.move), time.perf_counter() - started, str(result.info.get("source") or "search"))

    def cancel(self, *, game: str = "") -> bool:
        """Stop ``game``'s search (ending its engine's process if it runs now); return whether it had one.

        Another game's search runs on; a request of ``game`` still waiting for
        it is answered with EngineCancelled when its turn comes.
        """
        with self._state_lock:
            running = self._searching == game
            if not running and not self._waiting.get(game):
                return False
            self._cancels[game] = self._cancels.get(game, 0) + 1
            if not running:
                return True
            self._cancelled = True
            engine = self._search_engine
        if engine is not None:
            engine.kill()
        return True
