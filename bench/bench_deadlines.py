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
- ``cb hand-off`` (with a C compiler): the test CheckerBoard engine
  (tests/cb_engine/tiny_cb.c) played as ``cb:PATH``, ``Limit(time=T)``: the wall
  time of a move when the engine answers at once (the hand-off: runner, Hub pipe,
  the library's process and back), and the overrun past T when it spends all the
  time it is told (``set mode spend``), which is T less the hand-off reserve.

Usage::

    .venv/bin/python bench/bench_deadlines.py [--repeats 5] [--time 0.2] [--cb-moves 40]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from egtb.rules.board import Board, Move
from tournament.engines.base import Engine, EngineTimeoutError, GameState, Limit
from tournament.engines.random import RandomEngine
from tournament.engines.search import SearchEngine
from tournament.config import GameSettings
from tournament.game import _HUNG_GRACE, play_game

SLEEPING_ENGINE = Path(__file__).resolve().parents[1] / "tests" / "fake_engines" / "sleeping.py"
TINY_CB = Path(__file__).resolve().parents[1] / "tests" / "cb_engine" / "tiny_cb.c"


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
        play_game(hung, RandomEngine(seed=1), settings=GameSettings(limit=Limit(time=seconds), time_margin=0.0))
    finally:
        hung.release.set()
    return time.perf_counter() - started - seconds - _HUNG_GRACE


def cb_move_times(library: Path, mode: str, seconds: float, moves: int) -> list[float]:
    """Wall seconds of ``moves`` moves of the tiny CheckerBoard engine in ``mode``, through ``cb:``."""
    from tournament.engines.registry import make_engine

    engine = make_engine(f"cb:{library}", options={"mode": mode})
    board, times = Board(), []
    try:
        engine.new_game()
        while len(times) < moves:
            if board.outcome() is not None:
                board = Board()
                engine.new_game()
            started = time.perf_counter()
            result = engine.play(GameState.from_board(board), Limit(time=seconds))
            times.append(time.perf_counter() - started)
            board.push(result.move)
    finally:
        engine.close()
    return times


def compile_tiny_cb(directory: Path) -> Path | None:
    """The test CheckerBoard engine built by the system compiler (None without one)."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None
    target = directory / "tiny_cb.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(target), str(TINY_CB)], check=True)
    return target


def describe(name: str, values: Sequence[float]) -> None:
    """Print min, median, 90th percentile and max of values in seconds, as milliseconds."""
    ms = sorted(v * 1000 for v in values)
    print(f"{name:<44} min {ms[0]:7.1f}  median {statistics.median(ms):7.1f}  "
          f"p90 {ms[int(0.9 * (len(ms) - 1))]:7.1f}  max {ms[-1]:7.1f} ms  ({len(ms)} runs)")


def report(name: str, measure: Callable[[], float], repeats: int) -> None:
    """Print the spread of ``repeats`` measurements."""
    describe(name, [measure() for _ in range(repeats)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="measurements of each figure")
    parser.add_argument("--time", type=float, default=0.2, help="the move time T in seconds")
    parser.add_argument("--cb-moves", type=int, default=40, help="moves of the CheckerBoard hand-off figures (0: none)")
    parser.add_argument("--cb-time", type=float, default=0.1, help="the move time of the CheckerBoard figures")
    args = parser.parse_args(argv)
    search_overrun(0.01)  # warm up: the compiled kernels load once
    print(f"overrun past the limit, T = {args.time} s:")
    report("search (time=T)", lambda: search_overrun(args.time), args.repeats)
    report("hub timeout (margin 0.2 s)", lambda: hub_timeout_overrun(args.time, 0.2), args.repeats)
    report(f"hung in-process engine (grace {_HUNG_GRACE:g} s)", lambda: hung_overrun(args.time), args.repeats)
    if args.cb_moves:
        with tempfile.TemporaryDirectory() as scratch:
            library = compile_tiny_cb(Path(scratch))
            if library is None:
                print("no C compiler: no CheckerBoard figures")
                return
            from tournament.engines.checkerboard import told_move_time

            told = told_move_time(args.cb_time)
            print(f"CheckerBoard engine through cb:, T = {args.cb_time} s (told {told} s):")
            describe("hand-off (the engine answers at once)", cb_move_times(library, "first", args.cb_time, args.cb_moves))
            spent = cb_move_times(library, "spend", args.cb_time, args.cb_moves)
            describe("overrun past T (it spends what it is told)", [t - args.cb_time for t in spent])


if __name__ == "__main__":
    main()
