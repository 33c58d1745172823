"""A compact-native table checked against its successors, a chunk at a time, from its compact
files alone (no master): every stored WDL, category and DTZ, and the capture positions' values
through the capture search (:mod:`egtb.builder.successor_check` holds the kernels). A WLD file
that leaves threat positions out (:mod:`egtb.rules.threats`) has their values from the prober's
search, checked against their successors like the stored ones (their DTZ is stored).

Memory is bounded by the chunk, not the table: a chunk's positions are unranked
and its own stored codes decoded from the blocks that hold them
(:meth:`egtb.formats.compact.CompactTable.codes`); its successors are read from
their files' blocks through the blocks' marks.

>>> sorted(FILE_FLAGS)
['.dtz', '.wcdf', '.wld']
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from egtb.builder.contents import LEAN_RULES
from egtb.builder.dense_units import dense_successors
from egtb.errors import InvalidArgumentError
from egtb.formats.compact import SUFFIX, CompactTable, material_counts
from egtb.formats.compact.layout import DTZ_KINDS, RULE_KINDS
from egtb.formats.values import CAT_WIN
from egtb.positions.index import material_of_code, unrank_positions
from egtb.positions.material import Material, count_positions
from egtb.probe.compact_kernels import best_of_children, capture_children, probe_batch, radix_sort
from egtb.probe.locate import locate_all
from egtb.rules.perft import MAX_CHILDREN
from egtb.rules.draw_rules import DRAW_RULES
from egtb.rules.threats import threat_flags
from egtb.builder.successor_check import (FLAG_CATEGORY, FLAG_DTZ, FLAG_SIGN, FLAG_WDL, check_positions,
                                          pack_values, quiet_successors, read_ascending, successor_boards,
                                          successor_ranks, unique_keys, unranked)

__all__ = ["ChunkCheck", "FILE_FLAGS", "check_chunk", "error_text", "max_moves"]

#: The flags (successor_check.FLAG_*) that count against each file of a material.
FILE_FLAGS = {SUFFIX: FLAG_WDL, RULE_KINDS["wcdf"].suffix: FLAG_CATEGORY | FLAG_SIGN,
              DTZ_KINDS["wcdf"].suffix: FLAG_DTZ}


class ChunkCheck(NamedTuple):
    """What :func:`check_chunk` found in one chunk of positions."""

    flags: np.ndarray
    """FLAG_* bits of each position of the chunk (uint8; 0: right)."""
    captures: int
    """Positions whose side to move must capture (not stored: not checked)."""
    decisive: int
    """Quiet wins and losses whose DTZ was checked (0 without a rule)."""
    dtz: np.ndarray
    """The stored DTZ of each position (meaningful at a quiet win or loss; empty without a DTZ
    file), for the messages."""
    derived: np.ndarray
    """Where the material's DTZ is derived from its moves: the DTZ its successors give each quiet
    win or loss, 0 elsewhere (what its mirror's check reads, :mod:`.verify_derived`);
    else empty."""
    figures: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    """When asked for: the WDL, category and stored (or derived) DTZ of every position of the chunk
    and whether it must capture, what :meth:`egtb.builder.figures.TableFigures.add` counts (the
    capture positions' values answered by the search); None without a DTZ."""


def check_chunk(prober, material: Material, lo: int, hi: int, *, rule: str | None,
                figures: bool = False) -> ChunkCheck:
    """Check positions lo..hi of a material against their successors, through ``prober`` (a
    :class:`egtb.builder.verify_compact.CompactProber`): the WDL of its WLD file and, with
    ``rule``, the category of its category file and the DTZ of its DTZ file (without a DTZ file,
    only the categories' win or loss sides against the WDL). The positions whose side to move must
    capture are not stored (the files hold filler there): nothing of theirs is checked. The
    successors that must capture have their values from the capture search; with ``figures`` the
    chunk's own capture positions too, for the table's figures (``ChunkCheck.figures``).
    TableError names a damaged block; MissingTableError a table the successors need.

    >>> from egtb.builder.verify_compact import CompactProber
    >>> check_chunk(CompactProber("/nonexistent"), Material.parse("1k-1k"), 0, 10, rule=None)
    Traceback (most recent call last):
    ...
    egtb.errors.MissingTableError: no compact table for material 1k-1k in /nonexistent (1k-1k.wld is missing)
    """
    table: CompactTable = prober.table(material)
    boards, cap = unranked(material_counts(material), lo, hi)
    wdl = np.asarray(table.kind.value_of_code, dtype=np.int64)[table.codes(lo, hi)]
    category = dtz = np.zeros(0, dtype=np.int64)
    layer = table.layer(rule) if rule is not None else None
    if layer is not None:
        category = np.asarray(layer.kind.value_of_code, dtype=np.int64)[layer.codes(lo, hi)]
    if table.threats:  # the threat positions it leaves out: their values from the search
        _searched_threats(prober, boards, 0, wdl, category, rule if layer is not None else None)
    # without a DTZ file: the categories' signs only; with its DTZ derived from the mirror's (one ply,
    # egtb.probe.derived_dtz), the categories against the successors and no DTZ of its own to check
    derived = layer is not None and layer.dtz_derived
    full = layer is not None and (layer.dtz_file is not None or derived)
    if full and not derived:
        dtz = np.asarray(layer.dtz_file.kind.value_of_code, dtype=np.int64)[layer.dtz_file.codes(lo, hi)]
    draw_rule = DRAW_RULES[rule or "wcdf"]
    rank, codes, index_bits = successor_ranks(material)
    offsets = np.empty(hi - lo + 1, dtype=np.int64)
    rows = (hi - lo) * max_moves(material)
    keys, zeroing, parent = (np.empty(rows, dtype=np.int64), np.empty(rows, dtype=np.bool_),
                             np.empty(rows, dtype=np.int32))
    k = int(quiet_successors(*boards, cap, draw_rule.man_move_resets, rank, index_bits, offsets, keys, zeroing, parent))
    if k < 0:
        raise InvalidArgumentError(f"a position of {material.name} with more than {max_moves(material)} moves")
    keys, zeroing, parent = keys[:k], zeroing[:k], parent[:k]
    dense_at, dense_packed = dense_successors(prober, keys, codes, index_bits, rule if full else None, prober.units)
    rest = None  # the successors looked up one by one (all of them when no unit was decoded)
    if len(dense_at):
        looked_up = np.ones(k, dtype=np.bool_)
        looked_up[dense_at] = False
        rest = np.flatnonzero(looked_up)
        keys = keys[rest]
    order, sorted_keys = radix_sort(keys, len(codes).bit_length() + index_bits + 1)
    slot, first_of = np.empty(len(keys), dtype=np.int64), np.empty(len(keys), dtype=np.int64)
    unique = int(unique_keys(order, sorted_keys, slot, first_of))
    del order, sorted_keys
    first = first_of[:unique] if rest is None else rest[first_of[:unique]]
    *succ, capturing, rows = _successor_values(prober, keys[first_of[:unique]], first, boards, offsets,
                                               parent, codes, index_bits, rule if full else None)
    if len(capturing):  # the successors that must capture: their values from the capture search
        found_wdl, found_category = _searched_values(prober, tuple(np.ascontiguousarray(rows[:, c]) for c in range(4)),
                                                     np.ones(len(capturing), dtype=np.int64),
                                                     rule=rule if full else None, checked=table.positions)
        succ[0][capturing] = found_wdl
        if full:
            succ[1][capturing], succ[2][capturing] = found_category, 1
    packed = np.empty(unique, dtype=np.int64)
    pack_values(*succ, packed)
    del succ
    if rest is not None:  # the decoded units' successors first, then the others' distinct values
        slot_of = np.empty(k, dtype=np.int64)
        slot_of[dense_at] = np.arange(len(dense_at))
        slot_of[rest] = slot + len(dense_at)
        slot, packed = slot_of, np.concatenate([dense_packed, packed])
    flags = np.zeros(hi - lo, dtype=np.uint8)
    found_dtz = np.zeros(hi - lo if full else 0, dtype=np.int64)
    check_positions(cap, wdl, category, dtz, offsets, slot, zeroing, packed, draw_rule.limit_plies,
                    layer is not None, full, not derived, flags, found_dtz)
    decisive = int(np.count_nonzero((np.abs(category) == CAT_WIN) & ~cap)) if full and not derived else 0
    complete = _complete_values(prober, table, boards, cap, wdl, category, found_dtz if derived else dtz,
                                rule) if figures and full else None
    return ChunkCheck(flags, int(np.count_nonzero(cap)), decisive, dtz,
                      found_dtz if derived else np.zeros(0, dtype=np.int64), complete)


def _complete_values(prober, table: CompactTable, boards: tuple[np.ndarray, ...], cap: np.ndarray, wdl: np.ndarray,
                     category: np.ndarray, dtz: np.ndarray, rule: str) -> tuple[np.ndarray, ...]:
    """(WDL, category, DTZ, must capture) of every position of a checked chunk: the stored ones as
    read (or, on a derived side, the DTZ its successors give), the values of those whose side to
    move must capture (left out of the files) from the capture search."""
    at = np.flatnonzero(cap)
    if len(at):
        found_wdl, found_category = _searched_values(prober, tuple(np.ascontiguousarray(b[at]) for b in boards),
                                                     np.zeros(len(at), dtype=np.int64), rule=rule,
                                                     checked=table.positions)
        wdl, category = wdl.copy(), category.copy()
        wdl[at], category[at] = found_wdl, found_category
    return wdl, category, dtz, cap


def max_moves(material: Material) -> int:
    """The most simple moves a position of a material (Black to move) can have: 4 a king, 2 a man.

    >>> max_moves(Material.parse("1m3k-4k"))
    14
    """
    return 4 * material.black_kings + 2 * material.black_men


def _successor_values(prober, keys: np.ndarray, first: np.ndarray, boards: tuple[np.ndarray, ...],
                      offsets: np.ndarray, parent: np.ndarray, codes: list[int], index_bits: int, rule: str | None
                      ) -> tuple[np.ndarray, ...]:
    """(WDL, category, DTZ, those that must capture, their bitboards) of the distinct successors of
    a chunk (their ascending ``keys``: table rank, index, must capture; ``first`` the first
    successor of each, a move of the chunk's position ``parent`` of ``boards``, whose successors
    begin at ``offsets``), White to move: the quiet ones read from their files in ascending order;
    those that must capture (their places, in the order of their parents, and bitboards as rows)
    are left to the capture search."""
    n = len(keys)
    wdl, category, dtz = (np.zeros(n, dtype=np.int64) for _ in range(3))
    searched = []
    ranks, indices, must = keys >> (index_bits + 1), (keys >> 1) & ((1 << index_bits) - 1), keys & 1
    bounds = np.searchsorted(ranks, np.arange(len(codes) + 1)).tolist()  # the keys of a table together
    for r, code in enumerate(codes):
        lo, hi = bounds[r], bounds[r + 1]
        if lo == hi:
            continue
        quiet = lo + np.flatnonzero(must[lo:hi] == 0)
        material = material_of_code(code)
        table = prober.table(material)
        value_of = np.asarray(table.kind.value_of_code, np.int64)
        wld_codes = read_ascending(table, indices[quiet], np.arange(len(value_of)))
        wdl[quiet] = value_of[wld_codes]
        if rule is not None:
            layer = table.layer(rule)
            category_of = np.asarray(layer.kind.value_of_code, np.int64)
            if layer.coded_path != layer.path:  # coded as exceptions to the WLD file just read: its blocks
                category[quiet] = category_of[layer.refined_at(indices[quiet], wld_codes)]
            else:
                category[quiet] = read_ascending(layer, indices[quiet], category_of)
        if table.threats:  # those it leaves out: from the search (as normalised, Black to move)
            held = tuple(np.empty(len(quiet), dtype=np.int64) for _ in range(4))
            unrank_positions(indices[quiet], material.black_men, material.black_kings, material.white_men,
                             material.white_kings, *held)
            threat_wdl, threat_category = wdl[quiet], category[quiet] if rule is not None else category
            _searched_threats(prober, held, 0, threat_wdl, threat_category, rule)
            wdl[quiet] = threat_wdl
            if rule is not None:
                category[quiet] = threat_category
        if rule is not None:
            decisive = quiet[np.abs(category[quiet]) == CAT_WIN]
            dtz_file = layer.dtz_file
            if dtz_file is None and layer.dtz_derived:  # from their moves, one ply into the mirror's file
                dtz[decisive] = prober.derived_dtz(material, indices[decisive], category[decisive], rule)
            else:
                dtz[decisive] = read_ascending(dtz_file, indices[decisive],
                                               np.asarray(dtz_file.kind.value_of_code, np.int64))
        searched.append(lo + np.flatnonzero(must[lo:hi]))
    searched = np.concatenate(searched) if searched else np.zeros(0, dtype=np.int64)
    if len(searched):  # in the order of their parents: each generated once
        searched = searched[radix_sort(first[searched], int(first.max()).bit_length())[0]]
    ks = first[searched]
    parents = parent[ks].astype(np.int64)
    rows = np.empty((len(searched), 4), dtype=np.int64)
    successor_boards(*boards, parents, ks - offsets[parents], rows)
    return wdl, category, dtz, searched, rows


def _searched_threats(prober, boards: tuple[np.ndarray, ...], turn: int, wdl: np.ndarray, category: np.ndarray,
                      rule: str | None) -> int:
    """Put into ``wdl`` (and, with ``rule``, ``category``) the values the prober's search gives the
    threat positions of ``boards`` a WLD file leaves out (:func:`egtb.rules.threats.threat_flags`);
    return how many. Their stored codes are filler."""
    threat = np.empty(len(boards[0]), dtype=np.bool_)
    if not threat_flags(*boards, turn, threat):
        return 0
    held = tuple(np.ascontiguousarray(b[threat]) for b in boards)
    wdl[threat] = prober.probe_batch(*held, turn)[0]
    if rule is not None:
        category[threat] = prober.probe_batch(*held, turn, rule=rule)[0]
    return int(threat.sum())


#: Added to a material code in those keys (the codes of no table are negative, -3 the least).
CODE_OFFSET = 4


def _searched_values(prober, boards: tuple[np.ndarray, ...], turns: np.ndarray, *, rule: str | None,
                     checked: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """(WDL, with ``rule`` the category) of positions (``turns`` to move) whose side to move must
    capture: the best over their captures, the positions after them read from the prober's whole
    copy of their table where it holds one, the others probed once each (:func:`_probed_once`),
    those that must capture again searched by the prober. With ``rule`` only the categories are
    searched, and the WDL is their sign: a category file's win or loss side is its WLD file's
    value at every stored position, which the check of the tables holding them asserts
    (FLAG_SIGN), so it is at every searched one too; and a table that holds a tenth of the
    positions after the captures or more, of at most :data:`LOAD_RATIO` times the ``checked``
    material's positions, is read from the prober's whole copy
    (:meth:`egtb.builder.verify_compact.CompactProber.loaded_categories`), gathered as they come."""
    n = len(boards[0])
    needs = np.ones(n, dtype=np.bool_)
    parts, first = [], 0
    while first < n:  # about 2 captures a position: rarely more than one part
        part = np.empty((2 * n + MAX_CHILDREN, 6), dtype=np.int64)
        first, filled = capture_children(*boards, turns, needs, first, part)
        parts.append(part[:filled])
    rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
    children = tuple(np.ascontiguousarray(rows[:, k]) for k in range(5))
    codes, indices = np.empty(len(rows), dtype=np.int32), np.empty(len(rows), dtype=np.int64)
    locate_all(*children, codes, indices)
    values = np.empty(len(rows), dtype=np.int64)
    rest = np.arange(len(rows))  # the children no whole copy answers
    if rule == LEAN_RULES:  # the rule of the copies (native.category_chunks): gathered, no sort
        copied = np.zeros(len(rows), dtype=np.bool_)
        for at, loaded in _loaded_children(prober, codes, checked):
            values[at] = loaded[indices[at]]
            copied[at] = True
        rest = np.flatnonzero(~copied)
    if len(rest):
        values[rest] = _probed_once(prober, children, codes, indices, rest, rule)
    parents = np.ascontiguousarray(rows[:, 5])
    best = np.zeros(n, dtype=np.int64)
    best_of_children(parents, values, 1 if rule is None else CAT_WIN, best)
    if rule is None:
        return best, None
    return np.sign(best), best  # a category's win or loss side is its WDL (a cursed win is a win)


#: A table the positions after the successors' captures lie in is copied whole when it has at most this
#: many times the positions of the material checked (the copy costs about a capture search a
#: position: 0.5 us at 7 pieces, where a check spares 0.75 us a position of its own).
LOAD_RATIO = 0.5
#: ... and holds at least this share of them.
LOAD_SHARE = 0.1


def _probed_once(prober, children: tuple[np.ndarray, ...], codes: np.ndarray, indices: np.ndarray,
                 at: np.ndarray, rule: str | None) -> np.ndarray:
    """The values (with ``rule`` the categories) of the positions ``at`` of ``children`` (their
    bitboards and turns, located at ``codes`` and ``indices``), each distinct one probed once, in
    the order of their tables and indices (each lookup on from the one before)."""
    codes, indices = codes[at], indices[at]
    present = np.flatnonzero(np.bincount(codes + CODE_OFFSET))  # a few tables: their ranks sort
    rank = np.zeros(present[-1] + 1, dtype=np.int64)
    rank[present] = np.arange(len(present))
    index_bits = max(int(indices.max()).bit_length(), 1)
    keys = (rank[codes + CODE_OFFSET] << index_bits) | indices
    order, sorted_keys = radix_sort(keys, len(present).bit_length() + index_bits)
    slot, first_of = np.empty(len(keys), dtype=np.int64), np.empty(len(keys), dtype=np.int64)
    unique = first_of[:int(unique_keys(order, sorted_keys, slot, first_of))]
    del order, sorted_keys, keys
    distinct = tuple(np.ascontiguousarray(a[at[unique]]) for a in children)
    values, _ = probe_batch(distinct, lambda code: prober.table(material_of_code(code)), batches=prober.batches,
                            rule=rule, located=(codes[unique], indices[unique]), distances=False)
    return values[slot]


def _loaded_children(prober, codes: np.ndarray, checked: int):
    """(the places in ``codes`` of one table's positions, the table's whole categories) of each table
    that the prober holds or copies now (:data:`LOAD_RATIO`, :data:`LOAD_SHARE`)."""
    counts = np.bincount(codes + CODE_OFFSET)
    for code in (np.flatnonzero(counts >= max(LOAD_SHARE * len(codes), 1)) - CODE_OFFSET).tolist():
        if code < 0:
            continue
        material = material_of_code(code)
        if count_positions(material) <= LOAD_RATIO * checked:
            loaded = prober.loaded_categories(material)
            if loaded is not None:
                yield np.flatnonzero(codes == code), loaded


def error_text(flag: int, *, dtz: int, wld_name: str) -> str:
    """What a position's flag (one FLAG_*) says is wrong, as a verify's message tells it.

    >>> error_text(FLAG_DTZ, dtz=7, wld_name="2k-1k.wld")
    'stored DTZ 7 is not the one its successors give'
    """
    if flag == FLAG_WDL:
        return "stored value is not the best value over its successors"
    if flag == FLAG_SIGN:
        return f"stored category disagrees with {wld_name}"
    if flag == FLAG_CATEGORY:
        return "stored category is not the one its successors give"
    return f"stored DTZ {dtz} is not the one its successors give"
