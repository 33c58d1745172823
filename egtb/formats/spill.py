"""A pair's spilled DTZ: the finished part of its one-byte DTZ array, compressed beside its scratch
files while the pair is solved, so that the array's pages leave the disk.

Under ``wcdf`` alone a pair's DTZ is written once, when its unit is solved, and never read
until the pair's files are written (:func:`egtb.formats.scratch.dtz_type`). The largest
8-piece pairs hold 24 G positions of it, a byte each. Once every position of a run of pages
of the DTZ array is final, the run is compressed with zlib (level 1: about 0.18 bytes a
position on the 6-piece DTZ, 7 ns a position) into ``dtz.spill``, its place noted in
``dtz-spill.json``, and its pages are punched out of the mapped file
(``MADV_REMOVE``), which gives their disk blocks back. :class:`SpilledRow` reads a
range back, from the chunks where spilled and from the array elsewhere.

The index is written after the chunks it names are on disk, and the pages are punched only
after that: a build killed at any moment finds either the pages or their chunks. Chunks
past the index's length (a killed spill) are cut off when the spill is opened again.

>>> import tempfile, numpy as np
>>> from pathlib import Path
>>> spill = DtzSpill.open(Path(tempfile.mkdtemp()))
>>> dtz = np.arange(3 * PAGE, dtype=np.uint8)
>>> spill.spill(dtz, [(PAGE, 3 * PAGE)])
>>> row = SpilledRow(np.zeros_like(dtz), spill)
>>> bool((row[:] == np.r_[np.zeros(PAGE, np.uint8), dtz[PAGE:]]).all()), spill.positions
(True, 8192)
"""

from __future__ import annotations

import bisect
import json
import mmap
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from egtb.errors import TableError

__all__ = ["DtzSpill", "PAGE", "SpilledRow", "SPILLED_BYTES_A_POSITION"]

PAGE = mmap.PAGESIZE
"""Positions of a one-byte DTZ array in one page: the unit a spill punches."""

CHUNK_POSITIONS = 1 << 22
"""Positions compressed as one zlib stream (4 MiB: a few hundred KB of memory to read one)."""

SPILLED_BYTES_A_POSITION = 0.25
"""The plan's bytes a spilled DTZ position takes: zlib level 1 gave 0.184 on 1m2k-1m2k's
wcdf DTZ (125 M positions, 6 pieces); the margin is for larger piece counts."""

SPILL_NAME = "dtz.spill"
INDEX_NAME = "dtz-spill.json"


@dataclass
class DtzSpill:
    """The spilled chunks of a pair's DTZ array in its scratch directory `path`."""

    path: Path
    chunks: list[tuple[int, int, int, int]] = field(default_factory=list)
    """(first position, positions, offset in the spill file, compressed bytes), in spill order."""
    _sorted: list | None = field(default=None, repr=False)
    _firsts: list | None = field(default=None, repr=False)

    @classmethod
    def open(cls, path: Path) -> DtzSpill:
        """The spill of scratch directory `path` (none yet: empty); chunks past its index are cut."""
        try:
            record = json.loads((path / INDEX_NAME).read_text())
        except FileNotFoundError:
            record = {"chunks": []}
        except ValueError as exc:
            raise TableError(f"{path / INDEX_NAME} is damaged ({exc}): delete {path} to solve "
                             "its pair again") from None
        spill = cls(path, [tuple(c) for c in record["chunks"]])
        size = spill.file_bytes
        data = path / SPILL_NAME
        if data.exists() and data.stat().st_size > size:
            os.truncate(data, size)
        elif size and (not data.exists() or data.stat().st_size < size):
            raise TableError(f"{data} holds less than {INDEX_NAME} says ({size} bytes): delete "
                             f"{path} to solve its pair again")
        return spill

    @property
    def file_bytes(self) -> int:
        """Bytes of the spill file that the index names."""
        return max((offset + nbytes for _, _, offset, nbytes in self.chunks), default=0)

    @property
    def positions(self) -> int:
        """Positions spilled."""
        return sum(length for _, length, _, _ in self.chunks)

    def spill(self, dtz: np.ndarray, ranges: list[tuple[int, int]]) -> None:
        """Compress the positions [start, stop) of each range of `dtz` into the spill file, record
        them, then punch their whole pages out of `dtz` (a mapped array: its disk blocks are
        freed and read as 0 afterwards)."""
        if not ranges:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        added = []
        with open(self.path / SPILL_NAME, "ab") as out:
            offset = self.file_bytes
            for start, stop in ranges:
                for first in range(start, stop, CHUNK_POSITIONS):
                    last = min(first + CHUNK_POSITIONS, stop)
                    blob = zlib.compress(np.ascontiguousarray(dtz[first:last]).tobytes(), 1)
                    out.write(blob)
                    added.append((first, last - first, offset, len(blob)))
                    offset += len(blob)
            out.flush()
            os.fsync(out.fileno())
        self.chunks.extend(added)
        self._sorted = self._firsts = None
        tmp = self.path / f"{INDEX_NAME}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"chunks": self.chunks}))
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, self.path / INDEX_NAME)
        for start, stop in ranges:
            punch(dtz, start, stop)

    def read_into(self, out: np.ndarray, start: int) -> None:
        """Overwrite the positions of `out` (those from `start` on) that are spilled."""
        if not self.chunks:  # nothing spilled (a split pair of one wave): no spill file either
            return
        stop = start + len(out)
        chunks = sorted(self.chunks) if self._sorted is None else self._sorted
        self._sorted = chunks
        firsts = [c[0] for c in chunks] if self._firsts is None else self._firsts
        self._firsts = firsts
        at = max(bisect.bisect_right(firsts, start) - 1, 0)
        with open(self.path / SPILL_NAME, "rb") as data:
            for first, length, offset, nbytes in chunks[at:]:
                if first >= stop:
                    break
                lo, hi = max(first, start), min(first + length, stop)
                if lo >= hi:
                    continue
                data.seek(offset)
                values = np.frombuffer(zlib.decompress(data.read(nbytes)), dtype=np.uint8)
                if len(values) != length:
                    raise TableError(f"{self.path / SPILL_NAME}: a chunk of {len(values)} positions "
                                     f"where its index says {length}")
                out[lo - start:hi - start] = values[lo - first:hi - first]


def punch(dtz: np.ndarray, start: int, stop: int) -> None:
    """Give the disk blocks of the whole pages of `dtz[start:stop]` back (a mapped array; any other
    is left as it is): they read as 0 afterwards."""
    mapping = _mapping_of(dtz)
    if mapping is None or not hasattr(mmap, "MADV_REMOVE"):
        return
    origin = dtz.ctypes.data - _address(mapping)  # dtz's first byte within the mapping
    lo = -(-(origin + start) // PAGE) * PAGE
    hi = (origin + stop) // PAGE * PAGE
    if hi > lo:
        mapping.madvise(mmap.MADV_REMOVE, lo, hi - lo)


def _mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """The mmap an array's bytes lie in (through its chain of bases), or None."""
    while array is not None:
        if isinstance(array, mmap.mmap):
            return array
        mapping = getattr(array, "_mmap", None)
        if mapping is not None:
            return mapping
        array = getattr(array, "base", None)
    return None


def _address(mapping: mmap.mmap) -> int:
    """The address of a mapping's first byte."""
    return np.frombuffer(mapping, dtype=np.uint8, count=1).ctypes.data


class SpilledRow:
    """A pair's DTZ row as one array to slice: the spilled positions from their chunks, the rest
    from the mapped array; `offset` is where the row starts in the pair's positions."""

    def __init__(self, dtz: np.ndarray, spill: DtzSpill, *, offset: int = 0) -> None:
        self._dtz, self._spill, self._offset = dtz, spill, offset
        self.dtype = dtz.dtype

    def __len__(self) -> int:
        return len(self._dtz)

    @property
    def shape(self) -> tuple[int]:
        """(positions,), as an array's."""
        return (len(self._dtz),)

    def __getitem__(self, part: slice) -> np.ndarray:
        start, stop, step = part.indices(len(self._dtz))
        if step != 1:
            raise IndexError("a spilled DTZ row is read by ranges")
        out = np.array(self._dtz[start:stop])
        self._spill.read_into(out, self._offset + start)
        return out
