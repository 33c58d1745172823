"""The capture rules, in one place (numba): who can jump, and every distinct capture sequence.

Every part of the project that captures goes through here: perft
(:mod:`egtb.rules.perft`, and the compact prober's capture search through its
children), the move generator (:mod:`egtb.rules.movegen`: the prober, Board,
the engines) and the table builder's solver.

The rules (DESIGN.md): a capture is compulsory; a sequence that can go on must
go on; the player chooses freely among the sequences (not the longest); a man
that reaches the far row is crowned and its move ends there, even in the middle
of a sequence; men capture forward only, kings both ways; two paths with the
same start, end and captured pieces are one move (only a king can close such
a loop), the first path found is the one kept.

Pieces are side-relative here: ``pm, pk`` the men and kings of the side to
move, ``opp`` the opponent's pieces, ``empty`` the empty squares, ``turn`` 0
when the side to move is Black (men going toward higher squares). Squares are
one-bit boards (square ``s`` is bit ``s - 1``).

:func:`capture_moves` writes each distinct capture as a row of a buffer from
:func:`new_capture_buffer` (columns ``C_*``): the start square, the end square
and the captured pieces, and with :func:`capture_paths` the number of jumps and
each landing square. Rows from ``CAPTURE_ROWS`` on are the depth-first stack.
:func:`count_captures` counts them without listing the men's (perft's last ply).

>>> from egtb.rules.squares import bitboard_of, squares_of
>>> pk, opp = bitboard_of([10]), bitboard_of([14, 15, 22, 23])  # the king loop: B:W14,15,22,23:BK10
>>> empty = 0xFFFFFFFF & ~(pk | opp)
>>> jumpers = jumping_pieces(0, pk, opp, empty, 0)
>>> buf = new_capture_buffer(paths=True)
>>> n = capture_paths(0, pk, opp, empty, jumpers, 0, buf)
>>> n, squares_of(buf[0, C_FROM]), squares_of(buf[0, C_TO]), squares_of(buf[0, C_CAPTURED])
(1, [10], [10], [14, 15, 22, 23])
>>> [squares_of(buf[0, C_PATH + j])[0] for j in range(buf[0, C_NJUMPS])]
[17, 26, 19, 10]
>>> int(count_captures(0, pk, opp, empty, 0, buf))
1
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.rules.bitboards import down_left, down_right, popcount64, up_left, up_right
from egtb.rules.squares import ALL_SQUARES, BLACK_CROWN_ROW, WHITE_CROWN_ROW, direction_range

__all__ = ["CAPTURE_ROWS", "CAPTURE_WIDTH", "C_CAPTURED", "C_FROM", "C_NJUMPS", "C_PATH", "C_TO", "MAX_JUMPS",
           "capture_moves", "capture_paths", "count_captures", "has_capture", "jumping_pieces",
           "new_capture_buffer"]

#: Capture rows of a buffer, as many as movegen.MAX_MOVES: far above any
#: position's distinct captures.
CAPTURE_ROWS = 256
#: Longest capture sequence: at most 12 pieces can be taken.
MAX_JUMPS = 12
#: Columns of a capture row: start square, end square (one-bit boards), captured pieces;
#: with paths also the number of jumps and the landing square of each (one-bit boards).
C_FROM = 0
C_TO = 1
C_CAPTURED = 2
C_NJUMPS = 3
C_PATH = 4
#: Width of a buffer for :func:`capture_paths` (:func:`capture_moves` needs 4 columns).
CAPTURE_WIDTH = C_PATH + MAX_JUMPS

# Stack rows (CAPTURE_ROWS.. of the buffer): the square a piece stands on, the
# pieces taken so far, the next direction to try, 1 once a jump from there was
# found. Depth-first over an explicit stack: numba's cache cannot load a cached
# caller of a recursive function.
S_AT = 0
S_CAPTURED = 1
S_NEXT = 2
S_EXTENDED = 3


def new_capture_buffer(*, paths: bool = False) -> np.ndarray:
    """A buffer for :func:`capture_moves`, or with ``paths`` for :func:`capture_paths`.

    >>> new_capture_buffer().shape, new_capture_buffer(paths=True).shape
    ((269, 4), (269, 16))
    """
    return np.zeros((CAPTURE_ROWS + MAX_JUMPS + 1, CAPTURE_WIDTH if paths else 4), dtype=np.int64)


# --- who can jump -----------------------------------------------------------------


@njit(cache=True)
def _jumpers_down(s, opp, empty):
    """Pieces of s that can jump toward higher squares."""
    dl = down_left(down_left(s) & opp) & empty
    dr = down_right(down_right(s) & opp) & empty
    return (dl >> 7) | (dr >> 9)


@njit(cache=True)
def _jumpers_up(s, opp, empty):
    """Pieces of s that can jump toward lower squares."""
    ul = up_left(up_left(s) & opp) & empty
    ur = up_right(up_right(s) & opp) & empty
    return ((ul << 9) | (ur << 7)) & ALL_SQUARES


@njit(cache=True)
def jumping_pieces(pm, pk, opp, empty, turn):
    """Pieces of the side to move that have a capture (men forward only)."""
    if turn == 0:
        return _jumpers_down(pm | pk, opp, empty) | (_jumpers_up(pk, opp, empty) if pk else 0)
    return _jumpers_up(pm | pk, opp, empty) | (_jumpers_down(pk, opp, empty) if pk else 0)


@njit(cache=True)
def has_capture(bm, bk, wm, wk, turn):
    """True when the side to move (of an absolute position) has a capture, and so must capture.

    The same answer as ``jumping_pieces(...) != 0``, computed without a
    branch on the jump sets (measured 1 ns a call in a loop over positions,
    where an early exit per direction took 8).

    >>> from egtb.rules.squares import bitboard_of
    >>> bm, wm = bitboard_of([5]), bitboard_of([9])   # Black 5 can jump 9; White 9 cannot jump 5
    >>> bool(has_capture(bm, 0, wm, 0, 0)), bool(has_capture(bm, 0, wm, 0, 1))
    (True, False)
    """
    empty = ALL_SQUARES & ~(bm | bk | wm | wk)
    if turn == 0:
        down, up, opp = bm | bk, bk, wm | wk
    else:
        down, up, opp = wk, wm | wk, bm | bk
    lands = (down_left(down_left(down) & opp) | down_right(down_right(down) & opp)
             | up_left(up_left(up) & opp) | up_right(up_right(up) & opp)) & empty
    return lands != 0


# --- capture sequences ----------------------------------------------------------


@njit(cache=True)
def _jump(at, direction, free, empty):
    """(captured bit, landing bit) of a jump from `at` in a direction (0-3), or (0, 0)."""
    if direction == 0:
        over = down_left(at) & free
        land = down_left(over) & empty
    elif direction == 1:
        over = down_right(at) & free
        land = down_right(over) & empty
    elif direction == 2:
        over = up_left(at) & free
        land = up_left(over) & empty
    else:
        over = up_right(at) & free
        land = up_right(over) & empty
    if land == 0:
        return 0, 0
    return over, land


@njit(cache=True)
def _record(buf, n, first, src, to, captured, check):
    """Append (src, to, captured) unless `check` and rows first..n-1 already end so."""
    if check:
        for i in range(first, n):
            if buf[i, C_TO] == to and buf[i, C_CAPTURED] == captured:
                return n
    buf[n, C_FROM] = src
    buf[n, C_TO] = to
    buf[n, C_CAPTURED] = captured
    return n + 1


@njit(cache=True)
def _record_path(buf, n, first, src, to, captured, check, sp, crowned):
    """_record, with the path: the squares of stack rows 1..sp, then `crowned` if non-zero."""
    m = _record(buf, n, first, src, to, captured, check)
    if m == n:
        return n
    for j in range(sp):
        buf[n, C_PATH + j] = buf[CAPTURE_ROWS + 1 + j, S_AT]
    if crowned:
        buf[n, C_PATH + sp] = crowned
        sp += 1
    buf[n, C_NJUMPS] = sp
    return m


@njit(cache=True, inline="always")
def _jump_sequences(src, at, captured, king, turn, opp, empty, buf, n, record, paths):
    """Walk the capture sequences of the piece that left `src` and stands on `at`, having taken `captured`.

    With ``record``, append each distinct sequence as a row (src, end, captured,
    and with ``paths`` its jumps) and return the new row count; without, return
    n plus the number of sequences. A man captures forward only, so two of its
    paths never share their captured set (one piece per row crossed); only a
    king's paths are checked for duplicates (same end, same captured pieces:
    one move). ``record`` and ``paths`` are constants of each caller.
    """
    d_lo, d_hi = direction_range(king, turn)
    crown = 0 if king else (BLACK_CROWN_ROW if turn == 0 else WHITE_CROWN_ROW)
    first = n
    sp = np.int64(0)  # as n in capture_moves: a literal 0 typed the calls below for it too
    buf[CAPTURE_ROWS, S_AT] = at
    buf[CAPTURE_ROWS, S_CAPTURED] = captured
    buf[CAPTURE_ROWS, S_NEXT] = d_lo
    buf[CAPTURE_ROWS, S_EXTENDED] = 0
    while sp >= 0:
        d = buf[CAPTURE_ROWS + sp, S_NEXT]
        captured = buf[CAPTURE_ROWS + sp, S_CAPTURED]
        if d >= d_hi:
            if captured and buf[CAPTURE_ROWS + sp, S_EXTENDED] == 0:  # a sequence ends here
                end = buf[CAPTURE_ROWS + sp, S_AT]
                if not record:
                    n += 1
                elif paths:
                    n = _record_path(buf, n, first, src, end, captured, king, sp, 0)
                else:
                    n = _record(buf, n, first, src, end, captured, king)
            sp -= 1
            continue
        buf[CAPTURE_ROWS + sp, S_NEXT] = d + 1
        over, land = _jump(buf[CAPTURE_ROWS + sp, S_AT], d, opp & ~captured, empty)
        if land == 0:
            continue
        buf[CAPTURE_ROWS + sp, S_EXTENDED] = 1
        if land & crown:  # crowning ends the move
            if not record:
                n += 1
            elif paths:
                n = _record_path(buf, n, first, src, land, captured | over, False, sp, land)
            else:
                n = _record(buf, n, first, src, land, captured | over, False)
            continue
        sp += 1
        buf[CAPTURE_ROWS + sp, S_AT] = land
        buf[CAPTURE_ROWS + sp, S_CAPTURED] = captured | over
        buf[CAPTURE_ROWS + sp, S_NEXT] = d_lo
        buf[CAPTURE_ROWS + sp, S_EXTENDED] = 0
    return n


@njit(cache=True)
def _piece_jumps(src, king, opp, empty, turn, buf, n):
    """Append the distinct capture sequences of the piece on `src` to buf; return the new row count."""
    return _jump_sequences(src, src, 0, king, turn, opp, empty, buf, n, True, False)


@njit(cache=True)
def _piece_jump_paths(src, king, opp, empty, turn, buf, n):
    """:func:`_piece_jumps` with each sequence's path."""
    return _jump_sequences(src, src, 0, king, turn, opp, empty, buf, n, True, True)


@njit(cache=True)
def capture_moves(pm, pk, opp, empty, jumpers, turn, buf):
    """Write every distinct capture of the side to move into buf (columns C_FROM, C_TO, C_CAPTURED); return how many.

    ``jumpers`` is :func:`jumping_pieces` (only those pieces are walked); buf
    has CAPTURE_ROWS rows for the captures, then MAX_JUMPS + 1 rows of stack
    (:func:`new_capture_buffer`). Rows come piece by piece from the lowest
    square, each piece's in depth-first order over directions 0-3.
    """
    n = np.int64(0)  # a literal 0 would have numba type the call for it first, and compile a variant never run
    while jumpers:
        src = jumpers & -jumpers
        jumpers ^= src
        n = _piece_jumps(src, (pk & src) != 0, opp, empty | src, turn, buf, n)
    return n


@njit(cache=True)
def capture_paths(pm, pk, opp, empty, jumpers, turn, buf):
    """:func:`capture_moves` with each capture's path (C_NJUMPS, C_PATH..): buf from ``new_capture_buffer(paths=True)``."""
    n = np.int64(0)  # as in capture_moves
    while jumpers:
        src = jumpers & -jumpers
        jumpers ^= src
        n = _piece_jump_paths(src, (pk & src) != 0, opp, empty | src, turn, buf, n)
    return n


# --- counting -------------------------------------------------------------------


@njit(cache=True, inline="always")
def count_captures(pm, pk, opp, empty, turn, buf):
    """Number of distinct captures of the side to move: 0 when it has none (then it has simple moves).

    Counted without being listed where it can: a man continues forward only, so
    whether it can jump again depends on its landing square alone, and each
    first jump of a man that cannot go on (or that lands on the crowning row)
    is one move, counted in bulk. buf as for :func:`capture_moves`.
    """
    if turn == 0:
        land1 = down_left(down_left(pm) & opp) & empty
        land2 = down_right(down_right(pm) & opp) & empty
    else:
        land1 = up_left(up_left(pm) & opp) & empty
        land2 = up_right(up_right(pm) & opp) & empty
    king_jumpers = (_jumpers_down(pk, opp, empty) | _jumpers_up(pk, opp, empty)) if pk else 0
    if (land1 | land2 | king_jumpers) == 0:
        return 0
    if turn == 0:
        cont = _jumpers_down((land1 | land2) & ~BLACK_CROWN_ROW, opp, empty)
    else:
        cont = _jumpers_up((land1 | land2) & ~WHITE_CROWN_ROW, opp, empty)
    n = popcount64(land1 & ~cont) + popcount64(land2 & ~cont)
    if cont:
        n += _count_man_captures(land1 & cont, land2 & cont, opp, empty, turn, buf)
    if king_jumpers:
        n += capture_moves(pm, pk, opp, empty, king_jumpers, turn, buf)
    return n


@njit(cache=True)
def _count_man_captures(multi1, multi2, opp, empty, turn, buf):
    """Number of capture sequences of men whose first jumps land on multi1/multi2 and continue.

    multi1/multi2: landing squares of first jumps (down-left/down-right for
    Black, up-left/up-right for White) from which a man can jump again.
    """
    n = 0
    for direction in range(2):
        multi = multi1 if direction == 0 else multi2
        while multi:
            land = multi & -multi
            multi ^= land
            if turn == 0:
                src = land >> (7 if direction == 0 else 9)
                over = down_left(src) if direction == 0 else down_right(src)
            else:
                src = land << (9 if direction == 0 else 7)
                over = up_left(src) if direction == 0 else up_right(src)
            n += _count_man_sequences(land, over & opp, opp, empty, turn, buf)
    return n


@njit(cache=True)
def _count_man_sequences(at, captured, opp, empty, turn, buf):
    """Number of complete capture sequences of a man on `at` that has taken `captured`."""
    return _jump_sequences(0, at, captured, False, turn, opp, empty, buf, 0, False, False)
