"""A build's progress: the local workers' counters in shared memory and the two bars.

Each local worker raises its own slot of :class:`SharedCounters` from inside the kernel
(positions and units, no lock); the parent sums the slots about twice a second into
:class:`Bars`, tqdm's positions bar (with the ETA and units) and pairs bar.

>>> counters = SharedCounters(2)
>>> counters.claim()[solve.P_POSITIONS] = 7
>>> counters.totals()
(7, 0)
"""

from __future__ import annotations

from multiprocessing import get_context

import numpy as np

from egtb.builder import solve
from egtb.builder.record import PairRecord
from egtb.builder.plan import Pair


class SharedCounters:
    """Progress counters of the local workers: one slot (positions, units) per worker.

    Each worker only writes its own slot (from the kernel, no lock); the parent
    sums the slots. Created before the pool, inherited by the forked workers.
    """

    def __init__(self, slots: int) -> None:
        context = get_context("fork")
        self.slots = slots
        self.array = context.RawArray("q", slots * solve.PROGRESS_SIZE)
        self.next_slot = context.Value("i", 0)

    def claim(self) -> np.ndarray:
        """A worker's own counters (a private array if every slot is taken)."""
        with self.next_slot.get_lock():
            slot = self.next_slot.value
            self.next_slot.value += 1
        if slot >= self.slots:
            return np.zeros(solve.PROGRESS_SIZE, dtype=np.int64)
        size = solve.PROGRESS_SIZE
        return np.frombuffer(self.array, dtype=np.int64)[slot * size:(slot + 1) * size]

    def totals(self) -> tuple[int, int]:
        """(positions, units) summed over the workers."""
        values = np.frombuffer(self.array, dtype=np.int64).reshape(self.slots, -1).sum(axis=0)
        return int(values[solve.P_POSITIONS]), int(values[solve.P_UNITS])


#: This worker's progress counters (set by :func:`count_into`; None on a cluster's worker).
_WORKER_COUNTERS: np.ndarray | None = None


def count_into(counters: SharedCounters) -> None:
    """The local pool's initializer: take a slot of the progress counters."""
    global _WORKER_COUNTERS
    _WORKER_COUNTERS = counters.claim()


def worker_counters() -> np.ndarray | None:
    """This worker's progress counters, which its pair's kernel raises (None: it has none)."""
    return _WORKER_COUNTERS


class Bars:
    """Two tqdm bars with ETA: positions (with the units count), and material pairs.

    The positions bar moves while pairs are being solved (:meth:`advance`); it
    never goes back and never falls behind the pairs already finished.
    """

    def __init__(self, todo: list[Pair], *, enabled: bool) -> None:
        from tqdm import tqdm
        self.total = sum(p.positions for p in todo)
        self.positions = tqdm(total=self.total, unit="pos", unit_scale=True, desc="positions",
                              disable=not enabled)
        self.pairs = tqdm(total=len(todo), unit="pair", desc="materials", disable=not enabled)
        self.units = 0
        self.finished = 0
        """Positions of the pairs finished."""

    def advance(self, positions: int, units: int) -> None:
        """Show the totals solved so far (finished pairs and the running ones in part)."""
        self._show(positions)
        if units > self.units:
            self.units = units
            self.positions.set_postfix(units=f"{units:,}")

    def update(self, record: PairRecord) -> None:
        """A pair finished."""
        self.finished += record.positions
        self._show(self.finished)
        self.pairs.set_postfix(last=record.key)
        self.pairs.update(1)

    def _show(self, positions: int) -> None:
        step = min(positions, self.total) - self.positions.n
        if step > 0:
            self.positions.update(step)

    def close(self) -> None:
        self.pairs.close()
        self.positions.close()
