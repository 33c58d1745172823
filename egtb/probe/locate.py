"""Where a position lives: its material code and index after colour normalisation (numba kernels).

Every prober path starts here: a position with White to move is mirrored, its
material picks the table (:func:`egtb.positions.index.material_code`) and
:func:`egtb.positions.index.position_index` its place in it. Positions no
table holds get a negative code.

>>> locate(1, 0, 0, 0, 1)     # White to move without pieces
(-2, 0)
>>> locate(1, 0, 1, 0, 0)     # two pieces on one square
(-1, 0)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.positions.index import (BINOM, MASK32, material_code, popcount, position_index, rank_men, rank_subset,
                                  unit_size)
from egtb.positions.material import mirror_bb
from egtb.rules.captures import has_capture
from egtb.rules.movegen import count_simple_moves
from egtb.rules.squares import ALL_SQUARES, BLACK_MEN_SQUARES, MAX_PER_SIDE, WHITE_MEN_SQUARES

__all__ = [
    "CODE_INVALID", "CODE_NO_OPPONENT", "CODE_NO_PIECES", "has_moves", "king_step_frame", "king_step_index", "locate",
    "locate_all", "locate_batch", "locate_capture", "locate_valid",
]

#: Special codes of :func:`locate` for positions no table holds.
CODE_INVALID = -1  #: overlapping pieces, men on their crowning row, > 12 a side, bad turn
CODE_NO_PIECES = -2  #: the side to move has no pieces: lost, DTW 0
CODE_NO_OPPONENT = -3  #: only the side to move has pieces (the opponent already lost)


@njit(cache=True)
def locate(bm, bk, wm, wk, turn):
    """(material code, index) of a position after colour normalisation.

    The code is CODE_INVALID, CODE_NO_PIECES or CODE_NO_OPPONENT (index 0)
    for positions no table holds.
    """
    bm, bk, wm, wk = np.int64(bm), np.int64(bk), np.int64(wm), np.int64(wk)
    if not _valid(bm, bk, wm, wk, turn):
        return CODE_INVALID, np.int64(0)
    return locate_valid(bm, bk, wm, wk, turn)


@njit(cache=True, inline="always")
def locate_valid(bm, bk, wm, wk, turn):
    """:func:`locate` of a position known to be valid (the batch kernels' positions)."""
    if turn == 1:
        bm, bk, wm, wk = (np.int64(mirror_bb(wm)), np.int64(mirror_bb(wk)),
                          np.int64(mirror_bb(bm)), np.int64(mirror_bb(bk)))
    n_bm, n_bk, n_wm, n_wk = popcount(bm), popcount(bk), popcount(wm), popcount(wk)
    if n_bm + n_bk == 0:
        return CODE_NO_PIECES, np.int64(0)
    if n_wm + n_wk == 0:
        return CODE_NO_OPPONENT, np.int64(0)
    return material_code(n_bm, n_bk, n_wm, n_wk), position_index(bm, bk, wm, wk)


@njit(cache=True, inline="always")
def king_step_frame(bm, bk, wm, wk):
    """What the positions after Black's king steps from a position (Black to move, both sides with
    pieces) share, located as :func:`locate_valid` locates them (White to move, mirrored): the men,
    so the material and the unit, and White's kings, ranked first. Returns (material code, the
    index less the moved kings' rank, the squares they are ranked among), for :func:`king_step_index`.

    >>> bm, bk, wm, wk = 0, 0b11, 1 << 20, 1 << 31   # kings on 1 and 2, a white man on 21 and king on 32
    >>> after = 0b100001                              # the king on 2 steps to 6
    >>> code, base, free = king_step_frame(bm, bk, wm, wk)
    >>> (code, king_step_index(base, free, after)) == locate_valid(bm, after, wm, wk, 1)
    True
    """
    sbm, sbk, swm = np.int64(mirror_bb(wm)), np.int64(mirror_bb(wk)), np.int64(mirror_bb(bm))
    n_bm, n_bk, n_wm, n_wk = popcount(sbm), popcount(sbk), popcount(swm), popcount(bk)
    free = ~(sbm | swm) & MASK32
    moved_free = free & ~sbk
    base = (rank_men(sbm, swm, n_bm, n_wm) * unit_size(n_bm, n_bk, n_wm, n_wk)
            + rank_subset(sbk, free) * BINOM[popcount(moved_free), n_wk])
    return material_code(n_bm, n_bk, n_wm, n_wk), base, moved_free


@njit(cache=True, inline="always")
def king_step_index(base, moved_free, bk_after):
    """The index of the position after a king step of Black, Black's kings then ``bk_after``, from
    its :func:`king_step_frame`."""
    return base + rank_subset(np.int64(mirror_bb(bk_after)), moved_free)


@njit(cache=True)
def locate_capture(bm, bk, wm, wk, turn):
    """:func:`locate` and whether the side to move must capture, in one call from Python."""
    code, index = locate(bm, bk, wm, wk, turn)
    return code, index, code >= 0 and has_capture(np.int64(bm), np.int64(bk), np.int64(wm),
                                                  np.int64(wk), turn)


@njit(cache=True, inline="always")
def _valid(bm, bk, wm, wk, turn):
    """Whether the bitboards form a position some table could hold."""
    if (bm | bk | wm | wk) & ~np.int64(ALL_SQUARES) or (turn != 0 and turn != 1):
        return False
    if bm & bk or bm & wm or bm & wk or bk & wm or bk & wk or wm & wk:
        return False
    if bm & ~np.int64(BLACK_MEN_SQUARES) or wm & ~np.int64(WHITE_MEN_SQUARES):
        return False
    return popcount(bm | bk) <= MAX_PER_SIDE and popcount(wm | wk) <= MAX_PER_SIDE


@njit(cache=True)
def has_moves(bm, bk, wm, wk, turn):
    """Whether the side to move has a legal move."""
    return count_simple_moves(bm, bk, wm, wk, turn) > 0 or has_capture(bm, bk, wm, wk, turn)


@njit(cache=True)
def locate_batch(bm, bk, wm, wk, turn, codes, indices, present):
    """Fill codes[i], indices[i] by :func:`locate` and mark present[code] of tabled ones.

    Returns the first invalid position, or -1 when all are valid.
    """
    for i in range(bm.shape[0]):
        code, index = locate(bm[i], bk[i], wm[i], wk[i], turn[i])
        if code == CODE_INVALID:
            return i
        codes[i] = code
        indices[i] = index
        if code >= 0:
            present[code] = True
    return -1


@njit(cache=True)
def locate_all(bm, bk, wm, wk, turn, codes, indices):
    """(material code, index) of every position of valid ones, as :func:`locate_valid` gives them."""
    for i in range(bm.shape[0]):
        codes[i], indices[i] = locate_valid(np.int64(bm[i]), np.int64(bk[i]), np.int64(wm[i]),
                                            np.int64(wk[i]), turn[i])

