"""Tournament games on a Dask cluster (``tournament run --scheduler ADDRESS``).

The unit of work is a game pair (the same opening, colours reversed), or a
small batch of pairs: one Dask future plays the batch's games with
:func:`tournament.schedule.play_job`, exactly as the local pool does, and
returns their records. The client (:func:`tournament.schedule.run_tournament`)
appends each record to ``games.jsonl`` as its future completes, so:

- every finished game is appended once: a future's result is taken once, and a
  game id already handed over is never handed over again;
- a killed worker loses no finished game: its unfinished batch is rerun by
  Dask on another worker (the same seeds give the same games), and nothing of
  it was counted before;
- the same seeds give the same games and totals as a local run;
- an SPRT that decides (or any early stop) cancels the outstanding futures.

Only a bounded window of batches is outstanding at a time, so a long match
does not flood the scheduler and an SPRT stop wastes little work. By default
the batch size adapts: one pair per task at first, then as many pairs as take
about :data:`TARGET_TASK_SECONDS` on a worker (at most :data:`MAX_PAIRS_PER_TASK`),
so very short games (random movers) are not dominated by Dask's per-task round
trip. Batching changes nothing in the games: each game's seed comes from its id.

>>> from tournament.schedule import Player, schedule
>>> jobs = schedule([Player("a", "random"), Player("b", "random")], games=6)
>>> [[j.game_id for j in batch] for batch in batch_pairs(jobs, pairs_per_task=2)][1]
['r3-o000-0v1-a', 'r3-o000-0v1-b']
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from egtb.dask.cluster import ClusterSpec, capture_logs, connect, prepare_workers, replay_logs
from tournament.records import GameRecord
from tournament.engines.pool import close_worker_pool
from tournament.config import GameSettings
from tournament.schedule import GameJob, play_job

__all__ = ["DaskGames", "GamePair", "batch_pairs", "group_pairs", "make_game_executor", "play_batch"]

log = logging.getLogger("tournament.distributed")

GamePair = list[GameJob]
"""A game pair: the two colour-reversed games of one opening and pairing (jobs sharing a ``pair_id``).
Not the builder's material pair (:class:`egtb.build.plan.Pair`)."""

#: Game pairs per Dask task when fixed (None: adapt to the measured time per pair).
PAIRS_PER_TASK = None
#: Seconds of play an adaptive batch aims at, and its largest size in pairs.
TARGET_TASK_SECONDS = 0.5
MAX_PAIRS_PER_TASK = 16
#: Outstanding tasks per worker thread.
WINDOW_PER_THREAD = 4


def make_game_executor(*, scheduler: str | None = None, scheduler_file: str | None = None,
                       pairs_per_task: int | None = PAIRS_PER_TASK) -> "DaskGames | None":
    """The executor for ``run_tournament``: None (the local pool) or :class:`DaskGames`.

    >>> make_game_executor() is None
    True
    """
    spec = ClusterSpec(scheduler=scheduler, scheduler_file=scheduler_file)
    return DaskGames(spec, pairs_per_task=pairs_per_task) if spec.given else None


def group_pairs(jobs: Sequence[GameJob]) -> list[GamePair]:
    """The jobs as whole game pairs (consecutive jobs sharing a pair id), in order."""
    pairs: list[GamePair] = []
    for job in jobs:
        if pairs and pairs[-1][0].pair_id == job.pair_id:
            pairs[-1].append(job)
        else:
            pairs.append([job])
    return pairs


def batch_pairs(jobs: Sequence[GameJob], *, pairs_per_task: int = 1) -> list[list[GameJob]]:
    """The jobs cut into batches of ``pairs_per_task`` whole pairs, in order."""
    pairs = group_pairs(jobs)
    return [[job for pair in pairs[i:i + pairs_per_task] for job in pair]
            for i in range(0, len(pairs), pairs_per_task)]


def play_batch(jobs: Sequence[GameJob], settings: GameSettings) -> dict:
    """Play a batch's games on a worker; return their records, the worker and its log lines."""
    start = time.perf_counter()
    with capture_logs("tournament", level=logging.WARNING) as lines:
        try:
            records = [play_job(job, settings) for job in jobs]  # external engines reused within the batch
        finally:
            close_worker_pool()  # no engine process outlives its batch on a long-lived Dask worker
    return {"records": records, "host": socket.gethostname(), "pid": os.getpid(), "log": lines,
            "seconds": time.perf_counter() - start}


class DaskGames:
    """Play a tournament's games on a Dask cluster; see the module docstring.

    Give a :class:`~egtb.dask.cluster.ClusterSpec` (a client is opened for each :meth:`play` and
    closed after it) or an open ``distributed.Client`` (it stays open).

    >>> DaskGames(ClusterSpec(scheduler="tcp://10.0.0.5:8786"), pairs_per_task=2).pairs_per_task
    2
    """

    def __init__(self, spec: ClusterSpec | None = None, *, client: Any = None,
                 pairs_per_task: int | None = PAIRS_PER_TASK, window: int | None = None) -> None:
        if (spec is None or not spec.given) and client is None:
            raise ValueError("DaskGames needs a scheduler (ClusterSpec) or a client")
        if pairs_per_task is not None and pairs_per_task < 1:
            raise ValueError(f"pairs_per_task must be at least 1, not {pairs_per_task}")
        self.spec = spec
        self.client = client
        self.pairs_per_task = pairs_per_task
        self.window = window
        self.workers_seen: set[tuple[str, int]] = set()
        """(host, pid) of the worker processes that returned games."""
        self.tasks = 0
        """Dask tasks that returned games in the last :meth:`play`."""

    def play(self, jobs: Sequence[GameJob], settings: GameSettings) -> Iterator[GameRecord]:
        """Yield each game's record once, as its batch completes; cancel what is left when closed."""
        directories = [settings.tables_dir] if settings.tables_dir else []
        own = self.client is None
        client = connect(self.spec, directories=directories, writable=False) if own else self.client
        try:
            if not own:
                prepare_workers(client, directories=directories, writable=False)
            yield from self._collect(client, group_pairs(jobs), settings)
        finally:
            if own:
                client.close()

    def _collect(self, client: Any, pairs: list[GamePair], settings: GameSettings) -> Iterator[GameRecord]:
        from distributed import as_completed
        window = self.window or max(2, WINDOW_PER_THREAD * _threads(client))
        queue = deque(pairs)
        futures = as_completed()
        outstanding: set[Any] = set()
        seen: set[str] = set()
        size = _BatchSize(self.pairs_per_task)
        self.tasks = 0

        def submit_next() -> None:
            batch = [job for _ in range(min(size.pairs, len(queue))) for job in queue.popleft()]
            if batch:
                future = client.submit(play_batch, batch, settings, pure=False,
                                       key=f"games-{batch[0].pair_id}-{time.time_ns()}")
                outstanding.add(future)
                futures.add(future)

        try:
            for _ in range(window):
                submit_next()
            for future in futures:
                outstanding.discard(future)
                result = future.result()  # a batch that raised is a bug: play_job turns faults into results
                future.release()
                self.workers_seen.add((result["host"], result["pid"]))
                self.tasks += 1
                size.update(result["seconds"], len({r.pair_id for r in result["records"]}))
                replay_logs(result["log"], log)
                for record in result["records"]:
                    if record.game_id not in seen:
                        seen.add(record.game_id)
                        yield record
                submit_next()
        finally:
            if outstanding:
                client.cancel(list(outstanding))


class _BatchSize:
    """Pairs per task: fixed, or adapted to the seconds a pair takes on a worker.

    >>> size = _BatchSize(None)
    >>> size.pairs, size.update(0.2, 4), size.pairs
    (1, None, 10)
    """

    def __init__(self, fixed: int | None) -> None:
        self.fixed = fixed
        self.pairs = fixed or 1
        self.per_pair: float | None = None

    def update(self, seconds: float, pairs: int) -> None:
        """A task of ``pairs`` pairs took ``seconds``."""
        if self.fixed or pairs == 0:
            return
        measured = seconds / pairs
        self.per_pair = measured if self.per_pair is None else 0.7 * self.per_pair + 0.3 * measured
        self.pairs = max(1, min(MAX_PAIRS_PER_TASK, int(TARGET_TASK_SECONDS / max(self.per_pair, 1e-6))))


def _threads(client: Any) -> int:
    """Worker threads in the cluster now."""
    return max(1, sum(client.nthreads().values()))
