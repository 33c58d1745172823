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
that process (a fresh one is started for the next move).

Strengths: ``easy`` (a 2-ply search with noise, no tables: a beginner should
not play endgames perfectly), ``medium`` and ``hard`` (the searcher, with the
tables), ``perfect`` (table moves wherever the tables reach, ``hard`` elsewhere).

Searches run side by side, as many at once as the machine has cores
(``max_searches``); more wait for a free one, in turn. Each running search has a
process of its own: a strength keeps as many idle processes as searches of it
ran at once. :meth:`EngineService.cancel` names the page's game: it stops that
game's searches and no other game's; :meth:`EngineService.stop` stops one
search (the server's, when the client that asked has gone).

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
from tournament.engines.hub.protocol import parse_pv
from tournament.web.inputs import DEFAULT_SECONDS, STRENGTHS

__all__ = ["DEFAULT_SPECS", "START_TIMEOUT", "THINK_MARGIN", "EngineCancelled", "EngineReply", "EngineService",
           "Search"]

log = logging.getLogger(__name__)

#: Strength name -> engine spec for ``tournament hub-engine``. "hard" searches as deep as the
#: page's thinking time allows (the tournament's "hard" stops at depth 10) and fills the line it
#: reports (the explorer shows it); "perfect" plays the "hard" spec outside the tables.
DEFAULT_SPECS: dict[str, str] = {"easy": "easy", "medium": "medium", "hard": "depth=60,pv_fill=200000",
                                  "perfect": "perfect"}
#: Seconds a search may run past its thinking time before it counts as an engine fault (its
#: process is then ended): generous, as the first move of a fresh install may compile kernels
#: and a busy machine makes every process slow; the page's undo cancels sooner.
THINK_MARGIN = 30.0
#: Seconds an engine process may take to start and answer the handshake (it loads, or on a fresh
#: install compiles, the search kernels first).
START_TIMEOUT = 180.0


class EngineCancelled(RuntimeError):
    """The search was cancelled before it answered."""


class Search:
    """One request's search, from its wait for a free core to its answer: what a cancel stops.

    Made by :meth:`EngineService.ticket`; its fields belong to the service.
    """

    def __init__(self, game: str) -> None:
        self.game = game
        self.cancelled = False
        self.engine: HubEngine | None = None  # the process searching, once it has started


@dataclass(frozen=True)
class EngineReply:
    """An engine's move and how it was found."""

    move: str
    """The move in PDN notation (full capture path)."""
    seconds: float
    """Wall time from the question to the answer, search included."""
    source: str
    """"search", "tables", "forced", "fallback"... as the engine reports it."""
    score: int | None = None
    """The engine's score for the side to move, hundredths of a man (None: it gave none)."""
    depth: int = 0
    """The depth of the search (0: none reported)."""
    pv: tuple[str, ...] = ()
    """The principal variation it reported, PDN moves from the position (its legal part)."""


class EngineService:
    """Engines of every strength, each search in a Hub process of its own, up to ``max_searches`` at once.

    ``tables_dir`` is given to the strengths that probe tables; ``specs`` overrides
    the engine spec played at a strength; ``max_searches`` (default: the number of
    cores) is how many searches run at once. Thread-safe: :meth:`play` blocks its
    caller (run it in a thread pool), :meth:`cancel` and :meth:`stop` may be called
    from any thread. Engine faults (a process that cannot start, crashes, answers
    garbage or overruns its time) raise :class:`~tournament.engines.base.EngineError`
    with the engine's own words.
    """

    def __init__(self, *, tables_dir: str | os.PathLike | None = None, specs: Mapping[str, str] | None = None,
                 time_margin: float = THINK_MARGIN, max_searches: int | None = None) -> None:
        self.tables_dir = None if tables_dir is None else str(Path(tables_dir))
        self.specs = {**DEFAULT_SPECS, **(specs or {})}
        """Engine spec played at each strength (``tournament hub-engine``'s syntax)."""
        self.time_margin = time_margin
        self.max_searches = max(1, max_searches or os.cpu_count() or 1)
        """How many searches run at once."""
        self._slots = threading.Semaphore(self.max_searches)  # a free core for each running search
        self._state_lock = threading.Condition()  # guards the fields below; told when a process is free
        self._closed = False
        self._idle: dict[str, list[HubEngine]] = {strength: [] for strength in self.specs}  # started, not searching
        self._launching: dict[str, int] = {strength: 0 for strength in self.specs}  # processes starting
        self._failed: dict[str, Exception] = {}  # strength -> why its last start failed
        self._searches: set[Search] = set()  # waiting for a core or searching

    # --- lifecycle ---------------------------------------------------------

    def command(self, strength: str) -> list[str]:
        """The command line of the process playing ``strength``.

        >>> EngineService(tables_dir="t").command("perfect")[3:]
        ['hub-engine', 'perfect', '--tables', 't', '--option', 'fallback=depth=60,pv_fill=200000']
        """
        spec = self.specs[strength]
        command = [sys.executable, "-m", "tournament.cli", "hub-engine", spec]
        if self.tables_dir is not None and STRENGTHS.get(strength, True):
            command += ["--tables", self.tables_dir]
        if spec == "perfect":
            command += ["--option", f"fallback={self.specs['hard']}"]  # outside the tables, the strongest search
        return command

    def start(self, *, strengths: Iterable[str] | None = None) -> None:
        """Start a process of each of ``strengths`` (default: every one) in the background, one after
        another, so that a first move need not wait for its engine to load."""
        names = list(self.specs if strengths is None else strengths)
        threading.Thread(target=self._warm, args=(names,), name="engine start", daemon=True).start()

    def _warm(self, strengths: list[str]) -> None:
        for strength in strengths:
            with self._state_lock:
                if self._closed or strength not in self.specs or self._idle[strength] or self._launching[strength]:
                    continue
                self._launching[strength] += 1
            self._launch(strength, warn=True)

    def _launch(self, strength: str, *, warn: bool = False) -> None:
        """Start a process of ``strength`` and keep it idle; a failure is kept for the searches waiting
        for it (``_launching[strength]`` was counted up by the caller)."""
        try:
            if self._closed:
                raise EngineCancelled("the engines were closed")
            engine = HubEngine(self.command(strength), name=strength, time_margin=self.time_margin,
                               handshake_timeout=START_TIMEOUT)
        except (EngineError, EngineCancelled) as exc:
            if warn:
                log.warning("%s", exc)  # told again when a move is asked of it
            with self._state_lock:
                self._failed[strength] = exc
                self._launching[strength] -= 1
                self._state_lock.notify_all()
            return
        with self._state_lock:
            self._launching[strength] -= 1
            self._failed.pop(strength, None)
        self._checkin(strength, engine)

    def close(self) -> None:
        """End every engine process at once (a search in progress ends with EngineError)."""
        with self._state_lock:
            self._closed = True
            engines = [engine for idle in self._idle.values() for engine in idle]
            engines += [search.engine for search in self._searches if search.engine is not None]
            for idle in self._idle.values():
                idle.clear()
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
        with self._state_lock:
            return any(search.engine is not None for search in self._searches)

    def searching(self) -> int:
        """How many searches run now (their processes started and asked for a move)."""
        with self._state_lock:
            return sum(search.engine is not None for search in self._searches)

    def waiting(self, game: str) -> int:
        """How many of ``game``'s requests wait for a free core."""
        with self._state_lock:
            return sum(search.game == game and search.engine is None for search in self._searches)

    def _checkout(self, strength: str, search: Search) -> HubEngine:
        """An idle process of ``strength`` for ``search``: the first one free, the one that was
        starting or one started now (a search of the same strength may end before a start would)."""
        if strength not in self.specs:
            raise ValueError(f"unknown strength {strength!r}; the engines are {', '.join(self.specs)}")
        started = False  # whether this search has had a start of its own
        with self._state_lock:
            while True:
                idle = self._idle[strength]
                while idle:
                    engine = idle.pop()
                    if engine.alive():
                        return engine
                    engine.close()
                if search.cancelled or self._closed:
                    raise EngineCancelled("the engine was stopped before it answered")
                if not self._launching[strength]:
                    if started and strength in self._failed:
                        raise self._failed[strength]
                    started = True
                    self._launching[strength] += 1
                    self._failed.pop(strength, None)
                    threading.Thread(target=self._launch, args=(strength,), name=f"engine start {strength}",
                                     daemon=True).start()
                self._state_lock.wait(0.05)

    def _checkin(self, strength: str, engine: HubEngine) -> None:
        """Keep a process that answered for the next search of ``strength`` (end it once closed)."""
        with self._state_lock:
            if not self._closed and engine.alive():
                self._idle[strength].append(engine)
                self._state_lock.notify_all()
                return
        engine.kill()
        engine.close()

    # --- moves -------------------------------------------------------------

    def ticket(self, *, game: str = "") -> Search:
        """A search of ``game`` to pass to :meth:`play`, for :meth:`stop` to name.

        >>> service = EngineService()
        >>> search = service.ticket(game="g1")
        >>> service.stop(search), search.cancelled
        (False, True)
        """
        return Search(game)

    def play(self, *, fen: str, moves: list[str], rule: str, strength: str,
             seconds: float = DEFAULT_SECONDS, counter: int = 0, game: str = "",
             search: Search | None = None) -> EngineReply:
        """The engine's move after ``moves`` from ``fen`` (checked legal by the caller).

        ``counter`` is the move-rule counter at ``fen``: a perfect engine plays for
        the outcome under the rule from there. ``game`` is the page's id of the
        game, which a cancel names; ``search`` (from :meth:`ticket`) lets
        :meth:`stop` stop this request alone.

        Waits for a free core while ``max_searches`` searches run. Raises
        EngineCancelled when :meth:`cancel` or :meth:`stop` ended the search (or
        came while it waited), EngineError when the engine failed.
        """
        search = search if search is not None else Search(game)
        with self._state_lock:
            if search.cancelled:
                raise EngineCancelled("the engine was stopped before it answered")
            self._searches.add(search)
        try:
            while not self._slots.acquire(timeout=0.05):  # a cancel is seen while it waits
                if search.cancelled or self._closed:
                    raise EngineCancelled("the engine was stopped before it answered")
            try:
                state = GameState(fen, tuple(moves), rule, start_quiet_plies=counter)
                return self._ask(strength, state, Limit(time=seconds), search)
            finally:
                self._slots.release()
        finally:
            with self._state_lock:
                self._searches.discard(search)

    def _ask(self, strength: str, state: GameState, limit: Limit, search: Search) -> EngineReply:
        """One move of a process of ``strength`` (started if need be); the caller holds a core."""
        if search.cancelled:
            raise EngineCancelled("the engine was stopped before it answered")
        engine = self._checkout(strength, search)
        with self._state_lock:
            search.engine = engine
            stopped = search.cancelled or self._closed  # cancelled while its process started
        if stopped:
            engine.kill()
            engine.close()
            raise EngineCancelled("the engine was stopped before it answered")
        started = time.perf_counter()
        try:
            result = engine.play(state, limit)
        except EngineError:
            engine.close()
            self.start(strengths=[strength])  # a fresh process for the next move, in the background
            if search.cancelled:
                raise EngineCancelled("the engine was stopped before it answered") from None
            raise
        self._checkin(strength, engine)
        if search.cancelled:  # it answered as the cancel came: the page no longer wants the move
            raise EngineCancelled("the engine was stopped before it answered")
        info = result.info
        depth = str(info.get("depth") or "0")
        return EngineReply(str(result.move), time.perf_counter() - started, str(info.get("source") or "search"),
                           score=result.score, depth=int(depth) if depth.isdigit() else 0,
                           pv=tuple(map(str, parse_pv(str(info.get("pv") or ""), state.board()))))

    def cancel(self, *, game: str = "") -> bool:
        """Stop ``game``'s searches (ending the processes of those that run); return whether it had one.

        Other games' searches run on; a request of ``game`` still waiting for a
        core is answered with EngineCancelled at once.
        """
        with self._state_lock:
            searches = [search for search in self._searches if search.game == game]
        for search in searches:
            self.stop(search)
        return bool(searches)

    def stop(self, search: Search) -> bool:
        """Stop one search (ending its process if it runs); return whether it was waiting or running."""
        with self._state_lock:
            search.cancelled = True
            engine = search.engine
            known = search in self._searches
        if engine is not None:
            engine.kill()
        return known
