"""Fast perft over 32-bit bitboards (numba): shift-based generation, bulk counting, copy-make.

A position is four bitboards and the side to move, as in :mod:`egtb.rules.movegen`
(square ``s`` is bit ``s - 1``; ``turn`` 0 = Black, who moves toward higher
squares). Inside the kernels a position is side-relative: ``pm, pk`` (men and
kings of the side to move), ``om, ok`` (the opponent's) and ``turn``; a move is
made by building the child's four bitboards (copy-make), nothing is undone.

Generation works on whole sets of pieces at once (the shifts of
:mod:`egtb.rules.bitboards`), and every capture comes from the one capture
enumerator, :mod:`egtb.rules.captures`. The last ply is bulk-counted: simple
moves are popcounts of destination sets, captures are counted without being
made (:func:`egtb.rules.captures.count_captures`). Two capture paths with the
same start, end and captured pieces are one move (only a king can close such a
loop) and are counted once, as everywhere else.

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
from numba import njit

from egtb.errors import InvalidArgumentError
from egtb.rules.bitboards import count_steps
from egtb.rules.captures import (C_CAPTURED, C_FROM, C_TO, CAPTURE_ROWS, MAX_JUMPS, capture_moves, count_captures,
                                 jumping_pieces)
from egtb.rules.squares import (ALL_SQUARES, BLACK_CROWN_ROW, EVEN_NOT_RIGHT, ODD_NOT_LEFT, START_BM, START_WM,
                                WHITE_CROWN_ROW)

__all__ = ["START_BM", "START_WM", "HASH_ENTRY_BYTES", "child_positions", "new_hash_table", "perft", "perft_hashed"]

#: Columns of a hash-table entry: the position (own men | opponent men << 32,
#: own kings | opponent kings << 32), then count << 8 | depth << 1 | turn.
H_MEN = 0
H_KINGS = 1
H_DATA = 2
HASH_ENTRY_BYTES = 24
#: Subtrees shallower than this are recounted rather than looked up.
HASH_MIN_DEPTH = 3


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
    n = count_captures(pm, pk, om | ok, empty, turn, scratch)
    if n == 0:
        return count_steps(pm, pk, empty, turn)
    return n


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
        caps = capture_moves(pm, pk, opp, empty, jumpers, turn, scratch)
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
#: out rows base.. as (pm, pk, om, ok) of the child, scratch as for
#: :func:`egtb.rules.captures.capture_moves`.
child_positions = _children


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
