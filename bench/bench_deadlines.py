"""How late the runner's time limits bite: the figures the tests do not assert on the wall clock.

The tests check *that* a time limit stops a search, a hung engine is abandoned
and a silent Hub engine times out (by what happened, never by how long it
took: a loaded machine makes any wall-clock bound either flaky or meaningless).
This bench measures *how long* each takes, on this machine, now:

- ``search``: a SearchEngine with ``time=T`` from the start position; its overrun
  past T (its clock is polled between nodes).
- ``hub timeout``: a Hub engine that never answers, ``Limit(time=T)`` and a margin
  M; the seconds from ``go`` to the EngineTimeoutError, past T + M.
- ``hung``: an in-process engine that never returns, ``Limit(time=T)``; the
  seconds until ``play_game`` gives up on it, past T + the runner's grace.

Usage::

    .venv/bin/python bench/bench_deadlines.py [--repeats 5] [--time 0.2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from egtb.rules.board import Board, Move
from tournament.engines.base import Engine, EngineTimeoutError, GameState, Limit
from tournament.engines.random import RandomEngine
from tournament.engines.search import SearchEngine
from tournament.game import _HUNG_GRACE, play_game

SLEEPING_ENGINE = Path(__file__).resolve().parents[1] / "tests" / "fake_engines" / "sleeping.py"


class _Hung(Engine):
    """Never returns from play until released."""

    name = "hung"

    def __init__(self) -> None:
        self.release = threading.Event()

    def play(self, state: GameState, limit: Limit) -> Move:
        self.release.wait()
        return state.board().legal_moves()[0]


def search_overrun(seconds: float) -> float:
    """Seconds a timed search runs past its time."""
    engine = SearchEngine(time=seconds)
    started = time.perf_counter()
    engine.play(GameState.from_board(Board()), Limit())
    return time.perf_counter() - started - seconds


def hub_timeout_overrun(seconds: float, margin: float) -> float:
    """Seconds past time + margin before a silent Hub engine's EngineTimeoutError."""
    from tournament.engines.hub import HubEngine

    engine = HubEngine([sys.executable, str(SLEEPING_ENGINE)], time_margin=margin)
    try:
        started = time.perf_counter()
        try:
            engine.play(GameState.from_board(Board()), Limit(time=seconds))
        except EngineTimeoutError:
            return time.perf_counter() - started - seconds - margin
        raise AssertionError("the sleeping engine answered")
    finally:
        engine.close()


def hung_overrun(seconds: float) -> float:
    """Seconds past time + the runner's grace before a hung in-process engine is abandoned."""
    hung = _Hung()
    started = time.perf_counter()
    try:
        play_game(hung, RandomEngine(seed=1), limit=Limit(time=seconds), time_margin=0.0)
    finally:
        hung.release.set()
    return time.perf_counter() - started - seconds - _HUNG_GRACE


def report(name: str, measure: Callable[[], float], repeats: int) -> None:
    """Print min, median and max of ``repeats`` measurements in milliseconds."""
    values = [measure() * 1000 for _ in range(repeats)]
    print(f"{name:<34} min {min(values):8.1f}  median {statistics.median(values):8.1f}  "
          f"max {max(values):8.1f} ms  ({repeats} runs)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="measurements of each figure")
    parser.add_argument("--time", type=float, default=0.2, help="the move time T in seconds")
    args = parser.parse_args(argv)
    search_overrun(0.01)  # warm up: the compiled kernels load once
    print(f"overrun past the limit, T = {args.time} s:")
    report("search (time=T)", lambda: search_overrun(args.time), args.repeats)
    report("hub timeout (margin 0.2 s)", lambda: hub_timeout_overrun(args.time, 0.2), args.repeats)
    report(f"hung in-process engine (grace {_HUNG_GRACE:g} s)", lambda: hung_overrun(args.time), args.repeats)


if __name__ == "__main__":
    main()
