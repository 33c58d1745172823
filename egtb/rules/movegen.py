"""Move generation kernels over 32-bit bitboards (numba).

A position in these kernels is five integers: ``bm, bk, wm, wk`` (bitboards of
black men, black kings, white men, white kings; square ``s`` is bit ``s - 1``)
and ``turn`` (0 = Black to move, 1 = White to move).

:func:`generate_moves` writes every legal move of a position into a row of an
``int64`` array of shape ``(MAX_MOVES, MOVE_WIDTH)``; the columns are named by
the ``M_*`` constants. Capture is compulsory, a multi-jump runs to its end, a
man that reaches the far row is crowned and stops, and two capture paths with
the same start, end and captured pieces are one move (the first path found is
kept for notation).

>>> import numpy as np
>>> from egtb.rules.movegen import START_BM, START_WM, generate_moves, new_move_buffer
>>> moves = new_move_buffer()
>>> generate_moves(START_BM, 0, START_WM, 0, 0, moves)
7
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.rules.bitboards import count_steps, lowest_bit64, popcount64
from egtb.rules.captures import (C_CAPTURED, C_FROM, C_NJUMPS, C_PATH, C_TO, CAPTURE_ROWS, CAPTURE_WIDTH, MAX_JUMPS,
                                 capture_paths, has_capture, jumping_pieces)
from egtb.rules.squares import (ALL_SQUARES, BLACK, BLACK_CROWN_ROW, NEIGHBOUR, START_BM, START_WM,
                                WHITE_CROWN_ROW, direction_range)

# has_capture (from the capture rules) and the start position's bitboards are re-exported:
# the move generator's users (the prober, the compact codec, the engines, the example above) take them from here.
__all__ = ["BLACK_TO_MOVE", "MAX_JUMPS", "MAX_MOVES", "MOVE_WIDTH", "M_BK", "M_BM", "M_CAPTURED", "M_CROWNS", "M_FROM",
           "M_MAN", "M_NJUMPS", "M_PATH", "M_TO", "M_WK", "M_WM", "START_BM", "START_WM", "count_moves",
           "count_simple_moves", "generate_moves", "has_capture", "new_move_buffer", "popcount"]

#: Most legal moves a position can have (12 kings x 4 steps is 48; capture
#: sequences of kings can branch further, so leave room).
MAX_MOVES = CAPTURE_ROWS

M_FROM = 0  #: bit index (0-31) of the moving piece's start square
M_TO = 1  #: bit index of its final square
M_CAPTURED = 2  #: bitboard of the captured pieces (0 for a simple move)
M_NJUMPS = 3  #: number of jumps (0 for a simple move)
M_BM = 4  #: resulting black men
M_BK = 5  #: resulting black kings
M_WM = 6  #: resulting white men
M_WK = 7  #: resulting white kings
M_CROWNS = 8  #: 1 when the move crowns a man
M_MAN = 9  #: 1 when the moving piece is a man (a crowning is a man move)
M_PATH = 10  #: first of MAX_JUMPS columns: bit indexes of the landing squares
MOVE_WIDTH = M_PATH + MAX_JUMPS

_NEIGHBOUR = NEIGHBOUR.copy()
#: ``turn`` for Black to move, as a kernel passes it to these kernels: an int64. A literal 0 is
#: a type of its own to numba, which compiles the callee (and all it calls) once more for it.
BLACK_TO_MOVE = np.int64(BLACK)


def new_move_buffer() -> np.ndarray:
    """An empty buffer for :func:`generate_moves`."""
    return np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)


@njit(cache=True, inline="always")
def popcount(x):
    """Number of set bits of a 32-bit bitboard (the CPU's popcount instruction)."""
    return popcount64(np.int64(x) & ALL_SQUARES)


@njit(cache=True, inline="always")
def _lowest_bit_index(x):
    # index of the lowest set bit of a non-zero 32-bit value
    return lowest_bit64(np.int64(x))


@njit(cache=True, inline="always")
def _sides(bm, bk, wm, wk, turn):
    """(own men, own kings, opponent pieces) for the side to move."""
    if turn == 0:
        return bm, bk, wm | wk
    return wm, wk, bm | bk


@njit(cache=True)
def count_simple_moves(bm, bk, wm, wk, turn):
    """Number of non-capturing moves (valid only when no capture exists)."""
    men, kings, _ = _sides(bm, bk, wm, wk, turn)
    return count_steps(men, kings, ALL_SQUARES & ~(bm | bk | wm | wk), turn)


@njit(cache=True, inline="always")
def _move_piece(men, kings, src, dst, is_king, crown):
    """(men, kings, 1 if it crowned else 0) of the mover's side after its piece went from src to dst."""
    if is_king:
        return men, (kings & ~src) | dst, 0
    if dst & crown:
        return men & ~src, kings | dst, 1
    return (men & ~src) | dst, kings, 0


@njit(cache=True, inline="always")
def _write_result(out, n, frm, to, captured, njumps, bm, bk, wm, wk, turn, is_king):
    """Fill row n of out with the move and the position it leads to."""
    src = np.int64(1) << frm
    dst = np.int64(1) << to
    if turn == 0:
        bm, bk, crowns = _move_piece(bm, bk, src, dst, is_king, BLACK_CROWN_ROW)
        wm, wk = wm & ~captured, wk & ~captured
    else:
        wm, wk, crowns = _move_piece(wm, wk, src, dst, is_king, WHITE_CROWN_ROW)
        bm, bk = bm & ~captured, bk & ~captured
    out[n, M_FROM] = frm
    out[n, M_TO] = to
    out[n, M_CAPTURED] = captured
    out[n, M_NJUMPS] = njumps
    out[n, M_BM] = bm
    out[n, M_BK] = bk
    out[n, M_WM] = wm
    out[n, M_WK] = wk
    out[n, M_CROWNS] = crowns
    out[n, M_MAN] = 0 if is_king else 1


@njit(cache=True)
def _write_captures(caps, n, bm, bk, wm, wk, turn, kings, out):
    """Fill rows 0..n-1 of out from the capture rows of caps (:func:`egtb.rules.captures.capture_paths`)."""
    for i in range(n):
        frm = lowest_bit64(caps[i, C_FROM])
        njumps = caps[i, C_NJUMPS]
        _write_result(out, i, frm, lowest_bit64(caps[i, C_TO]), caps[i, C_CAPTURED], njumps,
                      bm, bk, wm, wk, turn, (kings >> frm) & 1 == 1)
        for j in range(njumps):
            out[i, M_PATH + j] = lowest_bit64(caps[i, C_PATH + j])


@njit(cache=True)
def generate_moves(bm, bk, wm, wk, turn, out):
    """Write every legal move of the position into out; return how many.

    Captures are compulsory: when any exists only captures are listed.
    """
    bm = np.int64(bm)
    bk = np.int64(bk)
    wm = np.int64(wm)
    wk = np.int64(wk)
    men, kings, opp = _sides(bm, bk, wm, wk, turn)
    empty = ALL_SQUARES & ~(bm | bk | wm | wk)
    n = 0
    jumpers = jumping_pieces(men, kings, opp, empty, turn)
    if jumpers:
        caps = np.empty((CAPTURE_ROWS + MAX_JUMPS + 1, CAPTURE_WIDTH), dtype=np.int64)
        n = capture_paths(men, kings, opp, empty, jumpers, turn, caps)
        _write_captures(caps, n, bm, bk, wm, wk, turn, kings, out)
        return n
    pieces = men | kings
    while pieces:
        frm = _lowest_bit_index(pieces)
        pieces &= pieces - 1
        is_king = (kings >> frm) & 1 == 1
        d_lo, d_hi = direction_range(is_king, turn)
        for d in range(d_lo, d_hi):
            to = _NEIGHBOUR[frm, d]
            if to >= 0 and (empty >> to) & 1:
                _write_result(out, n, frm, to, 0, 0, bm, bk, wm, wk, turn, is_king)
                n += 1
    return n


@njit(cache=True)
def count_moves(bm, bk, wm, wk, turn, scratch):
    """Number of legal moves (distinct), using scratch as a move buffer."""
    if has_capture(bm, bk, wm, wk, turn):
        return generate_moves(bm, bk, wm, wk, turn, scratch)
    return count_simple_moves(bm, bk, wm, wk, turn)
