"""Where a table build runs: the local process pool (default) or a Dask cluster.

:func:`egtb.tables.build.build` plans the material pairs and skips complete
files; an executor runs the pairs that are left, each once its dependencies are
finished, and yields each pair's record as it completes. Both executors run the
same function, :func:`egtb.tables.build.build_pair`: load the dependency
tables from the table directory, solve, write each file under a temporary name
and rename it when complete, return a small record (name, counts, checksum,
seconds, start/end time stamps). The files are the same whichever executor
wrote them.

:class:`DaskExecutor` submits a pair to the cluster as a Dask future when its
last dependency has finished (the way the local driver does), largest first.
The client keeps every result, so a worker that dies loses nothing finished:
Dask reruns its running pair elsewhere, which rewrites the same file. A pair
that keeps failing stops the build with a :class:`egtb.errors.SolverError`
naming the material. The workers' log lines come back with each record and go
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from egtb.cluster import ClusterSpec, capture_logs, connect, replay_logs
from egtb.errors import SolverError

__all__ = ["DaskExecutor", "make_executor", "run_pair"]

log = logging.getLogger("egtb.tables.executor")

#: Times Dask retries a pair that raised (a worker that dies is handled by Dask on its own:
#: the pair is rerun elsewhere, up to ``distributed.scheduler.allowed-failures`` deaths).
RETRIES = 1


def make_executor(*, jobs: int | None = None, scheduler: str | None = None,
                  scheduler_file: str | None = None) -> "DaskExecutor | None":
    """The executor for a build: None (the local pool of ``jobs``) or a :class:`DaskExecutor`.

    >>> make_executor(scheduler="tcp://10.0.0.5:8786").spec.scheduler
    'tcp://10.0.0.5:8786'
    """
    spec = ClusterSpec(scheduler=scheduler, scheduler_file=scheduler_file)
    if not spec.given:
        return None
    if jobs is not None:
        log.info("--jobs %d ignored: the Dask workers' threads set the parallelism", jobs)
    return DaskExecutor(spec)


def run_pair(directory: str, pair: Any, dependencies: list, rules: str) -> dict:
    """One pair on a Dask worker: :func:`~egtb.tables.build.build_pair` plus who ran it and its log lines."""
    from egtb.tables.build import build_pair
    with capture_logs("egtb") as lines:
        record = build_pair(Path(directory), pair, dependencies, rules=rules)
    record.update(host=socket.gethostname(), pid=os.getpid(), log=lines)
    return record


def warm_worker() -> dict:
    """Compile (or load from the numba cache) the solver kernels in this worker process."""
    from egtb.tables.build import _warm_up
    start = time.perf_counter()
    _warm_up()
    return {"host": socket.gethostname(), "pid": os.getpid(), "seconds": time.perf_counter() - start}


class DaskExecutor:
    """Run a build's pairs on a Dask cluster; see the module docstring.

    Give a :class:`~egtb.cluster.ClusterSpec` (the executor connects at :meth:`run` and closes
    its client afterwards) or an open ``distributed.Client`` (e.g. of a ``LocalCluster``),
    which stays open.

    >>> DaskExecutor(ClusterSpec(scheduler="tcp://10.0.0.5:8786")).retries
    1
    """

    def __init__(self, spec: ClusterSpec | None = None, *, client: Any = None,
                 retries: int = RETRIES) -> None:
        if (spec is None or not spec.given) and client is None:
            raise ValueError("DaskExecutor needs a scheduler (ClusterSpec) or a client")
        self.spec = spec
        self.client = client
        self.retries = retries
        self.warm_seconds: list[float] = []
        """Seconds each worker took to load or compile the kernels in the last run."""

    def run(self, todo: list, done: set[str], directory: Path, *, rules: str,
            on_progress: Callable[[int, int], None] | None = None) -> Iterator[dict]:
        """Yield the record of each pair of ``todo`` as it completes (dependencies in ``done`` exist)."""
        directory = Path(directory).resolve()
        own = self.client is None
        client = connect(self.spec, directories=[directory]) if own else self.client
        if not own:
            from egtb.cluster import prepare_workers
            prepare_workers(client, directories=[directory])
        try:
            self._warm(client)
            yield from self._schedule(client, todo, done, directory, rules,
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

    def _schedule(self, client: Any, todo: list, done: set[str], directory: Path, rules: str,
                  on_progress: Callable[[int, int], None]) -> Iterator[dict]:
        """Submit ready pairs, collect finished ones, until every pair is done."""
        from distributed import as_completed
        from egtb.tables.build import dependency_materials
        pending = {p.key: p for p in todo}
        done = set(done)
        running: dict[Any, Any] = {}
        completed = as_completed()
        positions = units = 0

        def submit_ready() -> None:
            for pair in _take_ready(pending, done, running):
                future = client.submit(run_pair, str(directory), pair, dependency_materials(pair), rules,
                                       key=f"egtb-pair-{pair.key}-{time.time_ns()}", pure=False,
                                       retries=self.retries, priority=pair.positions)
                running[future] = pair
                completed.add(future)
            if pending and not running:
                raise SolverError(f"pairs {sorted(pending)} wait for dependencies that are neither "
                                  "built nor planned")

        try:
            submit_ready()
            for future in completed:
                pair = running.pop(future)
                record = _result(future, pair)
                future.release()
                replay_logs(record.pop("log", []), log)
                done.add(pair.key)
                positions += record["positions"]
                units += record["units"]
                on_progress(positions, units)
                yield record
                submit_ready()
        finally:
            if running:
                client.cancel(list(running))


def _result(future: Any, pair: Any) -> dict:
    """The record of a finished future; a failure becomes a SolverError naming the material."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - any worker-side failure (or KilledWorker) stops the build
        materials = "/".join(m.name for m in pair.materials)
        raise SolverError(f"building {materials} on the Dask cluster failed: {type(exc).__name__}: {exc}") from exc


def _take_ready(pending: dict, done: set[str], running: dict) -> list:
    """Pending pairs whose dependencies are done, largest first; removed from pending."""
    from egtb.tables.build import _ready
    return _ready(pending, done, running)


def _remove_temporaries(directory: Path) -> list[Path]:
    """Temporaries left by workers that died while writing (nothing runs any more)."""
    from egtb.tables import storage
    return storage.remove_temporaries(directory)
