"""Writing compact files: a material's value codes to runs to coded blocks, written atomically,
with their marks files. Compacting a directory of master tables is the builder's
(:mod:`egtb.builder.compaction`).

>>> encode_values(Material.parse("1k-1k"), np.ones(992, dtype=np.uint8))[1].runs
1
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from egtb.errors import InvalidDataError
from egtb.formats.cache import TableCache
from egtb.formats.compact.codec import (canonical_codes, count_runs, count_symbols, encode_blocks, fill_dont_cares,
                                        find_runs, huffman_lengths, length_symbol)
from egtb.formats.compact.layout import (BLOCK_BYTES, DATA_ALIGN, FORMAT_VERSION, HEADER, INDEX_ENTRY, KINDS,
                                         MAX_CODE_BITS, MAX_EXPONENT, NUM_BUCKETS, WDL, FileKind, material_counts)
from egtb.formats.compact.reader import CompactTable
from egtb.formats.compact.sidecar import MARKS_SUFFIX, marks_bytes, marks_path
from egtb.positions.material import Material, count_positions

__all__ = ["CompactReport", "encode_values", "remove_leftovers", "write_compact", "write_marks"]

@dataclass
class CompactReport:
    """What compacting a material (or a directory) produced."""

    positions: int = 0
    """Positions of the tables."""
    captures: int = 0
    """Of which must-capture positions (left out)."""
    runs: int = 0
    """Runs of equal values after filling the capture positions."""
    bytes: int = 0
    """Size of the compact files."""
    tables: int = 0
    """Files written."""
    seconds: float = 0.0
    """Wall time."""
    rule_bytes: int = 0
    """Size of the category files (``.wcdf``), not counted in ``bytes``."""
    dtz_bytes: int = 0
    """Size of the DTZ files (``.dtz``), not counted in ``bytes``."""
    by_pieces: dict = field(default_factory=dict)
    """Piece count -> [positions, bytes, tables, rule_bytes, dtz_bytes]."""

    @property
    def bits_per_position(self) -> float:
        """File bits per position (all positions counted)."""
        return 8 * self.bytes / self.positions if self.positions else 0.0

    def add(self, other: "CompactReport", pieces: int) -> None:
        """Add a material's report to the totals."""
        self.positions += other.positions
        self.captures += other.captures
        self.runs += other.runs
        self.bytes += other.bytes
        self.tables += other.tables
        self.rule_bytes += other.rule_bytes
        self.dtz_bytes += other.dtz_bytes
        row = self.by_pieces.setdefault(pieces, [0, 0, 0, 0, 0])
        row[0] += other.positions
        row[1] += other.bytes
        row[2] += other.tables
        row[3] += other.rule_bytes
        row[4] += other.dtz_bytes


def encode_values(material: Material, wdl: np.ndarray, *, kind: FileKind = WDL,
                  in_place: bool = False) -> tuple[bytes, CompactReport]:
    """The compact file's bytes for a material's value codes (uint8, one per position).

    The codes are those of ``kind``: DRAW, WIN, LOSS for a WLD file, also
    CURSED_WIN and BLESSED_LOSS for a category file (see :func:`category_codes`),
    DTZ + 1 for a DTZ file, 0 where it holds none (:func:`dtz_codes`). Positions
    whose side to move must capture (and a DTZ file's 0s) are don't-cares, filled
    with the value before them. ValueError for a code of 0 in a WLD or category
    file (an unsolved position). With ``in_place`` the caller gives up ``wdl``
    (a uint8 array): it is overwritten instead of copied.
    """
    values = np.ascontiguousarray(wdl, dtype=np.uint8)
    if not in_place or values is not wdl:
        values = values.copy()
    del wdl
    if len(values) != count_positions(material):
        raise InvalidDataError(f"{material.name}: {len(values)} values for "
                         f"{count_positions(material)} positions")
    if kind.after_previous and len(values) and not values.all():
        raise InvalidDataError(f"{material.name}: position {int(np.argmin(values))} is unsolved (code 0)")
    captures = int(fill_dont_cares(material_counts(material), values))
    n_runs = int(count_runs(values))
    run_vals = np.empty(n_runs, dtype=np.uint8)
    run_lens = np.empty(n_runs, dtype=np.int64)
    find_runs(values, run_vals, run_lens)
    del values
    if n_runs and int(run_vals.max()) > kind.values:
        raise InvalidDataError(f"{material.name}: value code {int(run_vals.max())} is not a "
                         f"{kind.suffix} code (1..{kind.values})")
    hist = np.zeros((kind.contexts + 1, kind.symbols), dtype=np.int64)
    tables = (kind.first_context, kind.context_after, kind.choice_of)
    count_symbols(run_vals, run_lens, hist, *tables)
    lengths = _code_lengths(hist, run_lens, kind)
    codes = np.stack([canonical_codes(row) for row in lengths])
    bound = int((lengths.max() + MAX_EXPONENT) * n_runs // 8)
    capacity = (bound // (BLOCK_BYTES - 16) + 2) * BLOCK_BYTES
    out = np.zeros(capacity, dtype=np.uint8)
    max_blocks = capacity // BLOCK_BYTES + 1
    starts = np.zeros(max_blocks, dtype=np.int64)
    ctx = np.zeros(max_blocks, dtype=np.uint8)
    runs = np.zeros(max_blocks, dtype=np.int64)
    n_blocks, used = encode_blocks(run_vals, run_lens, codes, lengths, out, starts, ctx, runs, *tables)
    data = out[:used].tobytes()
    blob = _file_bytes(material, count_positions(material), data, starts[:n_blocks], ctx[:n_blocks],
                       int(runs[:n_blocks].max(initial=1)), lengths, kind)
    return blob, CompactReport(count_positions(material), captures, n_runs, len(blob), 1)


def _code_lengths(hist: np.ndarray, run_lens: np.ndarray, kind: FileKind) -> np.ndarray:
    """Huffman code lengths per context; every symbol a block start may need gets a code (a
    block's first run is coded in another context than in the run's order, unless there is one
    context). ValueError when a context has more symbols than codes of MAX_CODE_BITS fit."""
    smoothed = hist.copy()
    if kind.after_previous:
        top = int(length_symbol(int(run_lens.max()))[0]) if len(run_lens) else 0
        for choice in range(kind.values - 1):
            smoothed[1:, choice * NUM_BUCKETS:choice * NUM_BUCKETS + top + 1] += 1
    lengths = np.zeros_like(hist)
    for c in range(1, kind.contexts + 1):
        used = int(np.count_nonzero(smoothed[c]))
        if used > 1 << MAX_CODE_BITS:
            raise InvalidDataError(f"{used} distinct runs in one context of a {kind.suffix} file: "
                             f"more than codes of {MAX_CODE_BITS} bits can tell apart")
        lengths[c] = huffman_lengths(smoothed[c])
    return lengths


def _file_bytes(material: Material, positions: int, data: bytes, starts: np.ndarray,
                ctx: np.ndarray, max_runs: int, lengths: np.ndarray, kind: FileKind) -> bytes:
    n_blocks = len(starts)
    index_bytes = INDEX_ENTRY.size * n_blocks
    data_offset = -(-(HEADER.size + kind.lengths_bytes + index_bytes) // DATA_ALIGN) * DATA_ALIGN
    index = bytearray()
    for k in range(n_blocks):
        block = data[k * BLOCK_BYTES:(k + 1) * BLOCK_BYTES]
        index += INDEX_ENTRY.pack(int(starts[k]), zlib.crc32(block), int(ctx[k]))
    table = lengths[1:].astype(np.uint8).tobytes()
    head = HEADER.pack(kind.magic, FORMAT_VERSION, kind.preset, material.black_men, material.black_kings,
                       material.white_men, material.white_kings, positions, BLOCK_BYTES,
                       MAX_CODE_BITS, n_blocks, max_runs, NUM_BUCKETS, data_offset, 0)
    crc = zlib.crc32(index, zlib.crc32(table, zlib.crc32(head[:-8])))
    head = head[:-8] + struct.pack("<I4x", crc)
    meta = head + table + bytes(index)
    return meta + bytes(data_offset - len(meta)) + data


def write_compact(path: os.PathLike | str, blob: bytes) -> Path:
    """Write a compact file atomically (temporary name, fsync, rename); its old marks file, which
    belonged to the file it replaces, is removed (:func:`~.sidecar.write_marks` writes the new one)."""
    path = Path(path)
    marks_path(path).unlink(missing_ok=True)
    return _write_atomically(path, blob)


def _write_atomically(path: Path, blob: bytes) -> Path:
    """Write a file under a temporary name, fsync, rename."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(blob)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def remove_leftovers(directory: os.PathLike | str, *, also: tuple[str, ...] = ()) -> list[Path]:
    """Delete the temporary files (``<file>.<pid>.tmp``) that a killed writer of compact or marks
    files (or of files with a suffix of `also`) left in a directory, those of a process still
    running kept; return them.

    >>> remove_leftovers("/nonexistent")
    []
    """
    removed = []
    for path in sorted(Path(directory).glob("*.*.tmp")):
        name, pid, _ = path.name.rsplit(".", 2)
        if pid.isdigit() and (Path(name).suffix in _WRITTEN_SUFFIXES or name.endswith(also)) \
                and not _running(int(pid)):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


#: Suffixes of the files this module writes (compact files and their marks files).
_WRITTEN_SUFFIXES = {kind.suffix for kind in KINDS.values()} | {MARKS_SUFFIX}


def _running(pid: int) -> bool:
    """Whether a process of that id runs (one of another user's counts as running; a zombie, dead
    but not yet reaped, as a killed build's workers stay where nothing reaps orphans, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether a process has exited and waits to be reaped (read from Linux's ``/proc``; elsewhere, no)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rpartition(")")[2].split()[:1]  # the name in parentheses may hold spaces
    return state in (["Z"], ["X"])


def write_marks(compact: os.PathLike | str) -> Path:
    """Write the marks file of a compact file (:mod:`.sidecar`: every block decoded once),
    atomically; return its path. TableError names a compact file that does not read or a block
    that does not decode."""
    table = CompactTable(compact, cache=TableCache(max_bytes=1), use_marks_file=False)
    blob = marks_bytes([table.mark_block(block) for block in range(table.n_blocks)], mark_every=table.mark_every,
                       compact_size=table.file_size, compact_crc=table.header_crc)
    return _write_atomically(marks_path(compact), blob)
