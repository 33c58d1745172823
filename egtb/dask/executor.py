"""The Dask half of :class:`egtb.executor.Executor`: tasks on the workers of a Dask cluster.

:class:`DaskPool` answers the same :meth:`~DaskPool.run` as the local pool
(:class:`egtb.executor.LocalPool`); a table build and a tournament hand it their
tasks the same way. Here:

- a task is a Dask future; one that waits for others takes their futures (or
  the results of those already collected) as its ``after``, so the scheduler
  starts it on a free worker as soon as the last one has finished, without a
  round trip through the client; the task's ``priority`` is the Dask priority;
- a worker that dies loses nothing finished: Dask reruns its running task
  elsewhere (and a finished one whose result a waiting task still needs); a
  task that raises is retried ``retries`` times, then the run stops with a
  :class:`egtb.errors.TaskError` naming the first task that failed;
- the records a task logs (at the client's level of the run's ``logger``) come
  back with its result and are logged here, with the worker's time stamp, host
  and process;
- ``setup`` runs on every worker, one worker first (e.g. compiling kernels into
  a shared cache that two workers must not fill at the same time);
- each result is collected once, then the future is released, and what is
  still outstanding is cancelled when the consumer stops.

Connecting, checking the workers and the worker plugin are :mod:`egtb.dask.cluster`'s.

>>> DaskPool(ClusterSpec(scheduler="tcp://10.0.0.5:8786")).retries
1
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from egtb.dask.cluster import ClusterSpec, capture_logs, connect, prepare_workers, replay_logs
from egtb.errors import InvalidArgumentError, TaskError
from egtb.executor import Finished, Task, TaskQueue, call_task

__all__ = ["DaskPool", "RETRIES", "make_executor"]

log = logging.getLogger("egtb.dask.executor")

#: Times Dask retries a task that raised (a worker that dies is handled by Dask on its own:
#: the task is rerun elsewhere, up to ``distributed.scheduler.allowed-failures`` deaths).
RETRIES = 1


def make_executor(*, scheduler: str | None = None, scheduler_file: str | None = None) -> "DaskPool | None":
    """The executor a command line asks for: a :class:`DaskPool` on the given cluster, or None
    (the local pool) when no scheduler is given.

    >>> make_executor() is None
    True
    >>> make_executor(scheduler="tcp://10.0.0.5:8786").spec.scheduler
    'tcp://10.0.0.5:8786'
    """
    spec = ClusterSpec(scheduler=scheduler, scheduler_file=scheduler_file)
    return DaskPool(spec) if spec.given else None


class DaskPool:
    """Run tasks on a Dask cluster; see the module docstring.

    Give a :class:`~egtb.dask.cluster.ClusterSpec` (a client is opened for each :meth:`run` and
    closed after it) or an open ``distributed.Client`` (e.g. of a ``LocalCluster``), which stays open.
    """

    remote = True

    def __init__(self, spec: ClusterSpec | None = None, *, client: Any = None,
                 retries: int = RETRIES) -> None:
        if (spec is None or not spec.given) and client is None:
            raise InvalidArgumentError("DaskPool needs a scheduler (ClusterSpec) or a client")
        self.spec = spec
        self.client = client
        self.retries = retries
        self.setup_seconds: list[float] = []
        """Seconds each worker took for the last run's ``setup``."""
        self.workers_seen: set[tuple[str, int]] = set()
        """(host, pid) of the worker processes that finished tasks."""
        self.tasks = 0
        """Tasks finished in the last run."""

    def run(self, tasks: Iterable[Task], *, window: int | None = None,
            limits: Mapping[str, int] | None = None, setup: Callable[[], Any] | None = None,
            directories: Sequence[os.PathLike | str] = (), writable: bool = False,
            logger: str = "", on_wait: Callable[[], None] | None = None) -> Iterator[Finished]:
        """Yield each task as it finishes (see :class:`egtb.executor.Executor`); ``limits`` are
        the workers' own (``dask worker --memory-limit``), so they are not used here."""
        own = self.client is None
        client = (connect(self.spec, directories=directories, writable=writable) if own
                  else self.client)
        try:
            if not own:
                prepare_workers(client, directories=directories, writable=writable)
            if setup is not None:
                self._setup(client, setup)
            yield from self._collect(client, tasks, window=window, logger=logger,
                                     on_wait=on_wait or (lambda: None))
        finally:
            if own:
                client.close()

    def _setup(self, client: Any, setup: Callable[[], Any]) -> None:
        """Run ``setup`` on every worker, one worker first."""
        workers = sorted(client.nthreads())
        first = client.submit(_timed, setup, workers=workers[:1], pure=False, allow_other_workers=True)
        seconds = [first.result()]
        rest = [client.submit(_timed, setup, workers=[w], pure=False, allow_other_workers=True)
                for w in workers[1:]]
        self.setup_seconds = seconds + client.gather(rest)
        log.info("setup done on %d workers in %s s", len(self.setup_seconds),
                 ", ".join(f"{s:.1f}" for s in self.setup_seconds))

    def _collect(self, client: Any, tasks: Iterable[Task], *, window: int | None, logger: str,
                 on_wait: Callable[[], None]) -> Iterator[Finished]:
        from distributed import as_completed
        slots = max(1, sum(client.nthreads().values()))
        queue = TaskQueue(tasks, window=window, slots=slots)
        level = logging.getLogger(logger).getEffectiveLevel()
        futures: dict[str, Any] = {}  # by task key: submitted, not yet collected
        by_future: dict[str, Task] = {}
        completed = as_completed()
        self.tasks = 0

        def submit() -> None:
            queue.take()
            for task in list(queue.waiting):  # in order, each after the tasks it names
                if not all(d in futures or d in queue.results for d in task.after):
                    continue
                after = [futures[d] if d in futures else (queue.results[d],)  # as _call_logged gives it
                         for d in task.after]
                future = client.submit(_call_logged, task.function, task.args, task.kwargs, logger, level,
                                       after if task.after else None,
                                       key=f"{task.key}-{time.time_ns()}", pure=False,
                                       retries=self.retries, priority=task.priority)
                queue.start(task)
                futures[task.key] = future
                by_future[future.key] = task
                completed.add(future)

        try:
            submit()
            for future in completed:
                task = by_future[future.key]
                if future.status == "lost":  # its worker died after it finished: computed again
                    completed.add(future)
                    continue
                if future.status != "finished":  # erred, or cancelled (the scheduler went away)
                    raise _failure(future, by_future, futures)
                result, host, pid, lines = future.result()
                future.release()
                del futures[task.key]
                replay_logs(lines, logging.getLogger(logger))
                queue.finish(task.key, result)
                self.workers_seen.add((host, pid))
                self.tasks += 1
                on_wait()
                yield Finished(task, result, host, pid)
                submit()
            queue.check_stuck(running=0)
        finally:
            if futures:
                client.cancel(list(futures.values()))


def _call_logged(function: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any], logger: str,
                 level: int, after: list[tuple] | None) -> tuple[Any, str, int, list[tuple[int, str]]]:
    """A task on a worker: (result, host, pid, the log lines it emitted at ``level`` or above).

    `after`: what this gave for each task the task waits for (None: it waits for none); their
    results are its ``after``.
    """
    if after is not None:
        kwargs = dict(kwargs, after=[done[0] for done in after])
    with capture_logs(logger, level=level) as lines:
        result, host, pid = call_task(function, args, kwargs)
    return result, host, pid, lines


def _timed(setup: Callable[[], Any]) -> float:
    """Seconds ``setup`` takes in this worker."""
    start = time.perf_counter()
    setup()
    return time.perf_counter() - start


def _failure(future: Any, by_future: dict[str, Task], futures: dict[str, Any]) -> TaskError:
    """A TaskError naming the task that failed first: ``future``'s, or a failed dependency's."""
    task = by_future[future.key]
    failed = next((futures[d] for d in task.after if d in futures and futures[d].status == "error"), None)
    if failed is not None:
        return _failure(failed, by_future, futures)
    where = "on the Dask cluster"
    if future.status != "error":
        return TaskError(f"task {task.key} failed {where}: it was {future.status}", key=task.key)
    exc = future.exception()  # what the task raised, or KilledWorker
    error = TaskError(f"task {task.key} failed {where}: {type(exc).__name__}: {exc}", key=task.key)
    error.__cause__ = exc
    return error
