"""Dask cluster against the local pool, measured in the same run (prints figures, asserts nothing).

Usage:
    .venv/bin/python bench/bench_distributed.py [--pieces 5] [--games 400] [--workers 2]

1. Builds every table up to ``--pieces`` with the local pool (``--workers`` processes)
   and then on a ``LocalCluster`` of ``--workers`` single-threaded worker processes;
   prints both wall times, their ratio (target: Dask within 1.3x) and the
   scheduling overhead: the round trip of an empty task submitted when the
   previous one returned, the median time from a pair's last dependency ending
   to the pair starting (both executors), and the workers' time outside the
   solver per pair.
2. Plays ``--games`` random-mover games with the local pool and on the same
   cluster (after a 20-game warm-up of each); prints games/s of both.

Needs Dask: ``pip install .[distributed]``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from egtb.tables import build as builder
from egtb.tables.executor import DaskExecutor
from tournament.distributed import TARGET_TASK_SECONDS, DaskGames
from tournament.schedule import run_tournament

EMPTY_TASKS = 200


def noop() -> None:
    """An empty task."""


def round_trip_ms(client) -> float:
    """Median milliseconds to submit an empty task and get its result back."""
    times = []
    for _ in range(EMPTY_TASKS):
        start = time.perf_counter()
        client.submit(noop, pure=False).result()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def idle_per_pair(report, wall: float, workers: int) -> float:
    """Seconds per pair the workers were not inside build_pair (dependency waits included)."""
    busy = sum(r["seconds"] for r in report.records)
    return (wall * workers - busy) / max(1, len(report.records))


def process_cpu() -> float:
    """CPU seconds (user + system) of the process this runs in."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    """CPU seconds of this process's finished children (the local pool, once shut down)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def workers_cpu(client) -> float:
    """CPU seconds of the Dask worker processes so far."""
    return sum(client.run(process_cpu).values())


def ready_to_start(report, pieces: int, begin: float) -> list[float]:
    """Per pair: seconds from its last dependency's end (or the build's start) to its own start."""
    records = {r["key"]: r for r in report.records}
    depends = {p.key: p.depends for p in builder.plan_pairs(pieces)}
    return [r["started"] - max([records[d]["finished"] for d in depends[key] if d in records] + [begin])
            for key, r in records.items()]


def timed_build(pieces: int, directory: Path, **kwargs):
    begin = time.time()
    start = time.perf_counter()
    report = builder.build(pieces, directory=directory, progress=False, **kwargs)
    wall = time.perf_counter() - start
    return report, wall, ready_to_start(report, pieces, begin)


def timed_games(games: int, out: Path, **kwargs) -> float:
    start = time.perf_counter()
    result = run_tournament(["random", "random"], out_dir=out, games=games, seed=11, progress=False, **kwargs)
    assert len(result.records) == games
    return games / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", type=int, default=5)
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    root = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    builder._warm_up()
    cpu0 = children_cpu()
    local, local_wall, local_waits = timed_build(args.pieces, root / "local", jobs=args.workers)
    local_cpu = children_cpu() - cpu0
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        executor = DaskExecutor(client=client)
        cpu0 = workers_cpu(client)
        dask, dask_wall, dask_waits = timed_build(args.pieces, root / "dask", executor=executor)
        dask_cpu = workers_cpu(client) - cpu0
        trip = round_trip_ms(client)
        timed_games(20, root / "warm-local", concurrency=args.workers)  # imports, engines
        timed_games(20, root / "warm-dask", executor=DaskGames(client=client))
        local_rate = timed_games(args.games, root / "games-local", concurrency=args.workers)
        games = DaskGames(client=client)
        dask_rate = timed_games(args.games, root / "games-dask", executor=games)
    same = [(r["key"], [t["checksum"] for t in r["tables"]]) for r in local.records]
    identical = sorted(same) == sorted((r["key"], [t["checksum"] for t in r["tables"]]) for r in dask.records)
    pairs = len(dask.records)
    print(f"build up to {args.pieces} pieces, {pairs} pairs, {local.positions:,} positions, "
          f"{args.workers} workers (files identical: {identical})")
    print(f"  local pool   {local_wall:8.1f} s")
    print(f"  Dask cluster {dask_wall:8.1f} s   ratio {dask_wall / local_wall:.2f}x (target <= 1.3x); "
          f"kernel warm-up {max(executor.warm_seconds):.1f} s of it")
    print(f"  workers' CPU: local {local_cpu:.1f} s, Dask {dask_cpu:.1f} s, ratio {dask_cpu / local_cpu:.2f}x "
          "(robust to other load on the machine, unlike the wall times)")
    print(f"  scheduling: empty-task round trip {trip:.1f} ms (median of {EMPTY_TASKS}); "
          f"dependency end -> pair start, median: local {statistics.median(local_waits):.3f} s, "
          f"Dask {statistics.median(dask_waits):.3f} s (includes waiting for a free worker)")
    print(f"  workers' time outside build_pair per pair: local {idle_per_pair(local, local_wall, args.workers):.2f} s, "
          f"Dask {idle_per_pair(dask, dask_wall, args.workers):.2f} s (start-up, DAG waits, scheduling)")
    print(f"tournament, {args.games} random-mover games, {args.workers} workers")
    print(f"  local pool   {local_rate:8.1f} games/s")
    print(f"  Dask cluster {dask_rate:8.1f} games/s   ratio {dask_rate / local_rate:.2f} "
          f"({games.tasks} tasks: batches of pairs adapted to ~{TARGET_TASK_SECONDS} s)")


if __name__ == "__main__":
    main()
