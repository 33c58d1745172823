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
from typing import Callable, Sequence

import numpy as np

from egtb.errors import InvalidDataError
from egtb.formats.cache import TableCache
from egtb.formats.compact.codec import (S_ACC, S_ACC_BITS, S_BYTE, S_PREV, canonical_codes, close_runs, count_symbols,
                                        encode_blocks, huffman_lengths, length_symbol)
from egtb.formats.compact.exceptions import exceptions_bytes
from egtb.formats.compact.layout import (BLOCK_BYTES, DATA_ALIGN, FORMAT_VERSION, HEADER, INDEX_ENTRY, KINDS,
                                         MAX_CODE_BITS, MAX_EXPONENT, NUM_BUCKETS, RULE_KINDS, THREATS_VERSION, WDL,
                                         FileKind, material_counts)
from egtb.formats.compact.reader import CompactTable
from egtb.formats.compact.sidecar import MARKS_SUFFIX, marks_bytes, marks_path
from egtb.formats.values import BLESSED_LOSS, CURSED_WIN, DRAW, UNKNOWN
from egtb.positions.material import Material, count_positions
from egtb.positions.walk import capture_flags, left_out_flags

__all__ = ["CompactReport", "KEPT_FLAGS_POSITIONS", "encode_kinds", "encode_values", "kept_flags_bytes",
           "remove_leftovers", "write_compact", "write_marks"]

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


#: Positions whose codes the writer holds at a time (a few bytes each, and 9 a run they close).
CHUNK_POSITIONS = 1 << 22
#: Materials up to this many positions keep the first pass's must-capture flags for the second,
#: a bit each (:func:`kept_flags_bytes`: 1.9 GB at most, for every material up to 8 pieces, the
#: largest 15.4 G positions); bigger ones find them again (the walk: about 25 ns a position).
KEPT_FLAGS_POSITIONS = 1 << 34


def kept_flags_bytes(material: Material, *, threats: bool = False) -> int:
    """Bytes the writer keeps between its two passes over a material (:func:`encode_kinds`): its
    must-capture flags, and with ``threats`` the flags of the positions the WLD file leaves out,
    a bit a position each; 0 for a material of more than KEPT_FLAGS_POSITIONS positions.

    >>> kept_flags_bytes(Material.parse("2m2k-2m2k")) / 1e9, kept_flags_bytes(Material.parse("1k-1k"), threats=True)
    (1.9297278, 248)
    """
    positions = count_positions(material)
    return 0 if positions > KEPT_FLAGS_POSITIONS else (1 + threats) * -(-positions // 8)


def encode_values(material: Material, wdl: np.ndarray, *, kind: FileKind = WDL,
                  threats: bool = False) -> tuple[bytes, CompactReport]:
    """The compact file's bytes for a material's value codes (uint8, one per position).

    The codes are those of ``kind``: DRAW, WIN, LOSS for a WLD file, also
    CURSED_WIN and BLESSED_LOSS for a category file (see :func:`category_codes`),
    DTZ + 1 for a DTZ file, 0 where it holds none (:func:`dtz_codes`). Positions
    whose side to move must capture (and a DTZ file's 0s) are don't-cares, filled
    with the value before them. ValueError for a code of 0 in a WLD or category
    file (an unsolved position). `wdl` is left as it is (:func:`encode_kinds`).
    """
    if len(wdl) != count_positions(material):
        raise InvalidDataError(f"{material.name}: {len(wdl)} values for "
                               f"{count_positions(material)} positions")
    return encode_kinds(material, lambda lo, hi: [np.array(wdl[lo:hi], dtype=np.uint8)], (kind,),
                        threats=threats)[0]


def encode_kinds(material: Material, codes_of: Callable[[int, int], Sequence[np.ndarray]],
                 kinds: Sequence[FileKind], *, chunk: int = CHUNK_POSITIONS, as_exceptions: bool = False,
                 wdl_crc: int | None = None, threats: bool = False) -> list[tuple[bytes, CompactReport]]:
    """The compact files' bytes for several kinds of a material's codes, read a chunk at a time.

    ``codes_of(lo, hi)`` gives the codes of positions lo..hi for each kind in
    order (as :func:`encode_values` takes them), read and not kept; it is called twice per chunk,
    once to count the runs' symbols and once to code them, so that the writer
    holds a chunk's codes and the files' bytes, never a whole material's codes
    or runs (an 8-piece material has up to 11.8 G positions). The positions'
    must-capture flags are found once per chunk and pass for every kind.

    With ``as_exceptions`` the category kind is coded as exceptions to a WLD file
    (:mod:`.exceptions`): the one coded in the same call (WDL before it in ``kinds``),
    else the one whose header CRC-32 is ``wdl_crc``.

    With ``threats`` the WLD file also leaves out the threat positions of
    :func:`egtb.rules.threats.threat_left_out` (format version 2, about half the size at 6
    pieces and more); its categories as exceptions are those of the true values, as before.

    >>> codes = np.r_[np.ones(500, dtype=np.uint8), np.full(492, 2, dtype=np.uint8)]
    >>> whole, = encode_kinds(Material.parse("1k-1k"), lambda lo, hi: [codes[lo:hi].copy()], [WDL])
    >>> whole == encode_kinds(Material.parse("1k-1k"), lambda lo, hi: [codes[lo:hi].copy()], [WDL], chunk=7)[0]
    True
    """
    counts = material_counts(material)
    positions = count_positions(material)
    must = np.empty(min(chunk, positions), dtype=np.bool_)
    lasts = _last_values(counts, positions, codes_of, len(kinds), chunk=chunk, must=must)
    files = [_ExceptionsEncoder(material) if as_exceptions and kind in RULE_KINDS.values()
             else _FileEncoder(material, kind, min(chunk, positions), last, threats=threats and kind is WDL)
             for kind, last in zip(kinds, lasts)]
    runs_coded = not all(isinstance(file, _ExceptionsEncoder) for file in files)  # else one pass
    threat_file = any(getattr(file, "threats", False) for file in files)
    left_out = np.empty(len(must) if threat_file else 0, dtype=np.bool_)  # captures and threats: WDL's don't-cares
    threat = np.empty_like(left_out)
    flags: list | None = [] if runs_coded and kept_flags_bytes(material) else None  # the first pass's
    for step in ("count", "code") if runs_coded else ("count",):
        for n, lo in enumerate(range(0, positions, chunk)):
            hi = min(lo + chunk, positions)
            if step == "code" and flags is not None:
                for k, array in enumerate((must, left_out)[:1 + threat_file]):
                    array[:hi - lo] = np.unpackbits(flags[n][k], count=hi - lo).view(np.bool_)
                captures = 0
            else:
                if threat_file:  # one walk for both
                    captures = int(left_out_flags(counts, lo, hi, must, threat))
                    np.logical_or(must[:hi - lo], threat[:hi - lo], out=left_out[:hi - lo])
                else:
                    captures = int(capture_flags(counts, lo, hi, must))
                if flags is not None:
                    flags.append([np.packbits(array[:hi - lo]) for array in (must, left_out)[:1 + threat_file]])
            for file, codes in zip(files, codes_of(lo, hi), strict=True):
                dont_care = left_out if getattr(file, "threats", False) else must
                getattr(file, step)(lo, np.ascontiguousarray(codes, dtype=np.uint8), dont_care[:hi - lo], captures)
        for file in files:
            getattr(file, step)(positions, None, must[:0], 0)
    blobs = []
    for kind, file in zip(kinds, files):  # WDL first: the header CRC-32 its exceptions name
        blobs.append(file.blob(wdl_crc) if isinstance(file, _ExceptionsEncoder) else file.blob())
        if kind is WDL:
            wdl_crc = HEADER.unpack_from(blobs[-1][0])[-1]
    return blobs


def _last_values(counts: np.ndarray, positions: int, codes_of: Callable[[int, int], Sequence[np.ndarray]],
                 kinds: int, *, chunk: int, must: np.ndarray) -> list[int]:
    """Each kind's last value that is not a don't-care (DRAW when it has none), read from the end:
    the value of the don't-cares before a file's first value."""
    last = [UNKNOWN] * kinds
    hi = positions
    while hi > 0 and UNKNOWN in last:
        lo = max(0, hi - chunk)
        capture_flags(counts, lo, hi, must)
        for k, codes in enumerate(codes_of(lo, hi)):
            held = np.flatnonzero(~must[:hi - lo] & (np.asarray(codes) != UNKNOWN))
            if last[k] == UNKNOWN and len(held):
                last[k] = int(codes[held[-1]])
        hi = lo
    return [DRAW if value == UNKNOWN else value for value in last]


class _FileEncoder:
    """One compact file coded from chunks of codes: the runs' symbols counted over the whole
    material (:meth:`count`), then the runs coded into blocks (:meth:`code`); a call with no
    codes closes the last run."""

    def __init__(self, material: Material, kind: FileKind, chunk: int, last: int, *, threats: bool = False) -> None:
        self.material, self.kind, self.file_last, self.threats = material, kind, last, threats
        self.tables = (kind.first_context, kind.context_after, kind.choice_of)
        self.run_vals = np.empty(chunk, dtype=np.uint8)
        self.run_lens = np.empty(chunk, dtype=np.int64)
        self.hist = np.zeros((kind.contexts + 1, kind.symbols), dtype=np.int64)
        self.captures = self.runs = self.longest = 0
        self._start_pass()

    def _start_pass(self) -> None:
        # value, length: the file's don't-cares before its first value take its last value
        self.open_run = np.array([self.file_last, 0], dtype=np.int64)
        self.ctx = -1

    def _runs(self, codes: np.ndarray | None, must: np.ndarray) -> int:
        """Close a chunk's runs, its don't-cares taking the value before them (the last run with
        no codes); how many."""
        if codes is None:
            self.run_vals[0], self.run_lens[0] = self.open_run
            return 1
        return close_runs(codes, must, self.open_run, self.run_vals, self.run_lens)

    def count(self, lo: int, codes: np.ndarray | None, must: np.ndarray, captures: int) -> None:
        """First pass: check a chunk's codes and count its runs' symbols."""
        kind = self.kind
        if codes is not None and kind.after_previous and not codes.all():
            raise InvalidDataError(f"{self.material.name}: position {lo + int(np.argmin(codes))} is unsolved (code 0)")
        closed = self._runs(codes, must)
        vals, lens = self.run_vals[:closed], self.run_lens[:closed]
        if closed and int(vals.max()) > kind.values:
            raise InvalidDataError(f"{self.material.name}: value code {int(vals.max())} is not a "
                                   f"{kind.suffix} code (1..{kind.values})")
        self.ctx = count_symbols(vals, lens, closed, self.hist, self.ctx, *self.tables)
        self.captures += captures
        self.runs += closed
        self.longest = max(self.longest, int(lens.max(initial=0)))
        if codes is None:
            self.lengths = _code_lengths(self.hist, self.longest, kind)
            self.codes = np.stack([canonical_codes(row) for row in self.lengths])
            self._start_pass()
            self.state = np.zeros(6, dtype=np.int64)
            self.state[S_PREV] = -1
            self.blocks = [np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.uint8), np.zeros(1, dtype=np.int64)]
            self.partial = np.zeros(BLOCK_BYTES, dtype=np.uint8)  # the block being filled
            self.data: list[bytes] = []
            self.starts: list[np.ndarray] = []

    def code(self, lo: int, codes: np.ndarray | None, must: np.ndarray, captures: int) -> None:
        """Second pass: code a chunk's runs into blocks, keeping the one being filled."""
        closed = self._runs(codes, must)
        bound = int((self.lengths.max() + MAX_EXPONENT) * closed // 8)
        out = np.zeros(BLOCK_BYTES + (bound // (BLOCK_BYTES - 16) + 2) * BLOCK_BYTES, dtype=np.uint8)
        out[:BLOCK_BYTES] = self.partial
        most = len(out) // BLOCK_BYTES + 1
        starts, ctx, runs = (np.zeros(most, dtype=a.dtype) for a in self.blocks)
        for new, old in zip((starts, ctx, runs), self.blocks):
            new[0] = old[0]
        filling = encode_blocks(self.run_vals, self.run_lens, closed, self.codes, self.lengths, out,
                                starts, ctx, runs, self.state, *self.tables)
        self.data.append(out[:filling * BLOCK_BYTES].tobytes())
        self.starts.append(np.stack([starts[:filling], ctx[:filling], runs[:filling]]))
        self.partial = out[filling * BLOCK_BYTES:(filling + 1) * BLOCK_BYTES].copy()
        self.blocks = [starts[filling:filling + 1], ctx[filling:filling + 1], runs[filling:filling + 1]]
        self.state[S_BYTE] -= filling * BLOCK_BYTES
        if codes is None:
            if self.state[S_ACC_BITS]:
                self.partial[self.state[S_BYTE]] = self.state[S_ACC] & 0xFF
                self.state[S_BYTE] += 1
            self.data.append(self.partial[:self.state[S_BYTE]].tobytes())
            self.starts.append(np.stack([a.astype(np.int64) for a in self.blocks]))

    def blob(self) -> tuple[bytes, CompactReport]:
        """The file's bytes and report, once both passes are done."""
        data = b"".join(self.data)
        starts, ctx, runs = np.concatenate(self.starts, axis=1)
        positions = count_positions(self.material)
        blob = _file_bytes(self.material, positions, data, starts, ctx.astype(np.uint8),
                           int(runs.max(initial=1)), self.lengths, self.kind,
                           THREATS_VERSION if self.threats else FORMAT_VERSION)
        return blob, CompactReport(positions, self.captures, self.runs, len(blob), 1)


class _ExceptionsEncoder:
    """A category file coded as exceptions (:mod:`.exceptions`): the stored positions whose code is
    a cursed win or a blessed loss, found in the first pass."""

    def __init__(self, material: Material) -> None:
        self.material = material
        self.found: list[np.ndarray] = []
        self.captures = 0

    def count(self, lo: int, codes: np.ndarray | None, must: np.ndarray, captures: int) -> None:
        """First pass: the chunk's exceptions."""
        if codes is not None:
            self.found.append(lo + np.flatnonzero(((codes == CURSED_WIN) | (codes == BLESSED_LOSS)) & ~must))
            self.captures += captures

    def code(self, lo: int, codes: np.ndarray | None, must: np.ndarray, captures: int) -> None:
        """Second pass: nothing (the file holds no runs)."""

    def blob(self, wdl_crc: int | None) -> tuple[bytes, CompactReport]:
        """The file's bytes and report, refining the WLD file whose header CRC-32 is `wdl_crc`."""
        if wdl_crc is None:
            raise InvalidDataError(f"{self.material.name}: categories coded as exceptions need their WLD file")
        positions = count_positions(self.material)
        blob = exceptions_bytes(self.material, positions, np.concatenate(self.found or [np.zeros(0, np.int64)]),
                                wdl_crc=wdl_crc)
        return blob, CompactReport(positions, self.captures, 0, len(blob), 1)


def _code_lengths(hist: np.ndarray, longest: int, kind: FileKind) -> np.ndarray:
    """Huffman code lengths per context; every symbol a block start may need gets a code (a
    block's first run is coded in another context than in the run's order, unless there is one
    context). ValueError when a context has more symbols than codes of MAX_CODE_BITS fit."""
    smoothed = hist.copy()
    if kind.after_previous:
        top = int(length_symbol(longest)[0]) if longest else 0
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
                ctx: np.ndarray, max_runs: int, lengths: np.ndarray, kind: FileKind, version: int) -> bytes:
    n_blocks = len(starts)
    index_bytes = INDEX_ENTRY.size * n_blocks
    data_offset = -(-(HEADER.size + kind.lengths_bytes + index_bytes) // DATA_ALIGN) * DATA_ALIGN
    index = bytearray()
    for k in range(n_blocks):
        block = data[k * BLOCK_BYTES:(k + 1) * BLOCK_BYTES]
        index += INDEX_ENTRY.pack(int(starts[k]), zlib.crc32(block), int(ctx[k]))
    table = lengths[1:].astype(np.uint8).tobytes()
    head = HEADER.pack(kind.magic, version, kind.preset, material.black_men, material.black_kings,
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


def write_marks(compact: os.PathLike | str, *, mark_every: int | None = None) -> Path:
    """Write the marks file of a compact file (:mod:`.sidecar`: every block decoded once), a mark
    every ``mark_every`` runs (default: :func:`~.reader.mark_spacing` of its material),
    atomically; return its path. A category file coded as exceptions has none of its own: its
    WLD file's is written. TableError names a compact file that does not read or a block that
    does not decode."""
    table = CompactTable(compact, cache=TableCache(max_bytes=1), mark_every=mark_every, use_marks_file=False)
    if table.coded_path != table.path:
        return write_marks(table.coded_path, mark_every=mark_every)
    blob = marks_bytes([table.mark_block(block) for block in range(table.n_blocks)], mark_every=table.mark_every,
                       compact_size=table.file_size, compact_crc=table.header_crc)
    return _write_atomically(marks_path(compact), blob)
