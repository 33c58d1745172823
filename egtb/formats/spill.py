"""A pair's spilled DTZ: the finished part of its one-byte DTZ array, compressed beside its scratch
files while the pair is solved, so that the array's pages leave the disk.

Under ``wcdf`` alone a pair's DTZ is written once, when its unit is solved, and never read
until the pair's files are written (:func:`egtb.formats.scratch.dtz_type`). The largest
8-piece pairs hold 24 G positions of it, a byte each. Once every position of a run of pages
of the DTZ array is final, the run is compressed with zlib (level 1: about 0.18 bytes a
position on the 6-piece DTZ, 7 ns a position) into ``dtz.spill``, its place noted in
``dtz-spill.json``. Its pages are then punched out of the mapped file (``MADV_REMOVE``),
which gives their disk blocks back (:meth:`DtzSpill.release`): a whole block of
:data:`RELEASE_BLOCK_PAGES` pages at once, single runs only while more than
:data:`RELEASE_LAG_POSITIONS` spilled positions still hold theirs. A punch took 3.5 ms of
waiting whatever its length (ext4 mounted with ``discard``, a 2-core VM), and a pair of small
units finishes its pages scattered: page by page, 2m1k-4m1k would have punched 1.26 M runs
(74 minutes), in blocks 0.32 M. ``dtz-released.bits`` records the pages given back.
:class:`SpilledRow` reads a range back, from the chunks where spilled and from the array
elsewhere.

The index is written after the chunks it names are on disk, and the pages are punched only
after that: a build killed at any moment finds either the pages or their chunks (a page
punched but not yet recorded is punched again, at no cost: it is a hole). Chunks past the
index's length (a killed spill) are cut off when the spill is opened again.

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

__all__ = ["DtzSpill", "PAGE", "RELEASE_LAG_POSITIONS", "SpilledRow", "SPILLED_BYTES_A_POSITION", "remove_spill"]

PAGE = mmap.PAGESIZE
"""Positions of a one-byte DTZ array in one page: the unit a spill punches."""

CHUNK_POSITIONS = 1 << 22
"""Positions compressed as one zlib stream (4 MiB: a few hundred KB of memory to read one)."""

SPILLED_BYTES_A_POSITION = 0.25
"""The plan's bytes a spilled DTZ position takes: zlib level 1 gave 0.184 on 1m2k-1m2k's
wcdf DTZ (125 M positions, 6 pieces); the margin is for larger piece counts."""

SPILL_NAME = "dtz.spill"
INDEX_NAME = "dtz-spill.json"
RELEASED_NAME = "dtz-released.bits"

RELEASE_BLOCK_PAGES = 64
"""Pages (aligned) given back in one punch once every one of them is spilled."""

RELEASE_LAG_POSITIONS = 1 << 29
"""Spilled positions whose pages may stay on disk, outside whole blocks: beyond it, the runs of
spilled pages holding the most are punched until half are left (the plan counts them,
:func:`egtb.builder.budget.scratch_bytes`)."""


@dataclass
class DtzSpill:
    """The spilled chunks of a pair's DTZ array in its scratch directory `path`."""

    path: Path
    chunks: list[tuple[int, int, int, int]] = field(default_factory=list)
    """(first position, positions, offset in the spill file, compressed bytes), in spill order."""
    _sorted: list | None = field(default=None, repr=False)
    _firsts: list | None = field(default=None, repr=False)
    _released_pages: np.ndarray | None = field(default=None, repr=False)

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
        """Compress the positions [start, stop) of each range of `dtz` into the spill file and
        record them (their pages stay until :meth:`release` gives them back)."""
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

    def release(self, dtz: np.ndarray, spilled: np.ndarray) -> int:
        """Punch out of `dtz` (a mapped array) pages whose every position is spilled (`spilled`:
        a flag a page, as :meth:`spill` recorded them): each aligned block of
        :data:`RELEASE_BLOCK_PAGES` wholly spilled, then, while more than
        :data:`RELEASE_LAG_POSITIONS` spilled positions outside them hold pages, the runs of spilled
        pages that hold the most; return the punches made.

        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp())
        >>> dtz = np.memmap(path / "rdtz", dtype=np.uint8, mode="w+", shape=(130 * PAGE,))
        >>> spilled = np.zeros(130, dtype=np.bool_)
        >>> spilled[:70] = spilled[100:102] = True
        >>> spill = DtzSpill.open(path)
        >>> spill.release(dtz, spilled), spill.release(dtz, spilled)   # pages 0-63 in one punch, then none
        (1, 0)
        """
        released = self._released(len(spilled))
        pending = spilled & ~released
        if not pending.any():
            return 0
        whole = _block_flags(spilled) & _block_flags(pending, any_page=True)  # spilled, a page held
        runs = [tuple(run) for run in page_runs(whole)]
        pending &= ~whole
        held = np.r_[0, np.cumsum(pending)]  # pages held before each page, outside the blocks
        left = int(held[-1])
        if left * PAGE > RELEASE_LAG_POSITIONS:
            spans = page_runs(spilled)  # a punch over pages given back already costs nothing more
            holding = held[spans[:, 1]] - held[spans[:, 0]]
            for at in np.argsort(-holding, kind="stable"):
                if left * PAGE <= RELEASE_LAG_POSITIONS // 2:
                    break
                runs.append(tuple(spans[at]))
                left -= int(holding[at])
        for first, last in runs:
            punch(dtz, int(first) * PAGE, min(int(last) * PAGE, len(dtz)))
            released[first:last] = True
        if runs:  # a file replaced frees blocks: as slow here as a punch
            self._save_released(released)
        return len(runs)

    def _released(self, pages: int) -> np.ndarray:
        """The pages given back, by page (none when unrecorded), read once by this object."""
        if self._released_pages is not None and len(self._released_pages) == pages:
            return self._released_pages
        self._released_pages = self._read_released(pages)
        return self._released_pages

    def _read_released(self, pages: int) -> np.ndarray:
        try:
            packed = np.fromfile(self.path / RELEASED_NAME, dtype=np.uint8)
        except FileNotFoundError:
            return np.zeros(pages, dtype=np.bool_)
        if len(packed) != -(-pages // 8):
            return np.zeros(pages, dtype=np.bool_)  # another layout's: punched again, at no cost
        return np.unpackbits(packed, count=pages).view(np.bool_).copy()

    def _save_released(self, released: np.ndarray) -> None:
        tmp = self.path / f"{RELEASED_NAME}.{os.getpid()}.tmp"
        np.packbits(released).tofile(tmp)
        os.replace(tmp, self.path / RELEASED_NAME)

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


def remove_spill(path: Path) -> None:
    """Remove the spill of scratch directory `path` (its files made anew: the chunks of another
    run, of other tables or rules, would be read back for its positions and their pages punched).

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp())
    >>> DtzSpill.open(path).spill(np.ones(PAGE, dtype=np.uint8), [(0, PAGE)])
    >>> remove_spill(path); DtzSpill.open(path).positions
    0
    """
    for name in (INDEX_NAME, SPILL_NAME, RELEASED_NAME):  # the index first: chunks it names must exist
        (path / name).unlink(missing_ok=True)


def page_runs(pages: np.ndarray) -> np.ndarray:
    """The runs of True pages, as rows (first, last + 1).

    >>> page_runs(np.array([1, 1, 0, 1], dtype=np.bool_)).tolist()
    [[0, 2], [3, 4]]
    """
    edges = np.flatnonzero(np.diff(np.r_[0, pages.astype(np.int8), 0]))
    return edges.reshape(-1, 2)


def _block_flags(pages: np.ndarray, *, any_page: bool = False) -> np.ndarray:
    """By page: whether every page of its aligned block of :data:`RELEASE_BLOCK_PAGES` is True
    (the last block: those it has), or with `any_page` whether one is.

    >>> _block_flags(np.r_[np.ones(64, dtype=np.bool_), False, True]).tolist()[62:]
    [True, True, False, False]
    """
    blocks = -(-len(pages) // RELEASE_BLOCK_PAGES)
    padded = np.full(blocks * RELEASE_BLOCK_PAGES, not any_page, dtype=np.bool_)
    padded[:len(pages)] = pages
    shaped = padded.reshape(blocks, RELEASE_BLOCK_PAGES)
    return np.repeat(shaped.any(axis=1) if any_page else shaped.all(axis=1), RELEASE_BLOCK_PAGES)[:len(pages)]


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
