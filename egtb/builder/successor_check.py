"""One chunk of a compact-native table checked against its successors, in numba kernels.

The positions of a chunk (a range of a material's indices, Black to move) are
unranked (:func:`unrank_range`, no whole unit in memory), their stored WDL,
category and DTZ decoded from the chunk's own blocks, and every position whose
side to move need not capture is checked against its successors in one pass:
the moves generated and located in a kernel (:func:`quiet_successors`), the
successors sorted and made unique (one key each: table, index, must capture),
the stored codes of the quiet ones read in ascending order from their files'
blocks (:func:`lookup_ascending`: each continues from the one before in the
same block), those whose side must capture answered by the prober's capture
search, and every position's value, category and DTZ recomputed from them
(:func:`check_positions`). A position whose side to move must capture is
answered by the capture search (its value is the best over its captures by
construction): its WDL and category are checked against each other.

>>> FLAG_WDL | FLAG_CATEGORY | FLAG_DTZ | FLAG_SIGN
15
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.formats.compact import CompactTable
from egtb.formats.compact.codec import (L_BLOCKS, L_DATA, L_DATA_LEN, L_EXCEPTION_COUNT, L_EXCEPTIONS, L_LUT,
                                        L_MARK_COUNTS, L_MARKS, L_STARTS, MARK_SHIFT, block_of, decode_from,
                                        last_mark_from, refined)
from egtb.formats.compact.layout import BLOCK_BYTES
from egtb.formats.pointers import int32_ptr, int64_ptr, uint8_ptr
from egtb.formats.values import CAT_LOSS, CAT_WIN, WDL_LOSS
from egtb.positions.index import NUM_CODES, code_of_material
from egtb.positions.material import Material, count_positions
from egtb.positions.walk import unrank_captures, unrank_range
from egtb.probe.derived_dtz import NO_WIN, add_move, rule_outcome
from egtb.probe.locate import king_step_frame, king_step_index, locate_valid
from egtb.rules.captures import has_capture
from egtb.rules.movegen import (BLACK_TO_MOVE, M_BK, M_BM, M_CROWNS, M_MAN, M_WK, M_WM, MAX_MOVES, MOVE_WIDTH,
                                generate_moves)

__all__ = ["block_firsts", "FLAG_CATEGORY", "FLAG_DTZ", "FLAG_SIGN", "FLAG_WDL", "NO_WIN", "check_positions",
           "lookup_ascending", "pack_values", "quiet_successors", "read_ascending",
           "rule_outcome", "successor_boards", "successor_ranks", "unique_keys", "unrank_captures", "unrank_range",
           "unranked"]

#: What :func:`check_positions` found wrong at a position (bits of its flags).
FLAG_WDL = 1  #: the stored WDL is not the best over the successors
FLAG_CATEGORY = 2  #: the stored category is not the one the successors give
FLAG_DTZ = 4  #: the stored DTZ of a win or loss is not the one the successors give
FLAG_SIGN = 8  #: the category's win or loss side is not the WDL (a capture position's, both searched)


def unranked(counts: np.ndarray, lo: int, hi: int) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """((bm, bk, wm, wk), must capture) of positions lo..hi of a material, Black to move
    (:func:`unrank_range` into arrays made here).

    >>> (bm, bk, wm, wk), cap = unranked(np.array([0, 1, 0, 1]), 30, 32)
    >>> bk.tolist(), wk.tolist(), cap.tolist()
    ([1, 2], [2147483648, 1], [False, False])
    """
    boards = tuple(np.empty(hi - lo, dtype=np.int64) for _ in range(4))
    cap = np.empty(hi - lo, dtype=np.bool_)
    unrank_range(counts, lo, hi, *boards, cap)
    return boards, cap


@njit(cache=True)
def quiet_successors(bm, bk, wm, wk, cap, man_resets, rank, index_bits, offsets, keys, zeroing, parent):
    """The successors (White to move) of every position that need not capture, as sort keys: the
    rank of their table (``rank`` by material code, from 0), their index, whether their side to
    move must capture (the low bit); ``zeroing`` whether the move zeroes the counter (a crowning,
    and with ``man_resets`` any man move), ``parent`` the position it is a move of. ``offsets[i]`` is
    where position i's start (none for a capture position). Returns their number, -1 when they do
    not fit in ``keys``."""
    moves = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    k = 0
    for i in range(bm.shape[0]):
        offsets[i] = k
        if cap[i]:
            continue
        n = generate_moves(bm[i], bk[i], wm[i], wk[i], BLACK_TO_MOVE, moves)
        if k + n > keys.shape[0]:
            return -1
        step_code = np.int64(-1)  # a king step keeps the men and White's kings: located once a position
        step_base = step_free = np.int64(0)
        for m in range(n):
            sbm, sbk, swm, swk = moves[m, M_BM], moves[m, M_BK], moves[m, M_WM], moves[m, M_WK]
            if moves[m, M_MAN] == 0:
                if step_code < 0:
                    step_code, step_base, step_free = king_step_frame(bm[i], bk[i], wm[i], wk[i])
                code, index = step_code, king_step_index(step_base, step_free, sbk)
            else:
                code, index = locate_valid(sbm, sbk, swm, swk, 1)
            must = 1 if has_capture(sbm, sbk, swm, swk, 1) else 0
            keys[k] = (rank[code] << (index_bits + 1)) | (index << 1) | must
            zeroing[k] = moves[m, M_CROWNS] != 0 or (man_resets and moves[m, M_MAN] != 0)
            parent[k] = i
            k += 1
    offsets[bm.shape[0]] = k
    return k


@njit(cache=True)
def unique_keys(order, sorted_keys, slot, first_of):
    """Number the distinct keys of sorted ``sorted_keys`` (``order``: the successors in that order):
    ``slot[s]`` the number of successor s's key, ``first_of[u]`` the first successor with key u.
    Returns how many there are; their keys are sorted_keys at the first_of positions' places.

    >>> slot, first_of = np.empty(4, dtype=np.int64), np.empty(4, dtype=np.int64)
    >>> unique_keys(np.array([2, 0, 3, 1]), np.array([5, 5, 7, 9]), slot, first_of), slot.tolist()
    (3, [0, 2, 0, 1])
    """
    u = -1
    last = np.int64(-1)
    for j in range(sorted_keys.shape[0]):
        key = sorted_keys[j]
        if key != last:
            u += 1
            first_of[u] = order[j]
            last = key
        slot[order[j]] = u
    return u + 1


@njit(cache=True)
def lookup_ascending(lookup, indices, first, value_of, out, status):
    """Values (``value_of`` each stored code) of a compact file at ascending ``indices`` from
    ``first`` into ``out``: each decoded from its block's marks, or on from the run the lookup
    before it decoded when that lies in the same block before it. Stops at a block whose marks
    are not in memory: status = [the index's place, its block] (the caller makes them and
    resumes there); status[0] = -1 when done. ``lookup``: the file's descriptor, by address."""
    desc = int64_ptr(lookup)
    starts = int64_ptr(desc[L_STARTS])
    marks_at = int64_ptr(desc[L_MARKS])
    mark_counts = int64_ptr(desc[L_MARK_COUNTS])
    data = uint8_ptr(desc[L_DATA])
    lut = int32_ptr(desc[L_LUT])
    n_blocks, data_len = desc[L_BLOCKS], desc[L_DATA_LEN]
    block = np.int64(-1)
    run_start = run_next = np.int64(0)
    value = np.int64(0)
    at_mark = np.int64(-1)  # the place of the last mark used in the block
    for i in range(first, indices.shape[0]):
        index = np.int64(indices[i])
        if block < 0 or index >= starts[block + 1]:
            block = block_of(starts, n_blocks, index)
            run_start, run_next, at_mark = np.int64(-1), np.int64(0), np.int64(-1)
        marks = marks_at[block]
        if marks == 0:
            status[0], status[1] = i, block
            return
        offset = index - starts[block]
        if run_start < 0 or offset >= run_next >> MARK_SHIFT:  # not in the run decoded last
            at_mark = last_mark_from(int64_ptr(marks), mark_counts[block], offset, at_mark)
            mark = int64_ptr(marks)[at_mark]
            if run_start >= 0 and run_next > mark:
                mark = run_next  # on from the last run, no further back than the mark
            start = block * BLOCK_BYTES
            value, run_start, run_next = decode_from(data, start, min(start + BLOCK_BYTES, data_len), lut,
                                                     mark, offset)
        out[i] = value_of[refined(value, index, desc[L_EXCEPTIONS], desc[L_EXCEPTION_COUNT])]
    status[0] = -1


#: A successor's values packed in one int64 (:func:`pack_values`): WDL + 1 in bits 0-1, category + 2
#: in bits 2-4, DTZ from bit 5 (one gather a move in :func:`check_positions`, not three; a unit
#: decoded whole holds its positions so, in 16 bits where its DTZ stays under 2**10:
#: :mod:`egtb.builder.dense_units`).
PACK_CATEGORY_SHIFT = 2
PACK_DTZ_SHIFT = 5


@njit(cache=True)
def pack_values(wdl, category, dtz, out):
    """Pack each successor's WDL, category and DTZ into ``out`` (see PACK_DTZ_SHIFT).

    >>> out = np.empty(1, dtype=np.int64)
    >>> pack_values(np.array([-1]), np.array([-2]), np.array([9]), out); int(out[0]) >> PACK_DTZ_SHIFT
    9
    """
    for u in range(wdl.shape[0]):
        out[u] = (wdl[u] + 1) | ((category[u] + 2) << PACK_CATEGORY_SHIFT) | (dtz[u] << PACK_DTZ_SHIFT)


@njit(cache=True)
def successor_boards(bm, bk, wm, wk, parents, moves_at, out):
    """The bitboards (White to move) of successors given by their parent and the place of their
    move in :func:`generate_moves`' list (as :func:`quiet_successors` met them): rows of ``out``."""
    moves = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    last = -1
    for j in range(parents.shape[0]):
        i = parents[j]
        if i != last:
            generate_moves(bm[i], bk[i], wm[i], wk[i], BLACK_TO_MOVE, moves)
            last = i
        m = moves_at[j]
        out[j, 0], out[j, 1], out[j, 2], out[j, 3] = moves[m, M_BM], moves[m, M_BK], moves[m, M_WM], moves[m, M_WK]


@njit(cache=True)
def check_positions(cap, wdl, category, dtz, offsets, slot, zeroing, packed, limit, signs, rules, stored_dtz, flags,
                    found_dtz):
    """Flags (FLAG_*) of every position of a chunk: a quiet one's stored ``wdl`` against the best
    over its successors (no move: a loss), and with ``rules`` its ``category`` and, at a win or
    loss with ``stored_dtz`` (not where it is derived from them), ``dtz`` against those its
    successors give (the fastest win, the slowest loss, a zeroing move counting 1 ply; a cursed
    win's or blessed loss's DTZ is not stored: past the limit is all that counts of it,
    :func:`egtb.probe.derived_dtz.add_move`), and its category's win or loss side against its WDL; a
    position that must capture is not stored and not checked. Successor s of the chunk has the
    values ``packed[slot[s]]`` (:func:`pack_values`). With ``rules``, ``found_dtz`` gets the DTZ the
    successors give each quiet win or loss (0 elsewhere): a derived side's own (what its mirror's
    check reads, :mod:`egtb.builder.verify_derived`). Returns how many positions are flagged."""
    bad = 0
    for i in range(wdl.shape[0]):
        f = 0
        if rules:
            found_dtz[i] = 0
        if not cap[i]:  # a position that must capture is not stored: nothing to check
            if signs and np.sign(category[i]) != wdl[i]:
                f |= FLAG_SIGN
            best = WDL_LOSS
            fastest_win = NO_WIN
            longest_loss = 0
            draws = 0
            for k in range(offsets[i], offsets[i + 1]):
                v = packed[slot[k]]
                best = max(best, 1 - (v & 3))
                if not rules:
                    continue
                fastest_win, longest_loss, draws = add_move(fastest_win, longest_loss, draws,
                                                            ((v >> PACK_CATEGORY_SHIFT) & 7) - 2,
                                                            v >> PACK_DTZ_SHIFT, zeroing[k], limit)
            if best != wdl[i]:
                f |= FLAG_WDL
            if rules:
                want_category, want_dtz = rule_outcome(fastest_win, longest_loss, draws, limit)
                if want_category == CAT_WIN or want_category == CAT_LOSS:
                    found_dtz[i] = want_dtz
                if want_category != category[i]:
                    f |= FLAG_CATEGORY
                elif stored_dtz and (want_category == CAT_WIN or want_category == CAT_LOSS) and want_dtz != dtz[i]:
                    f |= FLAG_DTZ
        flags[i] = f
        if f:
            bad += 1
    return bad


def successor_ranks(material: Material) -> tuple[np.ndarray, list[int], int]:
    """(rank by material code, the codes in rank order, index bits) of the tables a material's
    quiet moves reach: its mirror (Black's move hands the move to White) and the mirrors of its
    crownings.

    >>> from egtb.positions.index import material_of_code
    >>> [material_of_code(code).name for code in successor_ranks(Material.parse("1m-2k"))[1]]
    ['2k-1m', '2k-1k']
    """
    reached = [Material(material.white_men, material.white_kings, material.black_men, material.black_kings)]
    if material.black_men:
        reached.append(Material(material.white_men, material.white_kings, material.black_men - 1,
                                material.black_kings + 1))
    codes = [code_of_material(m) for m in reached]
    rank = np.zeros(NUM_CODES, dtype=np.int64)
    rank[codes] = np.arange(len(codes))
    return rank, codes, max(count_positions(m) for m in reached).bit_length()


@njit(cache=True)
def block_firsts(starts, n_blocks, indices, out):
    """The first of ascending ``indices`` in each block they reach (``starts``: the blocks' first
    positions) into ``out``; returns how many.

    >>> out = np.empty(4, dtype=np.int64)
    >>> block_firsts(np.array([0, 10, 20, 30]), 3, np.array([1, 4, 12, 25, 29]), out), out[:3].tolist()
    (3, [1, 12, 25])
    """
    k = 0
    end = np.int64(-1)  # the end of the block of the last index kept
    for i in range(indices.shape[0]):
        if indices[i] >= end:
            out[k] = indices[i]
            k += 1
            end = starts[block_of(starts, n_blocks, indices[i]) + 1]
    return k


def read_ascending(table: CompactTable, indices: np.ndarray, value_of: np.ndarray) -> np.ndarray:
    """Values of ``table`` (``value_of`` each stored code) at ascending ``indices`` (int64),
    every block they reach checked first (its CRC-32 and marks: TableError names a damaged one)."""
    out = np.empty(len(indices), dtype=np.int64)
    if not len(indices):
        return out
    firsts = np.empty(min(len(indices), table.n_blocks), dtype=np.int64)
    table.load_blocks(firsts[:block_firsts(table.starts, table.n_blocks, indices, firsts)])
    status = np.zeros(2, dtype=np.int64)
    first = 0
    while True:
        lookup_ascending(table.lookup.ctypes.data, indices, first, value_of, out, status)
        if status[0] < 0:
            return out
        first = int(status[0])  # a block's marks left the cache meanwhile: made again
        table.load_block(int(status[1]))
