"""Checking compact files: every position, stored or recovered by the capture search, probed
through the compact files alone and compared with the master table, or with its successors
(:mod:`egtb.builder.verify_native`, a chunk at a time, resumable).

>>> verify_compact("/nonexistent").ok
False
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from multiprocessing import get_context
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from egtb.builder.dense_units import DenseUnits
from egtb.builder.figures import TableFigures
from egtb.builder.native import categories_path, category_chunks
from egtb.builder.successor_check import NO_WIN, rule_outcome, unranked
from egtb.builder.reference import recounted_differences
from egtb.builder.verify_native import FILE_FLAGS, FLAG_SIGN, check_chunk, error_text
from egtb.builder.verify_derived import DerivedWriter, derived_sides, open_derived, remove_derived, rule_of
from egtb.builder.verify_progress import (PROGRESS_SUFFIX, MaterialProgress, files_identity, load_progress,
                                          save_progress)
from egtb.builder.verify_report import VerifyReport
from egtb.errors import InvalidArgumentError, MissingRuleLayerError, MissingTableError, TableError
from egtb.formats import master
from egtb.executor import LocalPool, Task
from egtb.formats.compact import (DTZ_KINDS, RULE_KINDS, SUFFIX, WDL, CompactTable, compact_path, compact_paths,
                                  material_counts, remove_leftovers)
from egtb.formats.values import WDL_OF_CODE
from egtb.positions.index import global_unrank, material_of_code, unrank_positions
from egtb.positions.material import Material, count_positions
from egtb.probe.batch import derived_dtz
from egtb.probe.compact_kernels import CompactBatches, probe_batch
from egtb.probe.compact_tables import open_compact
from egtb.probe.tablebase import Tablebase
from egtb.rules.draw_rules import DRAW_RULES
from egtb.rules.notation import Placement, format_fen
from egtb.rules.threats import threat_flags

log = logging.getLogger(__name__)

__all__ = ["CHUNK", "CompactProber", "CompactVerifyReport", "NO_WIN", "SAVE_EVERY", "rule_outcome",
           "unranked_chunks", "verify_compact"]

#: Positions a chunk of a check (about 200 bytes a position while it is checked, its successors
#: and their sort with it; larger chunks are no faster: measured 1.3 M positions/s at 2**16 to 2**20).
CHUNK = 1 << 18
#: Positions of the tables a check's prober copies whole (a byte each; see
#: :meth:`CompactProber.loaded_categories`), in all.
LOADED_POSITIONS = 3 << 30
#: CPU seconds a position of such a copy (its capture positions searched: 460 ns at 7 pieces).
COPY_SECONDS = 460e-9
#: Seconds between two records of a compact-native check's progress.
SAVE_EVERY = 10.0


@dataclass
class CompactVerifyReport(VerifyReport):
    """Outcome of :func:`verify_compact`: ``tables`` and ``checked`` count the WLD files and
    their positions, ``layers`` and ``layer_checked`` the category files and theirs."""

    captures: int = 0
    """Positions whose value came from the capture search (and were checked)."""
    layers: int = 0
    """Category files (``.wcdf``) checked."""
    layer_checked: int = 0
    """Positions whose category was checked."""
    dtz_files: int = 0
    """DTZ files (``.dtz``) checked."""
    dtz_checked: int = 0
    """Wins and losses whose DTZ was checked (against the master's, or against their successors)."""
    figures: int = 0
    """Compact-native tables whose figures (counts, longest DTZ, checksums) were recounted from their
    files and compared with their stamps and the reference."""


def verify_compact(directory: os.PathLike | str, *, materials: list[Material] | None = None,
                   masters: os.PathLike | str | None = None, chunk: int = CHUNK,
                   max_reported: int = 20, resume: bool = False, again: bool = False,
                   save_every: float = SAVE_EVERY, jobs: int = 1, progress: Callable[[str, int], None] | None = None,
                   reference: bool = True) -> CompactVerifyReport:
    """Check the compact files of a directory, probing through them alone.

    A material with a master table in ``masters`` (default: the same
    directory) has every stored position compared with it, and one position in
    :data:`SEARCH_SAMPLE` of those the capture search recovers; a category file
    (``.wcdf``) is compared with the master's rule layer when there is one, else
    with the WLD file (a category's win or loss side must be its WDL); a DTZ file
    (``.dtz``) has its DTZ at every win and loss compared with the master's.
    A material without a master (a compact-native table) is checked against its
    successors, ``chunk`` positions at a time, its three files in one pass
    (:func:`egtb.builder.verify_native.check_chunk`): every stored value is the
    best over its moves, every category and the DTZ of every win and loss those
    its moves give (the fastest win, the slowest loss), probed from the compact
    files, a move to a position whose side to move must capture answered by the
    capture search (such a position is not stored: nothing of it to check). Its
    progress is recorded (``<material>.verify.json``, :mod:`.verify_progress`)
    at most every ``save_every`` seconds and at its end: with ``resume`` a killed
    check goes on from there, and a material that passed with the same files is
    skipped (``report.skipped``); with ``again`` too, every material is checked from its start
    (and recorded anew); without ``resume`` nothing is read or written. With
    ``jobs`` above 1 the compact-native materials are checked side by side, one a worker of a
    local pool (the report the same as one after the other).
    The check of a compact-native table counts its figures as it goes (counts, longest DTZ,
    checksums: :mod:`egtb.builder.figures`, recorded with its progress for the reference rows,
    :func:`passed_figures`) and compares them at its end with its stamp (what the builder counted)
    and, with ``reference``, the shipped reference rows: where they differ is an error.
    Damaged blocks and missing files count as errors, named in the messages.
    ``progress(file name, positions)`` is called when the check of a file starts (0), as each
    chunk of its positions is taken up (their count) and when it ends (the rest): a command line's progress
    bar, which an 8-piece file (736 M positions and more) would otherwise leave at 0 for an hour.
    """
    directory = Path(directory)
    masters = Path(masters) if masters is not None else directory
    if materials is None:
        materials = master.stored_materials(directory, suffix=SUFFIX)
    report = CompactVerifyReport()
    prober = CompactProber(directory)
    tell = progress or (lambda name, positions: None)
    if chunk <= 0:
        raise InvalidArgumentError(f"a verify chunk of {chunk} positions")
    if resume:
        remove_leftovers(directory, also=(PROGRESS_SUFFIX,))  # records a killed check was writing
    natives = [m for m in materials if not _has_master(directory, masters, m)]
    feeds = derived_sides(directory, natives)  # each derived side checked before its mirror
    materials = _derived_first(materials, feeds)
    natives = [m for m in materials if m in natives]
    with _derived_directory(directory, keep=resume, needed=bool(feeds)) as derived_dir:
        options = dict(chunk=chunk, max_reported=max_reported, resume=resume, again=again, save_every=save_every,
                       derived=(derived_dir, frozenset(m.name for m in feeds)), reference=reference)
        if jobs > 1 and len(natives) > 1:
            found = _natives_in_parallel(directory, natives, feeds, jobs=jobs, tell=tell, options=options)
        for material in materials:
            if material not in natives:
                _verify_against_master(report, prober, masters, material, chunk, max_reported, tell)
            elif jobs > 1 and len(natives) > 1:
                _merge(report, found[material], max_reported)
            else:
                _verify_native(report, prober, material, tell=tell, **options)
    return report


def _derived_first(materials: list[Material], feeds: dict[Material, Material]) -> list[Material]:
    """``materials`` with each derived side of ``feeds`` moved to just before its mirror."""
    order = [m for m in materials if m not in feeds]
    for derived, kept in feeds.items():
        order.insert(order.index(kept), derived)
    return order


@contextmanager
def _derived_directory(directory: Path, *, keep: bool, needed: bool) -> Iterator[str | None]:
    """Where the derived sides' DTZ goes for their mirrors' checks (:mod:`.verify_derived`): the
    table directory for a resumable check (each file removed once its mirror is checked), else a
    temporary directory in it, removed at the end; None when no pair needs one, or where the
    directory cannot be written (the mirrors then derive their successors' DTZ one by one)."""
    if not needed or keep:
        yield str(directory) if needed else None
        return
    try:
        made = tempfile.mkdtemp(prefix=".verify-", dir=directory)
    except OSError as exc:
        log.warning("%s: no room for the derived DTZ (%s): each derived from its moves instead", directory, exc)
        yield None
        return
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


#: Each worker's positions checked so far, by material (a forked pool's shared counters).
_DONE: list = [None]


def _natives_in_parallel(directory: Path, natives: list[Material], feeds: dict[Material, Material], *, jobs: int,
                         options: dict, tell: Callable[[str, int], None]) -> dict[Material, CompactVerifyReport]:
    """The reports of compact-native materials checked one a worker of a local pool of ``jobs``,
    their progress told as their workers count it (shared counters, read while the pool waits);
    the mirror of a derived side in ``feeds`` waits for its check."""
    done = get_context("fork").RawArray("q", len(natives))
    told = [0] * len(natives)
    names = [[p.name for p in compact_paths(directory, m) if p.exists()] for m in natives]
    for files in names:
        for name in files:
            tell(name, 0)

    def show() -> None:
        for slot, files in enumerate(names):
            ahead, told[slot] = done[slot] - told[slot], done[slot]
            for name in files:
                if ahead:
                    tell(name, ahead)

    waits = {kept: (f"verify-{derived.name}",) for derived, kept in feeds.items()}
    tasks = [Task(f"verify-{m.name}", _native_task, (str(directory), m.name, slot, options),
                  after=waits.get(m, ()), priority=count_positions(m))  # the largest first
             for slot, m in enumerate(natives)]
    found = {}
    for finished in LocalPool(min(jobs, len(natives)), initializer=_take_counters, initargs=(done,)).run(
            tasks, on_wait=show):
        found[Material.parse(finished.task.args[1])] = finished.result
    show()
    return found


def _take_counters(done) -> None:
    """A worker's shared counters (inherited when it forked)."""
    _DONE[0] = done


def _native_task(directory: str, name: str, slot: int, options: dict, after: list = ()) -> CompactVerifyReport:
    """A worker's check of one compact-native material, its positions counted into its slot
    (``after``: the report of the derived side it waited for, if any)."""
    material = Material.parse(name)
    wld = f"{name}{SUFFIX}"

    def count(file: str, positions: int) -> None:
        if file == wld and _DONE[0] is not None:
            _DONE[0][slot] += positions
    report = CompactVerifyReport()
    _verify_native(report, _worker_prober(directory), material, tell=count, **options)
    return report


#: A worker's prober, by directory: the tables it copied whole serve its next materials too.
_PROBERS: dict[str, "CompactProber"] = {}


def _worker_prober(directory: str) -> "CompactProber":
    """The prober of this worker process for a directory, made once."""
    if directory not in _PROBERS:
        _PROBERS[directory] = CompactProber(directory)
    return _PROBERS[directory]


def _merge(report: CompactVerifyReport, found: CompactVerifyReport, max_reported: int) -> None:
    """Count a material's report into the whole one, as checking it here would have."""
    for name in ("tables", "checked", "errors", "captures", "layers", "layer_checked", "dtz_files", "dtz_checked",
                 "figures"):
        setattr(report, name, getattr(report, name) + getattr(found, name))
    report.messages += found.messages[:max(0, max_reported - len(report.messages))]
    report.skipped += found.skipped


def _has_master(directory: Path, masters: Path, material: Material) -> bool:
    """Whether a material's compact files have a master to compare with: its table, with the rule
    layer of each category file there is."""
    path = master.table_path(masters, material)
    if not path.exists():
        return False
    layers = [rule for rule, kind in RULE_KINDS.items() if compact_path(directory, material, kind=kind).exists()]
    return not layers or set(layers) <= set(master.rule_presets_in(path))


def _verify_native(report: CompactVerifyReport, prober: "CompactProber", material: Material, *, chunk: int,
                   max_reported: int, resume: bool, again: bool, save_every: float,
                   derived: tuple[str | None, frozenset[str]] = (None, frozenset()), reference: bool = True,
                   tell: Callable[[str, int], None]) -> None:
    """Check a compact-native material against its successors, a chunk at a time, going on from its
    record (:mod:`.verify_progress`) with ``resume`` (unless ``again``); into ``report``.
    ``derived``: (the directory of the derived sides' DTZ, the derived sides whose mirrors are
    checked too): such a side writes the DTZ its check finds there, and its mirror reads it."""
    directory = prober.directory
    rule = rule_of(directory, material)
    suffixes = [SUFFIX] + ([RULE_KINDS[rule].suffix] + ([DTZ_KINDS[rule].suffix] if compact_path(
        directory, material, kind=DTZ_KINDS[rule]).exists() else []) if rule else [])
    total = count_positions(material)
    identity = _check_identity(directory, material)
    state = load_progress(directory, material, identity) if resume and not again else None
    if state is not None and state.passed:
        report.skipped.append(material.name)
        for suffix in suffixes:  # a progress bar counts it done
            tell(f"{material.name}{suffix}", 0)
            tell(f"{material.name}{suffix}", total)
        return
    if state is None or state.done or state.chunk <= 0:
        state = MaterialProgress(identity=identity, chunk=chunk)
    names = [f"{material.name}{suffix}" for suffix in suffixes]
    told = state.next  # the positions each file's progress was told
    for name in names:
        tell(name, 0)
        if told:
            tell(name, told)
    report.tables += 1
    report.layers += int(rule is not None)
    report.dtz_files += int(len(suffixes) == 3)
    derived_dir, feeding = derived
    writer = _derived_writer(derived_dir, material, rule, fresh=state.next == 0) \
        if material.name in feeding else None
    mirror = material.mirrored()
    if derived_dir is not None and mirror.name in feeding:
        prober.derived_values[mirror, rule] = open_derived(derived_dir, mirror, rule)
    figures = _figures_so_far(state)
    saved = time.monotonic()
    try:
        for lo in range(state.next, total, chunk):
            hi = min(lo + chunk, total)
            for name in names:
                tell(name, hi - lo)
            told = hi
            found = check_chunk(prober, material, lo, hi, rule=rule, figures=figures is not None)
            _note_chunk(state, found, lo, suffixes, max_reported, f"{material.name}{SUFFIX}")
            figures = _count_figures(state, figures, found)
            if writer is not None:
                writer.write(lo, found.derived)
            if resume and (time.monotonic() - saved >= save_every or hi == total):
                if writer is not None:
                    writer.flush()  # before the record counts it
                save_progress(directory, material, state)
                saved = time.monotonic()
    except (TableError, FileNotFoundError, MissingTableError, MissingRuleLayerError) as exc:
        report.errors += 1
        report.messages.append(str(exc))
        for name in names:
            tell(name, total - told)
        return
    finally:
        prober.derived_values.pop((mirror, rule), None)
    if figures is not None:
        state.differ = recounted_differences(directory, material, *figures.entries(), rule=rule,
                                             dtz_known=not figures.dtz_unknown, reference=None if reference else {},
                                             rule_reference=None if reference else {})
    state.done = True
    if writer is not None:
        writer.finish()
    if resume:
        save_progress(directory, material, state)
        if derived_dir is not None and mirror.name in feeding:
            remove_derived(derived_dir, mirror, rule)  # its mirror's check is what it was kept for
    report.checked += total
    report.captures += state.captures
    report.layer_checked += total if rule is not None else 0
    report.dtz_checked += state.decisive
    for suffix in suffixes:
        report.errors += state.bad.get(suffix, 0)
        _report_errors(report, material, _kind_of(suffix), [tuple(e) for e in state.errors.get(suffix, [])],
                       max_reported)
    report.errors += len(state.differ)
    report.messages.extend(state.differ)
    report.figures += figures is not None


def _figures_so_far(state: MaterialProgress) -> TableFigures | None:
    """The figures a check counts as it goes: from the start, or from its record where one begun with
    them is resumed (None where the record was begun without them: they would miss its first chunks)."""
    if state.next == 0:
        return TableFigures()
    return TableFigures.from_state(state.figures) if state.figures is not None else None


def _count_figures(state: MaterialProgress, figures: TableFigures | None, found) -> TableFigures | None:
    """Add a checked chunk's figures (None from then on where the chunk has none: no DTZ to count)."""
    if figures is not None and found.figures is not None:
        figures.add(*found.figures)
        state.figures = figures.state()
        return figures
    state.figures = None
    return None


def _derived_writer(derived_dir: str | None, material: Material, rule: str, *, fresh: bool
                    ) -> DerivedWriter | None:
    """The file a derived side's check writes its DTZ into (``fresh``, or the part a killed check left);
    None where there is none to go on with or no room (its mirror then derives its successors' DTZ)."""
    if derived_dir is None:
        return None
    try:
        return DerivedWriter(derived_dir, material, rule, fresh=fresh)
    except OSError as exc:
        log.warning("%s: the derived DTZ not kept for its mirror's check (%s)", material.name, exc)
        remove_derived(derived_dir, material, rule)
        return None


def _note_chunk(state: MaterialProgress, found, lo: int, suffixes: list[str], max_reported: int,
                wld_name: str) -> None:
    """Count a checked chunk (:class:`egtb.builder.verify_native.ChunkCheck`, its first position
    ``lo``) into a material's progress: its positions found wrong by file, the first of them."""
    flagged = np.flatnonzero(found.flags)
    for suffix in suffixes:
        wrong = flagged[(found.flags[flagged] & FILE_FLAGS[suffix]) != 0]
        state.bad[suffix] = state.bad.get(suffix, 0) + len(wrong)
        kept = state.errors.setdefault(suffix, [])
        for i in wrong[:max(0, max_reported - len(kept))].tolist():
            flag = int(found.flags[i]) & FILE_FLAGS[suffix]
            flag = FLAG_SIGN if flag & FLAG_SIGN else flag
            kept.append([lo + i, error_text(flag, dtz=int(found.dtz[i]) if len(found.dtz) else 0,
                                            wld_name=wld_name)])
    state.captures += found.captures
    state.decisive += found.decisive
    state.next = lo + len(found.flags)


def _kind_of(suffix: str):
    """The file kind of a suffix (.wld, .wcdf, .dtz)."""
    return next(kind for kind in (WDL, *RULE_KINDS.values(), *DTZ_KINDS.values()) if kind.suffix == suffix)


def passed_figures(directory: os.PathLike | str, material: Material) -> TableFigures | None:
    """The figures a check of a compact-native material counted (:mod:`egtb.builder.figures`) when
    its record says it passed with the files there now, else None (never checked, stopped, failed,
    a file changed since, or checked before the figures were counted).

    >>> passed_figures("/nonexistent", Material.parse("1k-1k")) is None
    True
    """
    state = load_progress(directory, material, _check_identity(directory, material))
    if state is None or not state.passed or state.figures is None:
        return None
    return TableFigures.from_state(state.figures)


def _check_identity(directory: os.PathLike | str, material: Material) -> dict:
    """The identity (:func:`files_identity`) of the files the check of a material reads: its own and
    those of the tables its quiet moves reach."""
    return files_identity(directory, [material, *_successor_materials(material)])


def _successor_materials(material: Material) -> list[Material]:
    """The tables a material's quiet moves reach (their files are part of what its check read)."""
    from egtb.builder.successor_check import successor_ranks
    return [material_of_code(code) for code in successor_ranks(material)[1]]


def _verify_against_master(report: CompactVerifyReport, prober: "CompactProber", masters: Path,
                           material: Material, chunk: int, max_reported: int,
                           tell: Callable[[str, int], None]) -> None:
    """Check a material's compact files against its master table, into ``report``."""
    directory = prober.directory
    for rule in (None, *(r for r, kind in RULE_KINDS.items()
                         if compact_path(directory, material, kind=kind).exists())):
        kind = RULE_KINDS[rule] if rule else WDL
        if rule is None:
            report.tables += 1
        else:
            report.layers += 1
        step = _FileProgress(tell, f"{material.name}{kind.suffix}", count_positions(material))
        try:
            bad, caps, errors = _verify_one(prober, masters, material, chunk, max_reported, rule, step=step)
        except (TableError, FileNotFoundError) as exc:
            report.errors += 1
            report.messages.append(str(exc))
            continue
        finally:
            step.finish()
        if rule is None:
            report.checked += count_positions(material)
            report.captures += caps
        else:
            report.layer_checked += count_positions(material)
        report.errors += bad
        _report_errors(report, material, kind, errors, max_reported)
    for rule, kind in DTZ_KINDS.items():
        if compact_path(directory, material, kind=kind).exists():
            report.dtz_files += 1
            step = _FileProgress(tell, f"{material.name}{kind.suffix}", count_positions(material))
            try:
                bad, checked, errors = _verify_dtz(prober, masters, material, rule, chunk, max_reported,
                                                   step=step)
            except (TableError, FileNotFoundError, MissingRuleLayerError) as exc:
                report.errors += 1
                report.messages.append(str(exc))
                continue
            finally:
                step.finish()
            report.dtz_checked += checked
            report.errors += bad
            _report_errors(report, material, kind, errors, max_reported)


class _FileProgress:
    """The progress of one file's check: 0 at its start, each chunk's positions, the rest at its end."""

    def __init__(self, tell: Callable[[str, int], None], name: str, total: int) -> None:
        self.tell, self.name, self.total, self.done = tell, name, total, 0
        tell(name, 0)

    def __call__(self, positions: int) -> None:
        self.done += positions
        self.tell(self.name, positions)

    def finish(self) -> None:
        """Count what the check left (all of it when it failed at once)."""
        self.tell(self.name, max(self.total - self.done, 0))
        self.done = self.total


def _report_errors(report: CompactVerifyReport, material: Material, kind, errors: list[tuple[int, str]],
                   max_reported: int) -> None:
    """Add the first of a file's errors (position index, what is wrong) to the report's messages."""
    for index, what in errors[:max(0, max_reported - len(report.messages))]:
        fen = format_fen(Placement(*global_unrank(material, index), 0))
        report.messages.append(f"{fen} ({material.name}{kind.suffix} #{index}): {what}")


def _verify_dtz(prober: "CompactProber", masters: Path, material: Material, rule: str, chunk: int,
                max_reported: int, *, step: Callable[[int], None] = lambda positions: None
                ) -> tuple[int, int, list[tuple[int, str]]]:
    """(wrong DTZ, wins and losses checked, the first errors) of a material's DTZ file against the
    master layer of ``rule``: every block decoded (CRC-32 checked) a chunk at a time, and the DTZ
    of every win or loss whose side to move need not capture compared with the master's."""
    dtz_file = prober.table(material).layer(rule).dtz_file
    dtz_of = dtz_file.kind.value_of_code
    path = master.table_path(masters, material)
    if rule not in master.rule_presets_in(path):
        raise MissingRuleLayerError(f"{path}: no {rule} layer to compare {dtz_file.path.name} with")
    layer = master.read_rule_layer(path, rule)
    bad, checked, errors = 0, 0, []
    for lo, hi, _, cap in unranked_chunks(material, chunk):
        step(hi - lo)
        decisive = (np.abs(layer.category[lo:hi]) == 2) & ~cap
        dtz = dtz_of[dtz_file.codes(lo, hi)]
        wrong = np.flatnonzero(decisive & (dtz != layer.dtz[lo:hi]))
        checked += int(decisive.sum())
        bad += len(wrong)
        errors += [(lo + int(i), f"stored DTZ {int(dtz[i])} differs from the master's "
                                 f"{int(layer.dtz[lo + i])}") for i in wrong[:max_reported]]
    return bad, checked, errors


class CompactProber:
    """Batch probes through the compact files of one directory only (what verification uses).

    >>> CompactProber("/nonexistent").probe_batch(np.array([1]), np.array([0]), np.array([0]),
    ...                                           np.array([0]), 1)[0].tolist()   # White has no pieces
    [-1]
    """

    def __init__(self, directory: os.PathLike | str) -> None:
        self.directory = Path(directory)
        self.batches = CompactBatches()
        """The batch pools of this prober."""
        self.units = DenseUnits()
        """The units of the checked tables' mirrors decoded whole (:mod:`egtb.builder.dense_units`)."""
        self._tables: dict[Material, CompactTable] = {}
        self._tablebase: Tablebase | None = None
        self._loaded: dict[Material, np.ndarray | None] = {}
        self._loaded_positions = 0
        self.derived_values: dict[tuple[Material, str], np.ndarray | None] = {}
        """The DTZ a derived side's check found (a byte a position, :mod:`.verify_derived`), by
        (material, rule): read by :meth:`derived_dtz` instead of deriving it."""

    def table(self, material: Material) -> CompactTable:
        """The compact table of a material, opened once (MissingTableError when absent): its blocks'
        marks, checked on first use, serve every later lookup of the prober."""
        found = self._tables.get(material)
        if found is None:
            path = compact_path(self.directory, material)
            if not path.exists():
                hint = (f"; `egtb compact --stale --tables {self.directory}` writes it from its master"
                        if master.table_path(self.directory, material).exists() else "")
                raise MissingTableError(f"no compact table for material {material.name} in "
                                        f"{self.directory} ({path.name} is missing{hint})")
            found = self._tables[material] = open_compact(path)  # decoded blocks go to the process's cache
        return found

    def loaded_categories(self, material: Material) -> np.ndarray | None:
        """The ``wcdf`` categories at counter 0 of every position of a table (int8, Black to move), its
        capture positions answered once (:func:`egtb.builder.native.category_chunks`), held for
        the checks that follow; None for a table without a ``.wcdf`` file, or past
        :data:`LOADED_POSITIONS` in all."""
        if material in self._loaded:
            return self._loaded[material]
        positions = count_positions(material)
        loaded = None
        if categories_path(self.directory, material).exists() and \
                self._loaded_positions + positions <= LOADED_POSITIONS:
            log.info("%s: copying it whole for the capture search (%d positions, about %.0f CPU s)", material.name,
                     positions, positions * COPY_SECONDS)
            start = time.monotonic()
            loaded = np.empty(positions, dtype=np.int8)
            for lo, categories in category_chunks(self.directory, material):
                loaded[lo:lo + len(categories)] = categories
            self._loaded_positions += positions
            log.info("%s: copied whole for the capture search, %d positions in %.1fs", material.name, positions,
                     time.monotonic() - start)
        self._loaded[material] = loaded
        return loaded

    def copies(self) -> int:
        """How many tables :meth:`loaded_categories` was asked for (copied whole, or found too large)."""
        return len(self._loaded)

    def probe_batch(self, bm, bk, wm, wk, turn, *, rule: str | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """WDL (or with ``rule`` the category) and NO_DTW of valid positions given as bitboard arrays."""
        arrays = [np.ascontiguousarray(a, dtype=np.int64) for a in (bm, bk, wm, wk)]
        turns = np.ascontiguousarray(np.broadcast_to(np.asarray(turn, dtype=np.int64),
                                                     (len(arrays[0]),)))
        return probe_batch((*arrays, turns), lambda code: self.table(material_of_code(code)),
                           batches=self.batches, rule=rule)

    def derived_dtz(self, material: Material, indices: np.ndarray, category: np.ndarray, rule: str) -> np.ndarray:
        """The DTZ of wins and losses (``category`` at counter 0) of a material at ``indices`` (Black to
        move) whose DTZ file is absent and its mirror's there: from their moves, one ply into the
        mirror's file (:func:`egtb.probe.batch.derived_dtz`, through a Tablebase of the directory),
        or read from what that material's check found (:attr:`derived_values`)."""
        found = self.derived_values.get((material, rule))
        if found is not None:
            return found[indices].astype(np.uint16)
        if self._tablebase is None:
            self._tablebase = Tablebase(self.directory)
        boards = tuple(np.empty(len(indices), dtype=np.int64) for _ in range(4))
        unrank_positions(np.ascontiguousarray(indices, dtype=np.int64), material.black_men, material.black_kings,
                         material.white_men, material.white_kings, *boards)
        return derived_dtz(self._tablebase, (*boards, np.zeros(len(indices), dtype=np.int64)), category,
                           DRAW_RULES[rule])


def _reference(masters: Path, material: Material, rule: str | None) -> np.ndarray | None:
    """The master's WDL (rule None) or categories of a material, None without a master."""
    path = master.table_path(masters, material)
    if not path.exists():
        return None
    if rule is None:
        wdl, _ = master.load_material(masters, material)
        return WDL_OF_CODE[wdl]
    if rule not in master.rule_presets_in(path):
        return None
    return master.open_table(path, rules=(rule,)).rules[rule].category


#: With a master to compare with, one position in this many of those the capture search
#: recovers is probed (every stored position is compared): a 7-piece directory holds 34 G.
SEARCH_SAMPLE = 64


def _verify_one(prober: CompactProber, masters: Path, material: Material, chunk: int,
                max_reported: int, rule: str | None = None, *,
                step: Callable[[int], None] = lambda positions: None) -> tuple[int, int, list[tuple[int, str]]]:
    """(wrong positions, positions the capture search recovered and checked, the first errors) of a
    material's WLD file (``rule`` None) or category file against its master: every stored
    position's decoded value (a chunk of blocks at a time) and one capture position in
    :data:`SEARCH_SAMPLE`, probed through the capture search; a category file without the
    master's layer against the WLD file (its win or loss side).
    """
    table = prober.table(material)
    source = table.layer(rule) if rule else table
    value_of = np.array(source.value_of, dtype=np.int8)
    reference = _reference(masters, material, rule)
    bad, caps, errors = 0, 0, []
    for lo, hi, (bm, bk, wm, wk), cap in unranked_chunks(material, chunk):
        step(hi - lo)
        if source.threats:  # the threat positions it leaves out: recovered by the search, as captures
            threat = np.empty(hi - lo, dtype=np.bool_)
            threat_flags(bm, bk, wm, wk, 0, threat)
            cap = cap | threat
        got = value_of[source.codes(lo, hi)]  # its blocks' CRCs and decoding
        if reference is not None:
            searched = np.flatnonzero(cap)[::SEARCH_SAMPLE]
            if len(searched):
                got[searched] = prober.probe_batch(bm[searched], bk[searched], wm[searched],
                                                   wk[searched], 0, rule=rule)[0]
            checked = ~cap
            checked[searched] = True
            wrong = np.flatnonzero(checked & (got != reference[lo:hi]))
            caps += len(searched)
            what = "differs from the master table"
        else:
            searched = np.flatnonzero(cap)
            caps += len(searched)
            if len(searched):
                got[searched] = prober.probe_batch(bm[searched], bk[searched], wm[searched],
                                                   wk[searched], 0, rule=rule)[0]
            wrong = np.flatnonzero(np.sign(got) != prober.probe_batch(bm, bk, wm, wk, 0)[0])
            what = f"disagrees with {material.name}{SUFFIX}"
        bad += len(wrong)
        errors += [(lo + int(i), f"{'recovered' if cap[i] else 'stored'} "
                                 f"{'category' if rule else 'value'} {what}")
                   for i in wrong[:max_reported]]
    return bad, caps, errors


def unranked_chunks(material: Material, chunk: int):
    """(first index, end, (bm, bk, wm, wk), must capture) of a material's positions (Black to move),
    ``chunk`` positions at a time."""
    counts = material_counts(material)
    total = count_positions(material)
    for lo in range(0, total, chunk):
        hi = min(lo + chunk, total)
        yield lo, hi, *unranked(counts, lo, hi)
