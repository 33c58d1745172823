"""Benchmark the walk over a range of positions (:mod:`egtb.positions.walk`), CPU nanoseconds a
position, against unranking each position on its own (:func:`egtb.positions.index.unrank_positions`,
the baseline, measured in the same run).

The compact writer finds every position's must-capture flag by the walk (twice for a material of
more than 2^32 positions), a compact-native dependency's load and the successor verify unrank
ranges by it: at 8 pieces, every position of the build passes through it several times.
Prints figures, never asserts; checks that the walk and the baseline unrank the same bitboards.
CPU time of this process, so that a busy machine disturbs it less.

    .venv/bin/python bench/bench_walk.py
    .venv/bin/python bench/bench_walk.py --materials 3m-5m 1m2k-2m3k --positions 4e6
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from egtb.formats.compact.layout import material_counts
from egtb.positions.index import unrank_positions
from egtb.positions.material import Material, count_positions
from egtb.positions.walk import capture_flags, unrank_range

#: Men only (a unit is one position: the men step at every position), few kings (units of 25),
#: and kings on both sides (units of millions).
MATERIALS = ("3m-5m", "4m-4m", "4m1k-3m", "2m1k-5m", "1m4k-3m", "3m2k-2m1k", "1m2k-2m3k", "2m2k-2m2k", "3k-1m4k")


def bench_material(material: Material, positions: int, ranges: int) -> dict[str, float]:
    """CPU ns a position of the baseline, the walk and the flags alone over `ranges` ranges of
    `positions` positions, seeded."""
    counts, total = material_counts(material), count_positions(material)
    size = min(positions, total)
    starts = np.random.default_rng(1).integers(0, total - size + 1, ranges)
    walked = [np.empty(size, np.int64) for _ in range(4)]
    unranked = [np.empty(size, np.uint32) for _ in range(4)]
    must = np.empty(size, np.bool_)
    seconds = dict.fromkeys(("unrank each", "walk", "flags"), 0.0)
    for lo in (int(s) for s in starts):
        began = time.process_time()
        unrank_positions(np.arange(lo, lo + size, dtype=np.int64), material.black_men, material.black_kings,
                         material.white_men, material.white_kings, *unranked)
        seconds["unrank each"] += time.process_time() - began
        began = time.process_time()
        unrank_range(counts, lo, lo + size, *walked, must)
        seconds["walk"] += time.process_time() - began
        began = time.process_time()
        capture_flags(counts, lo, lo + size, must)
        seconds["flags"] += time.process_time() - began
        if not all(np.array_equal(a, b.astype(np.int64)) for a, b in zip(walked, unranked)):
            raise SystemExit(f"{material.name}: the walk and the index disagree from position {lo}")
    return {name: value / (size * ranges) * 1e9 for name, value in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--materials", nargs="+", default=list(MATERIALS))
    parser.add_argument("--positions", type=float, default=4e6, help="positions a range (default 4e6)")
    parser.add_argument("--ranges", type=int, default=3, help="ranges a material (default 3)")
    args = parser.parse_args()
    bench_material(Material.parse("1k-1m"), 100, 1)  # compiled or loaded from the cache, untimed
    print(f"{'material':12s} {'positions':>10s} {'unrank each':>12s} {'walk':>8s} {'flags':>8s} {'ratio':>7s}"
          "   (CPU ns a position; ratio: unrank each / walk)")
    for name in args.materials:
        material = Material.parse(name)
        ns = bench_material(material, int(args.positions), args.ranges)
        print(f"{name:12s} {count_positions(material) / 1e9:9.2f}G {ns['unrank each']:12.1f} {ns['walk']:8.1f} "
              f"{ns['flags']:8.1f} {ns['unrank each'] / ns['walk']:6.2f}x")


if __name__ == "__main__":
    main()
