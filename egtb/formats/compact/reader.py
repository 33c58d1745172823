"""Reading compact files: header, block index and the blocks (memory-mapped), one block at a time.

A :class:`CompactTable` answers index lookups only: the stored value code of a
position (:meth:`CompactTable.value`, meaningless where the side to move must
capture) and whole blocks; the capture search that recovers the positions it
leaves out belongs to the prober (:mod:`egtb.probe`). The blocks a single
lookup decodes are kept as runs (:class:`DecodedBlock`, 5 bytes a run) in a
:class:`~egtb.formats.cache.TableCache`: by default the process's one
(:func:`~egtb.formats.cache.process_cache`), under the budget the master
tables' blocks share.

>>> DecodedBlock(array("q", [3, 5]), bytes([1, 2])).nbytes
18
"""

from __future__ import annotations

import bisect
import os
import zlib
import itertools
from array import array
from pathlib import Path

import numpy as np

from egtb.errors import MissingRuleLayerError, TableError
from egtb.formats.cache import TableCache, process_cache
from egtb.formats.compact.codec import decode_block, decoding_table
from egtb.formats.compact.layout import (BLOCK_BYTES, FORMAT_VERSION, HEADER, INDEX_ENTRY, KINDS, MAX_CODE_BITS,
                                         NUM_BUCKETS, RULE_KINDS, WCDF, WDL)
from egtb.positions.material import Material

__all__ = ["CompactTable", "DecodedBlock", "open_compact"]

#: Serial numbers of open compact files (their decoded blocks' keys in a cache shared by many tables).
_SERIALS = itertools.count(1)


class DecodedBlock:
    """A decoded block in the cache: its runs' ends (offsets in the block, 4 bytes each when
    they fit, else 8) and value codes (a byte each)."""

    __slots__ = ("ends", "values", "nbytes")

    def __init__(self, ends: array, values: bytes) -> None:
        self.ends, self.values = ends, values
        self.nbytes = (ends.itemsize + 1) * len(values)

    @classmethod
    def of_runs(cls, ends: np.ndarray, values: np.ndarray) -> "DecodedBlock":
        """The block of runs ending at ``ends`` (int64) with value codes ``values``.

        >>> DecodedBlock.of_runs(np.array([3, 5]), np.array([1, 2], dtype=np.uint8)).nbytes
        10
        """
        narrow = len(ends) == 0 or int(ends[-1]) < 1 << 32
        return cls(array("I" if narrow else "q", ends.astype(np.uint32 if narrow else np.int64).tobytes()),
                   values.tobytes())


class CompactTable:
    """One open compact file (WLD or categories): header, block index and the blocks (memory-mapped).

    >>> CompactTable("/nonexistent/1k-1k.wld")
    Traceback (most recent call last):
    ...
    egtb.errors.TableError: /nonexistent/1k-1k.wld: unreadable compact file (No such file or directory)
    """

    stores_captures = False
    """Positions whose side to move must capture are left out (the prober searches them)."""
    holds_distances = False
    """No DTW, no DTZ."""
    full = None
    """No master table beside it (see :class:`egtb.probe.tables.PairedTable`)."""
    max_dtz = None
    """No DTZ known."""

    def __init__(self, path: os.PathLike | str, *, cache: TableCache | None = None) -> None:
        self.path = Path(path)
        self._layers: dict[str, CompactTable] = {}
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(HEADER.size)
                self._parse_header(head)
                head += fh.read(self.kind.lengths_bytes)
                self._parse_lengths(head)
                index = fh.read(INDEX_ENTRY.size * self.n_blocks)
            self._parse_index(head, index)
            size = self.path.stat().st_size
            self.data = (np.memmap(self.path, dtype=np.uint8, mode="r", offset=self.data_offset)
                         .view(np.ndarray)  # a plain array for numba; the map stays open
                         if size > self.data_offset else np.zeros(0, dtype=np.uint8))
        except OSError as exc:
            raise TableError(f"{self.path}: unreadable compact file ({exc.strerror or exc})") from exc
        self.cache = cache if cache is not None else process_cache()
        """Where decoded blocks go (the process's cache unless given)."""
        self.serial = next(_SERIALS)
        self._decoded: set[int] = set()  # blocks put in the cache (some may have left it since)
        self._ends = np.empty(self.max_runs, dtype=np.int64)
        self._vals = np.empty(self.max_runs, dtype=np.uint8)
        self.value_of = tuple(int(v) for v in self.kind.value_of_code)
        """WDL (WLD file) or category (category file) of each value code."""

    def _parse_header(self, head: bytes) -> None:
        kind = KINDS.get(HEADER.unpack(head)[2]) if len(head) == HEADER.size else None
        if kind is None or head[:8] != kind.magic:
            raise TableError(f"{self.path}: not a compact WLD or category file")
        self.kind = kind
        (_, version, _, bm, bk, wm, wk, positions, block_bytes, code_bits, n_blocks, max_runs,
         buckets, data_offset, _) = HEADER.unpack(head)
        if version != FORMAT_VERSION:
            raise TableError(f"{self.path}: compact format version {version} is not {FORMAT_VERSION}")
        if (block_bytes, code_bits, buckets) != (BLOCK_BYTES, MAX_CODE_BITS, NUM_BUCKETS):
            raise TableError(f"{self.path}: unsupported block size, code length or buckets")
        self.material = Material(bm, bk, wm, wk)
        self.positions = positions
        self.n_blocks = n_blocks
        self.max_runs = max(1, max_runs)
        self.data_offset = data_offset

    def _parse_lengths(self, head: bytes) -> None:
        kind = self.kind
        if len(head) != HEADER.size + kind.lengths_bytes:
            raise TableError(f"{self.path}: truncated code-length table")
        lengths = np.zeros((kind.values + 1, kind.symbols), dtype=np.int64)
        lengths[1:] = np.frombuffer(head[HEADER.size:], dtype=np.uint8).reshape(kind.values, -1)
        self.lut = decoding_table(lengths)

    def _parse_index(self, head: bytes, index: bytes) -> None:
        if len(index) != INDEX_ENTRY.size * self.n_blocks:
            raise TableError(f"{self.path}: truncated block index")
        stored = HEADER.unpack(head[:HEADER.size])[-1]
        crc = zlib.crc32(index, zlib.crc32(head[HEADER.size:], zlib.crc32(head[:HEADER.size - 8])))
        if crc != stored:
            raise TableError(f"{self.path}: header checksum mismatch (file corrupted)")
        entries = np.frombuffer(index, dtype=np.dtype([("start", "<u8"), ("crc", "<u4"),
                                                       ("ctx", "u1"), ("pad", "V3")]))
        self.starts = np.append(entries["start"].astype(np.int64), np.int64(self.positions))
        self.crcs = np.ascontiguousarray(entries["crc"], dtype=np.uint32)
        self.ctx = np.ascontiguousarray(entries["ctx"], dtype=np.uint8)
        self._starts_list = self.starts.tolist()

    @property
    def coded(self) -> "CompactTable":
        """The compact file whose coded blocks the batch kernel reads: this one."""
        return self

    def __repr__(self) -> str:
        return f"CompactTable({str(self.path)!r}, blocks={self.n_blocks})"

    @property
    def nbytes(self) -> int:
        """Bytes of the file (what a Tablebase counts against its memory limit)."""
        return int(self.data_offset + len(self.data))

    def __len__(self) -> int:
        return self.positions

    def layer(self, rule: str) -> "CompactTable":
        """The category file of a preset next to this WLD file (opened once, sharing the cache).

        MissingRuleLayerError when there is none: compact category files exist
        for "wcdf" only, and hold no DTZ.
        """
        found = self._layers.get(rule)
        if found is not None:
            return found
        kind = RULE_KINDS.get(rule)
        path = self.path.with_suffix(kind.suffix) if kind is not None and self.kind is WDL else None
        if path is None or not path.exists():
            raise MissingRuleLayerError(
                f"{self.path}: a compact file has no rule layer for preset {rule!r} "
                f"(compact category files exist for {', '.join(RULE_KINDS)} only, "
                f"as <material>{WCDF.suffix}); probe with rule_free=True")
        found = self._layers[rule] = CompactTable(path, cache=self.cache)
        if found.material != self.material or found.positions != self.positions:
            raise TableError(f"{path}: holds material {found.material.name}, not {self.material.name}")
        return found

    def block_of(self, index: int) -> int:
        """The block holding a position index."""
        if not 0 <= index < self.positions:
            raise IndexError(f"{self.path}: position {index} outside 0..{self.positions - 1}")
        return bisect.bisect_right(self._starts_list, index) - 1

    def decode(self, block: int) -> tuple[np.ndarray, np.ndarray]:
        """(run ends, run values) of a block, checked; TableError names a damaged block."""
        lo = block * BLOCK_BYTES
        hi = min(lo + BLOCK_BYTES, len(self.data))
        if zlib.crc32(self.data[lo:hi]) != int(self.crcs[block]):
            raise TableError(f"{self.path}: block {block} is damaged (CRC-32 mismatch)")
        count = self._starts_list[block + 1] - self._starts_list[block]
        n = decode_block(self.data, lo, hi, count, self.ctx[block], self.lut.reshape(-1),
                         self._ends, self._vals)
        if n < 0:
            raise TableError(f"{self.path}: block {block} does not decode")
        return self._ends[:n].copy(), self._vals[:n].copy()

    def value(self, index: int) -> int:
        """Stored value code of a position (meaningless where the side to move must capture)."""
        starts = self._starts_list
        block = bisect.bisect_right(starts, index) - 1
        if not 0 <= index < self.positions:
            raise IndexError(f"{self.path}: position {index} outside 0..{self.positions - 1}")
        key = ("compact", self.serial, block)
        cache = self.cache
        runs = cache.peek(key)
        if runs is None:
            ends, vals = self.decode(block)
            runs = DecodedBlock.of_runs(ends, vals)
            cache.put(key, self.path, runs)
            self._decoded.add(block)
        else:
            cache.touch(key)
        return runs.values[bisect.bisect_right(runs.ends, index - starts[block])]

    def value_at(self, index: int) -> int:
        """WDL (WLD file) or category (category file) of a position, meaningless where the
        side to move must capture."""
        return self.value_of[self.value(index)]

    def distance_at(self, index: int) -> None:
        """None: a compact file holds no DTW or DTZ."""
        return None

    def kernel_layers(self) -> dict:
        """None of its layers is read by the rule kernel from memory (each is a compact file)."""
        return {}

    def warm(self, blocks: int | None) -> None:
        """Decode the first ``blocks`` blocks (None: all) into the block cache."""
        for block in range(self.n_blocks if blocks is None else min(blocks, self.n_blocks)):
            self.value(self._starts_list[block])

    def close(self) -> None:
        """Drop its decoded blocks from the cache (the map goes with the table)."""
        for block in self._decoded:
            self.cache.discard(("compact", self.serial, block))
        self._decoded.clear()
        for layer in self._layers.values():
            layer.close()

    def values(self) -> np.ndarray:
        """Stored value codes of every position (uint8), decoding every block."""
        out = np.empty(self.positions, dtype=np.uint8)
        for block in range(self.n_blocks):
            ends, vals = self.decode(block)
            base = self._starts_list[block]
            out[base:base + int(ends[-1]) if len(ends) else base] = np.repeat(
                vals, np.diff(ends, prepend=0))
        return out


def open_compact(path: os.PathLike | str, *, cache: TableCache | None = None) -> CompactTable:
    """Open a compact file; its decoded blocks go to ``cache`` (default: the process's)."""
    return CompactTable(path, cache=cache)
