"""Benchmark reading a compact-native dependency as a pair loads it: its ``.wcdf`` blocks decoded
and its capture positions answered, nanoseconds a position.

Prints figures, never asserts. For each material of ``--materials`` (compact-native, in
``--tables``, the masters its captures reach beside them, as on a directory an 8-piece build
reads), the first ``--chunks`` chunks of :func:`egtb.builder.native.category_chunks` twice in
turn: the baseline answers every capture position by the prober's capture search
(``Tablebase.probe_batch_rule``), the second path from the masters loaded beside the pair's arrays
(:mod:`egtb.builder.dependency_captures`), the third the same but only the capture positions a
crowning reaches (``crowned_only``: what a pair of the dependency's piece count reads of it).
The first two must give the same categories, the third the same wherever it answers (checked
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
    paths = {"search": native.category_chunks(directory, material),
             "loaded": native.category_chunks(directory, material, loaded=loaded),
             "crowned": native.category_chunks(directory, material, loaded=loaded, crowned_only=True)}
    seconds = dict.fromkeys(paths, 0.0)
    positions = captures = reached_count = 0
    for chunks_of in paths.values():
        next(chunks_of)  # compiles the kernels (numba's cache) outside the timing
    for _ in range(chunks):
        got = {}
        for name, chunks_of in paths.items():
            start = time.process_time()
            got[name] = next(chunks_of, (None, None))
            seconds[name] += time.process_time() - start
        first, by_search = got["search"]
        if first is None:
            break
        at = native.capture_positions(material_counts(material), first, first + len(by_search))[0]
        reached = native.capture_positions(material_counts(material), first, first + len(by_search),
                                           crowned_only=True)[0]
        if not np.array_equal(by_search, got["loaded"][1]):
            raise SystemExit(f"{material.name}: the search and the loaded tables differ in the chunk at {first}")
        differ = np.flatnonzero(by_search != got["crowned"][1]) + first
        if np.isin(differ, reached).any() or not np.isin(differ, at).all():
            raise SystemExit(f"{material.name}: the crowned-only read differs where it answers, chunk at {first}")
        positions += len(by_search)
        captures += len(at)
        reached_count += len(reached)
    return dict(seconds, positions=positions, captures=captures, reached=reached_count, beside=beside,
                beside_positions=len(loaded.below_rdep) * 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, required=True, help="a directory of compact-native tables")
    parser.add_argument("--materials", nargs="+", required=True, help="compact-native materials in it")
    parser.add_argument("--chunks", type=int, default=6, help="chunks of 4 M positions a material (default 6)")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; CPU ns a position, search (baseline) -> loaded -> crowned only")
    for name in args.materials:
        r = bench_material(args.tables, Material.parse(name), args.chunks)
        search, loaded, crowned = (r[k] / r["positions"] * 1e9 for k in ("search", "loaded", "crowned"))
        print(f"{name}: {r['positions']:,} positions ({r['captures'] / r['positions']:.1%} must capture, "
              f"{r['reached'] / r['positions']:.1%} with a crowned king), {search:.1f} -> {loaded:.1f} "
              f"-> {crowned:.1f} ns a position, {search / loaded:.2f}x then {loaded / crowned:.2f}x; the masters "
              f"beside ({r['beside_positions'] / 1e6:.0f} M positions) loaded in {r['beside']:.1f} CPU s")


if __name__ == "__main__":
    main()
