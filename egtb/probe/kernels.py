"""The prober's numba kernels over master tables: batch gathers, and the rule layers' lookups.

A kernel reads many tables through one table of addresses by material code
(:mod:`egtb.formats.pointers`); the caller keeps the arrays alive. Positions
come located (:mod:`egtb.probe.locate`).

>>> terminal_rule(CODE_NO_PIECES, 0, 0, 1, 0, 0)     # Black to move has no pieces: lost
(-2, 0)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.formats import master
from egtb.formats.compact.codec import L_EXCEPTION_COUNT, L_EXCEPTIONS, L_THREATS, lookup_value, refined
from egtb.formats.pointers import int64_ptr, int8_ptr, uint16_ptr, uint8_ptr
from egtb.formats.values import (CAT_DRAW, CAT_LOSS, CAT_WIN, CATEGORY_OF_CODE, DRAW, INVALID_WDL, LOSS, NO_DTW,
                                 WDL_DRAW, WDL_LOSS, WDL_OF_CODE, WDL_WIN, WIN)
from egtb.probe.derived_dtz import NO_WIN, add_move, rule_outcome
from egtb.probe.locate import CODE_INVALID, CODE_NO_OPPONENT, CODE_NO_PIECES, has_moves, locate
from egtb.rules.captures import CAPTURE_ROWS, MAX_JUMPS, has_capture
from egtb.rules.movegen import M_BK, M_BM, M_CROWNS, M_MAN, M_WK, M_WM, MAX_MOVES, MOVE_WIDTH, generate_moves
from egtb.rules.perft import CH_OK, CH_OM, CH_PK, CH_PM, MAX_CHILDREN, child_positions
from egtb.rules.threats import threat_left_out

__all__ = [
    "NO_DTW", "gather", "gather_distance", "gather_rule", "fill_terminal", "fill_terminal_rule", "outcome_at",
    "probe_rule_one",
    "probe_value_one",
    "search_one",
    "terminal_rule",
    "threat_category",
]

#: A position's block is its index >> BLOCK_SHIFT, its place in it index & BLOCK_MASK
#: (:data:`egtb.formats.master.BLOCK_POSITIONS` positions a block).
BLOCK_SHIFT = master.BLOCK_POSITIONS.bit_length() - 1
BLOCK_MASK = master.BLOCK_POSITIONS - 1
#: WDL of each stored code, category of each compact category code: constants of the kernels.
_WDL_OF_CODE = WDL_OF_CODE.copy()
_CATEGORY_OF_CODE = CATEGORY_OF_CODE.copy()
#: Columns of a lookup row of a layer (of a table's values for :func:`probe_value_one`) (one row per
#: material code, zero while not loaded): its length, the addresses of its block maps of values
#: (categories) and of distances (DTZ) with their width; for a compact file (capture positions
#: left out), the address of its lookup descriptor (:attr:`egtb.formats.compact.CompactTable.lookup`)
#: instead of the values' block map, the layer's largest DTZ (-1: unknown) and the lookup
#: descriptor of its compact DTZ file (0: none).
COL_SIZE, COL_CATEGORY_AT, COL_DTZ_AT, COL_DTZ_WIDE, COL_CODED_AT, COL_MAX_DTZ, COL_DTZ_CODED_AT = range(7)
#: A compact category file whose DTZ is derived from its moves (:mod:`egtb.probe.derived_dtz`):
#: 0 no, else DERIVED or DERIVED_MAN_RESETS (its rule's man moves zero the counter).
COL_DERIVED = 7
ROW_WIDTH = 8
DERIVED, DERIVED_MAN_RESETS = 1, 2
#: Status of :func:`probe_rule_one`.
STATUS_OK = 0  #: found (or a terminal position)
STATUS_NOT_LOADED = 1  #: the material's table (or its layer) is not loaded
STATUS_INVALID = 2  #: not a position any table could hold
STATUS_OUT_OF_RANGE = 3  #: the index fell outside the loaded layer
STATUS_MUST_CAPTURE = 4  #: its side to move must capture and its compact file leaves it out (a leaf's answer)
STATUS_THREAT = 5  #: a threat position its compact file leaves out (:mod:`egtb.rules.threats`; a leaf's answer)

#: What :func:`_table_index` gives for a position no table holds (a negative code:
#: one side has no pieces) and for one past the end of its table.
NO_TABLE = -1
PAST_END = -2


@njit(cache=True, inline="always")
def _table_index(codes, indices, sizes, i):
    """Index of located position i in its table (``sizes`` by material code), or NO_TABLE / PAST_END."""
    code = codes[i]
    if code < 0:
        return NO_TABLE
    if indices[i] >= sizes[code]:
        return PAST_END
    return indices[i]


@njit(cache=True, inline="always")
def block_address(maps_at, index):
    """Address of the block holding ``index`` in a block map (int64 addresses, 0: not in memory)."""
    return int64_ptr(maps_at)[index >> BLOCK_SHIFT]


@njit(cache=True)
def gather(codes, indices, first, sizes, wdl_at, dtw_at, dtw_wide, wdl_of_code, out_wdl, out_dtw):
    """Values of located positions (codes, indices) from ``first`` on; return (stop, bad).

    For a material code c, ``sizes[c]`` is its table's length, ``wdl_at[c]``
    the address of its block map of value codes (uint8 blocks) and
    ``dtw_at[c]`` that of its DTW (uint16 when ``dtw_wide[c]``, else uint8;
    address 0: the file holds no DTW, NO_DTW is written, for draws too); the caller keeps the
    arrays alive. ``stop`` is the first position whose block is not in memory
    (the caller reads it and calls again from there), or the number of
    positions; ``bad`` counts those that fell outside their table. Draws get
    DTW 0. A tight loop apart from :func:`locate_batch`, so that many random
    table reads are in flight at once.
    """
    bad = 0
    for i in range(first, codes.shape[0]):
        index = _table_index(codes, indices, sizes, i)
        if index < 0:
            if index == PAST_END:
                out_wdl[i] = INVALID_WDL
                bad += 1
            continue
        code = codes[i]
        values = block_address(wdl_at[code], index)
        if values == 0:
            return i, bad
        place = index & BLOCK_MASK
        value = wdl_of_code[uint8_ptr(values)[place]]
        out_wdl[i] = value
        if dtw_at[code] == 0:
            out_dtw[i] = NO_DTW
        elif value == WDL_DRAW:
            out_dtw[i] = 0
        elif dtw_wide[code]:
            out_dtw[i] = uint16_ptr(block_address(dtw_at[code], index))[place]
        else:
            out_dtw[i] = uint8_ptr(block_address(dtw_at[code], index))[place]
    return codes.shape[0], bad


@njit(cache=True)
def fill_terminal(bm, bk, wm, wk, turn, codes, out_wdl, out_dtw):
    """Values of the positions that need no table (one side without pieces)."""
    for i in range(codes.shape[0]):
        if codes[i] == CODE_NO_PIECES:
            out_wdl[i], out_dtw[i] = WDL_LOSS, 0
        elif codes[i] == CODE_NO_OPPONENT:
            if has_moves(bm[i], bk[i], wm[i], wk[i], turn[i]):
                out_wdl[i], out_dtw[i] = WDL_WIN, 1
            else:
                out_wdl[i], out_dtw[i] = WDL_LOSS, 0


# ------------------------------------------------------------------ rule kernels

@njit(cache=True, inline="always")
def outcome_at(category, dtz, counter, limit):
    """WDL under the rule from ``counter``: the category's win or loss if DTZ fits, else a draw.

    >>> outcome_at(2, 30, 50, 80), outcome_at(2, 30, 51, 80), outcome_at(-2, 0, 80, 80)
    (1, 0, -1)
    """
    if dtz + counter > limit:
        return WDL_DRAW
    if category == CAT_WIN:
        return WDL_WIN
    if category == CAT_LOSS:
        return WDL_LOSS
    return WDL_DRAW


@njit(cache=True)
def terminal_rule(code, bm, bk, wm, wk, turn):
    """(category, dtz) of a position that needs no table (see :func:`locate`'s codes)."""
    if code == CODE_NO_OPPONENT and has_moves(bm, bk, wm, wk, turn):
        return CAT_WIN, 1  # any move ends the game: the opponent has nothing to move
    return CAT_LOSS, 0


@njit(cache=True, inline="always")
def _read_layer(row, index):
    """(category, dtz, found) at ``index`` of the layer a lookup row points to (a draw's DTZ is 0,
    not read); found is False when the block is not in memory."""
    categories = block_address(row[COL_CATEGORY_AT], index)
    if categories == 0:
        return np.int64(0), np.int64(0), False
    place = index & BLOCK_MASK
    category = np.int64(int8_ptr(categories)[place])
    if category == CAT_DRAW:
        return category, np.int64(0), True
    if row[COL_DTZ_WIDE]:
        return category, np.int64(uint16_ptr(block_address(row[COL_DTZ_AT], index))[place]), True
    return category, np.int64(uint8_ptr(block_address(row[COL_DTZ_AT], index))[place]), True


@njit(cache=True)
def probe_rule_one(bm, bk, wm, wk, turn, counter, limit, rows_at):
    """(status, outcome, category, dtz, code) of one position under a rule from ``counter``.

    ``rows_at`` is the address of the (NUM_CODES, ROW_WIDTH) int64 lookup rows
    of the loaded layers (columns COL_*: the addresses of their block maps; a
    zero address, or a block not in memory: status STATUS_NOT_LOADED with
    ``code`` for the caller to load it and ask again). A compact category file's
    row answers the DTZ -1 where it was not read (see :func:`_probe_coded_rule`).
    All arguments are integers, so that a call from Python costs the least.
    """
    code, index = locate(bm, bk, wm, wk, turn)
    if code == CODE_INVALID:
        return STATUS_INVALID, 0, 0, 0, code
    if code < 0:
        category, dtz = terminal_rule(code, bm, bk, wm, wk, turn)
    else:
        row = int64_ptr(rows_at + code * ROW_WIDTH * 8)
        if row[COL_CODED_AT] != 0:
            return _probe_coded_rule(bm, bk, wm, wk, turn, counter, limit, row, code, index, rows_at)
        if row[COL_CATEGORY_AT] == 0:
            return STATUS_NOT_LOADED, 0, 0, 0, code
        if index >= row[COL_SIZE]:
            return STATUS_OUT_OF_RANGE, 0, 0, 0, code
        category, dtz, found = _read_layer(row, index)
        if not found:
            return STATUS_NOT_LOADED, 0, 0, 0, code
    return STATUS_OK, outcome_at(category, dtz, counter, limit), category, dtz, code


@njit(cache=True)
def _stored_code(bm, bk, wm, wk, turn, row, index):
    """(status, stored code) of a position in a compact file's lookup row: STATUS_OUT_OF_RANGE
    past the table's size, STATUS_MUST_CAPTURE when the side to move must capture (the file
    leaves it out: a search gives it), STATUS_THREAT when the file leaves it out as a threat
    position (a search one move deep gives it), STATUS_NOT_LOADED when the block's marks are not in
    memory, else STATUS_OK and the code (that of a category file coded as exceptions with its
    exceptions applied: :func:`egtb.formats.compact.codec.refined`)."""
    if index >= row[COL_SIZE]:
        return STATUS_OUT_OF_RANGE, np.int64(0)
    if has_capture(bm, bk, wm, wk, turn):
        return STATUS_MUST_CAPTURE, np.int64(0)
    if int64_ptr(row[COL_CODED_AT])[L_THREATS] and threat_left_out(bm, bk, wm, wk, turn):
        return STATUS_THREAT, np.int64(0)
    stored = np.int64(lookup_value(row[COL_CODED_AT], index))
    if stored < 0:
        return STATUS_NOT_LOADED, np.int64(0)
    return STATUS_OK, stored


@njit(cache=True, inline="always")
def _coded_category(bm, bk, wm, wk, turn, row, index, rows_at):
    """(status, category at counter 0, whether the side to move must capture) of a position of a
    compact category file's lookup row: from the capture search (:func:`search_one`) where the side
    to move must capture or the file leaves it out as a threat position, else the stored code;
    STATUS_NOT_LOADED when the search could not read a successor."""
    status, stored = _stored_code(bm, bk, wm, wk, turn, row, index)
    if status == STATUS_MUST_CAPTURE or status == STATUS_THREAT:
        found, best = search_one(bm, bk, wm, wk, turn, rows_at, np.int64(CAT_WIN))
        if found != STATUS_OK:
            return STATUS_NOT_LOADED, np.int64(0), False
        if status == STATUS_MUST_CAPTURE:
            return STATUS_OK, best, True
        lookup = int64_ptr(row[COL_CODED_AT])
        return STATUS_OK, threat_category(best, index, lookup[L_EXCEPTIONS], lookup[L_EXCEPTION_COUNT]), False
    if status != STATUS_OK:
        return status, np.int64(0), False
    return STATUS_OK, np.int64(_CATEGORY_OF_CODE[stored]), False


@njit(cache=True, inline="always")
def _stored_dtz(row, index):
    """(status, DTZ) of a quiet win or loss of a layer's lookup row: from its compact DTZ file, else
    the master's DTZ block map; STATUS_NOT_LOADED when neither is in memory (or the row's DTZ is
    derived: :func:`_derived_dtz`)."""
    if row[COL_DTZ_CODED_AT] != 0:
        stored = np.int64(lookup_value(row[COL_DTZ_CODED_AT], index))
        if stored < 0:
            return STATUS_NOT_LOADED, np.int64(0)
        return STATUS_OK, stored - 1
    if row[COL_DTZ_AT] == 0:
        return STATUS_NOT_LOADED, np.int64(0)
    distances = block_address(row[COL_DTZ_AT], index)
    if distances == 0:
        return STATUS_NOT_LOADED, np.int64(0)
    if row[COL_DTZ_WIDE]:
        return STATUS_OK, np.int64(uint16_ptr(distances)[index & BLOCK_MASK])
    return STATUS_OK, np.int64(uint8_ptr(distances)[index & BLOCK_MASK])


@njit(cache=True, inline="always")
def _probe_coded_rule(bm, bk, wm, wk, turn, counter, limit, row, code, index, rows_at):
    """:func:`probe_rule_one` from a compact category file: the category at counter 0, and the
    DTZ (from its compact DTZ file, else the master's DTZ block map, else derived from its moves:
    :func:`_derived_dtz`) only when the outcome needs it (-1 when not read); where the side to
    move must capture, the category from the capture search (:func:`search_one`) and the DTZ 1 of
    a win or loss (the capture zeroes the counter); STATUS_NOT_LOADED when a block (or its marks)
    is not in memory, a table the search needs is not loaded or a needed DTZ has no file."""
    status, category, capture = _coded_category(bm, bk, wm, wk, turn, row, index, rows_at)
    if status != STATUS_OK:
        return status, 0, 0, 0, code
    decisive = category == CAT_WIN or category == CAT_LOSS
    if capture:
        if decisive:
            return STATUS_OK, outcome_at(category, 1, counter, limit), category, 1, code
        return STATUS_OK, WDL_DRAW, category, 0 if category == CAT_DRAW else -1, code
    if not decisive:
        return STATUS_OK, WDL_DRAW, category, -1, code
    if counter == 0 or (row[COL_MAX_DTZ] >= 0 and counter + row[COL_MAX_DTZ] <= limit):
        return STATUS_OK, (WDL_WIN if category == CAT_WIN else WDL_LOSS), category, -1, code
    if row[COL_DERIVED]:
        status, derived, dtz = _derived_dtz(bm, bk, wm, wk, turn, limit, row[COL_DERIVED] == DERIVED_MAN_RESETS,
                                            rows_at)
        if derived != category:  # files that disagree: the caller's derivation names them
            status = STATUS_NOT_LOADED
    else:
        status, dtz = _stored_dtz(row, index)
    if status != STATUS_OK:
        return STATUS_NOT_LOADED, 0, 0, 0, code
    return STATUS_OK, outcome_at(category, dtz, counter, limit), category, dtz, code


@njit(cache=True)
def _derived_dtz(bm, bk, wm, wk, turn, limit, man_resets, rows_at):
    """(status, category, DTZ) of a quiet position from its moves (:mod:`egtb.probe.derived_dtz`):
    each position after a move read through ``rows_at`` (its category at counter 0 and, after a
    move that does not zero the counter, the DTZ of a win or loss, stored: the mirror's file);
    STATUS_NOT_LOADED when one is not in memory or has no DTZ (the caller derives in Python)."""
    moves = np.empty((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    n = generate_moves(bm, bk, wm, wk, turn, moves)
    fastest_win, longest_loss, draws = NO_WIN, 0, 0
    cturn = 1 - turn
    for m in range(n):
        cbm, cbk, cwm, cwk = moves[m, M_BM], moves[m, M_BK], moves[m, M_WM], moves[m, M_WK]
        zeroing = moves[m, M_CROWNS] != 0 or (man_resets and moves[m, M_MAN] != 0)
        ccode, cindex = locate(cbm, cbk, cwm, cwk, cturn)
        if ccode == CODE_INVALID:
            return STATUS_NOT_LOADED, np.int64(0), np.int64(0)
        if ccode < 0:
            category, dtz = terminal_rule(ccode, cbm, cbk, cwm, cwk, cturn)
        else:
            crow = int64_ptr(rows_at + ccode * ROW_WIDTH * 8)
            capture = False
            if crow[COL_CODED_AT] != 0:
                status, category, capture = _coded_category(cbm, cbk, cwm, cwk, cturn, crow, cindex, rows_at)
                dtz = np.int64(1)
            elif crow[COL_CATEGORY_AT] != 0 and cindex < crow[COL_SIZE]:
                category, dtz, found = _read_layer(crow, cindex)
                status = STATUS_OK if found else STATUS_NOT_LOADED
            else:
                status = STATUS_NOT_LOADED
            if status != STATUS_OK:
                return STATUS_NOT_LOADED, np.int64(0), np.int64(0)
            decisive = category == CAT_WIN or category == CAT_LOSS
            if crow[COL_CODED_AT] != 0 and not capture and not zeroing and decisive:
                status, dtz = _stored_dtz(crow, cindex)
                if status != STATUS_OK:
                    return STATUS_NOT_LOADED, np.int64(0), np.int64(0)
        fastest_win, longest_loss, draws = add_move(fastest_win, longest_loss, draws, category, dtz, zeroing, limit)
    category, dtz = rule_outcome(fastest_win, longest_loss, draws, limit)
    return STATUS_OK, np.int64(category), np.int64(dtz)


@njit(cache=True)
def probe_value_one(bm, bk, wm, wk, turn, rows_at):
    """(status, wdl, dtw, code) of one position without the rule, as :func:`probe_rule_one`.

    ``rows_at`` addresses the lookup rows of the tables' values (COL_* columns:
    length, block maps of the value codes and of the DTW, 0 when the file holds
    no DTW: ``dtw`` is then -1, for draws too; or a compact file's lookup descriptor:
    ``dtw`` -1). A WDL of INVALID_WDL is an unsolved position.
    """
    code, index = locate(bm, bk, wm, wk, turn)
    if code == CODE_INVALID:
        return STATUS_INVALID, 0, 0, code
    if code == CODE_NO_PIECES:
        return STATUS_OK, WDL_LOSS, 0, code
    if code == CODE_NO_OPPONENT:
        if has_moves(bm, bk, wm, wk, turn):
            return STATUS_OK, WDL_WIN, 1, code
        return STATUS_OK, WDL_LOSS, 0, code
    row = int64_ptr(rows_at + code * ROW_WIDTH * 8)
    if row[COL_CODED_AT] != 0:  # a compact file: no DTW (-1); a capture position searched (:func:`search_one`)
        status, stored = _stored_code(bm, bk, wm, wk, turn, row, index)
        if status == STATUS_MUST_CAPTURE or status == STATUS_THREAT:
            status, value = search_one(bm, bk, wm, wk, turn, rows_at, np.int64(WDL_WIN))
            if status != STATUS_OK:
                return STATUS_NOT_LOADED, 0, 0, code
            return STATUS_OK, value, -1, code
        if status != STATUS_OK:
            return status, 0, 0, code
        return STATUS_OK, np.int64(_WDL_OF_CODE[stored]), -1, code
    if row[COL_CATEGORY_AT] == 0:
        return STATUS_NOT_LOADED, 0, 0, code
    if index >= row[COL_SIZE]:
        return STATUS_OUT_OF_RANGE, 0, 0, code
    values = block_address(row[COL_CATEGORY_AT], index)
    if values == 0:
        return STATUS_NOT_LOADED, 0, 0, code
    place = index & BLOCK_MASK
    value = np.int64(_WDL_OF_CODE[uint8_ptr(values)[place]])
    if row[COL_DTZ_AT] == 0:
        return STATUS_OK, value, -1, code
    if value == WDL_DRAW:
        return STATUS_OK, value, 0, code
    if row[COL_DTZ_WIDE]:
        return STATUS_OK, value, np.int64(uint16_ptr(block_address(row[COL_DTZ_AT], index))[place]), code
    return STATUS_OK, value, np.int64(uint8_ptr(block_address(row[COL_DTZ_AT], index))[place]), code


@njit(cache=True)
def gather_rule(codes, indices, first, rows, counters, limit, out_outcome, out_category, out_dtz):
    """Rule values of located positions from ``first`` on; return (stop, bad) as :func:`gather`.

    Terminal positions (negative codes) are left for :func:`fill_terminal_rule`.
    """
    sizes = rows[:, COL_SIZE]
    bad = 0
    for i in range(first, codes.shape[0]):
        index = _table_index(codes, indices, sizes, i)
        if index < 0:
            bad += 1 if index == PAST_END else 0
            continue
        category, dtz, found = _read_layer(rows[codes[i]], index)
        if not found:
            return i, bad
        out_category[i] = category
        out_dtz[i] = dtz
        out_outcome[i] = outcome_at(category, dtz, counters[i], limit)
    return codes.shape[0], bad


@njit(cache=True)
def gather_distance(codes, indices, first, rows, out):
    """Distances of located positions from ``first`` on, from block maps of distances alone
    (DTZ read without its categories); return (stop, bad) as :func:`gather`.

    A row (by material code) gives COL_SIZE, COL_DTZ_AT (the block map's
    address) and COL_DTZ_WIDE; the caller asks only for positions whose
    distance it needs (not draws: their stored distance is meaningless).
    """
    bad = 0
    sizes = rows[:, COL_SIZE]
    for i in range(first, codes.shape[0]):
        index = _table_index(codes, indices, sizes, i)
        if index == PAST_END:
            bad += 1
        elif index >= 0:
            distances = block_address(rows[codes[i], COL_DTZ_AT], index)
            if distances == 0:
                return i, bad
            if rows[codes[i], COL_DTZ_WIDE]:
                out[i] = uint16_ptr(distances)[index & BLOCK_MASK]
            else:
                out[i] = uint8_ptr(distances)[index & BLOCK_MASK]
    return codes.shape[0], bad


@njit(cache=True)
def fill_terminal_rule(bm, bk, wm, wk, turn, codes, counters, limit, out_outcome, out_category, out_dtz):
    """Rule values of the positions that need no table (one side without pieces)."""
    for i in range(codes.shape[0]):
        if codes[i] < 0:
            category, dtz = terminal_rule(codes[i], bm[i], bk[i], wm[i], wk[i], turn[i])
            out_category[i] = category
            out_dtz[i] = dtz
            out_outcome[i] = outcome_at(category, dtz, counters[i], limit)


# ------------------------------------------------------------------ the capture search of single probes

#: Levels of a capture search's stack (each level of captures removes a piece; a threat
#: position's level is followed by captures).
MAX_SEARCH_DEPTH = 25
#: Columns of a search level: its children, the next child to probe, the best value so far;
#: for a threat position's level (:func:`mark_threat`) 1 in S_THREAT, its index and its file's
#: exceptions (address, count), from which its category is found when the level closes.
S_MOVES, S_NEXT, S_BEST, S_THREAT, S_INDEX, S_EXCEPTIONS, S_EXCEPTION_COUNT = range(7)
LEVEL_WIDTH = 7


@njit(cache=True)
def _leaf(bm, bk, wm, wk, turn, rows_at, top):
    """(status, value, lookup, index) of a position as its table stores it, for :func:`search_one`:
    its WDL (``top`` 1; its category at counter 0 with ``top`` 2, ``rows_at`` then a layer's rows);
    STATUS_MUST_CAPTURE or STATUS_THREAT where its compact file leaves it out (then the file's
    lookup descriptor and the index, for :func:`mark_threat`), another status where the kernel
    cannot read it (not loaded, out of range, invalid)."""
    none = np.int64(0)
    code, index = locate(bm, bk, wm, wk, turn)
    if code == CODE_INVALID:
        return STATUS_INVALID, none, none, none
    if code < 0:
        if code == CODE_NO_OPPONENT and has_moves(bm, bk, wm, wk, turn):
            return STATUS_OK, top, none, none
        return STATUS_OK, -top, none, none
    row = int64_ptr(rows_at + code * ROW_WIDTH * 8)
    if row[COL_CODED_AT] != 0:
        status, stored = _stored_code(bm, bk, wm, wk, turn, row, index)
        if status != STATUS_OK:
            return status, none, row[COL_CODED_AT], index
        if top == CAT_WIN:
            return STATUS_OK, np.int64(_CATEGORY_OF_CODE[stored]), none, none
        return STATUS_OK, np.int64(_WDL_OF_CODE[stored]), none, none
    if row[COL_CATEGORY_AT] == 0:
        return STATUS_NOT_LOADED, none, none, none
    if index >= row[COL_SIZE]:
        return STATUS_OUT_OF_RANGE, none, none, none
    values = block_address(row[COL_CATEGORY_AT], index)
    if values == 0:
        return STATUS_NOT_LOADED, none, none, none
    if top == CAT_WIN:
        return STATUS_OK, np.int64(int8_ptr(values)[index & BLOCK_MASK]), none, none
    value = np.int64(_WDL_OF_CODE[uint8_ptr(values)[index & BLOCK_MASK]])
    if value == INVALID_WDL:  # an unsolved position: the caller's path names the table
        return STATUS_NOT_LOADED, none, none, none
    return STATUS_OK, value, none, none


@njit(cache=True, inline="always")
def absolute(pm, pk, om, ok, turn):
    """(bm, bk, wm, wk) of a side-relative position (the side to move's pieces first); the same
    swap turns an absolute position side-relative."""
    if turn == 0:
        return pm, pk, om, ok
    return om, ok, pm, pk


@njit(cache=True, inline="always")
def open_level(pm, pk, om, ok, turn, level, children, scratch, levels, top):
    """Put the captures of a side-relative position (``turn`` to move) on level ``level`` of a
    capture search: its children in rows level * MAX_CHILDREN.. of ``children``
    (:func:`child_positions`), none probed yet, the best value so far a loss."""
    levels[level, S_MOVES] = child_positions(pm, pk, om, ok, turn, children, level * MAX_CHILDREN, scratch)
    levels[level, S_NEXT] = 0
    levels[level, S_BEST] = -top
    levels[level, S_THREAT] = 0


@njit(cache=True, inline="always")
def mark_threat(levels, level, index, exceptions, count):
    """Mark level ``level`` as a threat position's (:mod:`egtb.rules.threats`): its best value is
    only its WDL's sign in a search of categories, so its category is looked up when it closes
    (:func:`threat_category`)."""
    levels[level, S_THREAT] = 1
    levels[level, S_INDEX] = index
    levels[level, S_EXCEPTIONS] = exceptions
    levels[level, S_EXCEPTION_COUNT] = count


@njit(cache=True)
def threat_category(best, index, exceptions, count):
    """Category at counter 0 of a threat position its WLD file leaves out, from ``best``, the best
    over its moves of minus the successors' categories: that has the sign of its WDL (a king
    move does not zero the counter, so the best is not its category), and the win or loss is a
    cursed win or blessed loss where its category file lists it (:func:`refined`).

    >>> none = np.zeros(1, dtype=np.int64)
    >>> int(threat_category(1, 0, none.ctypes.data, 0)), int(threat_category(-1, 0, none.ctypes.data, 0))
    (2, -2)
    """
    code = WIN if best > 0 else (DRAW if best == 0 else LOSS)
    return np.int64(_CATEGORY_OF_CODE[refined(code, index, exceptions, count)])


@njit(cache=True, inline="always")
def next_child(levels, level, top):
    """(level, row of ``children``) of the next successor a capture search probes, after closing
    the levels it has finished (all probed, or a winning capture found: each hands minus its best
    to the level above); (-1, the value) when the search is over."""
    while levels[level, S_NEXT] == levels[level, S_MOVES] or levels[level, S_BEST] == top:
        v = levels[level, S_BEST]
        if levels[level, S_THREAT] and top == CAT_WIN:
            v = threat_category(v, levels[level, S_INDEX], levels[level, S_EXCEPTIONS],
                                levels[level, S_EXCEPTION_COUNT])
        if level == 0:
            return np.int64(-1), v
        level -= 1
        levels[level, S_BEST] = max(levels[level, S_BEST], -v)
    row = level * MAX_CHILDREN + levels[level, S_NEXT]
    levels[level, S_NEXT] += 1
    return np.int64(level), row


@njit(cache=True)
def search_one(bm, bk, wm, wk, turn, rows_at, top):
    """(status, value) of one position whose side to move must capture: the best over its
    captures of minus the successor's value, depth-first on an explicit stack (a level stops at
    its first winning capture), the successors read through ``rows_at`` (:func:`_leaf`), those
    that must capture searched the same way. ``top`` is 1 for WDL, 2 (CAT_WIN) for categories at
    counter 0 (a capture resets the counter, so categories negate like WDL values), an int64 (a
    constant would be a literal type, and numba compiles the search and :func:`_leaf` once for
    each: 11 CPU s instead of 6). STATUS_OK, or
    the status of the first successor the kernel could not read (the caller searches in Python,
    loading what is missing)."""
    children = np.empty((MAX_SEARCH_DEPTH * MAX_CHILDREN, 4), dtype=np.int64)
    scratch = np.empty((CAPTURE_ROWS + MAX_JUMPS + 1, 4), dtype=np.int64)
    levels = np.empty((MAX_SEARCH_DEPTH, LEVEL_WIDTH), dtype=np.int64)
    pm, pk, om, ok = absolute(bm, bk, wm, wk, turn)  # the same swap turns it side-relative
    open_level(pm, pk, om, ok, turn, 0, children, scratch, levels, top)
    level = np.int64(0)
    while True:
        level, row = next_child(levels, level, top)
        if level < 0:
            return STATUS_OK, row
        cturn = (turn + level + 1) & 1
        pm, pk, om, ok = children[row, CH_PM], children[row, CH_PK], children[row, CH_OM], children[row, CH_OK]
        cbm, cbk, cwm, cwk = absolute(pm, pk, om, ok, cturn)
        status, v, lookup, index = _leaf(cbm, cbk, cwm, cwk, cturn, rows_at, top)
        if status == STATUS_OK:
            levels[level, S_BEST] = max(levels[level, S_BEST], -v)
        elif (status != STATUS_MUST_CAPTURE and status != STATUS_THREAT) or level + 1 == MAX_SEARCH_DEPTH:
            return status, np.int64(0)
        else:
            level += 1
            open_level(pm, pk, om, ok, cturn, level, children, scratch, levels, top)
            if status == STATUS_THREAT:
                desc = int64_ptr(lookup)
                mark_threat(levels, level, index, desc[L_EXCEPTIONS], desc[L_EXCEPTION_COUNT])
