"""Solve one 8-piece unit from the 7-piece tables and print its figures (asserts nothing).

A kings-only pair is a single unit (no men configurations to cut it by), and
its exits lead to 7-piece kings-only tables only, so it can be solved from a
finished 7-piece directory alone. The default, ``1k-7k`` (168.3 M positions),
is the smallest; ``2k-6k`` (589 M), ``4k-4k`` (736 M) and ``3k-5k`` (1.18 G)
are the larger ones (docs/distributed.md plans them). The pair is built with
the 8-piece default contents (:func:`egtb.builder.contents.contents_for`) into
``--out``, beside symlinks to its dependencies in ``--tables``.

    .venv/bin/python bench/measure_eight_unit.py --tables /work/egtb --out /tmp/eight [--pair 1k-7k]

Prints: positions, how it was planned (kernel, in memory or on disk, the
budget's estimate), wall and CPU seconds, CPU µs a position, peak RSS, and
the master files' size in bits a position.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from egtb.builder import budget
from egtb.builder import pipeline, plan as planner
from egtb.builder.contents import contents_for
from egtb.formats import master


def link_dependencies(tables: Path, out: Path, dependencies: list) -> None:
    """Symlinks in `out` to the dependency tables in `tables`."""
    out.mkdir(parents=True, exist_ok=True)
    for material in dependencies:
        link = master.table_path(out, material)
        if not link.exists():
            link.symlink_to(master.table_path(tables, material).resolve())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, required=True, help="finished tables up to 7 pieces")
    parser.add_argument("--out", type=Path, required=True, help="where the 8-piece files go")
    parser.add_argument("--pair", default="1k-7k")
    parser.add_argument("--memory", type=float, default=None, help="GB (default 60%% of RAM)")
    args = parser.parse_args()
    pair = next(p for p in planner.plan_pairs(8, min_pieces=8) if p.key == args.pair)
    dependencies = planner.dependency_materials(pair)
    link_dependencies(args.tables, args.out, dependencies)
    contents = contents_for(8)
    memory = int(args.memory * budget.GB) if args.memory else budget.default_budget()
    plan = budget.plan_pair(pair, dependencies, contents=contents, budget=memory)
    wall, cpu = time.perf_counter(), time.process_time()
    record = pipeline.build_pair(args.out, pair, dependencies, contents=contents, plan=plan)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    size = sum(master.table_path(args.out, m).stat().st_size for m in pair.materials)
    print(json.dumps({
        "pair": pair.key, "positions": pair.positions, "units": record.units,
        "dependencies": [m.name for m in dependencies],
        "kernel": f"regenerating ({plan.per_pass} tables a pass)" if plan.per_pass else "edge-list",
        "on_disk": plan.on_disk, "estimated_gb": round(plan.bytes / budget.GB, 2),
        "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "cpu_us_per_position": round(1e6 * cpu / pair.positions, 3),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "master_bytes": size, "bits_per_position": round(8 * size / pair.positions, 3)}, indent=1))


if __name__ == "__main__":
    main()
