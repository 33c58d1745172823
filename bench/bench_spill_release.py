"""Benchmark giving a spilled DTZ's pages back (:meth:`egtb.formats.spill.DtzSpill.release`): the
punches a pair solved on disk makes, wave by wave, against punching each run of pages as soon as
it is spilled (the baseline, counted in the same run), and what a punch costs on this disk.

A punch (``MADV_REMOVE``) of pages the disk holds took 3.5 ms of waiting here, whatever its
length (ext4 mounted with ``discard``); a pair of small units finishes its pages scattered, so
page by page it waited most of its wall time (2m1k-4m split: 203 s of 381). Prints figures,
never asserts. The pairs' waves are replayed as a split pair's tasks spill them (each wave's
units finished before the next starts), on an array in memory (no punch is made there: the
policy's own code counts them); the punch cost is measured on a file of its own in ``--tables``.

    .venv/bin/python bench/bench_spill_release.py --tables /work/egtb
    .venv/bin/python bench/bench_spill_release.py --pairs 2m1k-4m 3m-3m2k --punches 100
"""

from __future__ import annotations

import argparse
import mmap
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from egtb.builder import pipeline, spilling, split
from egtb.builder.solve import NOT_LOADED
from egtb.builder.plan import plan_pairs
from egtb.formats.spill import PAGE, DtzSpill, page_runs
from egtb.positions.index import NUM_CODES, code_of_material, unit_size
from egtb.positions.material import count_positions

#: A 7-piece pair of units of 26 positions, and 8-piece pairs of small units to big ones.
PAIRS = ("2m1k-4m", "3m-3m2k", "2m1k-4m1k", "2m3k-3m", "2m1k-3m2k", "2m1k-2m3k", "1m2k-2m3k")


def pair_of(key: str):
    pieces = sum(int(c) for c in key if c.isdigit())
    return next(p for p in plan_pairs(pieces, min_pieces=pieces, max_per_side=5) if p.key == key)


def replay(key: str) -> dict:
    """Punches of the baseline and of the release policy over a pair's waves."""
    pair = pair_of(key)
    first, last = pair.materials[0], pair.materials[-1]
    counts = np.array([[m.black_men, m.black_kings, m.white_men, m.white_kings] for m in (first, last)],
                      dtype=np.int64)
    size = int(unit_size(*counts[0]))
    offsets = np.full(NUM_CODES, NOT_LOADED, dtype=np.int64)  # the pair's materials first, as in its flat arrays
    offsets[[code_of_material(m) for m in pair.materials]] = np.cumsum([0] + [count_positions(m) for m in pair.materials[:-1]])
    order = pipeline.unit_order(pair.materials)
    pages = -(-pair.positions // PAGE)
    final = np.zeros(pages, dtype=np.int64)
    whole = np.full(pages, PAGE, dtype=np.int64)
    whole[-1] = pair.positions - (pages - 1) * PAGE
    spilled = np.zeros(pages, dtype=np.bool_)
    dtz = np.zeros(0, dtype=np.uint8)  # not mapped: the policy decides, nothing is punched
    baseline = punches = held = 0
    done = 0
    with tempfile.TemporaryDirectory() as scratch:
        spill = DtzSpill.open(Path(scratch))
        for wave_first, _ in split.unit_waves(pair)[1:]:
            spilling.add_finished(order[done:wave_first], counts, offsets, size, final)
            done = wave_first
            ready = (final == whole) & ~spilled
            baseline += len(page_runs(ready))
            spilled |= ready
            punches += spill.release(dtz, spilled)
            held = max(held, int((spilled & ~spill._released(pages)).sum()))
    return {"positions": pair.positions, "unit": size, "baseline": baseline, "punches": punches,
            "held": held * PAGE}


def punch_seconds(directory: Path, count: int) -> float:
    """Seconds one punch of a page waits, on a file of this disk whose pages were written and
    flushed (as a checkpoint leaves a pair's DTZ)."""
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        path = Path(scratch) / "rdtz"
        array = np.memmap(path, dtype=np.uint8, mode="w+", shape=(2 * count * PAGE,))
        array[:] = 7
        array.flush()
        mapping = array._mmap
        began = time.perf_counter()
        for page in range(0, 2 * count, 2):
            mapping.madvise(mmap.MADV_REMOVE, page * PAGE, PAGE)
        seconds = (time.perf_counter() - began) / count
        del array, mapping
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", nargs="+", default=list(PAIRS))
    parser.add_argument("--tables", type=Path, default=Path(tempfile.gettempdir()),
                        help="a directory on the disk the build uses (default: the temporary one)")
    parser.add_argument("--punches", type=int, default=200, help="punches timed (default 200)")
    args = parser.parse_args()
    cost = punch_seconds(args.tables, args.punches)
    print(f"a punch on {args.tables}: {cost * 1e3:.2f} ms (mean of {args.punches})")
    print(f"{'pair':12s} {'positions':>10s} {'unit':>8s} {'baseline':>9s} {'release':>8s} {'ratio':>7s} "
          f"{'baseline min':>12s} {'release min':>11s} {'held at most':>12s}")
    for key in args.pairs:
        r = replay(key)
        print(f"{key:12s} {r['positions'] / 1e9:9.2f}G {r['unit']:8d} {r['baseline']:9d} {r['punches']:8d} "
              f"{r['baseline'] / max(r['punches'], 1):6.1f}x {r['baseline'] * cost / 60:12.1f} "
              f"{r['punches'] * cost / 60:11.1f} {r['held'] / 1e9:11.2f}G")


if __name__ == "__main__":
    main()
