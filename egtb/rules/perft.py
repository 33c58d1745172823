"""Fast perft over 32-bit bitboards (numba): shift-based generation, bulk counting, copy-make.

A position is four bitboards and the side to move, as in :mod:`egtb.rules.movegen`
(square ``s`` is bit ``s - 1``; ``turn`` 0 = Black, who moves toward higher
squares). Inside the kernels a position is side-relative: ``pm, pk`` (men and
kings of the side to move), ``om, ok`` (the opponent's) and ``turn``; a move is
made by building the child's four bitboards (copy-make), nothing is undone.

Generation works on whole sets of pieces at once. On the 32-square board a step
toward higher squares is a shift left by 4, or by 5 from an even row not on the
right edge, or by 3 from an odd row not on the left edge (toward lower squares:
right by 4, 3 or 5); a jump is a shift by 7 or 9 in the same direction, and the
edge masks keep pieces on the board. The last ply is bulk-counted: simple moves
are popcounts of destination sets, captures are counted without being made.
Two capture paths with the same start, end and captured pieces are one move
(only a king can close such a loop) and are counted once, as everywhere else.

:func:`perft_hashed` adds a transposition table of subtree counts, keyed by the
whole position, side to move and depth (all stored and compared in full, so a
hash collision can never give a wrong count).

>>> from egtb.rules.perft import START_BM, START_WM, perft
>>> int(perft(START_BM, 0, START_WM, 0, 0, 6))
36768
>>> int(perft_hashed(START_BM, 0, START_WM, 0, 0, 6, new_hash_table(megabytes=1)))
36768
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from egtb.errors import InvalidArgumentError
from egtb.rules.squares import (ALL_SQUARES, BLACK_CROWN_ROW, EVEN_NOT_RIGHT, EVEN_ROWS, ODD_NOT_LEFT, ODD_ROWS,
                                START_BM, START_WM, WHITE_CROWN_ROW, direction_range)

__all__ = ["START_BM", "START_WM", "HASH_ENTRY_BYTES", "capture_moves", "child_positions",
           "count_steps", "jumping_pieces", "lowest_bit64", "new_hash_table", "perft", "perft_hashed", "popcount64"]

#: Capture rows of the scratch array: (from bit, to bit, captured bitboard); as
#: many as movegen.MAX_MOVES, far above any position's distinct captures.
CAPTURE_ROWS = 256
C_FROM = 0
C_TO = 1
C_CAPTURED = 2

#: Columns of a hash-table entry: the position (own men | opponent men << 32,
#: own kings | opponent kings << 32), then count << 8 | depth << 1 | turn.
H_MEN = 0
H_KINGS = 1
H_DATA = 2
HASH_ENTRY_BYTES = 24
#: Subtrees shallower than this are recounted rather than looked up.
HASH_MIN_DEPTH = 3


@intrinsic
def popcount64(typingctx, x):
    """Number of set bits (the CPU's popcount instruction)."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        return builder.ctpop(value)

    return sig, codegen


@intrinsic
def lowest_bit64(typingctx, x):
    """Index of the lowest set bit of a non-zero value (the CPU's count-trailing-zeros)."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        return builder.cttz(value, ir.Constant(ir.IntType(1), 1))

    return sig, codegen


# --- one-step shifts of whole sets ---------------------------------------------
# Results may carry bits above 31; every use masks them with the board (empty or
# opponent sets never have them).


@njit(cache=True)
def _down_left(s):
    return ((s & EVEN_ROWS) << 4) | ((s & ODD_NOT_LEFT) << 3)


@njit(cache=True)
def _down_right(s):
    return ((s & EVEN_NOT_RIGHT) << 5) | ((s & ODD_ROWS) << 4)


@njit(cache=True)
def _up_left(s):
    return ((s & EVEN_ROWS) >> 4) | ((s & ODD_NOT_LEFT) >> 5)


@njit(cache=True)
def _up_right(s):
    return ((s & EVEN_NOT_RIGHT) >> 3) | ((s & ODD_ROWS) >> 4)


@njit(cache=True)
def _jumpers_down(s, opp, empty):
    """Pieces of s that can jump toward higher squares."""
    dl = _down_left(_down_left(s) & opp) & empty
    dr = _down_right(_down_right(s) & opp) & empty
    return (dl >> 7) | (dr >> 9)


@njit(cache=True)
def _jumpers_up(s, opp, empty):
    """Pieces of s that can jump toward lower squares."""
    ul = _up_left(_up_left(s) & opp) & empty
    ur = _up_right(_up_right(s) & opp) & empty
    return ((ul << 9) | (ur << 7)) & ALL_SQUARES


@njit(cache=True)
def jumping_pieces(pm, pk, opp, empty, turn):
    """Pieces of the side to move that have a capture (men forward only)."""
    if turn == 0:
        return _jumpers_down(pm | pk, opp, empty) | (_jumpers_up(pk, opp, empty) if pk else 0)
    return _jumpers_up(pm | pk, opp, empty) | (_jumpers_down(pk, opp, empty) if pk else 0)


@njit(cache=True)
def count_steps(pm, pk, empty, turn):
    """Number of simple moves (valid when there is no capture)."""
    if turn == 0:
        down, up = pm | pk, pk
    else:
        down, up = pk, pm | pk
    n = (popcount64((down << 4) & empty) + popcount64(((down & EVEN_NOT_RIGHT) << 5) & empty)
         + popcount64(((down & ODD_NOT_LEFT) << 3) & empty))
    if up:
        n += (popcount64((up >> 4) & empty) + popcount64(((up & EVEN_NOT_RIGHT) >> 3) & empty)
              + popcount64(((up & ODD_NOT_LEFT) >> 5) & empty))
    return n


# --- capture sequences ----------------------------------------------------------
# Depth-first over an explicit stack (numba's cache cannot load a cached caller
# of a recursive function). Stack rows: square (a one-bit board), captured
# pieces, next direction to try, 1 once a jump from here was found.

S_AT = 0
S_CAPTURED = 1
S_NEXT = 2
S_EXTENDED = 3
#: Longest capture sequence: at most 12 pieces can be taken.
MAX_JUMPS = 12


@njit(cache=True)
def _jump(at, direction, free, empty):
    """(captured bit, landing bit) of a jump from `at` in a direction (0-3), or (0, 0)."""
    if direction == 0:
        over = _down_left(at) & free
        land = _down_left(over) & empty
    elif direction == 1:
        over = _down_right(at) & free
        land = _down_right(over) & empty
    elif direction == 2:
        over = _up_left(at) & free
        land = _up_left(over) & empty
    else:
        over = _up_right(at) & free
        land = _up_right(over) & empty
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


@njit(cache=True, inline="always")
def _jump_sequences(src, at, captured, king, turn, opp, empty, buf, n, record):
    # buf rows from CAPTURE_ROWS on are the depth-first stack
    """Walk the capture sequences of the piece that left `src` and stands on `at`, having taken `captured`.

    With ``record``, append each distinct sequence as a row (src, end, captured)
    and return the new row count; without, return n plus the number of sequences.
    A man captures forward only, so two of its paths never share their captured
    set (one piece per row crossed); only a king's paths are checked for
    duplicates (same end, same captured pieces: one move).
    """
    d_lo, d_hi = direction_range(king, turn)
    crown = 0 if king else (BLACK_CROWN_ROW if turn == 0 else WHITE_CROWN_ROW)
    first = n
    sp = 0
    buf[CAPTURE_ROWS, S_AT] = at
    buf[CAPTURE_ROWS, S_CAPTURED] = captured
    buf[CAPTURE_ROWS, S_NEXT] = d_lo
    buf[CAPTURE_ROWS, S_EXTENDED] = 0
    while sp >= 0:
        d = buf[CAPTURE_ROWS + sp, S_NEXT]
        captured = buf[CAPTURE_ROWS + sp, S_CAPTURED]
        if d >= d_hi:
            if captured and buf[CAPTURE_ROWS + sp, S_EXTENDED] == 0:  # a sequence ends here
                n = _record(buf, n, first, src, buf[CAPTURE_ROWS + sp, S_AT], captured, king) if record else n + 1
            sp -= 1
            continue
        buf[CAPTURE_ROWS + sp, S_NEXT] = d + 1
        over, land = _jump(buf[CAPTURE_ROWS + sp, S_AT], d, opp & ~captured, empty)
        if land == 0:
            continue
        buf[CAPTURE_ROWS + sp, S_EXTENDED] = 1
        if land & crown:  # crowning ends the move
            n = _record(buf, n, first, src, land, captured | over, False) if record else n + 1
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
    return _jump_sequences(src, src, 0, king, turn, opp, empty, buf, n, True)


@njit(cache=True)
def _captures(pm, pk, opp, empty, jumpers, turn, buf):
    """Write every distinct capture of the side to move into buf; return how many.

    buf has CAPTURE_ROWS rows for the captures, then MAX_JUMPS + 1 rows of stack.
    """
    n = 0
    while jumpers:
        src = jumpers & -jumpers
        jumpers ^= src
        n = _piece_jumps(src, (pk & src) != 0, opp, empty | src, turn, buf, n)
    return n


# --- perft ------------------------------------------------------------------------
# Only _perft and _perft_hashed call themselves; every helper is a leaf (numba's
# cache cannot load mutually recursive functions).

#: Most children a position can have.
MAX_CHILDREN = 256
#: Columns of a child row: the child position, side-relative (its side to move first).
CH_PM = 0
CH_PK = 1
CH_OM = 2
CH_OK = 3


@njit(cache=True, inline="always")
def _count_moves(pm, pk, om, ok, turn, scratch):
    """Number of distinct legal moves (the last ply, bulk-counted)."""
    empty = ALL_SQUARES & ~(pm | pk | om | ok)
    opp = om | ok
    if turn == 0:
        land1 = _down_left(_down_left(pm) & opp) & empty
        land2 = _down_right(_down_right(pm) & opp) & empty
    else:
        land1 = _up_left(_up_left(pm) & opp) & empty
        land2 = _up_right(_up_right(pm) & opp) & empty
    king_jumpers = (_jumpers_down(pk, opp, empty) | _jumpers_up(pk, opp, empty)) if pk else 0
    if (land1 | land2 | king_jumpers) == 0:
        return count_steps(pm, pk, empty, turn)
    # A man continues forward only, so whether it can jump again depends on its
    # landing square alone: landings with no continuation (or on the crowning
    # row) are one move each, counted in bulk.
    if turn == 0:
        cont = _jumpers_down((land1 | land2) & ~BLACK_CROWN_ROW, opp, empty)
    else:
        cont = _jumpers_up((land1 | land2) & ~WHITE_CROWN_ROW, opp, empty)
    n = popcount64(land1 & ~cont) + popcount64(land2 & ~cont)
    if cont:
        n += _count_man_captures(land1 & cont, land2 & cont, opp, empty, turn, scratch)
    if king_jumpers:
        n += _captures(pm, pk, opp, empty, king_jumpers, turn, scratch)
    return n


@njit(cache=True)
def _count_man_captures(multi1, multi2, opp, empty, turn, scratch):
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
                over = _down_left(src) if direction == 0 else _down_right(src)
            else:
                src = land << (9 if direction == 0 else 7)
                over = _up_left(src) if direction == 0 else _up_right(src)
            n += _count_man_sequences(land, over & opp, opp, empty, turn, scratch)
    return n


@njit(cache=True)
def _count_man_sequences(at, captured, opp, empty, turn, scratch):
    """Number of complete capture sequences of a man on `at` that has taken `captured`."""
    return _jump_sequences(0, at, captured, False, turn, opp, empty, scratch, 0, False)


@njit(cache=True)
def _put(out, n, pm, pk, om, ok):
    out[n, CH_PM] = pm
    out[n, CH_PK] = pk
    out[n, CH_OM] = om
    out[n, CH_OK] = ok
    return n + 1


@njit(cache=True, inline="always")
def _children(pm, pk, om, ok, turn, out, base, scratch):
    """Write the position after each distinct legal move into out (copy-make); return how many.

    Rows from `base` on; each child row is side-relative for the child: the
    opponent's pieces come first.
    """
    empty = ALL_SQUARES & ~(pm | pk | om | ok)
    opp = om | ok
    n = base
    jumpers = jumping_pieces(pm, pk, opp, empty, turn)
    if jumpers:
        caps = _captures(pm, pk, opp, empty, jumpers, turn, scratch)
        crown = BLACK_CROWN_ROW if turn == 0 else WHITE_CROWN_ROW
        for i in range(caps):
            f = scratch[i, C_FROM]
            t = scratch[i, C_TO]
            c = scratch[i, C_CAPTURED]
            if pk & f:
                n = _put(out, n, om & ~c, ok & ~c, pm, pk ^ f ^ t)
            else:
                crowned = t & crown
                n = _put(out, n, om & ~c, ok & ~c, pm ^ f ^ (t ^ crowned), pk | crowned)
        return n - base
    if turn == 0:
        dest = (pm << 4) & empty
        while dest:
            t = dest & -dest
            dest ^= t
            crowned = t & BLACK_CROWN_ROW
            n = _put(out, n, om, ok, pm ^ (t >> 4) ^ (t ^ crowned), pk | crowned)
        dest = ((pm & EVEN_NOT_RIGHT) << 5) & empty
        while dest:
            t = dest & -dest
            dest ^= t
            crowned = t & BLACK_CROWN_ROW
            n = _put(out, n, om, ok, pm ^ (t >> 5) ^ (t ^ crowned), pk | crowned)
        dest = ((pm & ODD_NOT_LEFT) << 3) & empty
        while dest:
            t = dest & -dest
            dest ^= t
            crowned = t & BLACK_CROWN_ROW
            n = _put(out, n, om, ok, pm ^ (t >> 3) ^ (t ^ crowned), pk | crowned)
    else:
        dest = (pm >> 4) & empty
        while dest:
            t = dest & -dest
            dest ^= t
            crowned = t & WHITE_CROWN_ROW
            n = _put(out, n, om, ok, pm ^ (t << 4) ^ (t ^ crowned), pk | crowned)
        dest = ((pm & EVEN_NOT_RIGHT) >> 3) & empty
        while dest:
            t = dest & -dest
            dest ^= t
            crowned = t & WHITE_CROWN_ROW
            n = _put(out, n, om, ok, pm ^ (t << 3) ^ (t ^ crowned), pk | crowned)
        dest = ((pm & ODD_NOT_LEFT) >> 5) & empty
        while dest:
            t = dest & -dest
            dest ^= t
            crowned = t & WHITE_CROWN_ROW
            n = _put(out, n, om, ok, pm ^ (t << 5) ^ (t ^ crowned), pk | crowned)
    if pk:
        n = _king_steps(pm, pk, om, ok, empty, out, n)
    return n - base


#: The children of a position for other kernels (the compact prober's capture search):
#: out rows base.. as (pm, pk, om, ok) of the child, scratch as for :func:`_captures`.
child_positions = _children
#: The set-wise capture search, for the table builder:
#: ``capture_moves(pm, pk, opp, empty, jumpers, turn, buf)``, rows as for :func:`_captures`.
capture_moves = _captures


@njit(cache=True)
def _king_steps(pm, pk, om, ok, empty, out, n):
    """Append the kings' simple moves (both directions) to out."""
    dest = (pk << 4) & empty
    while dest:
        t = dest & -dest
        dest ^= t
        n = _put(out, n, om, ok, pm, pk ^ (t >> 4) ^ t)
    dest = ((pk & EVEN_NOT_RIGHT) << 5) & empty
    while dest:
        t = dest & -dest
        dest ^= t
        n = _put(out, n, om, ok, pm, pk ^ (t >> 5) ^ t)
    dest = ((pk & ODD_NOT_LEFT) << 3) & empty
    while dest:
        t = dest & -dest
        dest ^= t
        n = _put(out, n, om, ok, pm, pk ^ (t >> 3) ^ t)
    dest = (pk >> 4) & empty
    while dest:
        t = dest & -dest
        dest ^= t
        n = _put(out, n, om, ok, pm, pk ^ (t << 4) ^ t)
    dest = ((pk & EVEN_NOT_RIGHT) >> 3) & empty
    while dest:
        t = dest & -dest
        dest ^= t
        n = _put(out, n, om, ok, pm, pk ^ (t << 3) ^ t)
    dest = ((pk & ODD_NOT_LEFT) >> 5) & empty
    while dest:
        t = dest & -dest
        dest ^= t
        n = _put(out, n, om, ok, pm, pk ^ (t << 5) ^ t)
    return n


@njit(cache=True)
def _perft(pm, pk, om, ok, turn, depth, children, scratch):
    """Leaves depth >= 2 plies below a side-relative position (`pm, pk` to move)."""
    base = (depth - 1) * MAX_CHILDREN
    n = _children(pm, pk, om, ok, turn, children, base, scratch)
    nturn = 1 - turn
    total = 0
    if depth == 2:
        for i in range(base, base + n):
            total += _count_moves(children[i, CH_PM], children[i, CH_PK], children[i, CH_OM], children[i, CH_OK], nturn, scratch)
    else:
        for i in range(base, base + n):
            total += _perft(children[i, CH_PM], children[i, CH_PK], children[i, CH_OM], children[i, CH_OK], nturn,
                            depth - 1,
                            children, scratch)
    return total


@njit(cache=True)
def perft(bm, bk, wm, wk, turn, depth):
    """Number of leaf positions depth plies ahead (distinct moves; the last ply bulk-counted)."""
    bm, bk, wm, wk = np.int64(bm), np.int64(bk), np.int64(wm), np.int64(wk)
    if depth <= 0:
        return np.int64(1)
    scratch = np.zeros((CAPTURE_ROWS + MAX_JUMPS + 1, 4), dtype=np.int64)
    children = np.zeros((depth * MAX_CHILDREN, 4), dtype=np.int64)
    if turn == 0:
        pm, pk, om, ok = bm, bk, wm, wk
    else:
        pm, pk, om, ok = wm, wk, bm, bk
    if depth == 1:
        return np.int64(_count_moves(pm, pk, om, ok, turn, scratch))
    return np.int64(_perft(pm, pk, om, ok, turn, depth, children, scratch))


# --- perft with a transposition table -------------------------------------------


def new_hash_table(*, megabytes: float) -> np.ndarray:
    """An empty transposition table of at most `megabytes` (a power-of-two number of entries).

    >>> new_hash_table(megabytes=1).shape
    (32768, 3)
    """
    entries = int(megabytes * 2**20) // HASH_ENTRY_BYTES
    if entries < 1:
        raise InvalidArgumentError(f"hash table of {megabytes} MB holds no entry ({HASH_ENTRY_BYTES} bytes each)")
    size = 1 << (entries.bit_length() - 1)
    return np.zeros((size, 3), dtype=np.int64)


@njit(cache=True)
def _slot(men, kings, tag, mask):
    """Table slot of a (position, depth and side) key."""
    h = men * np.int64(-7046029254386353131) + kings * np.int64(-4658895280553007687)
    h ^= tag * np.int64(0x2545F4914F6CDD1D)
    h ^= (h >> 29) & np.int64(0x7FFFFFFFF)
    h *= np.int64(-4265267296055464877)
    h ^= (h >> 32) & np.int64(0xFFFFFFFF)
    return h & mask


@njit(cache=True)
def _perft_hashed(pm, pk, om, ok, turn, depth, children, scratch, table):
    """_perft with the subtree count looked up first and stored after (depth >= HASH_MIN_DEPTH)."""
    men = pm | (om << 32)
    kings = pk | (ok << 32)
    tag = (depth << 1) | turn
    slot = _slot(men, kings, tag, table.shape[0] - 1)
    if table[slot, H_MEN] == men and table[slot, H_KINGS] == kings and (table[slot, H_DATA] & 0xFF) == tag:
        return table[slot, H_DATA] >> 8
    if depth < HASH_MIN_DEPTH:
        total = _perft(pm, pk, om, ok, turn, depth, children, scratch)
    else:
        base = (depth - 1) * MAX_CHILDREN
        n = _children(pm, pk, om, ok, turn, children, base, scratch)
        nturn = 1 - turn
        total = 0
        for i in range(base, base + n):
            total += _perft_hashed(children[i, CH_PM], children[i, CH_PK], children[i, CH_OM], children[i, CH_OK],
                                   nturn,
                                   depth - 1, children, scratch, table)
    table[slot, H_MEN] = men
    table[slot, H_KINGS] = kings
    table[slot, H_DATA] = (total << 8) | tag
    return total


@njit(cache=True)
def perft_hashed(bm, bk, wm, wk, turn, depth, table):
    """:func:`perft` with subtree counts kept in `table` (see :func:`new_hash_table`).

    Subtrees of HASH_MIN_DEPTH plies or more are stored; the table may be
    reused between calls from any position (entries hold the full position,
    side to move and depth, so a collision only costs a recount).
    """
    bm, bk, wm, wk = np.int64(bm), np.int64(bk), np.int64(wm), np.int64(wk)
    if depth <= HASH_MIN_DEPTH:
        return perft(bm, bk, wm, wk, turn, depth)
    scratch = np.zeros((CAPTURE_ROWS + MAX_JUMPS + 1, 4), dtype=np.int64)
    children = np.zeros((depth * MAX_CHILDREN, 4), dtype=np.int64)
    if turn == 0:
        pm, pk, om, ok = bm, bk, wm, wk
    else:
        pm, pk, om, ok = wm, wk, bm, bk
    return np.int64(_perft_hashed(pm, pk, om, ok, turn, depth, children, scratch, table))
