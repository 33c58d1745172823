"""Move generation speed: perft from the start, pydraughts for comparison, one call from Python.

Prints figures; asserts nothing. Run: ``.venv/bin/python bench/bench_movegen.py [--max-depth 12]``

Targets (issue 2): perft(10) under 2 s on one core; one legal-move call from
Python under 20 microseconds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from egtb.rules.board import Board
from egtb.rules.movegen import (
    MOVE_WIDTH, START_BM, START_WM, generate_moves, new_move_buffer, perft, successors_batch,
)

#: From DESIGN.md; deeper counts are printed without a reference.
PUBLISHED = {10: 18391564}
TARGET_LEGAL_MOVES_US = 20.0
TARGET_PERFT10_S = 2.0


def time_perft(depth: int) -> tuple[int, float]:
    """(leaves, seconds) of perft(depth) from the start."""
    start = time.perf_counter()
    leaves = perft(START_BM, 0, START_WM, 0, 0, depth)
    return int(leaves), time.perf_counter() - start


def pydraughts_perft(board, depth: int) -> int:
    """perft with pydraughts (bulk-counted at the last ply, duplicate paths once)."""
    distinct = {}
    for move in board.legal_moves():
        distinct.setdefault((move.steps_move[0], move.steps_move[-1], frozenset(move.captures)), move)
    if depth == 1:
        return len(distinct)
    total = 0
    for move in distinct.values():
        board.push(move)
        total += pydraughts_perft(board, depth - 1)
        board.pop()
    return total


def time_pydraughts(depth: int) -> tuple[int, float] | None:
    """(leaves, seconds) of pydraughts' perft(depth) from the start, or None without pydraughts."""
    try:
        import draughts
    except ImportError:
        return None
    board = draughts.Board(variant="english")
    start = time.perf_counter()
    leaves = pydraughts_perft(board, depth)
    return leaves, time.perf_counter() - start


def sample_positions(count: int, *, seed: int = 1) -> list[str]:
    """FENs from random games (openings, middle games with captures, endings with kings)."""
    rng = random.Random(seed)
    fens: list[str] = []
    board = Board()
    while len(fens) < count:
        if board.is_game_over() or len(board.move_stack) >= 150:
            board = Board()
        fens.append(board.fen())
        board.push(rng.choice(board.legal_moves()))
    return fens


def time_legal_moves(fens: list[str]) -> list[float]:
    """Microseconds of one Board.legal_moves() per position, each on a fresh Board (no cache)."""
    boards = [Board(fen) for fen in fens]
    boards[0].legal_moves()  # compile / warm up
    boards[0] = Board(fens[0])
    times = []
    for board in boards:
        start = time.perf_counter_ns()
        board.legal_moves()
        times.append((time.perf_counter_ns() - start) / 1000)
    return times


def time_kernel_calls(fens: list[str]) -> list[float]:
    """Microseconds of one generate_moves call from Python (dispatch included)."""
    keys = [Board(fen).key() for fen in fens]
    buffer = new_move_buffer()
    generate_moves(*keys[0], buffer)
    times = []
    for key in keys:
        start = time.perf_counter_ns()
        generate_moves(*key, buffer)
        times.append((time.perf_counter_ns() - start) / 1000)
    return times


def time_kernel_batch(fens: list[str]) -> float:
    """Microseconds per position of generate_moves inside one numba call (no Python at all)."""
    keys = [Board(fen).key() for fen in fens if Board(fen).turn == 0]
    columns = [np.array([key[i] for key in keys], dtype=np.int64) for i in range(4)]
    offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    rows = np.zeros((len(keys) * 64, MOVE_WIDTH), dtype=np.int64)
    successors_batch(*columns, 0, offsets, rows)  # compile / warm up
    start = time.perf_counter()
    repeats = 20
    for _ in range(repeats):
        successors_batch(*columns, 0, offsets, rows)
    return (time.perf_counter() - start) / repeats / len(keys) * 1e6


def print_table(title: str, header: tuple[str, ...], rows: list[tuple]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    print(f"\n{title}")
    print("  ".join(str(h).rjust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).rjust(w) for x, w in zip(row, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-depth", type=int, default=12, help="deepest perft (10-12)")
    parser.add_argument("--pydraughts-depth", type=int, default=4, help="perft depth for pydraughts")
    parser.add_argument("--positions", type=int, default=5000, help="positions for the per-call timings")
    args = parser.parse_args()

    time_perft(3)  # compile / load the numba cache outside the timings
    perft_rows = []
    rates = {}
    for depth in range(10, args.max_depth + 1):
        leaves, seconds = time_perft(depth)
        rates[depth] = leaves / seconds
        expected = PUBLISHED.get(depth)
        check = "-" if expected is None else ("ok" if expected == leaves else f"expected {expected:,}")
        perft_rows.append((depth, f"{leaves:,}", f"{seconds:.2f}", f"{leaves / seconds / 1e6:.1f}", check))
    print_table("perft from the start, one core (egtb.rules.movegen)",
                ("depth", "leaves", "seconds", "Mleaves/s", "published"), perft_rows)
    print(f"perft(10) target < {TARGET_PERFT10_S} s: {float(perft_rows[0][2]):.2f} s")

    theirs = time_pydraughts(args.pydraughts_depth)
    if theirs is None:
        print("\npydraughts not installed: no comparison")
    else:
        leaves, seconds = theirs
        their_rate = leaves / seconds
        ours_leaves, ours_seconds = time_perft(args.pydraughts_depth)
        print_table("pydraughts, same machine, same run",
                    ("engine", "depth", "leaves", "seconds", "leaves/s", "ratio vs pydraughts"),
                    [("pydraughts", args.pydraughts_depth, leaves, f"{seconds:.3f}", f"{their_rate:,.0f}", "1"),
                     *[(f"egtb perft({d})", d, "", "", f"{rate:,.0f}", f"{rate / their_rate:,.0f}x")
                       for d, rate in rates.items()]])

    fens = sample_positions(args.positions)
    legal = time_legal_moves(fens)
    calls = time_kernel_calls(fens)
    batch = time_kernel_batch(fens)
    median_legal = statistics.median(legal)
    print_table(f"one position at a time ({len(fens)} positions from random games, median)",
                ("what", "microseconds", "ratio vs 20 us target"),
                [("Board.legal_moves(), fresh Board", f"{median_legal:.2f}",
                  f"{median_legal / TARGET_LEGAL_MOVES_US:.2f}"),
                 ("  90th percentile", f"{statistics.quantiles(legal, n=10)[-1]:.2f}", ""),
                 ("generate_moves() called from Python", f"{statistics.median(calls):.2f}", ""),
                 ("generate_moves() inside numba (batch)", f"{batch:.3f}", "")])


if __name__ == "__main__":
    main()
