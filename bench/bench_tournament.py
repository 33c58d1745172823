"""Tournament throughput with instant engines (random movers), against pydraughts.

Prints games per second of ``run_tournament`` (random vs random, 3-move ballots,
records written and fsynced as in a real run) at concurrency 1 and 2, and of
pydraughts playing the same number of random games with its own move generator
(``Board.legal_moves``/``push`` until ``is_over``). pydraughts' tournament
module (``draughts.tournament.RoundRobin``) only drives external engine
processes; with ``--roundrobin N`` it also plays N games between two
``tournament hub-engine random`` processes, for reference.

Usage::

    .venv/bin/python bench/bench_tournament.py [--games 312] [--pydraughts-games 40] [--roundrobin 0]
    .venv/bin/python bench/bench_tournament.py --hub-games 20   # external engines: per-game start vs persistent

pydraughts is slow, so by default it plays fewer games and its rate is scaled;
``--pydraughts-games`` equal to ``--games`` plays the same number exactly.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tournament.openings import load_ballots
from tournament.config import TournamentConfig
from tournament.schedule import run_tournament


def bench_ours(games: int, concurrency: int) -> float:
    """Games per second of our runner with two random movers."""
    out = Path(tempfile.mkdtemp(prefix="bench-tournament-"))
    try:
        started = time.perf_counter()
        result = run_tournament(TournamentConfig(["random", "random"],
                                                 openings=load_ballots("3-move"), games=games, seed=1),
                                out_dir=out, concurrency=concurrency, progress=False)
        elapsed = time.perf_counter() - started
        assert len(result.records) == games
    finally:
        shutil.rmtree(out)
    return games / elapsed


def bench_pydraughts(games: int, *, max_plies: int = 300) -> tuple[float, float]:
    """Games per second and mean plies of pydraughts' own loop with random moves."""
    import draughts

    rng = random.Random(1)
    plies = 0
    started = time.perf_counter()
    for _ in range(games):
        board = draughts.Board(variant="english")
        while not board.is_over() and len(board.move_stack) < max_plies:
            board.push(rng.choice(board.legal_moves()))
        plies += len(board.move_stack)
    return games / (time.perf_counter() - started), plies / games


def bench_roundrobin(games: int) -> float:
    """Games per second of pydraughts' RoundRobin between two hub-engine random processes."""
    from draughts.tournament import RoundRobin

    command = [str(Path(sys.executable).parent / "tournament"), "hub-engine", "random"]
    out = Path(tempfile.mkdtemp(prefix="bench-roundrobin-"))
    try:
        players = [(command, "hub", {}, None), (command, "hub", {}, None)]
        match = RoundRobin(str(out / "games.pdn"), players, 10, 0.1, variant="english", games_per_pair=games)
        started = time.perf_counter()
        match.play()
        return games / (time.perf_counter() - started)
    finally:
        shutil.rmtree(out)


def bench_hub(games: int, *, reuse: bool, concurrency: int = 1) -> float:
    """Games per second of two external random movers (``tournament hub-engine random`` processes)."""
    spec = f"hub:{sys.executable} -m tournament.cli hub-engine random"
    out = Path(tempfile.mkdtemp(prefix="bench-hub-"))
    try:
        started = time.perf_counter()
        result = run_tournament(TournamentConfig([spec, spec], openings=load_ballots("3-move"), games=games, seed=1),
                                out_dir=out, concurrency=concurrency, progress=False, reuse_engines=reuse)
        assert len(result.records) == games and not any(r.result.is_fault for r in result.records)
        return games / (time.perf_counter() - started)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=312, help="games per measurement of our runner")
    parser.add_argument("--pydraughts-games", type=int, default=40, help="games played by pydraughts' loop")
    parser.add_argument("--roundrobin", type=int, default=0, help="also play N games with pydraughts' RoundRobin")
    parser.add_argument("--hub-games", type=int, default=0,
                        help="only measure N games between two hub-engine processes: per-game start vs persistent")
    args = parser.parse_args(argv)
    if args.hub_games:
        fresh = bench_hub(args.hub_games, reuse=False)
        kept = bench_hub(args.hub_games, reuse=True)
        print(f"two 'tournament hub-engine random' processes, {args.hub_games} games, 1 worker:")
        print(f"  a new process per game: {fresh:7.2f} games/s")
        print(f"  persistent processes:   {kept:7.2f} games/s   ratio {kept / fresh:5.1f}x")
        return
    bench_ours(8, 1)  # warm up: numba caches, imports
    print(f"cores: {os.cpu_count()}, games: {args.games} (random vs random, 3-move ballots, records fsynced)")
    rates = {}
    for concurrency in (1, 2):
        rates[concurrency] = bench_ours(args.games, concurrency)
        print(f"ours, concurrency {concurrency}: {rates[concurrency]:8.1f} games/s")
    pyd_rate, pyd_plies = bench_pydraughts(args.pydraughts_games)
    print(f"pydraughts loop ({args.pydraughts_games} games, {pyd_plies:.0f} plies/game): {pyd_rate:8.2f} games/s"
          f" -> {args.games} games would take {args.games / pyd_rate:.1f} s")
    for concurrency, rate in rates.items():
        print(f"ratio ours (concurrency {concurrency}) / pydraughts: {rate / pyd_rate:6.1f}x (target >= 20x)")
    if args.roundrobin:
        try:
            rr_rate = bench_roundrobin(args.roundrobin)
            print(f"pydraughts RoundRobin with hub-engine processes ({args.roundrobin} games): {rr_rate:.2f} games/s"
                  f"; ratio ours (concurrency 2): {rates[2] / rr_rate:.0f}x")
        except Exception as exc:  # noqa: BLE001 - a reference figure only
            print(f"pydraughts RoundRobin failed: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
