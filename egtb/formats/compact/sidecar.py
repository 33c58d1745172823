"""Marks files: the marks of every block of a compact file, written once, memory-mapped by the reader.

A compact file's reader decodes a lookup from its block's **marks** (the
decoder's state every few runs: :func:`~egtb.formats.compact.reader.mark_spacing`, or the marks
file's own spacing).
Without a marks file it makes them on a block's first lookup, decoding the
whole block (about 100 us for a 7-piece block); with one, a block's marks are
a slice of the memory-mapped file, checked (CRC-32) on its first lookup.

``<compact file>.marks`` (``1m2k-3m1k.wld.marks``; written by
:func:`egtb.formats.compact.writer.write_marks`), little-endian:

- header (:data:`MARKS_HEADER`, 56 bytes): magic ``EGTBMRK\\0``, version,
  runs between two marks, the compact file's size and header CRC-32 (which
  covers its block index and so every block's CRC: the compact file it belongs
  to), its blocks, the marks in all, and the CRC-32 of the header before it,
  the offsets and the marks' CRCs;
- offsets: int64, blocks + 1: the number of the first mark of each block (the
  last one is the number of marks);
- the CRC-32 of each block's marks: uint32, blocks (padded to 8 bytes);
- the marks: int64 each (:func:`~egtb.formats.compact.codec.mark_block`).

:func:`open_marks` checks the header, its CRC and the file's size when the
compact file is opened; a marks file of another compact file (foreign, or stale
after the compact file was written again), of another version, or truncated is
not used: :class:`~egtb.errors.MarksFileWarning` names it and why, and the
reader makes the marks in memory as it would without one.

>>> MARKS_HEADER.size, marks_path("data/egtb/1k-1k.wld").name
(56, '1k-1k.wld.marks')
"""

from __future__ import annotations

import os
import struct
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from egtb.errors import MarksFileWarning

__all__ = ["MARKS_HEADER", "MARKS_MAGIC", "MARKS_SUFFIX", "MARKS_VERSION", "MAX_MARK_EVERY", "MarksFile",
           "marks_bytes", "marks_path", "open_marks"]

MARKS_SUFFIX = ".marks"
MARKS_MAGIC = b"EGTBMRK\x00"
MARKS_VERSION = 1
#: The most runs between two marks a marks file can hold (its header's field is 16 bits).
MAX_MARK_EVERY = 0xFFFF
#: magic, version, runs between marks, (pad), compact file's size, its header CRC-32, blocks, marks,
#: CRC-32 of the header before it + offsets + marks' CRCs, (pad).
MARKS_HEADER = struct.Struct("<8sHHIQIxxxxQQI4x")


def marks_path(compact: os.PathLike | str) -> Path:
    """The marks file of a compact file (``<name>.wld.marks``)."""
    compact = Path(compact)
    return compact.with_name(compact.name + MARKS_SUFFIX)


@dataclass(frozen=True)
class MarksFile:
    """An open marks file: per block, its first mark and the CRC-32 of its marks; the marks."""

    path: Path
    every: int
    """Runs between two marks of a block (the spacing it was written at)."""
    offsets: np.ndarray
    """int64, blocks + 1: the first mark of each block (the last: the number of marks)."""
    crcs: np.ndarray
    """uint32, blocks: the CRC-32 of each block's marks."""
    marks: np.ndarray
    """int64, every mark (a plain array over the memory map)."""

    def block(self, block: int) -> np.ndarray:
        """The marks of a block (a view of the map)."""
        return self.marks[self.offsets[block]:self.offsets[block + 1]]

    def check(self, block: int) -> bool:
        """Whether a block's marks have their CRC-32."""
        return zlib.crc32(self.block(block)) == int(self.crcs[block])


def _sections(n_blocks: int) -> tuple[int, int, int]:
    """Byte offsets of the offsets, the marks' CRCs and the marks in a marks file."""
    offsets_at = MARKS_HEADER.size
    crcs_at = offsets_at + 8 * (n_blocks + 1)
    marks_at = crcs_at + -(-4 * n_blocks // 8) * 8
    return offsets_at, crcs_at, marks_at


def marks_bytes(per_block: list[np.ndarray], *, mark_every: int, compact_size: int, compact_crc: int) -> bytes:
    """The bytes of a marks file holding each block's marks (int64 arrays, in block order)."""
    counts = np.array([len(m) for m in per_block], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype("<i8")
    crcs = np.array([zlib.crc32(np.ascontiguousarray(m, dtype="<i8")) for m in per_block], dtype="<u4")
    n_blocks = len(per_block)
    _, crcs_at, marks_at = _sections(n_blocks)
    tables = offsets.tobytes() + crcs.tobytes()
    tables += bytes(marks_at - crcs_at - len(crcs.tobytes()))
    head = MARKS_HEADER.pack(MARKS_MAGIC, MARKS_VERSION, mark_every, 0, compact_size, compact_crc, n_blocks,
                             int(offsets[-1]), 0)
    crc = zlib.crc32(tables, zlib.crc32(head[:-8]))
    head = head[:-8] + struct.pack("<I4x", crc)
    marks = np.concatenate(per_block).astype("<i8") if per_block else np.zeros(0, dtype="<i8")
    return head + tables + marks.tobytes()


def open_marks(compact: os.PathLike | str, *, n_blocks: int, compact_size: int, compact_crc: int,
               mark_every: int | None = None) -> MarksFile | None:
    """The marks file of a compact file, checked against it; None when there is none, when its
    marks are every other number of runs than ``mark_every`` (None: any spacing will do, the
    reader takes the file's own), or when it is not usable (foreign, stale, another version,
    truncated or damaged header: a :class:`MarksFileWarning` says which)."""
    path = marks_path(compact)
    try:
        with open(path, "rb") as fh:
            head = fh.read(MARKS_HEADER.size)
            if len(head) < MARKS_HEADER.size or head[:8] != MARKS_MAGIC:
                return _unusable(path, "not a marks file")
            (_, version, every, _, size, crc, blocks, total, stored) = MARKS_HEADER.unpack(head)
            if version != MARKS_VERSION:
                return _unusable(path, f"marks file version {version} is not {MARKS_VERSION}")
            if mark_every is not None and every != mark_every:
                return None  # marks at another spacing than the reader's: not an error
            if (size, crc, blocks) != (compact_size, compact_crc, n_blocks):
                return _unusable(path, "belongs to another compact file (stale or foreign)")
            _, crcs_at, marks_at = _sections(blocks)
            tables = fh.read(marks_at - MARKS_HEADER.size)
            if zlib.crc32(tables, zlib.crc32(head[:-8])) != stored:
                return _unusable(path, "header checksum mismatch (truncated or damaged)")
            if os.fstat(fh.fileno()).st_size != marks_at + 8 * total:
                return _unusable(path, "truncated (or longer than its header says)")
    except FileNotFoundError:
        return None
    except OSError as exc:
        return _unusable(path, f"unreadable ({exc.strerror or exc})")
    offsets = np.frombuffer(tables, dtype="<i8", count=blocks + 1)
    crcs = np.frombuffer(tables, dtype="<u4", count=blocks, offset=crcs_at - MARKS_HEADER.size)
    if offsets[0] != 0 or offsets[-1] != total or np.any(np.diff(offsets) < 1):
        return _unusable(path, "its block offsets are not ascending")
    marks = (np.memmap(path, dtype="<i8", mode="r", offset=marks_at, shape=(total,)).view(np.ndarray)
             if total else np.zeros(0, dtype=np.int64))
    return MarksFile(path, every, offsets.astype(np.int64), crcs, marks)


def _unusable(path: Path, why: str) -> None:
    warnings.warn(f"{path}: {why}; its marks are made in memory instead "
                  f"(`egtb compact --marks` writes it again)", MarksFileWarning, stacklevel=4)
    return None
