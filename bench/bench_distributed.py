"""Dask cluster against the local pool, measured in the same run (prints figures, asserts nothing).

Usage:
    .venv/bin/python bench/bench_distributed.py [--pieces 5] [--games 400] [--workers 2] [--repeats 3]

1. Builds every table up to ``--pieces`` with the local pool (``--workers`` processes)
   and on a ``LocalCluster`` of ``--workers`` single-threaded worker processes,
   ``--repeats`` times, alternating which goes first (the load of a shared
   machine drifts). Per build: wall time, the machine's load average, and CPU
   seconds: inside ``build_pair`` (the solver's thread), of the whole worker
   processes, and of the coordinating process (the local pool's parent; for
   Dask the client, with the LocalCluster's scheduler and nannies in it).
   Then the ratios (target: Dask within 1.3x of the local wall time) and the
   scheduling overhead: an empty task's round trip, the median time from a
   pair's last dependency ending to the pair starting, and the workers' time
   outside ``build_pair`` per pair.
2. Plays ``--games`` random-mover games with the local pool and on the same
   cluster, ``--repeats`` times alternating (after a 20-game warm-up of each);
   prints games/s of both and their ratio.

CPU seconds are robust to other load on the machine; wall times are not.
Needs Dask: ``pip install .[distributed]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from egtb.builder import driver as builder, pipeline, plan as planner
from egtb.dask.executor import DaskPool
from tournament.batches import TARGET_TASK_SECONDS
from tournament.config import TournamentConfig
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


def process_cpu() -> float:
    """CPU seconds (user + system) of the process this runs in."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    """CPU seconds of this process's finished children (the local pool, once shut down)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ready_to_start(report, pieces: int, begin: float) -> list[float]:
    """Per pair: seconds from its last dependency's end (or the build's start) to its own start."""
    records = {r["key"]: r for r in report.records}
    depends = {p.key: p.depends for p in planner.plan_pairs(pieces)}
    return [r["started"] - max([records[d]["finished"] for d in depends[key] if d in records] + [begin])
            for key, r in records.items()]


class Run:
    """One build's figures."""

    def __init__(self, name: str, pieces: int, directory: Path, workers_cpu, **kwargs) -> None:
        self.load = os.getloadavg()[0]
        cpu0, own0, begin, start = workers_cpu(), process_cpu(), time.time(), time.perf_counter()
        self.report = builder.build(pieces, directory=directory, progress=False, **kwargs)
        self.wall = time.perf_counter() - start
        self.workers_cpu = workers_cpu() - cpu0
        self.own_cpu = process_cpu() - own0
        self.name = name
        self.solver_cpu = sum(r["cpu_seconds"] for r in self.report.records)
        self.waits = ready_to_start(self.report, pieces, begin)
        self.busy = sum(r["seconds"] for r in self.report.records)

    def idle_per_pair(self, workers: int) -> float:
        """Seconds per pair the workers were not inside build_pair (start-up, DAG waits, scheduling)."""
        return (self.wall * workers - self.busy) / max(1, len(self.report.records))

    def checksums(self) -> list:
        return sorted((r["key"], [t["checksum"] for t in r["tables"]]) for r in self.report.records)

    def line(self) -> str:
        return (f"{self.name:5s} wall {self.wall:7.1f} s  CPU: build_pair {self.solver_cpu:6.1f} s, "
                f"worker processes {self.workers_cpu:6.1f} s, coordinator {self.own_cpu:5.1f} s  "
                f"(load average {self.load:.1f})")


def timed_games(games: int, out: Path, **kwargs) -> float:
    start = time.perf_counter()
    config = TournamentConfig(("random", "random"), games=games, seed=11)
    result = run_tournament(config, out_dir=out, progress=False, **kwargs)
    assert len(result.records) == games
    return games / (time.perf_counter() - start)


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", type=int, default=5)
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from distributed import Client, LocalCluster

    root = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    pipeline.warm_up()
    runs: dict[str, list[Run]] = {"local": [], "dask": []}
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        executor = DaskPool(client=client)

        def workers_cpu() -> float:
            return sum(client.run(process_cpu).values())

        print(f"build up to {args.pieces} pieces, {args.workers} workers, {args.repeats} repeats "
              f"(alternating which goes first)", flush=True)
        for repeat in range(args.repeats):
            order = ["local", "dask"] if repeat % 2 == 0 else ["dask", "local"]
            for name in order:
                directory = root / f"{name}-{repeat}"
                if name == "local":
                    run = Run(name, args.pieces, directory, children_cpu, jobs=args.workers)
                else:
                    run = Run(name, args.pieces, directory, workers_cpu, executor=executor)
                runs[name].append(run)
                print(f"  {repeat + 1}: {run.line()}", flush=True)
        trip = round_trip_ms(client)
        warm = max(executor.setup_seconds)
        timed_games(20, root / "warm-local", concurrency=args.workers)  # imports, engines
        timed_games(20, root / "warm-dask", executor=DaskPool(client=client))
        rates: dict[str, list[float]] = {"local": [], "dask": []}
        games = DaskPool(client=client)
        for repeat in range(args.repeats):
            for name in (["local", "dask"] if repeat % 2 == 0 else ["dask", "local"]):
                out = root / f"games-{name}-{repeat}"
                if name == "local":
                    rates[name].append(timed_games(args.games, out, concurrency=args.workers))
                else:
                    rates[name].append(timed_games(args.games, out, executor=games))

    local, dask = runs["local"], runs["dask"]
    identical = all(r.checksums() == local[0].checksums() for r in local + dask)
    print(f"{len(local[0].report.records)} pairs, {local[0].report.positions:,} positions, "
          f"files identical in every run: {identical}")
    print(f"  wall ratio Dask/local per repeat {[round(d.wall / l.wall, 2) for l, d in zip(local, dask)]}, "
          f"{spread([d.wall / l.wall for l, d in zip(local, dask)])} (target <= 1.3)")
    total = [(d.workers_cpu + d.own_cpu) / (l.workers_cpu + l.own_cpu) for l, d in zip(local, dask)]
    print(f"  CPU ratio Dask/local, everything: {spread(total)}; in build_pair: "
          f"{spread([d.solver_cpu / l.solver_cpu for l, d in zip(local, dask)])}")
    print(f"  scheduling: empty-task round trip {trip:.1f} ms (median of {EMPTY_TASKS}); kernel warm-up "
          f"{warm:.1f} s; dependency end -> pair start, median: local "
          f"{statistics.median([w for r in local for w in r.waits]):.3f} s, Dask "
          f"{statistics.median([w for r in dask for w in r.waits]):.3f} s (includes waiting for a free worker)")
    print(f"  workers' time outside build_pair per pair: local "
          f"{statistics.median([r.idle_per_pair(args.workers) for r in local]):.2f} s, Dask "
          f"{statistics.median([r.idle_per_pair(args.workers) for r in dask]):.2f} s (start-up, DAG waits, scheduling)")
    print(f"tournament, {args.games} random-mover games, {args.workers} workers "
          f"({games.tasks} tasks in the last Dask run: batches of pairs adapted to ~{TARGET_TASK_SECONDS} s)")
    print(f"  local pool   games/s {[round(r, 1) for r in rates['local']]}")
    print(f"  Dask cluster games/s {[round(r, 1) for r in rates['dask']]}")
    print(f"  ratio Dask/local per repeat {[round(d / l, 2) for l, d in zip(rates['local'], rates['dask'])]}, "
          f"{spread([d / l for l, d in zip(rates['local'], rates['dask'])])}")


if __name__ == "__main__":
    main()
