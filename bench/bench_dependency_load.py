"""Benchmark reading a compact-native dependency as a pair loads it: its ``.wcdf`` blocks decoded
and its capture positions answered, nanoseconds a position.

Prints figures, never asserts. For each material of ``--materials`` (compact-native, in
``--tables``, the masters its captures reach beside them, as on a directory an 8-piece build
reads), the first ``--chunks`` chunks of :func:`egtb.builder.native.category_chunks` twice in
turn: the baseline answers every capture position by the prober's capture search
(``Tablebase.probe_batch_rule``), the new path from the masters loaded beside the pair's arrays
(:mod:`egtb.builder.dependency_captures`). The two must give the same categories (checked
chunk by chunk). CPU time of this process, so that a busy machine disturbs it less.

    .venv/bin/python bench/bench_dependency_load.py --tables /work/egtb --materials 2m1k-2m2k 3k-2m2k 2m-2m3k
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from pathlib import Path

import numpy as np

from egtb.builder import dependency_load, native
from egtb.builder.contents import LEAN_RULES, contents_for
from egtb.formats.compact.layout import material_counts
from egtb.positions.material import Material


def bench_material(directory: Path, material: Material, chunks: int) -> dict:
    """Seconds of the two paths over the first `chunks` chunks of a material, and what they read."""
    lean = contents_for(material.pieces, rules=LEAN_RULES, dtw=False, native=False)
    start = time.process_time()
    empty = dependency_load.load_dependencies(directory, [], (), lean)
    loaded = dependency_load.capture_tables(directory, dataclasses.replace(empty, dependencies=(material,)))
    beside = time.process_time() - start
    searched, answered = native.category_chunks(directory, material), native.category_chunks(directory, material,
                                                                                          loaded=loaded)
    seconds = {"search": 0.0, "loaded": 0.0}
    positions = captures = 0
    next(answered)  # compiles the kernel (numba's cache) outside the timing; the search's compile likewise
    next(searched)
    for _ in range(chunks):
        a = time.process_time()
        first, by_search = next(searched, (None, None))
        b = time.process_time()
        if first is None:
            break
        _, by_tables = next(answered)
        c = time.process_time()
        if not np.array_equal(by_search, by_tables):
            raise SystemExit(f"{material.name}: the two paths differ in the chunk at {first}")
        seconds["search"] += b - a
        seconds["loaded"] += c - b
        positions += len(by_search)
        captures += len(native.capture_positions(material_counts(material), first, first + len(by_search))[0])
    return dict(seconds, positions=positions, captures=captures, beside=beside,
                beside_positions=len(loaded.below_rdep) * 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, required=True, help="a directory of compact-native tables")
    parser.add_argument("--materials", nargs="+", required=True, help="compact-native materials in it")
    parser.add_argument("--chunks", type=int, default=6, help="chunks of 4 M positions a material (default 6)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; CPU ns a position, search (baseline) -> loaded")
    for name in args.materials:
        r = bench_material(args.tables, Material.parse(name), args.chunks)
        search, loaded = (r[k] / r["positions"] * 1e9 for k in ("search", "loaded"))
        print(f"{name}: {r['positions']:,} positions ({r['captures'] / r['positions']:.1%} must capture), "
              f"{search:.1f} -> {loaded:.1f} ns a position, {search / loaded:.2f}x; the masters beside "
              f"({r['beside_positions'] / 1e6:.0f} M positions) loaded in {r['beside']:.1f} CPU s")


if __name__ == "__main__":
    main()
