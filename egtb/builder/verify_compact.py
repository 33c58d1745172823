"""Checking compact files: every position, stored or recovered by the capture search, probed
through the compact files alone and compared with the master table, or with its successors.

>>> verify_compact("/nonexistent").ok
False
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from egtb.builder.verify_report import VerifyReport
from egtb.errors import InvalidArgumentError, MissingRuleLayerError, MissingTableError, TableError
from egtb.formats import master
from egtb.formats.compact import DTZ_KINDS, RULE_KINDS, SUFFIX, WDL, CompactTable, compact_path, material_counts
from egtb.formats.values import CAT_BLESSED_LOSS, CAT_CURSED_WIN, CAT_DRAW, CAT_LOSS, CAT_WIN, WDL_LOSS, WDL_OF_CODE
from egtb.positions.index import global_unrank, material_of_code, unit_size, unrank_men, unrank_unit
from egtb.positions.material import Material, count_positions
from egtb.probe.compact_kernels import CompactBatches, probe_batch, probe_dtz_batch
from egtb.probe.compact_tables import open_compact
from egtb.probe.locate import locate_all
from egtb.rules.board import DRAW_RULES
from egtb.rules.movegen import (M_BK, M_BM, M_CAPTURED, M_CROWNS, M_MAN, M_WK, M_WM, MAX_MOVES, MOVE_WIDTH,
                                generate_moves, has_capture)
from egtb.rules.notation import Placement, format_fen

__all__ = ["CompactProber", "CompactVerifyReport", "unrank_chunk", "unranked_chunks", "verify_compact"]


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


@njit(cache=True)
def unrank_chunk(counts, lo, hi, out_bm, out_bk, out_wm, out_wk, out_cap):
    """Bitboards of positions lo..hi of a material (Black to move) and whether each must capture."""
    n_bm, n_bk, n_wm, n_wk = counts[0], counts[1], counts[2], counts[3]
    size = unit_size(n_bm, n_bk, n_wm, n_wk)
    bk_arr = np.empty(size, dtype=np.int64)
    wk_arr = np.empty(size, dtype=np.int64)
    m_done = -1
    bm = wm = np.int64(0)
    for i in range(lo, hi):
        m = i // size
        if m != m_done:
            bm32, wm32 = unrank_men(m, n_bm, n_wm)
            bm, wm = np.int64(bm32), np.int64(wm32)
            unrank_unit(n_bk, n_wk, bm, wm, bk_arr, wk_arr)
            m_done = m
        j = i - m * size
        out_bm[i - lo], out_bk[i - lo], out_wm[i - lo], out_wk[i - lo] = bm, bk_arr[j], wm, wk_arr[j]
        out_cap[i - lo] = has_capture(bm, bk_arr[j], wm, wk_arr[j], 0)


@njit(cache=True)
def _successors_chunk(bm, bk, wm, wk, man_resets, offsets, s_bm, s_bk, s_wm, s_wk, s_zeroing):
    """Every position's successors (White to move) into s_*, and whether each move zeroes the
    counter (a capture, a crowning, and with ``man_resets`` any man move); offsets[i] is where
    i's start. -1 when they do not fit."""
    moves = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    k = 0
    for i in range(bm.shape[0]):
        offsets[i] = k
        n = generate_moves(bm[i], bk[i], wm[i], wk[i], 0, moves)
        if k + n > s_bm.shape[0]:
            return -1
        for m in range(n):
            s_bm[k], s_bk[k], s_wm[k], s_wk[k] = (moves[m, M_BM], moves[m, M_BK],
                                                  moves[m, M_WM], moves[m, M_WK])
            s_zeroing[k] = moves[m, M_CAPTURED] != 0 or moves[m, M_CROWNS] != 0 or (
                man_resets and moves[m, M_MAN] != 0)
            k += 1
    offsets[bm.shape[0]] = k
    return k


@njit(cache=True)
def _check_successors(values, offsets, succ_wdl, errors):
    """Count positions whose value is not the best over its successors (no move: loss)."""
    bad = 0
    for i in range(values.shape[0]):
        best = WDL_LOSS
        for k in range(offsets[i], offsets[i + 1]):
            best = max(best, -succ_wdl[k])
        if best != values[i]:
            if bad < errors.shape[0]:
                errors[bad] = i
            bad += 1
    return bad


def verify_compact(directory: os.PathLike | str, *, materials: list[Material] | None = None,
                   masters: os.PathLike | str | None = None, chunk: int = 1 << 20,
                   max_reported: int = 20,
                   progress: Callable[[str, int], None] | None = None) -> CompactVerifyReport:
    """Check the compact files of a directory, probing through them alone.

    Every stored position is compared with the master table in ``masters``
    (default: the same directory) when there is one, and one position in
    :data:`SEARCH_SAMPLE` of those the capture search recovers; without a
    master, every position (stored or recovered) is checked against its successors (its value is the best over its
    moves, probed from the compact files; no move is a loss). A category file
    (``.wcdf``) is compared with the master's rule layer when there is one,
    else with the WLD file (a category's win or loss side must be its WDL).
    A DTZ file (``.dtz``) is decoded whole and its DTZ at every win and loss it
    holds compared with the master's where there is one, else checked against
    the successors (the fastest win, the slowest loss, probed from the compact
    files; ``dtz_checked`` counts either).
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
    for material in materials:
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
    return report


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
    """(wrong DTZ, wins and losses checked, the first errors) of a material's DTZ file: every
    block decoded (CRC-32 checked), and the DTZ of every win or loss whose side to move need not
    capture compared with the master layer of ``rule`` when there is one, else checked against
    its successors (:func:`_dtz_successor_errors`)."""
    categories = prober.table(material).layer(rule)
    stored = categories.dtz_file.values()  # every block's CRC and decoding (codes: DTZ + 1)
    dtz_of = categories.dtz_file.kind.value_of_code
    path = master.table_path(masters, material)
    if not path.exists() or rule not in master.rule_presets_in(path):
        return _dtz_against_successors(prober, material, rule, categories, dtz_of, stored, chunk, max_reported,
                                       step=step)
    layer = master.read_rule_layer(path, rule)
    bad, checked, errors = 0, 0, []
    for lo, hi, _, cap in unranked_chunks(material, chunk):
        step(hi - lo)
        decisive = (np.abs(layer.category[lo:hi]) == 2) & ~cap
        dtz = dtz_of[stored[lo:hi]]
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
        self._tables: dict[Material, CompactTable] = {}

    def table(self, material: Material) -> CompactTable:
        """The compact table of a material, opened once (MissingTableError when absent): its blocks'
        marks, checked on first use, serve every later lookup of the prober."""
        found = self._tables.get(material)
        if found is None:
            path = compact_path(self.directory, material)
            if not path.exists():
                raise MissingTableError(f"no compact table for material {material.name} in "
                                        f"{self.directory} ({path.name} is missing)")
            found = self._tables[material] = open_compact(path)  # decoded blocks go to the process's cache
        return found

    def probe_batch(self, bm, bk, wm, wk, turn, *, rule: str | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """WDL (or with ``rule`` the category) and NO_DTW of valid positions given as bitboard arrays."""
        arrays = [np.ascontiguousarray(a, dtype=np.int64) for a in (bm, bk, wm, wk)]
        turns = np.ascontiguousarray(np.broadcast_to(np.asarray(turn, dtype=np.int64),
                                                     (len(arrays[0]),)))
        return probe_batch((*arrays, turns), lambda code: self.table(material_of_code(code)),
                           batches=self.batches, rule=rule)


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
    """(wrong positions, positions the capture search recovered and checked, the first errors).

    With a master, every stored position's decoded value is compared with it and
    one capture position in :data:`SEARCH_SAMPLE` is probed through the capture
    search; without one, every position is probed and checked against its
    successors (or its category against the WLD file).
    """
    table = prober.table(material)
    source = table.layer(rule) if rule else table
    stored = source.values()  # every block's CRC and decoding
    value_of = np.array(source.value_of, dtype=np.int8)
    reference = _reference(masters, material, rule)
    bad, caps, errors = 0, 0, []
    for lo, hi, (bm, bk, wm, wk), cap in unranked_chunks(material, chunk):
        step(hi - lo)
        if reference is not None:
            searched = np.flatnonzero(cap)[::SEARCH_SAMPLE]
            got = value_of[stored[lo:hi]]
            if len(searched):
                got[searched] = prober.probe_batch(bm[searched], bk[searched], wm[searched],
                                                   wk[searched], 0, rule=rule)[0]
            checked = ~cap
            checked[searched] = True
            wrong = np.flatnonzero(checked & (got != reference[lo:hi]))
            caps += len(searched)
            what = "differs from the master table"
        else:
            caps += int(cap.sum())
            got, _ = prober.probe_batch(bm, bk, wm, wk, 0, rule=rule)
            if rule is None:
                wrong = _successor_errors(prober, bm, bk, wm, wk, got)
                what = "is not the best value over its successors"
            else:
                wrong = np.flatnonzero(np.sign(got) != prober.probe_batch(bm, bk, wm, wk, 0)[0])
                what = f"disagrees with {material.name}{SUFFIX}"
        bad += len(wrong)
        errors += [(lo + int(i), f"{'recovered' if cap[i] else 'stored'} "
                                 f"{'category' if rule else 'value'} {what}")
                   for i in wrong[:max_reported]]
    return bad, caps, errors


def _dtz_against_successors(prober: "CompactProber", material: Material, rule: str, categories: CompactTable,
                            dtz_of: np.ndarray, stored: np.ndarray, chunk: int, max_reported: int, *,
                            step: Callable[[int], None] = lambda positions: None
                            ) -> tuple[int, int, list[tuple[int, str]]]:
    """:func:`_verify_dtz` without a master: the stored category (of the category file
    ``categories``) and DTZ (``stored`` codes, ``dtz_of`` each) of every win and loss that need
    not capture, against its successors."""
    codes = categories.values()
    category_of = np.array(categories.value_of, dtype=np.int64)
    bad, checked, errors = 0, 0, []
    for lo, hi, boards, cap in unranked_chunks(material, chunk):
        step(hi - lo)
        category = category_of[codes[lo:hi]]
        quiet = np.flatnonzero((np.abs(category) == CAT_WIN) & ~cap)
        dtz = dtz_of[stored[lo:hi][quiet]]
        wrong = _dtz_successor_errors(prober, rule, *(a[quiet] for a in boards), category[quiet], dtz)
        checked += len(quiet)
        bad += len(wrong)
        errors += [(lo + int(quiet[i]), f"stored DTZ {int(dtz[i])} is not the one its "
                                        f"successors give") for i in wrong[:max_reported]]
    return bad, checked, errors


def _dtz_successor_errors(prober: "CompactProber", rule: str, bm, bk, wm, wk, category, dtz) -> np.ndarray:
    """Which of the wins and losses (Black to move) do not have the category and DTZ their
    successors give (as the master verifier's rule check: the fastest win, the slowest loss, a
    zeroing move counting 1 ply), the successors probed from the compact files."""
    draw_rule = DRAW_RULES[rule]
    offsets = np.empty(len(bm) + 1, dtype=np.int64)
    room = len(bm) * 64
    s = [np.empty(room, dtype=np.int64) for _ in range(4)]
    zeroing = np.empty(room, dtype=np.bool_)
    k = int(_successors_chunk(bm, bk, wm, wk, draw_rule.man_move_resets, offsets, *s, zeroing))
    if k < 0:
        raise InvalidArgumentError("more than 64 moves per position on average in a verify chunk")
    s = [a[:k] for a in s]
    turn = np.ones(k, dtype=np.int64)
    succ_category, _ = prober.probe_batch(*s, 1, rule=rule)
    succ_dtz = np.zeros(k, dtype=np.int64)
    needed = np.flatnonzero(~zeroing[:k] & (np.abs(succ_category) == CAT_WIN))  # only a quiet move adds its DTZ
    if len(needed):
        arrays = tuple(np.ascontiguousarray(a[needed]) for a in (*s, turn))
        located = (np.empty(len(needed), dtype=np.int32), np.empty(len(needed), dtype=np.int64))
        locate_all(*arrays, *located)
        files = {int(code): prober.table(material_of_code(int(code))).layer(rule).dtz_file
                 for code in np.unique(located[0]).tolist()}
        missing = [material_of_code(code).name for code, dtz_file in files.items() if dtz_file is None]
        if missing:
            raise MissingTableError(f"no DTZ file for {', '.join(missing)} in {prober.directory}")
        succ_dtz[needed] = probe_dtz_batch(arrays, located, files, batches=prober.batches, rule=rule)
    errors = np.zeros(len(bm), dtype=np.int64)
    found = _check_dtz(category.astype(np.int64), dtz, offsets, succ_category.astype(np.int64), succ_dtz,
                       zeroing[:k], draw_rule.limit_plies, errors)
    return errors[:found]


#: What a fastest win is over no winning move.
NO_WIN = 1 << 30


@njit(cache=True, inline="always")
def rule_outcome(fastest_win, longest_loss, draws, limit):
    """(category, DTZ) of a position under a move rule from its moves: the fastest win in plies
    (NO_WIN: no move wins), else a draw when a move draws, else the slowest loss; a win or loss of
    more than ``limit`` plies is cursed or blessed."""
    if fastest_win != NO_WIN:
        return (CAT_WIN if fastest_win <= limit else CAT_CURSED_WIN), fastest_win
    if draws:
        return CAT_DRAW, 0
    return (CAT_LOSS if longest_loss <= limit else CAT_BLESSED_LOSS), longest_loss


@njit(cache=True)
def _check_dtz(category, dtz, offsets, succ_category, succ_dtz, zeroing, limit, errors):
    """Count the positions whose category and DTZ are not those their successors give; the first
    go to ``errors``. A cursed win's or blessed loss's DTZ is not stored: past the limit is all
    that counts of it (``limit`` + 2 plies through a quiet move, ``limit`` + 1 a zeroing one)."""
    bad = 0
    for i in range(category.shape[0]):
        fastest_win = NO_WIN
        longest_loss = 0
        draws = 0
        for k in range(offsets[i], offsets[i + 1]):
            tc = succ_category[k]
            if tc == CAT_DRAW:
                draws += 1
                continue
            decisive = tc == CAT_WIN or tc == CAT_LOSS
            if zeroing[k]:
                plies = 1 if decisive else limit + 1
            else:
                plies = succ_dtz[k] + 1 if decisive else limit + 2
            if tc < 0:
                fastest_win = min(fastest_win, plies)
            else:
                longest_loss = max(longest_loss, plies)
        want_category, want_dtz = rule_outcome(fastest_win, longest_loss, draws, limit)
        if want_category != category[i] or want_dtz != dtz[i]:
            if bad < errors.shape[0]:
                errors[bad] = i
            bad += 1
    return bad


def unranked_chunks(material: Material, chunk: int):
    """(first index, end, (bm, bk, wm, wk), must capture) of a material's positions (Black to move),
    ``chunk`` positions at a time."""
    counts = material_counts(material)
    total = count_positions(material)
    for lo in range(0, total, chunk):
        hi = min(lo + chunk, total)
        boards = tuple(np.empty(hi - lo, dtype=np.int64) for _ in range(4))
        cap = np.empty(hi - lo, dtype=np.bool_)
        unrank_chunk(counts, lo, hi, *boards, cap)
        yield lo, hi, boards, cap


def _successor_errors(prober: CompactProber, bm, bk, wm, wk, wdl) -> np.ndarray:
    offsets = np.empty(len(bm) + 1, dtype=np.int64)
    cap = len(bm) * 64
    s = [np.empty(cap, dtype=np.int64) for _ in range(4)]
    k = int(_successors_chunk(bm, bk, wm, wk, False, offsets, *s, np.empty(cap, dtype=np.bool_)))
    if k < 0:
        raise InvalidArgumentError("more than 64 moves per position on average in a verify chunk")
    succ_wdl, _ = prober.probe_batch(*(a[:k] for a in s), 1)
    errors = np.zeros(len(bm), dtype=np.int64)
    bad = _check_successors(wdl.astype(np.int64), offsets, succ_wdl.astype(np.int64), errors)
    return errors[:bad]
