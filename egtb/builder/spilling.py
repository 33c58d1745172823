"""Spilling a compact-native pair's DTZ while it is solved on disk (:mod:`egtb.formats.spill`):
at each checkpoint, the pages of the DTZ array whose every position lies in a finished unit
are compressed beside the scratch files and their disk blocks given back (in blocks, and
single runs only past a lag: :meth:`egtb.formats.spill.DtzSpill.release`).

The largest 8-piece pair (1m3k-2m2k and its mirror, 23.6 G positions) held 23.6 GB of DTZ
in its scratch until its files were written; spilled, about 0.2 bytes a position. A unit's
positions are contiguous (its halves start at :func:`egtb.builder.units.locate_unit`'s bases),
so a page is final once the units that cover it are.

>>> from egtb.builder.rule_layer import PRESETS
>>> spills_dtz((PRESETS["wcdf"],), on_disk=True, native=True), spills_dtz(tuple(PRESETS.values()),
...                                                                      on_disk=True, native=True)
(True, False)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from egtb.builder import units
from egtb.formats import scratch
from egtb.formats.spill import PAGE, DtzSpill, SpilledRow, page_runs

__all__ = ["DtzSpiller", "spills_dtz"]


def spills_dtz(presets, *, on_disk: bool, native: bool) -> bool:
    """Whether a pair's DTZ is spilled: solved on disk, written as compact files alone, its DTZ one
    byte (``wcdf`` alone: never read while the pair is solved, :func:`egtb.formats.scratch.dtz_type`)."""
    return on_disk and native and bool(presets) and scratch.dtz_type(presets) is np.uint8


class DtzSpiller:
    """The finished pages of a pair's DTZ row (`dtz`, the pair's positions, mapped) and its spill
    in scratch directory `path`; `counts` and `offsets` locate its units as the solver does."""

    def __init__(self, path: Path, dtz: np.ndarray, *, counts: np.ndarray, offsets: np.ndarray,
                 size: int) -> None:
        self.spill = DtzSpill.open(path)
        self._dtz, self._counts, self._offsets, self._size = dtz, counts, offsets, size
        pages = -(-len(dtz) // PAGE)
        self._final = np.zeros(pages, dtype=np.int64)  # positions of finished units per page
        self._spilled = np.zeros(pages, dtype=np.bool_)
        for first, length, _, _ in self.spill.chunks:
            self._spilled[-(-first // PAGE):(first + length) // PAGE] = True
            if first + length == len(dtz):  # the last page, whole or not
                self._spilled[-1] = True

    def finished(self, configs: np.ndarray) -> None:
        """Count the units `configs` as finished (their DTZ final, flushed by a checkpoint)."""
        add_finished(configs, self._counts, self._offsets, self._size, self._final)

    def spill_final(self) -> int:
        """Spill the final pages not spilled yet; return the positions spilled."""
        whole = np.full(len(self._final), PAGE, dtype=np.int64)
        whole[-1] = len(self._dtz) - (len(self._final) - 1) * PAGE
        ready = (self._final == whole) & ~self._spilled
        ranges = [(int(first) * PAGE, min(int(last) * PAGE, len(self._dtz))) for first, last in page_runs(ready)]
        self.spill.spill(self._dtz, ranges)
        self._spilled |= ready
        self.spill.release(self._dtz, self._spilled)
        return sum(stop - start for start, stop in ranges)

    def row(self, part: slice) -> SpilledRow:
        """The DTZ of the pair's positions `part` (a material's), spilled or not, read by ranges
        that leave none of the mapped row resident (:class:`egtb.formats.scratch.ReadOnce`)."""
        return SpilledRow(scratch.ReadOnce(self._dtz[part]), self.spill, offset=part.start)


@njit(cache=True)
def add_finished(configs, counts, offsets, size, final):
    """Add the positions of each unit of `configs` to the count of the pages (of PAGE positions)
    that hold them."""
    men = np.zeros((2, 2), dtype=np.int64)
    base = np.zeros(2, dtype=np.int64)
    for u in range(configs.shape[0]):
        halves = units.locate_unit(configs[u], counts, offsets, size, men, base)
        for h in range(halves):
            start = base[h]
            stop = start + size
            page = start // PAGE
            while page * PAGE < stop:
                final[page] += min(stop, (page + 1) * PAGE) - max(start, page * PAGE)
                page += 1
