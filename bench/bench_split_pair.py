"""One large pair split into unit tasks over Dask workers, against one local process, in the same run.

Prints figures, asserts nothing. Each side builds the same pair (default the
largest 6-piece pair, ``1m1k-2m2k``: 217.8 M positions) into its own temporary
directory, beside symlinks to every other finished table of ``--tables``:

- ``local``: ``egtb.builder.build`` with one job (``jobs=1``: in this process);
- ``dask``: a ``LocalCluster`` of ``--workers`` single-threaded worker
  processes on 127.0.0.1, the pair cut into unit tasks
  (``build(executor=DaskPool(...), split_pairs=Split(positions=1))``, :mod:`egtb.builder.split`).

Per side: wall time, CPU seconds of the processes that solved (this one; the Dask
workers), their peak resident memory, and the pair's files'
checksums, which must be the same on both sides and equal those in ``--tables``.

    .venv/bin/python bench/bench_split_pair.py --tables /work/egtb [--pair 1m1k-2m2k] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from egtb.builder import driver as builder, pipeline, plan as planner
from egtb.dask.executor import DaskPool
from egtb.formats import master

from bench_distributed import children_cpu, process_cpu


def tables_but(source: Path, target: Path, pair: planner.Pair) -> None:
    """Symlinks in `target` to every table of `source` but the pair's (and its check record)."""
    own = {master.table_path(source, m).name for m in pair.materials}
    for path in source.glob("*.h5"):
        if path.name not in own:
            (target / path.name).symlink_to(path)
    if (source / master.CheckedFiles.NAME).exists():
        shutil.copy(source / master.CheckedFiles.NAME, target / master.CheckedFiles.NAME)


def pair_checksums(directory: Path, pair: planner.Pair) -> dict[str, int]:
    return {m.name: master.stored_checksums(master.table_path(directory, m))[0] for m in pair.materials}


def run_local(directory: Path, pair: planner.Pair) -> dict:
    cpu = process_cpu() + children_cpu()  # one job runs in this process
    start = time.perf_counter()
    report = builder.build(pair.materials[0].pieces, directory=directory, jobs=1, progress=False)
    wall = time.perf_counter() - start
    record = next(r for r in report.records if r["key"] == pair.key)
    return dict(wall=wall, cpu=process_cpu() + children_cpu() - cpu, peak_mb=[record["peak_rss"] >> 20])


def run_dask(directory: Path, pair: planner.Pair, workers: int) -> dict:
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      scheduler_port=0, dashboard_address=None, memory_limit=0) as cluster, \
            Client(cluster) as client:
        cpu = sum(client.run(process_cpu).values())
        start = time.perf_counter()
        builder.build(pair.materials[0].pieces, directory=directory, progress=False,
                      executor=DaskPool(client=client), split_pairs=builder.Split(positions=1))
        wall = time.perf_counter() - start
        return dict(wall=wall, cpu=sum(client.run(process_cpu).values()) - cpu,
                    peak_mb=sorted(client.run(_peak_mb).values()))


def _peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", required=True, type=Path, help="finished tables (the pair's too)")
    parser.add_argument("--pair", default="1m1k-2m2k")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scratch", default=None, help="where the temporary directories go")
    args = parser.parse_args()
    pieces = sum(int(c) for c in args.pair if c.isdigit())
    pair = next(p for p in planner.plan_pairs(pieces) if p.key == args.pair)
    expected = pair_checksums(args.tables, pair)
    print(f"pair {pair.key}: {pair.positions:,} positions, {len(pipeline.unit_order(pair.materials)):,} units; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    figures = {}
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        for name in ("dask", "local"):  # the workers fork from this process before it grows
            directory = Path(tmp) / name
            directory.mkdir()
            tables_but(args.tables, directory, pair)
            figures[name] = (run_local(directory, pair) if name == "local"
                             else run_dask(directory, pair, args.workers))
            same = pair_checksums(directory, pair) == expected
            f = figures[name]
            print(f"{name:5s}  wall {f['wall']:7.1f} s  CPU {f['cpu']:7.1f} s  peak RSS per process "
                  f"{', '.join(f'{mb:,}' for mb in f['peak_mb'])} MB  files equal to --tables: {same}")
    print(f"dask/local wall {figures['dask']['wall'] / figures['local']['wall']:.2f}x, "
          f"CPU {figures['dask']['cpu'] / figures['local']['cpu']:.2f}x")


if __name__ == "__main__":
    main()
