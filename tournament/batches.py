"""Game pairs cut into batches, one batch per executor task, sized to what a game costs.

The unit of work of a tournament is a game pair (the same opening, colours
reversed) or a small batch of pairs: one task plays its games and returns their
records (:func:`tournament.schedule.play_games`, on the local pool or a Dask
cluster alike). The batch size adapts: one pair per task at first, then as many
pairs as take about :data:`TARGET_TASK_SECONDS` on a worker (at most
:data:`MAX_PAIRS_PER_TASK`), so very short games (random movers) are not
dominated by the per-task round trip. Batching changes nothing in the games:
each game's seed comes from its id.

>>> from tournament.pairings import Player, schedule
>>> jobs = schedule([Player("a", "random"), Player("b", "random")], games=6)
>>> [[j.game_id for j in batch] for batch in batch_pairs(jobs, pairs_per_task=2)][1]
['r3-o000-0v1-a', 'r3-o000-0v1-b']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["BatchSize", "MAX_PAIRS_PER_TASK", "TARGET_TASK_SECONDS", "batch_pairs", "group_pairs"]

#: Seconds of play an adaptive batch aims at, and its largest size in pairs.
TARGET_TASK_SECONDS = 0.5
MAX_PAIRS_PER_TASK = 16


def group_pairs(jobs: Sequence[Any]) -> list[list[Any]]:
    """The game jobs (:class:`tournament.pairings.GameJob`) as whole game pairs: consecutive jobs
    sharing a ``pair_id``, in order. (A game pair, not the builder's material pair.)"""
    pairs: list[list[Any]] = []
    for job in jobs:
        if pairs and pairs[-1][0].pair_id == job.pair_id:
            pairs[-1].append(job)
        else:
            pairs.append([job])
    return pairs


def batch_pairs(jobs: Sequence[Any], *, pairs_per_task: int = 1) -> list[list[Any]]:
    """The jobs cut into batches of ``pairs_per_task`` whole pairs, in order."""
    pairs = group_pairs(jobs)
    return [[job for pair in pairs[i:i + pairs_per_task] for job in pair]
            for i in range(0, len(pairs), pairs_per_task)]


class BatchSize:
    """Pairs per task: fixed, or adapted to the seconds a pair takes on a worker.

    >>> size = BatchSize(None)
    >>> size.pairs, size.update(0.2, 4), size.pairs
    (1, None, 10)
    """

    def __init__(self, fixed: int | None) -> None:
        if fixed is not None and fixed < 1:
            raise ValueError(f"pairs_per_task must be at least 1, not {fixed}")
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
