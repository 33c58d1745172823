"""Compacting a directory of master tables: each material's compact files (``.wld``, and
``.wcdf`` and ``.dtz`` where the master holds the wcdf layer) and their marks files, the largest
first over a local pool; what is missing or older than its master (a resumed build's step).

The files' format and their encoder are :mod:`egtb.formats.compact`'s; this is the step of a
build (``egtb build`` runs it after the pairs from 7 pieces on) and of ``egtb compact``.

>>> compact_directory("/nonexistent").tables
0
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from egtb.errors import MarksFileWarning
from egtb.executor import LocalPool, Task
from egtb.formats import master
from egtb.formats.cache import TableCache
from egtb.formats.compact.exceptions import codes_as_exceptions
from egtb.formats.compact.layout import DTZ_KINDS, KINDS, RULE_KINDS, WDL, FileKind, category_codes, compact_path, dtz_codes
from egtb.formats.compact.reader import CompactTable, mark_spacing
from egtb.formats.compact.sidecar import MARKS_SUFFIX
from egtb.formats.compact.writer import (CompactReport, encode_kinds, encode_values, remove_leftovers, write_compact,
                                         write_marks)
from egtb.positions.material import Material, count_positions


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
        if kind in RULE_KINDS.values() and codes_as_exceptions(material):
            codes = _codes(path, kind)
            blob, made = encode_kinds(material, lambda lo, hi: [codes[lo:hi]], [kind], as_exceptions=True,
                                      wdl_crc=CompactTable(compact_path(out, material)).header_crc)[0]
            write_compact(target, blob)  # no marks of its own: its WLD file's
        else:
            blob, made = encode_values(material, _codes(path, kind), kind=kind)
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


def write_missing_marks(directory: os.PathLike | str, *, jobs: int = 1, mark_every: int | None = None,
                        on_done: Callable[[Path], None] | None = None) -> list[Path]:
    """Write the marks file of every compact file (``.wld``, ``.wcdf``, ``.dtz``) of a directory
    that has no usable one (missing, stale, foreign or truncated) or one of another spacing than
    ``mark_every`` runs (default: :func:`~egtb.formats.compact.reader.mark_spacing` of its
    material); return the compact files marked, and call ``on_done`` with each as its marks file
    is written.

    >>> write_missing_marks("/nonexistent")
    []
    """
    directory = Path(directory)
    remove_leftovers(directory)
    todo = [path for kind in KINDS.values() for material in master.stored_materials(directory, suffix=kind.suffix)
            if not _has_usable_marks(path := compact_path(directory, material, kind=kind), mark_every)]
    todo.sort(key=lambda path: path.stat().st_size, reverse=True)
    tasks = (Task(f"marks-{path.name}", write_marks, (path,), {"mark_every": mark_every}) for path in todo)
    done = []
    for finished in LocalPool(max(1, min(jobs, len(todo) or 1))).run(tasks, window=1):
        marks = finished.result
        done.append(marks.with_name(marks.name[:-len(MARKS_SUFFIX)]))
        if on_done is not None:
            on_done(done[-1])
    return done


def _has_usable_marks(path: Path, mark_every: int | None) -> bool:
    """Whether a compact file's marks file is there, its own (a stale one is replaced quietly) and
    ``mark_every`` runs apart (None: its material's :func:`mark_spacing`); a category file coded
    as exceptions needs none of its own (its WLD file's is marked as that)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarksFileWarning)
        table = CompactTable(path, cache=TableCache(max_bytes=1))
    if table.coded_path != table.path:
        return True
    return table.marks_file is not None and table.mark_every == (mark_every or mark_spacing(table.material))


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
