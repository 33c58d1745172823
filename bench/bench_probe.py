"""Benchmark the prober: single probes from Python, batch probes, memory of loaded tables.

Prints figures, never asserts. Tables come from ``--dir`` (default $EGTB_DIR or
data/egtb); when it holds none, tables up to ``--build`` pieces are built into a
temporary directory first, and the output says so.

    .venv/bin/python bench/bench_probe.py --dir data/egtb

Targets: rule-free (issue 4) 100,000 single probes per second and 10 million
batch probes per second; under the move rule (issue 9, Boards carrying a
random counter, preset ``--rule``) 300,000 single probes per second
(``probe_outcome``) and 10 million batch probes per second
(``probe_batch_rule``). Each rule figure is printed next to the rule-free one
measured in the same run, with their ratio. Memory with every table loaded
is reported.

Master tables are read a block at a time within the process's budget
(``--budget``, default $EGTB_CACHE_BYTES or 2 GiB); the tables are warmed
(every block read, the budget permitting) before timing, unless ``--cold``.
Where a material has a compact file, its values and counter-0 categories
come from it and the master file gives the DTZ only where an outcome needs
it. At 7 pieces (``--min-pieces 7``: the positions are drawn from the
7-piece tables only, every table of the directory answering their capture
searches) the targets are those of issue 20: 100,000 single and 2 million
batch probes a second, for each of the rule-free, the counter-0 and the
random-counter rows; the first pass over the single-probe Boards (each block
read once) is printed beside the repeated passes, and so is the cost of one
DTZ block read from a master file. With ``--cold`` the rule-free and
counter-0 batches are timed again right after the cold ones ("again": their
blocks read and marked by then), before the random-counter batch, which is
timed again too. ``--before DIR``
first runs the same bench with the code of checkout DIR (e.g. a worktree of
the code before a change), in the same run, so that both are measured on the
same loaded machine. ``--pieces N`` keeps the tables of at most N pieces.
``--compact-above N`` moves the line above which a material with a master
and compact files answers from the compact ones.
"""

from __future__ import annotations

import argparse
import atexit
import inspect
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from egtb.formats import master
from egtb.formats.cache import process_cache
from egtb.rules.board import DRAW_RULES, Board
from egtb.positions.index import unrank_positions
from egtb.positions.material import Material, count_positions
from egtb.rules.notation import Placement, format_fen
from egtb.probe.tablebase import Tablebase

SINGLE_TARGET = 100_000
BATCH_TARGET = 10_000_000
SINGLE_RULE_TARGET = 300_000
BATCH_RULE_TARGET = 10_000_000
#: Issue 20's targets at 7 pieces (every row).
SEVEN_SINGLE_TARGET = 100_000
SEVEN_BATCH_TARGET = 2_000_000
#: The clock of the measurements: wall time, or with --cpu-time this process's CPU time
#: (fairer on a machine shared with other jobs).
clock = time.perf_counter


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def random_positions(materials: list[Material], n: int, *, seed: int = 1) -> tuple[np.ndarray, ...]:
    """n random positions (bm, bk, wm, wk, turn arrays) over the materials, shuffled."""
    rng = np.random.default_rng(seed)
    per = np.bincount(rng.integers(0, len(materials), n), minlength=len(materials))
    parts = [_positions_of(m, k, rng) for m, k in zip(materials, per) if k]
    arrays = [np.concatenate(a) for a in zip(*parts)]
    order = rng.permutation(n)
    bm, bk, wm, wk = (a[order] for a in arrays)
    turn = rng.integers(0, 2, n)
    white = turn == 1  # White to move: mirror each position so the probe normalises it back
    for a, b in ((bm, wm), (bk, wk)):
        a_w, b_w = _mirror_array(b[white]), _mirror_array(a[white])
        a[white], b[white] = a_w, b_w
    return bm, bk, wm, wk, turn


def _positions_of(material: Material, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    indices = rng.integers(0, count_positions(material), k).astype(np.int64)
    out = [np.empty(k, dtype=np.int64) for _ in range(4)]
    unrank_positions(indices, material.black_men, material.black_kings,
                     material.white_men, material.white_kings, *out)
    return out


#: REVERSED_BYTE[b] is the byte b with its bits in reverse order.
REVERSED_BYTE = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.int64)


def _mirror_array(bits: np.ndarray) -> np.ndarray:
    """Bit reversal of 32-bit values (square s -> 33 - s)."""
    out = np.zeros_like(bits)
    for k in range(4):
        out |= REVERSED_BYTE[(bits >> (8 * k)) & 0xFF] << (8 * (3 - k))
    return out


def bench_single(tb: Tablebase, boards: list[Board], *, seconds: float = 2.0, probe=None) -> float:
    """Single probes per second through ``probe`` (default probe_wdl) of each Board."""
    probe = probe or tb.probe_wdl
    done, start = 0, clock()
    while clock() - start < seconds:
        for board in boards:
            probe(board)
        done += len(boards)
    return done / (clock() - start)


def first_pass(probe, boards: list[Board]) -> float:
    """Probes per second of one pass over the Boards (each block read on its first use)."""
    start = clock()
    for board in boards:
        probe(board)
    return len(boards) / (clock() - start)


def bench_block_reads(tb: Tablebase, materials: list[Material], rule: str, *,
                      reads: int = 40) -> tuple[float, float]:
    """Seconds one read of a master file's block takes (a block's miss), on average over
    ``reads`` random blocks of the materials' master files: (the layer's categories with
    their DTZ, as a master-only directory reads them; the DTZ alone, as beside a compact file)."""
    from egtb.formats.cache import TableCache
    from egtb.probe.tables import BlockMap, MasterTable
    masters = [p for p in (master.table_path(tb.directory, m) for m in materials) if p.exists()]
    if not masters:
        return float("nan"), float("nan")
    spent = []
    for dtz_alone in (False, True):
        rng = np.random.default_rng(5)
        total = 0.0
        for k in range(reads):
            path = masters[k % len(masters)]
            table = MasterTable(path, Material.parse(path.stem), cache=TableCache(max_bytes=1), rules=(rule,))
            layer = table.layer(rule)
            blocks = BlockMap(table, layer.blocks.names[1], None, None) if dtz_alone else layer.blocks
            block = int(rng.integers(0, len(blocks.loaded)))
            start = clock()
            blocks.read(block)
            total += clock() - start
            table.close()
        spent.append(total / reads)
    return spent[0], spent[1]


def bench_fen(tb: Tablebase, fens: list[str]) -> float:
    """Probes per second when each position comes as a FEN string."""
    start = clock()
    for fen in fens:
        tb.probe_wdl(fen)
    return len(fens) / (clock() - start)


def bench_batch(tb: Tablebase, arrays: tuple[np.ndarray, ...], *, repeats: int = 3,
                counters: np.ndarray | None = None, rule: str = "wcdf") -> float:
    """Batch probes per second (best of ``repeats``); with ``counters``, under ``rule``."""
    def run(k: int | None) -> None:
        if counters is None:
            tb.probe_batch(*(a[:k] for a in arrays))
        else:
            tb.probe_batch_rule(*(a[:k] for a in arrays), counters[:k], rule=rule)
    run(1000)  # compile and load
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        run(None)
        best = min(best, clock() - start)
    return len(arrays[0]) / best


def boards_of(arrays: tuple[np.ndarray, ...], n: int, *, counters: np.ndarray | None = None,
              rule: str = "wcdf") -> list[Board]:
    """The first n positions as Boards (with their counters under ``rule`` when given)."""
    return [Board(format_fen(Placement(*(int(a[i]) for a in arrays))), rule=rule,
                  quiet_plies=0 if counters is None else int(counters[i])) for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="table directory (default $EGTB_DIR or data/egtb)")
    parser.add_argument("--build", type=int, default=3, help="pieces to build when --dir has no tables")
    parser.add_argument("--batch", type=int, default=10_000_000, help="positions per batch")
    parser.add_argument("--rule", choices=list(DRAW_RULES), default="wcdf", help="move-rule preset")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time by this process's CPU time instead of wall time (a busy machine)")
    parser.add_argument("--pieces", type=int, default=None, help="only the tables of at most N pieces")
    parser.add_argument("--min-pieces", type=int, default=None,
                        help="probe positions of the tables of at least N pieces only (the others "
                             "answer capture searches)")
    parser.add_argument("--budget", type=int, default=None,
                        help="bytes of table blocks kept in memory ($EGTB_CACHE_BYTES)")
    parser.add_argument("--cold", action="store_true",
                        help="do not read every block first (tables larger than the budget)")
    parser.add_argument("--repeats", type=int, default=3, help="batch runs timed (the best is kept)")
    parser.add_argument("--compact-above", type=int, default=None, metavar="N",
                        help="Tablebase(compact_above=N): materials of more positions answer from their "
                             "compact files (default: the prober's COMPACT_ABOVE)")
    parser.add_argument("--before", default=None, metavar="DIR",
                        help="first run this bench with the code of checkout DIR, in the same run")
    args = parser.parse_args()
    if args.budget is not None:
        os.environ["EGTB_CACHE_BYTES"] = str(args.budget)
    if args.before:
        run_before(args.before)
    global clock
    clock = time.process_time if args.cpu_time else time.perf_counter
    directory = Path(args.dir) if args.dir else master.default_dir()
    note = ""
    if not Tablebase(directory).materials():
        from egtb.builder.driver import build
        directory = Path(tempfile.mkdtemp(prefix="bench_probe_"))
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        build(args.build, directory=directory, progress=False)
        note = f"(no tables found; built up to {args.build} pieces into {directory}, removed at exit)"
    tb = Tablebase(directory, max_open=1 << 20,
                   **({} if args.compact_above is None else {"compact_above": args.compact_above}))
    materials = [m for m in tb.materials() if args.pieces is None or m.pieces <= args.pieces]
    probed = [m for m in materials if args.min_pieces is None or m.pieces >= args.min_pieces]
    pieces = max(m.pieces for m in materials)
    rss_before = rss_bytes()
    start = time.perf_counter()
    warm = "blocks" in inspect.signature(tb.load).parameters  # the code before blocks loads whole tables
    for material in materials:
        if warm:
            tb.load(material, blocks=0 if args.cold else None)  # every block of its values and layers
        else:
            tb.load(material)
    load_seconds = time.perf_counter() - start
    rss_after = rss_bytes()
    arrays = random_positions(probed, args.batch)
    limit = DRAW_RULES[args.rule].limit_plies
    counters = np.random.default_rng(2).integers(0, limit + 1, args.batch)
    boards = boards_of(arrays, 20_000, counters=counters, rule=args.rule)
    at_zero = boards_of(arrays, 20_000, rule=args.rule)
    seven = min(m.pieces for m in probed) >= 7
    single_target, batch_target = ((SEVEN_SINGLE_TARGET, SEVEN_BATCH_TARGET) if seven
                                   else (SINGLE_TARGET, BATCH_TARGET))
    rule_targets = ((SEVEN_SINGLE_TARGET, SEVEN_BATCH_TARGET) if seven
                    else (SINGLE_RULE_TARGET, BATCH_RULE_TARGET))
    first = first_pass(tb.probe_wdl, boards)
    first_zero = first_pass(tb.probe_outcome, at_zero)
    first_rule = first_pass(tb.probe_outcome, boards)
    single = bench_single(tb, boards)
    single_zero = bench_single(tb, at_zero, probe=tb.probe_outcome)
    single_rule = bench_single(tb, boards, probe=tb.probe_outcome)
    full_rule = bench_single(tb, boards, probe=tb.probe, seconds=1.0)
    fen_rate = bench_fen(tb, [b.fen() for b in boards])
    batch = bench_batch(tb, arrays, repeats=args.repeats)
    batch_zero = bench_batch(tb, arrays, counters=np.zeros(args.batch, dtype=np.int64), rule=args.rule,
                             repeats=args.repeats)
    again = []  # --cold: the same batches again, every block they need read (or marked) by the two above
    if args.cold:
        again = [
            ("batch probes/s, again (rule-free)", bench_batch(tb, arrays, repeats=args.repeats), batch_target),
            (f"batch probes/s, again ({args.rule}, 0)",
             bench_batch(tb, arrays, counters=np.zeros(args.batch, dtype=np.int64), rule=args.rule,
                         repeats=args.repeats), rule_targets[1]),
        ]
    batch_rule = bench_batch(tb, arrays, counters=counters, rule=args.rule, repeats=args.repeats)
    if args.cold:  # its DTZ blocks read (or marked) by then
        again_rule = [(f"batch probes/s, again ({args.rule}, counters)",
                       bench_batch(tb, arrays, counters=counters, rule=args.rule, repeats=args.repeats),
                       rule_targets[1])]
    else:
        again_rule = []
    layer_read, dtz_read = bench_block_reads(tb, probed, args.rule)
    rows = [
        ("single probes/s, first pass (rule-free)", first, None),
        (f"single probes/s, first pass ({args.rule}, 0)", first_zero, None),
        (f"single probes/s, first pass ({args.rule}, counter)", first_rule, None),
        ("single probes/s (Board, rule-free)", single, single_target),
        (f"single probes/s ({args.rule}, counter 0)", single_zero, rule_targets[0]),
        (f"single probes/s ({args.rule}, counter)", single_rule, rule_targets[0]),
        ("  with the rule / rule-free", single_rule / single, None),
        ("full probe()/s (rule + rule-free)", full_rule, None),
        ("single probes/s (FEN string)", fen_rate, None),
        (f"batch probes/s ({args.batch:,}, rule-free)", batch, batch_target),
        (f"batch probes/s ({args.batch:,}, {args.rule}, 0)", batch_zero, rule_targets[1]),
        *again,
        (f"batch probes/s ({args.batch:,}, {args.rule})", batch_rule, rule_targets[1]),
        *again_rule,
        ("  with the rule / rule-free", batch_rule / batch, None),
        ("ms a layer block read (category + DTZ)", layer_read * 1e3, None),
        ("ms a DTZ block read (DTZ alone)", dtz_read * 1e3, None),
    ]
    report(directory, note, materials, pieces, tb, rss_before, rss_after, load_seconds, rows, probed)


def run_before(checkout: str) -> None:
    """The bench being run (this one, or one importing this function) with the code of another
    checkout, its output printed first."""
    argv = [a for i, a in enumerate(sys.argv[1:]) if a != "--before" and sys.argv[i] != "--before"]
    env = {**os.environ, "PYTHONPATH": str(Path(checkout).resolve())}
    print(f"=== before: the code of {checkout} ===", flush=True)
    subprocess.run([sys.executable, str(Path(sys.argv[0]).resolve()), *argv], env=env, check=True)
    print("=== after: this checkout ===", flush=True)


def report(directory, note, materials, pieces, tb, rss_before, rss_after, load_seconds, rows, probed) -> None:
    positions = sum(count_positions(m) for m in materials)
    print(f"tables: {directory} {note}")
    print(f"  {len(materials)} materials, up to {pieces} pieces (complete up to {tb.max_pieces}),"
          f" {positions:,} positions; loaded in {load_seconds:.1f} s")
    if len(probed) < len(materials):
        print(f"  probed: {len(probed)} materials of {min(m.pieces for m in probed)}+ pieces, "
              f"{sum(count_positions(m) for m in probed):,} positions")
    print(f"{'measure':<40}{'figure':>16}{'target':>14}{'ratio':>8}"
          f"   (per {'CPU' if clock is time.process_time else 'wall'} second)")
    for name, value, target in rows:
        ratio = f"{value / target:.2f}x" if target else "-"
        figure = f"{value:>16,.0f}" if value >= 100 else f"{value:>16.2f}"
        print(f"{name:<40}{figure}{(f'{target:,}' if target else '-'):>14}{ratio:>8}")
    print(f"{'table arrays in memory (MB)':<40}{tb.loaded_bytes / 1e6:>16,.1f}")
    print(f"{'RSS before loading (MB)':<40}{rss_before / 1e6:>16,.1f}")
    print(f"{'RSS with all tables loaded (MB)':<40}{rss_after / 1e6:>16,.1f}")
    print(f"{'RSS at the end (MB)':<40}{rss_bytes() / 1e6:>16,.1f}")
    print(f"{'peak RSS (MB)':<40}{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:>16,.1f}")
    print(f"{'block cache in use (MB)':<40}{process_cache().nbytes / 1e6:>16,.1f}")
    print(f"{'bytes per position in memory':<40}{tb.loaded_bytes / max(positions, 1):>16,.2f}")
    if pieces < 5:
        print(f"note: only tables up to {pieces} pieces were available, not 5")


if __name__ == "__main__":
    main()
