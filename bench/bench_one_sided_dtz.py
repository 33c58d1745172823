"""Benchmark a pair's DTZ kept on one side (egtb.probe.derived_dtz) against both files, in one run.

A directory of links to ``--tables`` is made with the larger ``.dtz`` of every pair of
``--pieces`` pieces deleted (``egtb.builder.native.keep_dtz_on_one_side_in``: the links go, the
files stay), and both directories are measured side by side on the same random positions of
those materials: the ``.dtz`` bytes (with their marks), single probes (``probe_outcome`` of
Boards at random counters, and the full ``probe()``) and batches at random counters, each
figure beside the one of both files and their ratio (the best of ``--rounds`` alternated
rounds: the first round over a directory not read yet waits on the disk). Prints figures,
never asserts.

    .venv/bin/python bench/bench_one_sided_dtz.py --tables /work/egtb --pieces 7
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_probe  # noqa: E402  (its position sampling and timing loops)

from egtb.builder.native import keep_dtz_on_one_side_in  # noqa: E402
from egtb.positions.material import Material  # noqa: E402
from egtb.probe.tablebase import Tablebase  # noqa: E402
from egtb.rules.draw_rules import DRAW_RULES  # noqa: E402


def linked_one_sided(tables: Path, pieces: int, into: Path) -> list[Path]:
    """Links to every file of ``tables`` in ``into``, then the larger ``.dtz`` of each pair of
    ``pieces`` pieces unlinked (its stamp rewritten there); the links deleted."""
    for path in tables.iterdir():
        if path.is_file():
            (into / path.name).symlink_to(path)
    return [p for p in keep_dtz_on_one_side_in(into, min_pieces=pieces)
            if Material.parse(p.stem).pieces == pieces]


def dtz_bytes(directory: Path, materials: list[Material]) -> int:
    """Bytes of the ``.dtz`` files of the materials (and their marks) that ``directory`` holds."""
    return sum(path.stat().st_size for m in materials for path in
               (directory / f"{m.name}.dtz", directory / f"{m.name}.dtz.marks") if path.exists())


def measure(tb: Tablebase, arrays, counters, *, singles: int, repeats: int) -> dict[str, float]:
    """Probes a CPU second: single outcomes at the counters, full probe(), a batch at the counters."""
    boards = bench_probe.boards_of(arrays, singles, counters=counters)
    bench_probe.first_pass(tb.probe_outcome, boards)  # blocks read, kernels' rows filled
    return {"single outcome, random counters": bench_probe.bench_single(tb, boards, probe=tb.probe_outcome),
            "full probe()": bench_probe.bench_single(tb, boards[: singles // 4], probe=tb.probe),
            f"batch of {len(arrays[0]):,}, random counters": bench_probe.bench_batch(
                tb, arrays, repeats=repeats, counters=counters)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, required=True, help="a directory of compact-native tables")
    parser.add_argument("--pieces", type=int, required=True, help="the piece count whose pairs go one-sided")
    parser.add_argument("--batch", type=int, default=1_000_000, help="positions of the batch")
    parser.add_argument("--singles", type=int, default=20_000, help="positions probed one at a time")
    parser.add_argument("--repeats", type=int, default=3, help="batch runs timed (the best is kept)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds over both directories, alternated (each figure's best is kept)")
    args = parser.parse_args()
    bench_probe.clock = time.process_time  # CPU time: fairer beside a build
    limit = DRAW_RULES["wcdf"].limit_plies
    with tempfile.TemporaryDirectory(prefix="one-sided-") as scratch:
        one_sided = Path(scratch)
        dropped = linked_one_sided(args.tables, args.pieces, one_sided)
        materials = sorted({m for p in dropped for m in (Material.parse(p.stem), Material.parse(p.stem).mirrored())})
        print(f"{len(dropped)} pairs of {args.pieces} pieces one-sided; probed: their {len(materials)} materials")
        both_bytes, one_bytes = dtz_bytes(args.tables, materials), dtz_bytes(one_sided, materials)
        print(f".dtz and marks bytes: {both_bytes:,} with both files, {one_bytes:,} one-sided "
              f"({one_bytes / both_bytes:.3f})")
        arrays = bench_probe.random_positions(materials, args.batch)
        counters = np.random.default_rng(2).integers(0, limit + 1, args.batch)
        figures: dict[str, dict[str, float]] = {"both files": {}, "one side": {}}
        for _ in range(args.rounds):  # alternated: the second round finds the files in the page cache
            for name, directory in (("both files", args.tables), ("one side", one_sided)):
                with Tablebase(directory) as tb:
                    for row, value in measure(tb, arrays, counters, singles=args.singles,
                                              repeats=args.repeats).items():
                        figures[name][row] = max(figures[name].get(row, 0.0), value)
    print(f"{'probes a CPU second':<40}{'both files':>14}{'one side':>14}{'ratio':>8}")
    for row in figures["both files"]:
        both, one = figures["both files"][row], figures["one side"][row]
        print(f"{row:<40}{both:>14,.0f}{one:>14,.0f}{one / both:>8.2f}")


if __name__ == "__main__":
    main()
