"""Independent check of built tables: every stored value against its successors.

This code shares nothing with the solver but the move generator and the index:
for every position of a table it generates the moves, mirrors each successor
to Black to move, looks its value up in the stored tables and checks

- no legal move: LOSS in 0;
- WIN in d: some successor is a LOSS in d - 1, none is a LOSS in fewer;
- LOSS in d: every successor is a WIN, the longest in exactly d - 1;
- DRAW: no successor is a LOSS, at least one is a DRAW, DTW 0.

A successor whose side to move has no piece left is a LOSS in 0.

Each rule layer (:mod:`egtb.builder.rule_layer`) is checked the same way, from
the definitions: a move's value to the mover is taken from its successor's
stored category and DTZ under the same preset: a zeroing move (a capture, a
crowning, and under "wcdf" any man move) ends the count, so it is worth 1 ply
when the successor is decisive under the rule and ``limit + 1`` when it is
cursed or blessed; a quiet man move continues it (the successor's DTZ plus 1).
Then a position with a winning move is a win (cursed when beyond the limit) in
the fewest plies, one with a drawing move is a draw with DTZ 0, and otherwise a
loss (blessed beyond the limit) in the most; no move is a loss in 0; and the
category's sign must be the verified rule-free value.

>>> ERROR_NAMES[ERR_WIN_DEPTH]
'win depth does not match the fastest losing successor'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from egtb.builder.successor_check import NO_WIN, rule_outcome
from egtb.builder.verify_compact import verify_compact
from egtb.builder.verify_report import MAX_REPORTED, VerifyReport
from egtb.executor import LocalPool, Task
from egtb.formats import master
from egtb.formats.compact import compact_path, compact_paths
from egtb.formats.cache import TableCache, file_stamp, process_cache
from egtb.positions.index import (NUM_CODES, code_of_material, material_code, popcount, position_index,
                        unit_size, unrank_kings, unrank_men)
from egtb.formats.values import CAT_DRAW, CAT_LOSS, CAT_WIN, DRAW, LOSS, UNKNOWN, WIN, Wdl
from egtb.positions.material import Material, count_positions, mirror_bb
from egtb.rules.movegen import (BLACK_TO_MOVE, M_BK, M_BM, M_CAPTURED, M_CROWNS, M_MAN, M_WK, M_WM, MAX_MOVES,
                                MOVE_WIDTH, generate_moves)
from egtb.rules.notation import Placement, format_fen

#: Error codes of the check kernel.
ERR_NO_MOVE_NOT_LOST = 1
ERR_WIN_DEPTH = 2
ERR_LOSS_NOT_ALL_WINS = 3
ERR_LOSS_DEPTH = 4
ERR_DRAW_HAS_WIN = 5
ERR_DRAW_NO_DRAW = 6
ERR_BAD_CODE = 7
ERR_MISSING_SUCCESSOR = 8
ERR_WIN_WITHOUT_LOSING_SUCCESSOR = 9
ERR_RULE_CATEGORY = 10
ERR_RULE_DTZ = 11
ERR_RULE_SIGN = 12
ERROR_NAMES = {
    ERR_NO_MOVE_NOT_LOST: "no legal move but not a loss in 0",
    ERR_WIN_DEPTH: "win depth does not match the fastest losing successor",
    ERR_LOSS_NOT_ALL_WINS: "loss but some successor is not a win for the opponent",
    ERR_LOSS_DEPTH: "loss depth is not 1 + the longest successor win",
    ERR_DRAW_HAS_WIN: "draw but a successor loses for the opponent",
    ERR_DRAW_NO_DRAW: "draw but no successor is a draw (or DTW not 0)",
    ERR_BAD_CODE: "value code is not DRAW, WIN or LOSS",
    ERR_MISSING_SUCCESSOR: "a successor's table is not loaded",
    ERR_WIN_WITHOUT_LOSING_SUCCESSOR: "win but no successor loses for the opponent",
    ERR_RULE_CATEGORY: "rule layer: category does not follow from the successors",
    ERR_RULE_DTZ: "rule layer: DTZ does not follow from the successors",
    ERR_RULE_SIGN: "rule layer: category disagrees with the rule-free value",
}
#: Category codes as the rule check kernel sees them (egtb.formats.values.Category).
#: What :func:`_locate` returns for a successor without pieces for the side to move (lost),
#: and for one whose table is not loaded.
NO_PIECES = -2
NOT_LOADED = -1


@njit(cache=True)
def _lookup(bm, bk, wm, wk, offsets, wdl, dtw):
    """(value, dtw) of the position after Black's move, seen by White (to move)."""
    t = _locate(bm, bk, wm, wk, offsets)
    if t == NO_PIECES:
        return LOSS, 0
    if t == NOT_LOADED:
        return UNKNOWN, 0
    return wdl[t], np.int64(dtw[t])


@njit(cache=True)
def check_positions(counts, start, stop, base, offsets, wdl, dtw, errors):
    """Check positions start..stop of a material; fill errors (index, code); return the count."""
    size = unit_size(counts[0], counts[1], counts[2], counts[3])
    moves = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    found = 0
    for i in range(start, stop):
        bm, bk, wm, wk = _unrank(counts, size, i)
        code = _check_one(bm, bk, wm, wk, wdl[base + i], np.int64(dtw[base + i]),
                          offsets, wdl, dtw, moves)
        found = _note_error(errors, found, i, code)
    return found


@njit(cache=True, inline="always")
def _unrank(counts, size, i):
    """(bm, bk, wm, wk) of position i of a material (counts: men and kings of each side), int64
    as the move generator's other callers pass them (uint32 bitboards compiled it once more)."""
    bm, wm = unrank_men(i // size, counts[0], counts[2])
    bk, wk = unrank_kings(i % size, np.int64(bm) | np.int64(wm), counts[1], counts[3])
    return np.int64(bm), np.int64(bk), np.int64(wm), np.int64(wk)


@njit(cache=True, inline="always")
def _note_error(errors, found, i, code):
    """Count a failed check (code != 0), remembering the first ones (index, code); return the count."""
    if code == 0:
        return found
    if found < errors.shape[0]:
        errors[found, 0] = i
        errors[found, 1] = code
    return found + 1


@njit(cache=True)
def _check_one(bm, bk, wm, wk, value, depth, offsets, wdl, dtw, moves):
    n = generate_moves(bm, bk, wm, wk, BLACK_TO_MOVE, moves)
    if value != WIN and value != LOSS and value != DRAW:
        return ERR_BAD_CODE
    if n == 0:
        return 0 if (value == LOSS and depth == 0) else ERR_NO_MOVE_NOT_LOST
    fastest_loss = 1 << 30
    longest_win = -1
    draws = 0
    non_wins = 0
    for m in range(n):
        v, d = _lookup(moves[m, M_BM], moves[m, M_BK], moves[m, M_WM], moves[m, M_WK],
                       offsets, wdl, dtw)
        if v == UNKNOWN:
            return ERR_MISSING_SUCCESSOR
        if v == LOSS:
            fastest_loss = min(fastest_loss, d)
            non_wins += 1
        elif v == WIN:
            longest_win = max(longest_win, d)
        else:
            draws += 1
            non_wins += 1
    if value == WIN:
        if fastest_loss == 1 << 30:
            return ERR_WIN_WITHOUT_LOSING_SUCCESSOR
        return 0 if fastest_loss == depth - 1 else ERR_WIN_DEPTH
    if value == LOSS:
        if non_wins:
            return ERR_LOSS_NOT_ALL_WINS
        return 0 if longest_win == depth - 1 else ERR_LOSS_DEPTH
    if fastest_loss != 1 << 30:
        return ERR_DRAW_HAS_WIN
    return 0 if (draws > 0 and depth == 0) else ERR_DRAW_NO_DRAW


@njit(cache=True)
def _locate(bm, bk, wm, wk, offsets):
    """Flat index of the position after Black's move (mirrored), or NO_PIECES / NOT_LOADED."""
    sbm, sbk = np.int64(mirror_bb(wm)), np.int64(mirror_bb(wk))
    swm, swk = np.int64(mirror_bb(bm)), np.int64(mirror_bb(bk))
    if sbm == 0 and sbk == 0:
        return np.int64(NO_PIECES)
    base = offsets[material_code(popcount(sbm), popcount(sbk), popcount(swm), popcount(swk))]
    if base < 0:
        return np.int64(NOT_LOADED)
    return base + position_index(sbm, sbk, swm, swk)


@njit(cache=True)
def check_rule_positions(counts, start, stop, base, offsets, wdl, category, dtz, limit,
                         man_resets, errors):
    """Check a rule layer for positions start..stop of a material; return the error count.

    ``wdl``: the material's own rule-free codes (indexed from 0); ``category``,
    ``dtz``: the layer over the flat arrays of every needed material.
    """
    size = unit_size(counts[0], counts[1], counts[2], counts[3])
    moves = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    found = 0
    for i in range(start, stop):
        bm, bk, wm, wk = _unrank(counts, size, i)
        code = _check_rule_one(bm, bk, wm, wk, wdl[i], category[base + i],
                               np.int64(dtz[base + i]), offsets, category, dtz, limit,
                               man_resets, moves)
        found = _note_error(errors, found, i, code)
    return found


@njit(cache=True)
def _check_rule_one(bm, bk, wm, wk, value, cat, z, offsets, category, dtz, limit, man_resets,
                    moves):
    want_sign = 1 if value == WIN else (-1 if value == LOSS else 0)
    if (cat > 0) - (cat < 0) != want_sign:
        return ERR_RULE_SIGN
    n = generate_moves(bm, bk, wm, wk, BLACK_TO_MOVE, moves)
    if n == 0:
        if cat != CAT_LOSS:
            return ERR_RULE_CATEGORY
        return 0 if z == 0 else ERR_RULE_DTZ
    fastest_win = NO_WIN
    longest_loss = 0
    draws = 0
    for m in range(n):
        t = _locate(moves[m, M_BM], moves[m, M_BK], moves[m, M_WM], moves[m, M_WK], offsets)
        if t == NOT_LOADED:
            return ERR_MISSING_SUCCESSOR
        zeroing = moves[m, M_CAPTURED] != 0 or moves[m, M_CROWNS] != 0 or (
            man_resets and moves[m, M_MAN] != 0)
        if t == NO_PIECES:
            fastest_win = min(fastest_win, 1)  # the opponent has no piece left
            continue
        tc = category[t]
        if tc == CAT_DRAW:
            draws += 1
            continue
        if zeroing:
            plies = 1 if (tc == CAT_WIN or tc == CAT_LOSS) else limit + 1
        else:
            plies = np.int64(dtz[t]) + 1
        if tc < 0:
            fastest_win = min(fastest_win, plies)
        else:
            longest_loss = max(longest_loss, plies)
    want_cat, want_z = rule_outcome(fastest_win, longest_loss, draws, limit)
    if cat != want_cat:
        return ERR_RULE_CATEGORY
    return 0 if z == want_z else ERR_RULE_DTZ


def needed_materials(material: Material) -> list[Material]:
    """The material itself, its mirror and every material a move can lead to.

    >>> [m.name for m in needed_materials(Material.parse("1k-1k"))]
    ['1k-1k']
    """
    found = {material, material.mirrored()}
    bm, bk, wm, wk = material.black_men, material.black_kings, material.white_men, \
        material.white_kings
    for nbm, nbk in [(bm, bk)] + ([(bm - 1, bk + 1)] if bm else []):
        for nwm in range(wm + 1):
            for nwk in range(wk + 1):
                if nwm + nwk:
                    found.add(Material(nwm, nwk, nbm, nbk))
    return sorted(found)


def _flat_arrays(directory: Path, material: Material, cache: TableCache, *,
                 preset: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets by material code, values, distances) of `material` and every material its
    moves reach, concatenated, the material and its mirror first: the rule-free wdl/dtw, or
    with `preset` that rule layer's category/dtz.

    A rule layer's distances cover only the material and its mirror: a move to
    another material (a capture, a crowning) zeroes the counter under every
    preset, so its DTZ is never read (a position costs one byte there). The
    flat arrays are allocated once and each table is copied into its place, so
    that the largest 7-piece materials are held once, not twice; loaded tables
    are kept in `cache` within its budget.
    """
    own = [material] + ([material.mirrored()] if material.mirrored() != material else [])
    ordered = own + [m for m in needed_materials(material) if m not in own]
    offsets = np.full(NUM_CODES, -1, dtype=np.int64)
    sizes = [count_positions(m) for m in ordered]
    values = distances = None
    start = 0
    for m, size in zip(ordered, sizes):
        with_distances = preset is None or m in own
        part = cache.get(("verify", str(directory), m, preset, with_distances),
                         master.table_path(directory, m),
                         lambda _, m=m, d=with_distances: _load_arrays(directory, m, preset, d))
        if values is None:  # the type of the first (the material's own) table
            values = np.empty(sum(sizes), dtype=part[0].dtype)
        values[start:start + size] = part[0]
        if with_distances:
            distances = _widened(distances, part[1].dtype, sum(sizes) if preset is None
                                 else sum(sizes[:len(own)]), wide=preset is None)
            distances[start:start + size] = part[1]
        offsets[code_of_material(m)] = start
        start += size
        del part
    return offsets, values, distances


def _widened(distances: np.ndarray | None, dtype: np.dtype, count: int, *, wide: bool) -> np.ndarray:
    """`distances` (made with `count` items when None) able to hold `dtype`: a rule layer's
    DTZ stays one byte a position when its stored type is (7-piece materials are large);
    the rule-free DTW of many materials is always two (`wide`)."""
    if distances is None:
        return np.empty(count, dtype=np.uint16 if wide else dtype)
    if np.dtype(dtype).itemsize > distances.dtype.itemsize:
        return distances.astype(dtype)
    return distances


def _load_arrays(directory: Path, material: Material, preset: str | None,
                 distances: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """(wdl, dtw), or with `preset` (category, dtz) of that rule layer (dtz None unless
    `distances`); FileNotFoundError when missing, TableError when the file stores no DTW."""
    if preset is None:
        wdl, dtw = master.load_material(directory, material)
        if dtw is None:
            raise master.TableError(f"{master.table_path(directory, material)} stores no DTW")
        return wdl, dtw
    layer = master.open_material(directory, material, rules=(preset,)).rules[preset]
    return layer.category, layer.dtz if distances else None


def verify_material(directory: Path, material: Material, *, chunk: int = 1 << 20,
                    cache: TableCache | None = None) -> tuple[int, list[str]]:
    """Check one table; return (number of bad positions, first messages).

    A file with DTW is checked rule-free, then each rule layer against those
    values; a file without (7 pieces by default) holds values that must be the
    signs of its first layer's categories, and its layers are checked from
    their definitions.
    """
    cache = process_cache() if cache is None else cache
    path = master.table_path(directory, material)
    presets = master.rule_presets_in(path)
    if master.has_dtw(path):
        offsets, wdl, dtw = _flat_arrays(directory, material, cache)
        counts, base = _counts_of(material), offsets[code_of_material(material)]
        bad, messages = _check_in_chunks(
            material, chunk,
            lambda lo, hi, errors: check_positions(counts, lo, hi, base, offsets, wdl, dtw, errors),
            lambda errors: _describe(material, errors, wdl, dtw, base))
        own_wdl = wdl[base:base + count_positions(material)]
    else:
        own_wdl, _ = master.load_material(directory, material)
        bad, messages = _check_signs(material, own_wdl, presets, directory)
    for preset in presets:
        layer_bad, layer_messages = verify_rule_layer(directory, material, preset, own_wdl,
                                                      chunk=chunk, cache=cache)
        bad += layer_bad
        messages += layer_messages
    return bad, messages[:MAX_REPORTED]


def _check_signs(material: Material, wdl: np.ndarray, presets: list[str],
                 directory: Path) -> tuple[int, list[str]]:
    """Values of a file without DTW against its first layer's categories (their signs)."""
    if not presets:
        return 1, [f"{master.table_path(directory, material)} stores neither DTW nor a rule layer"]
    from egtb.builder.rule_layer import values_of
    category = master.read_categories(master.table_path(directory, material), presets[0])
    wrong = np.flatnonzero(values_of(category) != wdl)
    return len(wrong), [f"{_fen_of(material, int(i))} ({material.name} #{i}): stored "
                        f"{_code_name(int(wdl[i]))}, {presets[0]} category {int(category[i])}: "
                        f"{ERROR_NAMES[ERR_RULE_SIGN]}" for i in wrong[:MAX_REPORTED]]


def verify_rule_layer(directory: Path, material: Material, preset: str, wdl: np.ndarray, *,
                      chunk: int = 1 << 20, cache: TableCache | None = None) -> tuple[int, list[str]]:
    """Check one rule layer of a table against its successors' layers and `wdl` (the
    material's verified rule-free values); return (bad positions, first messages)."""
    from egtb.builder.rule_layer import PRESETS
    cache = process_cache() if cache is None else cache
    rule = PRESETS[preset]
    offsets, category, dtz = _flat_arrays(directory, material, cache, preset=preset)
    counts, base = _counts_of(material), offsets[code_of_material(material)]

    def describe(errors: np.ndarray) -> list[str]:
        return [f"{_fen_of(material, int(index))} ({material.name} #{index}, {preset}: stored "
                f"{int(category[base + index])} dtz {int(dtz[base + index])}): {ERROR_NAMES[code]}"
                for index, code in errors]

    bad, messages = _check_in_chunks(
        material, chunk,
        lambda lo, hi, errors: check_rule_positions(counts, lo, hi, base, offsets, wdl, category, dtz,
                                                    rule.limit_plies, rule.man_move_resets, errors),
        describe)
    return bad, messages[:MAX_REPORTED]


def _counts_of(material: Material) -> np.ndarray:
    """Men and kings of each side, as the check kernels take them."""
    return np.array([material.black_men, material.black_kings, material.white_men,
                     material.white_kings], dtype=np.int64)


def _check_in_chunks(material: Material, chunk: int, check, describe) -> tuple[int, list[str]]:
    """Run ``check(lo, hi, errors)`` (a kernel returning its failure count) over a material's
    positions, chunk by chunk; return (failures, ``describe`` of the remembered ones)."""
    errors = np.zeros((MAX_REPORTED, 2), dtype=np.int64)
    total = count_positions(material)
    bad, messages = 0, []
    for lo in range(0, total, chunk):
        found = check(lo, min(lo + chunk, total), errors)
        messages += describe(errors[:min(found, MAX_REPORTED)])
        bad += found
    return bad, messages


def _fen_of(material: Material, index: int) -> str:
    from egtb.positions.index import global_unrank
    return format_fen(Placement(*global_unrank(material, index), 0))


def _code_name(code: int) -> str:
    try:
        return str(Wdl.of_code(code))
    except ValueError:
        return f"code {code}"


def _describe(material: Material, errors: np.ndarray, wdl: np.ndarray, dtw: np.ndarray,
              base: int) -> list[str]:
    from egtb.positions.index import global_unrank
    out = []
    for index, code in errors:
        bm, bk, wm, wk = global_unrank(material, int(index))
        fen = format_fen(Placement(bm, bk, wm, wk, 0))
        stored = f"{_code_name(int(wdl[base + index]))} {int(dtw[base + index])}"
        out.append(f"{fen} ({material.name} #{index}, stored {stored}): {ERROR_NAMES[code]}")
    return out


def verify_directory(directory: os.PathLike | str | None = None, *,
                     materials: list[Material] | None = None, jobs: int = 1,
                     progress: bool = False, compact: bool = False,
                     resume: bool = False) -> VerifyReport:
    """Check every table of a directory (or the given materials) with `jobs` processes.

    With `compact`, each material's compact files (when it has some) are checked
    in the same process, against its master (:func:`egtb.builder.verify_compact.verify_compact`).
    With `resume`, a material that passed before with every file it reads
    unchanged (:class:`VerifiedFiles`) is not checked again: a killed 7-piece
    verify (hours) goes on where it stopped. ``report.skipped`` counts those.

    >>> verify_directory("/nonexistent").ok
    False
    """
    from tqdm import tqdm
    directory = master.resolve_dir(directory)
    if materials is None:
        materials = master.stored_materials(directory)
    report = VerifyReport()
    record = VerifiedFiles(directory) if resume else None
    if record is not None:
        report.skipped = [m.name for m in materials if record.passed(m)]
        materials = [m for m in materials if m.name not in report.skipped]
    _drop_loaded()  # workers fork without them
    bar = tqdm(total=sum(count_positions(m) for m in materials), unit="pos", unit_scale=True,
               desc="verify", disable=not progress)
    for material, result in _results(directory, materials, jobs=jobs, compact=compact):
        report.add(result)
        if record is not None and result.ok:
            record.note(material)
            record.save()
        bar.update(count_positions(material))
    bar.close()
    _drop_loaded()
    return report


class VerifiedFiles(master.JsonRecord):
    """The materials that passed ``egtb verify``, with the size and modification time of every
    file their check read (``<directory>/verified.json``).

    A material is verified again when any of those files changed.

    >>> VerifiedFiles("/nonexistent").passed(Material.parse("1k-1k"))
    False
    """

    NAME = "verified.json"

    def stamps(self, material: Material) -> dict[str, list[int]]:
        """Size and modification time of each file verifying `material` reads (those present)."""
        paths = [master.table_path(self.directory, m) for m in needed_materials(material)]
        paths += compact_paths(self.directory, material)
        return {p.name: file_stamp(p) for p in paths if p.exists()}

    def passed(self, material: Material) -> bool:
        """Whether `material` passed with the files as they are now."""
        return self.known.get(material.name) == self.stamps(material)

    def note(self, material: Material) -> None:
        """Record that `material` passed, with its files' stamps."""
        self.known[material.name] = self.stamps(material)


def _drop_loaded() -> None:
    """Drop the tables this process loaded for checking from its table cache."""
    process_cache().drop_if(lambda key: isinstance(key, tuple) and key[:1] == ("verify",))


def _check_materials(directory: Path, materials: list[Material],
                     compact: bool = False) -> list[tuple[Material, "MaterialResult"]]:
    """Check materials one after the other, reporting broken or missing files as errors."""
    results = []
    for material in materials:
        try:
            bad, messages = verify_material(directory, material)
        except (master.TableError, FileNotFoundError) as exc:
            bad, messages = 1, [str(exc)]
        result = MaterialResult(tables=1, checked=count_positions(material), errors=bad,
                                messages=messages)
        if compact:
            result.add_compact(directory, material)
        results.append((material, result))
    return results


@dataclass
class MaterialResult:
    """What the check of one material found (its master, and its compact files when checked)."""

    tables: int
    checked: int
    errors: int
    messages: list[str]

    @property
    def ok(self) -> bool:
        return self.errors == 0

    def add_compact(self, directory: Path, material: Material) -> None:
        """Check the material's compact files (when it has some) against its master."""
        if not compact_path(directory, material).exists():
            return
        found = verify_compact(directory, materials=[material])
        self.tables += found.tables
        self.checked += found.checked
        self.errors += found.errors
        self.messages += found.messages


def _by_pair(materials: list[Material]) -> list[list[Material]]:
    """The materials grouped with their mirrors (one process checks both: they read the same
    tables), in the given order.

    >>> _by_pair([Material.parse(n) for n in ("1k-1m", "1k-1k", "1m-1k")])
    [[Material(black_men=0, black_kings=1, white_men=1, white_kings=0), Material(black_men=1, black_kings=0, white_men=0, white_kings=1)], [Material(black_men=0, black_kings=1, white_men=0, white_kings=1)]]
    """
    groups: dict[Material, list[Material]] = {}
    for material in materials:
        groups.setdefault(min(material, material.mirrored()), []).append(material)
    return list(groups.values())


def _results(directory: Path, materials: list[Material], *, jobs: int, compact: bool = False):
    """(material, MaterialResult) of each material as it is checked, a material and its mirror
    together (one task of the local pool, :class:`egtb.executor.LocalPool`)."""
    groups = _by_pair(materials)
    if jobs > 1 and len(groups) > 1:
        # the smallest group first, here: its check compiles (or loads) the kernels once, before
        # the workers fork, instead of once in every worker
        first = min(groups, key=lambda group: sum(count_positions(m) for m in group))
        groups.remove(first)
        yield from _check_materials(directory, first, compact)
        _drop_loaded()
    tasks = [Task(f"verify-{group[0].name}", _check_materials, (directory, group, compact))
             for group in groups]
    for done in LocalPool(max(1, min(jobs, len(groups)))).run(tasks):  # recorded as each finishes
        yield from done.result
