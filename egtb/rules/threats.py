"""Threat positions: the side to move cannot capture, but its opponent could.

A compact WLD file may leave out, beside the capture positions, the threat
positions whose every move leads to a position that one capture search or
one stored value answers: one where the opponent must capture, or one without
a threat. Such a position is then answered by a search one move deep: the best
over its moves of minus the successor's value. Its successors are never left
out as threats themselves, so the search ends (captures shrink the material).
:func:`threat_left_out` tells which positions these are; the writer and every
reader of such a file ask it, so they agree.

>>> from egtb.rules.squares import bitboard_of
>>> bool(threat_left_out(0, bitboard_of([13]), 0, bitboard_of([9]), 1))   # White to move; Black 13 could jump 9
True
>>> bool(threat_left_out(0, bitboard_of([7]), 0, bitboard_of([2, 8]), 0))   # one move makes a threat of Black's
False
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.rules.bitboards import lowest_bit64
from egtb.rules.captures import has_capture
from egtb.rules.squares import ALL_SQUARES, BLACK_CROWN_ROW, NEIGHBOUR, WHITE_CROWN_ROW, direction_range

__all__ = ["threat_flags", "threat_left_out"]

_NEIGHBOUR = NEIGHBOUR.copy()


@njit(cache=True)
def threat_left_out(bm, bk, wm, wk, turn):
    """True when the side to move (``turn``: 0 Black, 1 White) has no capture, its opponent would
    have one, and every move leads to a position where the opponent must capture or where the side
    that moved could not capture (no threat there): a compact WLD file that leaves threats out
    holds no value for it.

    A side with no move at all is included (its loss is what the search gives).
    """
    if has_capture(bm, bk, wm, wk, turn) or not has_capture(bm, bk, wm, wk, 1 - turn):
        return False
    empty = ALL_SQUARES & ~(bm | bk | wm | wk)
    if turn == 0:
        men, kings, crown = bm, bk, BLACK_CROWN_ROW
    else:
        men, kings, crown = wm, wk, WHITE_CROWN_ROW
    pieces = men | kings
    while pieces:
        src = pieces & -pieces
        pieces ^= src
        frm = lowest_bit64(src)
        is_king = (kings & src) != 0
        d_lo, d_hi = direction_range(is_king, turn)
        for d in range(d_lo, d_hi):
            to = _NEIGHBOUR[frm, d]
            if to < 0 or not (empty >> to) & 1:
                continue
            dst = np.int64(1) << to
            if is_king:
                cmen, ckings = men, (kings & ~src) | dst
            elif dst & crown:
                cmen, ckings = men & ~src, kings | dst
            else:
                cmen, ckings = (men & ~src) | dst, kings
            if turn == 0:
                cbm, cbk, cwm, cwk = cmen, ckings, wm, wk
            else:
                cbm, cbk, cwm, cwk = bm, bk, cmen, ckings
            if not has_capture(cbm, cbk, cwm, cwk, 1 - turn) and has_capture(cbm, cbk, cwm, cwk, turn):
                return False
    return True


@njit(cache=True)
def threat_flags(bm, bk, wm, wk, turn, out):
    """:func:`threat_left_out` of each position of bitboard arrays (``turn`` to move), into ``out``;
    returns how many.

    >>> from egtb.rules.squares import bitboard_of
    >>> out = np.empty(2, dtype=np.bool_)
    >>> int(threat_flags(np.zeros(2, dtype=np.int64), np.array([bitboard_of([13]), bitboard_of([7])]),
    ...                  np.zeros(2, dtype=np.int64), np.array([bitboard_of([9]), bitboard_of([2, 8])]), 1, out))
    1
    """
    n = 0
    for i in range(bm.shape[0]):
        out[i] = threat_left_out(bm[i], bk[i], wm[i], wk[i], turn)
        n += out[i]
    return n
