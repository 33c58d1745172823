"""Benchmark WLD files that leave threat positions out (:mod:`egtb.rules.threats`) against the
same files that store them: size, the time to re-code, and probe rates, in one run.

Prints figures, never asserts. The directory ``--tables`` is linked file by file
into a temporary directory on the same file system (nothing of it is written),
where the WLD files of ``--materials`` are re-coded (``egtb compact --threats``'s
:func:`egtb.builder.native.recode_threats`); the same random positions of those
materials are then probed from both directories. Rates are per CPU second of this
process, so that a busy machine disturbs them less; the files as they are give the
baseline.

    .venv/bin/python bench/bench_threats.py --tables /work/egtb --materials 4k-4k

Targets (issue 31): at least 100 positions a byte for an 8-piece ``.wld``; 100,000
single probes a second and 2 M a second in batches, warm.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_probe import random_positions  # noqa: E402

from egtb.builder.native import recode_threats  # noqa: E402
from egtb.formats import compact  # noqa: E402
from egtb.positions.material import Material, count_positions  # noqa: E402
from egtb.probe.tablebase import Tablebase  # noqa: E402


def linked_copy(source: Path, target: Path) -> None:
    """Hard-link every file of ``source`` into ``target`` (the re-coded files replace their links)."""
    for path in source.iterdir():
        if path.is_file():
            try:
                os.link(path, target / path.name)
            except FileNotFoundError:  # a build writing there removed it meanwhile
                continue


def rates(directory: Path, arrays: tuple[np.ndarray, ...], singles: int) -> dict[str, float]:
    """Batch and single probes a CPU second from ``directory`` (the second of two batch runs)."""
    found = {}
    counters = np.random.default_rng(2).integers(0, 81, len(arrays[0]))
    with Tablebase(directory) as tb:
        for name, probe in (("batch rule-free", lambda: tb.probe_batch(*arrays)),
                            ("batch wcdf", lambda: tb.probe_batch_rule(*arrays, counters))):
            for _ in range(2):
                started = time.process_time()
                probe()
                seconds = time.process_time() - started
            found[name] = len(arrays[0]) / seconds
        keys = [tuple(int(a[i]) for a in arrays) for i in range(singles)]
        for _ in range(2):
            started = time.process_time()
            for key in keys:
                tb._probe_key(key, distance=False)
            seconds = time.process_time() - started
        found["single rule-free"] = singles / seconds
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, required=True, help="table directory (compact files)")
    parser.add_argument("--materials", required=True, help="comma-separated materials to re-code and probe")
    parser.add_argument("--batch", type=int, default=2_000_000, help="random positions a batch")
    parser.add_argument("--singles", type=int, default=100_000, help="single probes")
    args = parser.parse_args()
    materials = [Material.parse(name) for name in args.materials.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-threats-", dir=args.tables.parent))
    try:
        linked_copy(args.tables, work)
        print(f"{'material':12} {'positions':>14} {'bytes before':>13} {'after':>11} {'pos/byte':>9} "
              f"{'after':>7} {'ratio':>6} {'recode s':>9}")
        for material in materials:
            started = time.perf_counter()
            before, after = recode_threats(work, material)
            n = count_positions(material)
            print(f"{material.name:12} {n:>14,} {before:>13,} {after:>11,} {n / before:>9.1f} {n / after:>7.1f} "
                  f"{before / after:>6.2f} {time.perf_counter() - started:>9.1f}", flush=True)
        arrays = random_positions(materials, args.batch, seed=1)
        baseline, threats = rates(args.tables, arrays, args.singles), rates(work, arrays, args.singles)
        print(f"{'probes a CPU second':24} {'files as they are':>18} {'threats left out':>17} {'ratio':>6}")
        for name, rate in baseline.items():
            print(f"{name:24} {rate:>18,.0f} {threats[name]:>17,.0f} {threats[name] / rate:>6.2f}")
        held = [compact.CompactTable(compact.compact_path(work, m)).threats for m in materials]
        print(f"threat files: {sum(held)} of {len(materials)}")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
