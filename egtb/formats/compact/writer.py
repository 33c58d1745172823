"""Writing compact files from master tables: values to runs to coded blocks, atomically.

>>> compact_directory("/nonexistent").tables
0
"""

from __future__ import annotations

import os
import struct
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from egtb.errors import InvalidDataError, MarksFileWarning
from egtb.executor import LocalPool, Task
from egtb.formats import master
from egtb.formats.cache import TableCache
from egtb.formats.compact.codec import (canonical_codes, count_runs, count_symbols, encode_blocks, fill_dont_cares,
                                        find_runs, huffman_lengths, length_symbol)
from egtb.formats.compact.layout import (BLOCK_BYTES, DATA_ALIGN, DTZ_KINDS, FORMAT_VERSION, HEADER, INDEX_ENTRY,
                                         KINDS, MAX_CODE_BITS, MAX_EXPONENT, NUM_BUCKETS, RULE_KINDS, WDL, FileKind,
                                         category_codes, compact_path, dtz_codes, material_counts)
from egtb.formats.compact.reader import CompactTable
from egtb.formats.compact.sidecar import MARKS_SUFFIX, marks_bytes, marks_path
from egtb.positions.material import Material, count_positions

__all__ = ["CompactReport", "compact_directory", "compact_material", "encode_values", "remove_leftovers",
           "write_compact", "write_marks", "write_missing_marks"]

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
    """Whether a process of that id runs (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_marks(compact: os.PathLike | str) -> Path:
    """Write the marks file of a compact file (:mod:`.sidecar`: every block decoded once),
    atomically; return its path. TableError names a compact file that does not read or a block
    that does not decode."""
    table = CompactTable(compact, cache=TableCache(max_bytes=1), use_marks_file=False)
    blob = marks_bytes([table.mark_block(block) for block in range(table.n_blocks)], mark_every=table.mark_every,
                       compact_size=table.file_size, compact_crc=table.header_crc)
    return _write_atomically(marks_path(compact), blob)


def compact_material(tables: os.PathLike | str, material: Material, *,
                     out: os.PathLike | str | None = None, only_stale: bool = False) -> CompactReport:
    """Write ``<material>.wld`` (in ``out``, default ``tables``) from the master table, and
    ``<material>.wcdf`` and ``<material>.dtz`` (the categories and the DTZ under "wcdf") when
    the master has that layer; with ``only_stale``, only those missing or older than the master.

    Raises FileNotFoundError when the master file is absent, TableError when broken.
    """
    path = master.table_path(tables, material)
    if not path.exists():
        raise FileNotFoundError(f"no table for {material.name}: {path} is missing")
    out = out if out is not None else tables
    wanted = _stale_files(path, material, out) if only_stale else _compact_files(path, material, out)
    report = CompactReport(count_positions(material))
    # one array of a position's size at a time (a 7-piece material has up to 1.4 G positions)
    for kind, target in wanted:
        blob, made = encode_values(material, _codes(path, kind), kind=kind, in_place=True)
        write_marks(write_compact(target, blob))
        if kind is WDL:
            report.captures, report.runs, report.bytes, report.tables = made.captures, made.runs, len(blob), 1
        elif kind.after_previous:
            report.rule_bytes += len(blob)
        else:
            report.dtz_bytes += len(blob)
    return report


def _codes(path: Path, kind: FileKind) -> np.ndarray:
    """The value codes a compact file of ``kind`` holds, from a master file (uint8)."""
    if kind is WDL:
        return master.open_table(path, rules=False).wdl
    if kind.after_previous:
        return category_codes(master.read_categories(path, kind.rule))
    layer = master.read_rule_layer(path, kind.rule)
    return dtz_codes(layer.category, layer.dtz)


def _compact_files(path: Path, material: Material, out: os.PathLike | str) -> list[tuple[FileKind, Path]]:
    """(kind, path) of every compact file a master file gives: its values, and the categories and
    DTZ of each of its rule layers that compact files hold."""
    kinds = [WDL] + [kinds[rule] for rule in master.rule_presets_in(path)
                     for kinds in (RULE_KINDS, DTZ_KINDS) if rule in kinds]
    return [(kind, compact_path(out, material, kind=kind)) for kind in kinds]


def _stale_files(path: Path, material: Material, out: os.PathLike | str) -> list[tuple[FileKind, Path]]:
    """Those of :func:`_compact_files` missing or older than the master file."""
    made = path.stat().st_mtime_ns
    return [(kind, target) for kind, target in _compact_files(path, material, out)
            if not target.exists() or target.stat().st_mtime_ns < made]


def stale_materials(tables: os.PathLike | str, *, out: os.PathLike | str | None = None,
                    min_pieces: int = 2) -> list[Material]:
    """The master tables of at least `min_pieces` pieces whose compact files are missing or older
    than the master (in ``out``, default ``tables``): what a resumed build still has to compact.

    >>> stale_materials("/nonexistent")
    []
    """
    tables = Path(tables)
    out = Path(out) if out is not None else tables
    return [material for material in master.stored_materials(tables) if material.pieces >= min_pieces
            and _stale_files(master.table_path(tables, material), material, out)]


def write_missing_marks(directory: os.PathLike | str, *, jobs: int = 1,
                        on_done: Callable[[Path], None] | None = None) -> list[Path]:
    """Write the marks file of every compact file (``.wld``, ``.wcdf``) of a directory that has no
    usable one (missing, stale, foreign or truncated); return the compact files marked, and
    call ``on_done`` with each as its marks file is written.

    >>> write_missing_marks("/nonexistent")
    []
    """
    directory = Path(directory)
    remove_leftovers(directory)
    todo = [path for kind in KINDS.values() for material in master.stored_materials(directory, suffix=kind.suffix)
            if not _has_usable_marks(path := compact_path(directory, material, kind=kind))]
    todo.sort(key=lambda path: path.stat().st_size, reverse=True)
    tasks = (Task(f"marks-{path.name}", write_marks, (path,)) for path in todo)
    done = []
    for finished in LocalPool(max(1, min(jobs, len(todo) or 1))).run(tasks, window=1):
        marks = finished.result
        done.append(marks.with_name(marks.name[:-len(MARKS_SUFFIX)]))
        if on_done is not None:
            on_done(done[-1])
    return done


def _has_usable_marks(path: Path) -> bool:
    """Whether a compact file's marks file is there and its own (a stale one is replaced quietly)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarksFileWarning)
        return CompactTable(path, cache=TableCache(max_bytes=1)).marks_file is not None


def compact_directory(tables: os.PathLike | str, *, out: os.PathLike | str | None = None,
                      jobs: int = 1, materials: list[Material] | None = None, only_stale: bool = False,
                      on_done: Callable[[Material, CompactReport], None] | None = None
                      ) -> CompactReport:
    """Compact every master table of a directory (largest first over ``jobs`` processes); with
    ``only_stale``, write only the compact files missing or older than their master.

    >>> compact_directory("/nonexistent").tables
    0
    """
    started = time.perf_counter()
    tables = Path(tables)
    out = Path(out) if out is not None else tables
    if materials is None:
        materials = master.stored_materials(tables)
    if materials:
        out.mkdir(parents=True, exist_ok=True)
    todo = sorted(materials, key=count_positions, reverse=True)
    remove_leftovers(out)
    total = CompactReport()
    for material, report in _compact_all(tables, out, todo, jobs, only_stale):
        total.add(report, material.pieces)
        if on_done is not None:
            on_done(material, report)
    total.seconds = time.perf_counter() - started
    return total


def _compact_one(tables: Path, out: Path, material: Material, only_stale: bool) -> tuple[Material, CompactReport]:
    return material, compact_material(tables, material, out=out, only_stale=only_stale)


def _compact_all(tables: Path, out: Path, todo: list[Material], jobs: int, only_stale: bool
                 ) -> Iterator[tuple[Material, CompactReport]]:
    """Each material of ``todo`` compacted on the local pool (in that order, one at a time per
    job); (material, report) as each finishes."""
    tasks = (Task(f"compact-{material}", _compact_one, (tables, out, material, only_stale)) for material in todo)
    for done in LocalPool(max(1, min(jobs, len(todo)))).run(tasks, window=1):
        yield done.result
