"""Benchmark compact WLD files: size per piece count, compaction time, probe rates.

Prints figures, never asserts. Master tables come from ``--tables`` (default
$EGTB_DIR or data/egtb); when it holds none, tables up to ``--build`` pieces
are built into a temporary directory first. The compact files are written to
a temporary directory (removed at exit) with ``--jobs`` processes.

    .venv/bin/python bench/bench_compact.py --tables data/egtb --jobs 2

Targets (issue 11): at most 0.15 bits per position at 6 pieces (53 positions
per byte; KingsRow's 10-piece WLD database has about 60, Binomial's 124);
200,000 single probes/s from Python with a warm cache; 5 M/s in a numba batch;
compacting every 6-piece table in under 10 minutes on 2 cores (extrapolated
here from the measured rate). Probe rates are per CPU second of this process
(time.process_time), so that a busy machine disturbs them less; the
master-file rates of the same run are the baseline. ``--before DIR`` first
runs the same bench with the code of checkout DIR, in the same run.
"""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_probe import boards_of, random_positions, run_before  # noqa: E402

from egtb.probe.tablebase import Tablebase  # noqa: E402
from egtb.builder import compaction  # noqa: E402
from egtb.formats import compact, master  # noqa: E402
from egtb.positions.index import unrank_positions  # noqa: E402
from egtb.positions.material import all_materials, count_positions  # noqa: E402

SINGLE_TARGET = 200_000
BATCH_TARGET = 5_000_000
SIX_PIECE_MINUTES = 10
KINGSROW = 60
BINOMIAL = 124


def bench_single(tb: Tablebase, boards, *, seconds: float = 2.0) -> float:
    """Single probes per CPU second through probe_wdl(Board)."""
    done, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        for board in boards:
            tb.probe_wdl(board)
        done += len(boards)
    return done / (time.process_time() - start)


def bench_batch(tb: Tablebase, arrays, *, repeats: int = 3, rule: bool = False) -> float:
    """Batch probes per CPU second (best of ``repeats``); with ``rule`` the wcdf category at counter 0."""
    def probe():
        return tb.probe_batch_rule(*arrays, 0) if rule else tb.probe_batch(*arrays)
    probe()  # compile, load, decode
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        probe()
        best = min(best, time.process_time() - start)
    return len(arrays[0]) / best


def compact_all(master: Path, out: Path, jobs: int) -> compaction.CompactReport:
    """Compact every master table (numba compiled first, outside the timing)."""
    warm = Path(tempfile.mkdtemp(prefix="bench_compact_warm_"))
    compaction.compact_directory(master, out=warm, materials=all_materials(2))
    shutil.rmtree(warm)
    return compaction.compact_directory(master, out=out, jobs=jobs)


def one_per_block(directory: Path, materials) -> tuple[np.ndarray, ...]:
    """A position in every block of every compact file (Black to move), shuffled."""
    parts = []
    for material in materials:
        table = compact.CompactTable(compact.compact_path(directory, material))
        indices = table.starts[:-1].astype(np.int64)
        out = [np.empty(len(indices), dtype=np.int64) for _ in range(4)]
        unrank_positions(indices, material.black_men, material.black_kings,
                         material.white_men, material.white_kings, *out)
        parts.append(out)
    arrays = [np.concatenate(a) for a in zip(*parts)]
    order = np.random.default_rng(5).permutation(len(arrays[0]))
    return (*(a[order] for a in arrays), np.zeros(len(order), dtype=np.int64))


def cold_rates(directory: Path, materials) -> tuple[float, float, int]:
    """(single, batch) probes/s when each probe is the first of its block; blocks probed."""
    arrays = one_per_block(directory, materials)
    tb = Tablebase(directory, max_open=1 << 20)
    for material in materials:
        tb.load(material)
    tb.probe_wdl("B:WK10:BK1")  # compile
    boards = boards_of(arrays, len(arrays[0]))
    start = time.process_time()
    for board in boards:
        tb.probe_wdl(board)
    single = len(boards) / (time.process_time() - start)
    tb = Tablebase(directory, max_open=1 << 20)
    for material in materials:
        tb.load(material)
    firsts = one_per_table(directory, materials)
    tb.probe_batch(*firsts)  # compile; every table described, its first block decoded
    start = time.process_time()
    tb.probe_batch(*arrays)
    batch = len(arrays[0]) / (time.process_time() - start)
    return single, batch, len(arrays[0])


def one_per_table(directory: Path, materials) -> tuple[np.ndarray, ...]:
    """The first position of every table (Black to move)."""
    out = [np.empty(len(materials), dtype=np.int64) for _ in range(4)]
    for i, m in enumerate(materials):
        row = [np.empty(1, dtype=np.int64) for _ in range(4)]
        unrank_positions(np.zeros(1, dtype=np.int64), m.black_men, m.black_kings,
                         m.white_men, m.white_kings, *row)
        for a, r in zip(out, row):
            a[i] = r[0]
    return (*out, np.zeros(len(materials), dtype=np.int64))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default=None, help="master tables (default $EGTB_DIR or data/egtb)")
    parser.add_argument("--build", type=int, default=4, help="pieces to build when --tables has none")
    parser.add_argument("--jobs", type=int, default=2, help="processes compacting")
    parser.add_argument("--batch", type=int, default=2_000_000, help="positions per batch")
    parser.add_argument("--pieces", type=int, default=None,
                        help="probe positions of this many pieces only (default: every table)")
    parser.add_argument("--before", default=None, metavar="DIR",
                        help="first run this bench with the code of checkout DIR, in the same run")
    args = parser.parse_args()
    if args.before:
        run_before(args.before)
    masters = Path(args.tables) if args.tables else master.default_dir()
    note = ""
    if not any(masters.glob("*.h5")):
        from egtb.builder.driver import build
        masters = Path(tempfile.mkdtemp(prefix="bench_compact_master_"))
        atexit.register(shutil.rmtree, masters, ignore_errors=True)
        build(args.build, directory=masters, progress=False)
        note = f"(no tables found; built up to {args.build} pieces into {masters}, removed at exit)"
    out = Path(tempfile.mkdtemp(prefix="bench_compact_"))
    atexit.register(shutil.rmtree, out, ignore_errors=True)

    report = compact_all(masters, out, args.jobs)
    print(f"master tables: {masters} {note}")
    print(f"compacted {report.tables} tables, {report.positions:,} positions, in "
          f"{report.seconds:.1f} s with {args.jobs} jobs "
          f"({report.positions / report.seconds / 1e6:.1f} M positions/s); "
          f"{report.captures / report.positions:.1%} of positions are captures (left out)")
    print(f"{'pieces':<8}{'tables':>7}{'positions':>16}{'bytes':>13}{'bits/pos':>10}{'pos/byte':>10}"
          f"{'vs KingsRow 60':>16}{'vs Binomial 124':>17}{'wcdf bytes':>12}{'wcdf bits/pos':>15}")
    for n, (positions, size, tables, rule_size, _) in sorted(report.by_pieces.items()):
        per_byte = positions / size
        print(f"{n:<8}{tables:>7}{positions:>16,}{size:>13,}{8 * size / positions:>10.4f}"
              f"{per_byte:>10.1f}{per_byte / KINGSROW:>15.2f}x{per_byte / BINOMIAL:>16.2f}x"
              f"{rule_size:>12,}{8 * rule_size / positions:>15.4f}")
    six = sum(count_positions(m) for m in all_materials(6, min_pieces=6))
    rate = report.positions / report.seconds
    print(f"6 pieces extrapolated: {six:,} positions / {rate / 1e6:.1f} M/s = "
          f"{six / rate / 60:.1f} min (target < {SIX_PIECE_MINUTES} min on 2 cores)")

    materials = [m for m in Tablebase(out).materials() if args.pieces in (None, m.pieces)]
    arrays = random_positions(materials, args.batch)
    boards = boards_of(arrays, 20_000)
    rows = []
    for name, directory in (("masters", masters), ("compact", out)):
        tb = Tablebase(directory, max_open=1 << 20)
        for board in boards:
            tb.probe_wdl(board)  # warm: tables loaded, blocks decoded
        rows.append((name, bench_single(tb, boards), bench_batch(tb, arrays),
                     bench_batch(tb, arrays, rule=True) if report.rule_bytes else None))
    cold_single, cold_batch, blocks = cold_rates(out, materials)
    (_, m_single, m_batch, m_rule), (_, c_single, c_batch, c_rule) = rows
    print(f"{'measure':<44}{'compact':>14}{'masters':>14}{'target':>12}{'ratio':>8}{'/masters':>9}")
    for name, value, base, target in (
            ("single probes/s, warm (Board)", c_single, m_single, SINGLE_TARGET),
            (f"batch probes/s, warm ({args.batch:,} positions)", c_batch, m_batch, BATCH_TARGET),
            *([("batch wcdf categories/s, warm", c_rule, m_rule, None)] if c_rule else []),
            (f"single probes/s, cold ({blocks:,} blocks)", cold_single, None, None),
            (f"batch probes/s, cold ({blocks:,} blocks)", cold_batch, None, None)):
        print(f"{name:<44}{value:>14,.0f}{(f'{base:,.0f}' if base else '-'):>14}"
              f"{(f'{target:,}' if target else '-'):>12}"
              f"{(f'{value / target:.2f}x' if target else '-'):>8}"
              f"{(f'{value / base:.2f}x' if base else '-'):>9}")


if __name__ == "__main__":
    main()
