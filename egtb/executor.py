"""Where work runs: one interface, :class:`Executor`, for table builds and tournament games.

A run is a stream of :class:`Task` values (a function, its arguments, the
tasks it waits for); :meth:`Executor.run` yields a :class:`Finished` value per
task as it completes, in completion order. Two executors answer it:

- :class:`LocalPool` (here): ``jobs`` worker processes forked from this one
  (or this process alone for one job); a task may also name the costs it
  takes while it runs (bytes of memory, of disk) and what it holds until a later
  task ends, and starts only while the running tasks' costs, what is held and
  its own fit the run's ``limits`` (or, when nothing runs, alone);
- :class:`egtb.dask.executor.DaskPool`: the workers of a Dask cluster.

Whatever the executor, a run

- starts a task only once the tasks it names in ``after`` have finished, and
  hands it their results (keyword ``after``, a list in that order); among
  ready tasks the highest ``priority`` goes first;
- takes tasks from the stream as it needs them: with ``window`` n it keeps
  at most n tasks per worker slot (process or thread) taken and not yet
  yielded, so a producer may size the next task from the last results (and
  an early stop wastes little); ``window=None`` takes them all at once (tasks
  with ``after`` need that, or must name tasks still outstanding);
- runs ``setup`` in every worker process before its first task (the local
  pool runs it once, in this process, and forks the workers after it);
- raises :class:`egtb.errors.TaskError` naming the first task that failed
  (the task's exception is its ``__cause__``), after stopping the others;
- stops every worker's task when the consumer stops early (closes the
  iterator, Ctrl-C): the local workers are killed, the cluster's futures
  cancelled. Each local worker dies with this process too.

>>> tasks = [Task("a", pow, (2, 10)), Task("b", max, (3, 4))]
>>> sorted((done.task.key, done.result) for done in LocalPool(1).run(tasks))
[('a', 1024), ('b', 4)]
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any, NamedTuple, Protocol

from egtb.errors import InvalidArgumentError, TaskError

__all__ = ["Executor", "Finished", "LocalPool", "POLL_SECONDS", "Task", "TaskQueue", "call_task"]

log = logging.getLogger("egtb.executor")

#: Seconds between two calls of a run's ``on_wait`` while the local pool waits for a task.
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Task:
    """One call to run somewhere: ``function(*args, **kwargs)``, plus ``after=[results]`` when it
    waits for other tasks. The function and its arguments must pickle (a module-level function).

    >>> Task("pair-1k-1k", print, ("solving",), priority=3).after
    ()
    """

    key: str
    """Unique within a run; names the task in errors (and on the cluster's dashboard)."""
    function: Callable[..., Any]
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    after: tuple[str, ...] = ()
    """Keys of the tasks of the same run this one waits for; their results are its ``after``."""
    priority: int = 0
    """Among ready tasks the highest goes first."""
    costs: Mapping[str, int] = field(default_factory=dict)
    """What it takes while it runs, by name (e.g. ``{"memory": bytes}``), against the run's ``limits``
    (the local pool; a cluster's workers have their own limits)."""
    holds: Mapping[str, int] = field(default_factory=dict)
    """What it takes from its start until the task ``held_until`` finishes (e.g. the scratch files
    of a pair split into tasks, made by its first task and removed by its last), against the
    same limits."""
    held_until: str = ""
    """The key of the task whose end releases ``holds``."""


class Finished(NamedTuple):
    """A task that completed: the task, what its function returned, and the worker that ran it."""

    task: Task
    result: Any
    host: str
    pid: int


class Executor(Protocol):
    """What runs a stream of tasks: :class:`LocalPool` or :class:`egtb.dask.executor.DaskPool`."""

    remote: bool
    """True when tasks run on other machines (they share only files, and need no live progress)."""

    def run(self, tasks: Iterable[Task], *, window: int | None = None,
            limits: Mapping[str, int] | None = None, setup: Callable[[], Any] | None = None,
            directories: Sequence[os.PathLike | str] = (), writable: bool = False,
            logger: str = "", on_wait: Callable[[], None] | None = None) -> Iterator[Finished]:
        """Yield each task as it finishes; see the module docstring.

        ``directories``: what every worker must see (``writable``: and write), checked before
        any task. ``logger``: the logger whose records of the workers reach this process's
        handlers. ``on_wait``: called while tasks run (the local pool: about every
        :data:`POLL_SECONDS`) and after each task.
        """
        ...


def call_task(function: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]
              ) -> tuple[Any, str, int]:
    """Run a task's function in a worker: (its result, the host, the process id).

    >>> call_task(divmod, (7, 2), {})[0]
    (3, 1)
    """
    return function(*args, **kwargs), socket.gethostname(), os.getpid()


class TaskQueue:
    """The bookkeeping both executors share: tasks taken from the stream, their dependencies,
    the results waiting tasks still need.

    >>> queue = TaskQueue([Task("a", abs, (-1,)), Task("b", abs, (-2,), after=("a",))], window=None, slots=1)
    >>> [t.key for t in queue.take()], [t.key for t in queue.ready()]
    (['a', 'b'], ['a'])
    >>> queue.start(queue.ready()[0]); queue.finish("a", 1); [t.key for t in queue.ready()]
    ['b']
    """

    def __init__(self, tasks: Iterable[Task], *, window: int | None, slots: int) -> None:
        self._stream = iter(tasks)
        self._limit = None if window is None else max(1, window * slots)
        self.waiting: list[Task] = []
        """Taken, not started, in the order taken."""
        self.outstanding: set[str] = set()
        """Taken and not yet finished."""
        self.results: dict[str, Any] = {}
        """Finished tasks' results that a waiting task may still need."""
        self.exhausted = False

    def take(self) -> list[Task]:
        """Take tasks from the stream up to the window; the tasks taken."""
        taken = []
        while not self.exhausted and (self._limit is None or len(self.outstanding) < self._limit):
            task = next(self._stream, None)
            if task is None:
                self.exhausted = True
                break
            if task.key in self.outstanding or task.key in self.results:
                raise InvalidArgumentError(f"two tasks of one run have the key {task.key!r}")
            self.waiting.append(task)
            self.outstanding.add(task.key)
            taken.append(task)
        return taken

    def ready(self) -> list[Task]:
        """Waiting tasks whose dependencies have finished, highest priority first."""
        ready = [t for t in self.waiting if all(d in self.results for d in t.after)]
        return sorted(ready, key=lambda t: -t.priority)

    def start(self, task: Task) -> None:
        self.waiting.remove(task)

    def finish(self, key: str, result: Any) -> None:
        self.outstanding.discard(key)
        self.results[key] = result

    def inputs(self, task: Task) -> dict[str, Any]:
        """The task's keyword arguments, with its dependencies' results as ``after``."""
        return dict(task.kwargs, after=[self.results[d] for d in task.after]) if task.after \
            else dict(task.kwargs)

    def check_stuck(self, running: int) -> None:
        """Raise when tasks wait for dependencies that will never finish."""
        if running == 0 and self.exhausted and self.waiting:
            known = self.outstanding | set(self.results)
            missing = sorted({d for t in self.waiting for d in t.after} - known)
            raise InvalidArgumentError(f"tasks {[t.key for t in self.waiting]} wait for tasks that are not "
                             f"in the run ({missing})" if missing else
                             f"tasks {[t.key for t in self.waiting]} wait for one another")


class LocalPool:
    """Run tasks in ``jobs`` worker processes forked from this one (1: in this process).

    ``initializer(*initargs)`` runs in every process that runs tasks before its first
    (this one when ``jobs`` is 1), e.g. to take a slot of shared counters.

    >>> LocalPool(2).jobs, LocalPool(2).remote
    (2, False)
    """

    remote = False

    def __init__(self, jobs: int | None = None, *, initializer: Callable[..., Any] | None = None,
                 initargs: tuple = ()) -> None:
        self.jobs = jobs or os.cpu_count() or 1
        self.initializer = initializer
        self.initargs = initargs

    def run(self, tasks: Iterable[Task], *, window: int | None = None,
            limits: Mapping[str, int] | None = None, setup: Callable[[], Any] | None = None,
            directories: Sequence[os.PathLike | str] = (), writable: bool = False,
            logger: str = "", on_wait: Callable[[], None] | None = None) -> Iterator[Finished]:
        """Yield each task as it finishes (see :class:`Executor`); the directories are this
        machine's, so they are not checked."""
        queue = TaskQueue(tasks, window=window, slots=self.jobs)
        on_wait = on_wait or (lambda: None)
        if setup is not None:
            setup()
        if self.jobs == 1:
            yield from self._run_here(queue, on_wait)
        else:
            with _forwarded_logs(logger):
                yield from self._run_forked(queue, dict(limits or {}), on_wait)

    def _run_here(self, queue: TaskQueue, on_wait: Callable[[], None]) -> Iterator[Finished]:
        if self.initializer is not None:
            self.initializer(*self.initargs)
        while True:
            queue.take()
            ready = queue.ready()
            if not ready:
                queue.check_stuck(running=0)
                return
            task = ready[0]
            queue.start(task)
            try:
                result, host, pid = call_task(task.function, task.args, queue.inputs(task))
            except Exception as exc:
                raise _failure(task, exc) from exc
            queue.finish(task.key, result)
            on_wait()
            yield Finished(task, result, host, pid)

    def _run_forked(self, queue: TaskQueue, limits: dict[str, int],
                    on_wait: Callable[[], None]) -> Iterator[Finished]:
        pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=get_context("fork"),
                                   initializer=_init_worker, initargs=(self.initializer, self.initargs))
        running: dict[Any, Task] = {}
        held: dict[str, Mapping[str, int]] = {}  # by the key of the task that releases it
        try:
            while True:
                queue.take()
                ready = queue.ready()
                task = _first_fitting(ready, running.values(), held.values(), limits)
                if task is None and not running and ready:
                    task = ready[0]  # nothing fits beside what is held: the first alone
                while task is not None and len(running) < self.jobs:
                    future = pool.submit(call_task, task.function, task.args, queue.inputs(task))
                    queue.start(task)
                    running[future] = task
                    if task.holds:
                        held[task.held_until] = task.holds
                    task = _first_fitting(queue.ready(), running.values(), held.values(), limits)
                if not running:
                    queue.check_stuck(running=0)
                    return
                finished, _ = wait(running, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                on_wait()
                for future in finished:
                    task = running.pop(future)
                    try:
                        result, host, pid = future.result()
                    except Exception as exc:  # the task raised, or its worker died
                        raise _failure(task, exc) from exc
                    queue.finish(task.key, result)
                    held.pop(task.key, None)
                    yield Finished(task, result, host, pid)
        except BaseException:
            _kill_workers(pool)  # a failed task, Ctrl-C or an early stop: stop now
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _first_fitting(ready: list[Task], running: Iterable[Task], held: Iterable[Mapping[str, int]],
                   limits: Mapping[str, int]) -> Task | None:
    """The first of the `ready` tasks that fits (:func:`_fits`), or None."""
    running, held = list(running), list(held)
    return next((t for t in ready if _fits(t, running, held, limits)), None)


def _fits(task: Task, running: Iterable[Task], held: Iterable[Mapping[str, int]],
          limits: Mapping[str, int]) -> bool:
    """Whether ``task`` (its costs and holds) fits the limits beside the running tasks' costs and
    what is held.

    >>> _fits(Task("b", abs, costs={"memory": 3}), [Task("a", abs, costs={"memory": 2})], [], {"memory": 4})
    False
    >>> _fits(Task("b", abs, holds={"disk": 3}, held_until="c"), [], [{"disk": 2}], {"disk": 4})
    False
    """
    taken = [t.costs for t in running] + list(held) + [task.costs, task.holds]
    return all(sum(cost.get(name, 0) for cost in taken) <= limit for name, limit in limits.items())


def _failure(task: Task, exc: BaseException) -> TaskError:
    return TaskError(f"task {task.key} failed: {type(exc).__name__}: {exc}", key=task.key)


def _init_worker(initializer: Callable[..., Any] | None, initargs: tuple) -> None:
    """A forked worker: die with the parent, leave Ctrl-C to it, then the caller's initializer."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no orphan keeps writing
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    if initializer is not None:
        initializer(*initargs)


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's worker processes (what they were writing is a temporary file)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()


@contextmanager
def _forwarded_logs(name: str) -> Iterator[None]:
    """The forked workers' records of logger ``name`` reach its handlers here (multiprocessing_logging),
    every record drained when the pool is done; the handlers stay open."""
    import multiprocessing_logging
    logger = logging.getLogger(name)
    multiprocessing_logging.install_mp_handler(logger)
    try:
        yield
    finally:
        for wrapper in list(logger.handlers):
            if isinstance(wrapper, multiprocessing_logging.MultiProcessingHandler):
                original = wrapper.sub_handler
                logger.removeHandler(wrapper)
                logger.addHandler(original)
                wrapper.sub_handler = _KeptOpen(original)
                wrapper.close()  # drains what the workers sent


class _KeptOpen(logging.Handler):
    """Emits through a handler without closing it."""

    def __init__(self, handler: logging.Handler) -> None:
        super().__init__()
        self.handler = handler

    def emit(self, record: logging.LogRecord) -> None:
        self.handler.emit(record)
