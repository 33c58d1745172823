"""Where a table build runs: the local process pool (default) or a Dask cluster.

:func:`egtb.build.driver.build` plans the material pairs and skips complete
files; an executor runs the pairs that are left, each once its dependencies are
finished, and yields each pair's record as it completes. Both executors run the
same function, :func:`egtb.build.driver.build_pair`: load the dependency
tables from the table directory, solve, write each file under a temporary name
and rename it when complete, return a small record (name, counts, checksum,
seconds, start/end time stamps). The files are the same whichever executor
wrote them.

:class:`DaskExecutor` submits the whole dependency graph at once: each pair is
a Dask future that takes the futures of the pairs it depends on as arguments,
so the scheduler starts a pair on a free worker as soon as its last dependency
has finished, without a round trip through the client; among ready pairs the
one with the longest chain of dependants goes first (the task priority, as in
the local pool: :func:`egtb.build.driver.longest_chains`). The client collects each record once,
as it completes. A worker that dies loses nothing finished: Dask reruns its
running pair elsewhere (and a finished pair whose record it held, when a pair
still waiting needs it), which rewrites the same file. A pair that keeps
failing stops the build with a :class:`egtb.errors.SolverError` naming the
material. The workers' log lines come back with each record and go
to the build log; the tqdm bars run in the client. Before the first pair, each
worker compiles (or loads) the numba kernels, one worker first, so that
workers sharing a cache directory never compile into it at the same time.
docs/distributed.md covers deployment, shared storage and HDF5 locking.

>>> make_executor(jobs=2) is None
True
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from egtb.dask.cluster import ClusterSpec, capture_logs, connect, replay_logs
from egtb.errors import SolverError

__all__ = ["DaskExecutor", "make_executor", "run_pair"]

log = logging.getLogger("egtb.build.executor")

#: Pairs of this many positions or more spread over the workers as unit tasks, by default:
#: the largest of those the local pool runs on disk (:data:`egtb.build.budget.CHECKPOINTED_POSITIONS`).
SPLIT_POSITIONS = 1 << 30

#: Times Dask retries a pair that raised (a worker that dies is handled by Dask on its own:
#: the pair is rerun elsewhere, up to ``distributed.scheduler.allowed-failures`` deaths).
RETRIES = 1


def make_executor(*, jobs: int | None = None, scheduler: str | None = None,
                  scheduler_file: str | None = None,
                  split_positions: int | None = None) -> "DaskExecutor | None":
    """The executor for a build: None (the local pool of ``jobs``) or a :class:`DaskExecutor`.

    >>> make_executor(scheduler="tcp://10.0.0.5:8786").spec.scheduler
    'tcp://10.0.0.5:8786'
    """
    spec = ClusterSpec(scheduler=scheduler, scheduler_file=scheduler_file)
    if not spec.given:
        return None
    if jobs is not None:
        log.info("--jobs %d ignored: the Dask workers' threads set the parallelism", jobs)
    if split_positions is None:
        return DaskExecutor(spec)
    return DaskExecutor(spec, split_positions=split_positions)


def run_pair(directory: str, pair: Any, dependencies: list, rules: str | tuple,
             dtw: bool | None = None, after: Sequence = ()) -> dict:
    """One pair on a Dask worker: :func:`~egtb.build.driver.build_pair` plus who ran it and its log lines.

    ``after``: the records of the pairs this one depends on, unused: given as futures, they make
    the scheduler start this pair only once they are finished.
    """
    from egtb.build.driver import build_pair
    with capture_logs("egtb") as lines:
        record = build_pair(Path(directory), pair, dependencies, rules=rules, dtw=dtw)
    record.update(host=socket.gethostname(), pid=os.getpid(), log=lines)
    return record


def _prepare(directory: str, pair: Any, dependencies: list, contents: Any,
             after: Sequence = ()) -> int:
    """The first task of a split pair (:func:`egtb.build.split.prepare`); ``after``: the pairs
    it depends on (unused: as futures they order the tasks)."""
    from egtb.build import split
    return split.prepare(directory, pair, dependencies, contents)


def _solve_range(directory: str, pair: Any, dependencies: list, contents: Any, first: int,
                 last: int, wave_first: int, per_pass: int, after: Sequence = ()) -> dict:
    """A unit task on a Dask worker (:func:`egtb.build.split.solve_range`); ``after``: the tasks
    of the wave before (unused: as futures they order the tasks)."""
    from egtb.build import split
    return split.solve_range(directory, pair, dependencies, contents, first, last,
                             wave_first=wave_first, per_pass=per_pass)


def _finish(directory: str, pair: Any, dependencies: list, contents: Any, started: float,
            tasks: Sequence) -> dict:
    """The last task of a split pair (:func:`egtb.build.split.finish`), with its log lines."""
    from egtb.build import split
    with capture_logs("egtb") as lines:
        record = split.finish(directory, pair, dependencies, contents, started=started,
                              tasks=list(tasks))
    record.update(host=socket.gethostname(), pid=os.getpid(), log=lines)
    return record


def warm_worker() -> dict:
    """Compile (or load from the numba cache) the solver kernels in this worker process."""
    from egtb.build.driver import _warm_up
    start = time.perf_counter()
    _warm_up()
    return {"host": socket.gethostname(), "pid": os.getpid(), "seconds": time.perf_counter() - start}


class DaskExecutor:
    """Run a build's pairs on a Dask cluster; see the module docstring.

    Give a :class:`~egtb.dask.cluster.ClusterSpec` (the executor connects at :meth:`run` and closes
    its client afterwards) or an open ``distributed.Client`` (e.g. of a ``LocalCluster``),
    which stays open.

    >>> DaskExecutor(ClusterSpec(scheduler="tcp://10.0.0.5:8786")).retries
    1
    """

    def __init__(self, spec: ClusterSpec | None = None, *, client: Any = None,
                 retries: int = RETRIES, split_positions: int = SPLIT_POSITIONS,
                 task_positions: int | None = None) -> None:
        if (spec is None or not spec.given) and client is None:
            raise ValueError("DaskExecutor needs a scheduler (ClusterSpec) or a client")
        self.spec = spec
        self.client = client
        self.retries = retries
        self.split_positions = split_positions
        """Pairs of this many positions or more run as unit tasks (:mod:`egtb.build.split`)."""
        self.task_positions = task_positions
        """Positions a unit task solves, about (None: :data:`egtb.build.split.TASK_POSITIONS`)."""
        self.warm_seconds: list[float] = []
        """Seconds each worker took to load or compile the kernels in the last run."""

    def run(self, todo: list, done: set[str], directory: Path, *, rules: str | tuple,
            dtw: bool | None = None,
            on_progress: Callable[[int, int], None] | None = None) -> Iterator[dict]:
        """Yield the record of each pair of ``todo`` as it completes (dependencies in ``done`` exist)."""
        directory = Path(directory).resolve()
        own = self.client is None
        client = connect(self.spec, directories=[directory]) if own else self.client
        if not own:
            from egtb.dask.cluster import prepare_workers
            prepare_workers(client, directories=[directory])
        try:
            self._warm(client)
            yield from self._schedule(client, todo, done, directory, (rules, dtw),
                                      on_progress or (lambda positions, units: None))
        finally:
            if own:
                client.close()
        removed = [p.name for p in _remove_temporaries(directory)]
        if removed:
            log.info("removed unfinished files of workers that died: %s", removed)

    def _warm(self, client: Any) -> None:
        """Load the kernels on every worker, one worker first (it fills a cold shared cache)."""
        workers = sorted(client.nthreads())
        first = client.submit(warm_worker, workers=workers[:1], pure=False, allow_other_workers=True)
        facts = [first.result()]
        rest = [client.submit(warm_worker, workers=[w], pure=False, allow_other_workers=True)
                for w in workers[1:]]
        facts += client.gather(rest)
        self.warm_seconds = [f["seconds"] for f in facts]
        log.info("kernels ready on %d workers in %s s", len(facts),
                 ", ".join(f"{s:.1f}" for s in self.warm_seconds))

    def _schedule(self, client: Any, todo: list, done: set[str], directory: Path, options: tuple,
                  on_progress: Callable[[int, int], None]) -> Iterator[dict]:
        """Submit the dependency graph, yield each pair's record as it completes.

        `options`: the build's (rules, dtw), given to each pair (:func:`run_pair`).
        """
        from distributed import as_completed
        futures = self._submit_graph(client, todo, done, directory, options)
        pairs = {future.key: pair for pair, future, _ in futures.values()}
        depends = {future.key: after for _, future, after in futures.values()}
        remaining = {future.key: future for _, future, _ in futures.values()}
        positions = units = 0
        try:
            for future in as_completed(list(remaining.values())):
                if future.status != "finished":  # erred, or cancelled (e.g. the scheduler went away)
                    raise _failure(future, pairs, depends)
                record = future.result()
                del remaining[future.key]
                future.release()
                replay_logs(record.pop("log", []), log)
                positions += record["positions"]
                units += record["units"]
                on_progress(positions, units)
                yield record
        finally:
            if remaining:
                client.cancel(list(remaining.values()))

    def _submit_graph(self, client: Any, todo: list, done: set[str], directory: Path,
                      options: tuple) -> dict[str, tuple[Any, Any, list]]:
        """Submit every pair of ``todo`` with its dependencies' futures: key -> (pair, future, those futures)."""
        from egtb.build.driver import dependency_materials, longest_chains
        submitted: dict[str, tuple[Any, Any, list]] = {}
        chains = longest_chains(todo)
        for pair in _dependency_order(todo, done):
            after = [submitted[d][1] for d in sorted(pair.depends) if d in submitted]
            if pair.positions >= self.split_positions:
                future = self._submit_split(client, pair, directory, options, after,
                                            priority=chains[pair.key])
            else:
                future = client.submit(run_pair, str(directory), pair, dependency_materials(pair),
                                       *options, after, key=f"egtb-pair-{pair.key}-{time.time_ns()}",
                                       pure=False, retries=self.retries, priority=chains[pair.key])
            submitted[pair.key] = (pair, future, after)
        return submitted

    def _submit_split(self, client: Any, pair: Any, directory: Path, options: tuple, after: list,
                      *, priority: int) -> Any:
        """Submit a pair as unit tasks (:mod:`egtb.build.split`); the future of its last task
        (which writes the files and returns the pair's record)."""
        from egtb.build import split
        from egtb.build.budget import default_budget, plan_pair
        from egtb.build.driver import contents_of, dependency_materials
        rules, dtw = options
        contents = contents_of(pair, rules=rules, dtw=dtw)
        dependencies = dependency_materials(pair)
        per_pass = plan_pair(pair, dependencies, contents=contents, budget=default_budget(),
                             on_disk=True).per_pass
        stamp = time.time_ns()
        common = {"pure": False, "retries": self.retries, "priority": priority}
        ready = client.submit(_prepare, str(directory), pair, dependencies, contents, after,
                              key=f"egtb-prepare-{pair.key}-{stamp}", **common)
        previous, every = [ready], []
        tasks = split.wave_tasks(pair, **({"positions": self.task_positions}
                                          if self.task_positions else {}))
        for wave, ranges in enumerate(tasks):
            previous = [client.submit(_solve_range, str(directory), pair, dependencies, contents,
                                      first, last, ranges[0][0], per_pass, previous,
                                      key=f"egtb-units-{pair.key}-{first}-{stamp}", **common)
                        for first, last in ranges]
            every += previous
        return client.submit(_finish, str(directory), pair, dependencies, contents, stamp / 1e9,
                             every, key=f"egtb-pair-{pair.key}-{stamp}", **common)


def _dependency_order(todo: list, done: set[str]) -> list:
    """The pairs of ``todo``, each after the pairs it depends on (those in ``done`` exist already)."""
    pending = {p.key: p for p in todo}
    order: list = []
    placed = set(done)
    while pending:
        ready = [p for p in pending.values() if p.depends <= placed]
        if not ready:
            raise SolverError(f"pairs {sorted(pending)} wait for dependencies that are neither "
                              "built nor planned")
        for pair in ready:
            order.append(pair)
            placed.add(pair.key)
            del pending[pair.key]
    return order


def _failure(future: Any, pairs: dict, depends: dict) -> SolverError:
    """A SolverError naming the pair that failed first: ``future``'s, or a failed dependency's."""
    failed = next((dep for dep in depends[future.key] if dep.status == "error"), None)
    if failed is not None:
        return _failure(failed, pairs, depends)
    materials = "/".join(m.name for m in pairs[future.key].materials)
    if future.status != "error":
        return SolverError(f"building {materials} on the Dask cluster failed: its task was {future.status}")
    exc = future.exception()  # any worker-side failure, or KilledWorker
    error = SolverError(f"building {materials} on the Dask cluster failed: {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def _remove_temporaries(directory: Path) -> list[Path]:
    """Temporaries left by workers that died while writing (nothing runs any more)."""
    from egtb.formats import master
    return master.remove_temporaries(directory)
