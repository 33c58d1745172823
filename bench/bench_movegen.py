"""Move generation speed: perft from the start, before and after, pydraughts, one call from Python.

Prints figures; asserts nothing. Run: ``.venv/bin/python bench/bench_movegen.py [--max-depth 12]``

"Before" is the previous kernel (``egtb/movegen.py`` of the untouched baseline
clone, ``--baseline DIR``), timed in the same run as the current one
(:mod:`egtb.rules.perft`). Rates are leaves per CPU second of this process, so
other load on the machine matters less (the load average is printed too).

Targets: issue 14, at least 120 M leaves/s on one core at depths 10-12, against
a plain C generator measured on this machine at 360-430 M/s with bulk counting
(150 M/s without); issue 2, one legal-move call from Python under 20 microseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from egtb.rules.board import Board
from numba import njit

from egtb.rules.movegen import MAX_MOVES, MOVE_WIDTH, START_BM, START_WM, generate_moves, new_move_buffer
from egtb.rules.perft import new_hash_table, perft, perft_hashed
from profile_perft import BASELINE_DIR, load_baseline

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from positions import played_fens, pydraughts_perft  # noqa: E402 - the tests' oracle and sample positions

#: Distinct-move perft from the start (DESIGN.md through 10; 11-13 as the tests assert).
PUBLISHED = {10: 18391564, 11: 85242128, 12: 388617999, 13: 1766564893}
TARGET_LEGAL_MOVES_US = 20.0
TARGET_MLEAVES = 120.0
#: The plain C generator of issue 14 on this machine, M leaves/s on one core.
C_BULK = (360.0, 430.0)
C_NO_BULK = 150.0


def time_perft(depth: int, kernel=perft) -> tuple[int, float]:
    """(leaves, CPU seconds) of perft(depth) from the start."""
    start = time.process_time()
    leaves = kernel(START_BM, 0, START_WM, 0, 0, depth)
    return int(leaves), time.process_time() - start


def time_pydraughts(depth: int) -> tuple[int, float] | None:
    """(leaves, seconds) of pydraughts' perft(depth) from the start, or None without pydraughts."""
    try:
        import draughts
    except ImportError:
        return None
    board = draughts.Board(variant="english")
    start = time.process_time()
    leaves = pydraughts_perft(board, depth)
    return leaves, time.process_time() - start


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


@njit(cache=True)
def successors_batch(bm, bk, wm, wk, turn, out_offsets, out_moves):
    """Legal moves of many positions at once, inside numba (what this bench times).

    Inputs are equal-length arrays; ``turn`` is one value for all. Writes the
    moves of position i into ``out_moves[out_offsets[i]:out_offsets[i + 1]]``
    (``out_offsets`` has length len(bm) + 1) and returns the number of rows
    used, or -1 when ``out_moves`` is too small.
    """
    buf = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    row = 0
    out_offsets[0] = 0
    for i in range(bm.shape[0]):
        n = generate_moves(bm[i], bk[i], wm[i], wk[i], turn, buf)
        if row + n > out_moves.shape[0]:
            return -1
        out_moves[row:row + n, :] = buf[:n, :]
        row += n
        out_offsets[i + 1] = row
    return row


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


def bench_perft(max_depth: int, baseline_depth: int, baseline: Path) -> dict[int, float]:
    """Print before/after perft figures; return the current kernel's rates (leaves/s) by depth."""
    old = load_baseline(baseline)
    if old is None:
        print(f"no baseline clone at {baseline}: no 'before' figures")
    else:
        time_perft(3, old.perft)  # compile outside the timings
    time_perft(3)
    rows, rates = [], {}
    for depth in range(10, max_depth + 1):
        leaves, seconds = time_perft(depth)
        rate = leaves / seconds
        rates[depth] = rate
        before = "-", "-", "-"
        if old is not None and depth <= baseline_depth:
            old_leaves, old_seconds = time_perft(depth, old.perft)
            old_rate = old_leaves / old_seconds
            before = f"{old_seconds:.2f}", f"{old_rate / 1e6:.1f}", f"{rate / old_rate:.1f}x"
            assert old_leaves == leaves, (depth, old_leaves, leaves)
        expected = PUBLISHED.get(depth)
        check = "-" if expected is None else ("ok" if expected == leaves else f"expected {expected:,}")
        rows.append((depth, f"{leaves:,}", check, before[0], before[1], f"{seconds:.2f}", f"{rate / 1e6:.1f}",
                     before[2], f"{rate / 1e6 / C_BULK[1]:.2f}-{rate / 1e6 / C_BULK[0]:.2f}",
                     f"{rate / 1e6 / C_NO_BULK:.2f}"))
    print_table(f"perft from the start, one core, CPU seconds (load average {os.getloadavg()[0]:.1f})",
                ("depth", "leaves", "published", "before s", "before M/s", "after s", "after M/s",
                 "speed-up", "vs C bulk 360-430", "vs C no bulk 150"), rows)
    print(f"target >= {TARGET_MLEAVES:.0f} M leaves/s: "
          + ", ".join(f"depth {d} {r / 1e6:.0f} M/s" for d, r in rates.items()))
    return rates


def bench_hashed(depths: list[int], megabytes: float) -> None:
    """Print hashed perft figures (one table reused across depths, as `egtb perft --hash` would not)."""
    rows = []
    for depth in depths:
        table = new_hash_table(megabytes=megabytes)
        start, cpu = time.perf_counter(), time.process_time()
        leaves = int(perft_hashed(START_BM, 0, START_WM, 0, 0, depth, table))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        expected = PUBLISHED.get(depth)
        check = "-" if expected is None else ("ok" if expected == leaves else f"expected {expected:,}")
        rows.append((depth, f"{leaves:,}", check, f"{wall:.1f}", f"{cpu:.1f}", f"{leaves / cpu / 1e6:,.0f}"))
    print_table(f"perft with a {megabytes:g} MB transposition table (fresh table per depth)",
                ("depth", "leaves", "published", "wall s", "CPU s", "M leaves/CPU s"), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-depth", type=int, default=12, help="deepest perft (10-13)")
    parser.add_argument("--baseline-depth", type=int, default=11,
                        help="deepest perft timed with the old kernel (it is 10-15 times slower)")
    parser.add_argument("--baseline", type=Path, default=BASELINE_DIR, help="untouched clone of the previous main")
    parser.add_argument("--hash", type=float, default=0, metavar="MB",
                        help="also time the hashed perft at depths 13 and 14 with MB megabytes")
    parser.add_argument("--pydraughts-depth", type=int, default=4, help="perft depth for pydraughts")
    parser.add_argument("--positions", type=int, default=5000, help="positions for the per-call timings")
    args = parser.parse_args()

    rates = bench_perft(args.max_depth, args.baseline_depth, args.baseline)
    if args.hash:
        bench_hashed([13, 14], args.hash)

    theirs = time_pydraughts(args.pydraughts_depth)
    if theirs is None:
        print("\npydraughts not installed: no comparison")
    else:
        leaves, seconds = theirs
        their_rate = leaves / seconds
        print_table("pydraughts, same machine, same run",
                    ("engine", "depth", "leaves", "seconds", "leaves/s", "ratio vs pydraughts"),
                    [("pydraughts", args.pydraughts_depth, leaves, f"{seconds:.3f}", f"{their_rate:,.0f}", "1"),
                     *[(f"egtb perft({d})", d, "", "", f"{rate:,.0f}", f"{rate / their_rate:,.0f}x")
                       for d, rate in rates.items()]])

    fens = played_fens(args.positions, seed=1, max_plies=150)
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
