"""The ways a pair can run (egtb.builder.budget), timed on the same pair in one process.

    nice -n 19 .venv/bin/python bench/bench_seven_paths.py --tables DIR 2k-3k 1m1k-1m2k

For each pair (its dependencies must be in DIR; the on-disk run writes its
scratch directory there and removes it): CPU seconds of the edge-list kernel in
memory (the baseline), of the compact kernel in memory, and of the edge-list
kernel on memory-mapped values (load, solve), with the ratios to the baseline,
and a check that all three give the same arrays. CPU seconds of this process,
so the ratios hold on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from egtb.builder.contents import contents_for  # noqa: E402
from egtb.builder import dependency_load, pipeline, plan as planner
from egtb.formats import scratch

CONTENTS = contents_for(7, rules="all", dtw=True)  #: the rule-free table and every layer


def timed(function, *args, **kwargs):
    """(result, CPU seconds)."""
    start = time.process_time()
    result = function(*args, **kwargs)
    return result, time.process_time() - start


def same(a, b) -> bool:
    return all(np.array_equal(getattr(a, n), getattr(b, n)) for n in ("wdl", "dtw", "rcat", "rdtz"))


def bench(directory: Path, pair: planner.Pair) -> dict:
    deps = planner.dependency_materials(pair)
    row = {"pair": pair.key, "positions": pair.positions}
    edges, row["load_s"] = timed(dependency_load.load_dependencies, directory, deps, pair.materials, CONTENTS)
    _, row["edges_s"] = timed(pipeline.solve_pair, pair.materials, edges)
    compact = dependency_load.load_dependencies(directory, deps, pair.materials, CONTENTS)
    _, row["compact_s"] = timed(pipeline.solve_pair, pair.materials, compact, per_pass=CONTENTS.tables)
    wall = time.perf_counter()
    (disk, _, _), row["disk_load_and_solve_s"] = timed(
        pipeline.solve_on_disk, directory, pair, deps, CONTENTS, per_pass=0, progress=None,
        checkpoint_seconds=60)
    row["disk_wall_s"] = time.perf_counter() - wall
    row["identical"] = same(edges, compact) and same(edges, disk)
    del disk
    scratch.remove_scratch(scratch.scratch_dir(directory, pair.key))
    row["compact_ratio"] = row["compact_s"] / row["edges_s"]
    row["disk_ratio"] = row["disk_load_and_solve_s"] / (row["load_s"] + row["edges_s"])
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="+")
    parser.add_argument("--tables", type=Path, required=True)
    args = parser.parse_args()
    pairs = {p.key: p for p in planner.plan_pairs(7)}
    warm = pairs["1k-1m1k"]  # compile both kernels outside the timings
    bench(args.tables, warm)
    for key in args.pairs:
        print(json.dumps(bench(args.tables, pairs[key])), flush=True)


if __name__ == "__main__":
    main()
