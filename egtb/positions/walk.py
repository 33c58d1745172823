"""A range of a material's positions walked in index order, without a unit in memory.

A material's index (:mod:`egtb.positions.index`) is men placement major, then the
black kings' colex rank, then the white kings' among the squares left. These
kernels step from the range's first position to its last with
:func:`~egtb.positions.index.next_combination`, so that nothing of the size of a
unit is made (an all-kings unit of 8 pieces holds 736 M positions), and test
each position for a capture its side to move must make:

- :func:`unrank_range`: every position's bitboards and whether it must capture;
- :func:`unrank_captures`: only the capture positions, with their indices (or only those a
  crowning reaches: a white king on White's crowning row);
- :func:`capture_flags`: only whether each must capture (the compact writer's
  don't-cares);
- :func:`left_out_flags`: whether each must capture, and whether it is a threat position a WLD
  file may leave out (:func:`egtb.rules.threats.threat_left_out`).

>>> flags = np.empty(868, dtype=np.bool_)
>>> int(capture_flags(np.array([0, 1, 1, 0]), 0, 868, flags)), int(flags.sum())   # 1k-1m
(72, 72)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.positions.index import (BINOM, MASK32, colex_unrank, deposit_squares, fill_squares, next_combination,
                                  rank_subset, unit_size, unrank_men)
from egtb.rules.captures import has_capture
from egtb.rules.movegen import popcount
from egtb.rules.squares import WHITE_CROWN_ROW, WHITE_MEN_SQUARES
from egtb.rules.threats import threat_left_out

__all__ = ["capture_flags", "left_out_flags", "unrank_captures", "unrank_range"]

#: What :func:`_walk` writes: every position, the capture positions alone, the flags alone, the
#: flags with the threats left out.
EVERY_POSITION, CAPTURES_ONLY, FLAGS_ONLY, THREAT_FLAGS = 0, 1, 2, 3


@njit(cache=True)
def unrank_range(counts, lo, hi, out_bm, out_bk, out_wm, out_wk, out_cap):
    """Bitboards of positions lo..hi of a material (Black to move) and whether each must capture,
    as :func:`egtb.positions.index.unrank_unit` orders a unit's kings (the black kings' colex rank
    major, the white kings' among the squares left minor), stepping from the first: nothing of
    the size of a unit is made (an all-kings unit of 8 pieces holds 736 M positions).

    >>> out = [np.empty(2, dtype=np.int64) for _ in range(4)] + [np.empty(2, dtype=np.bool_)]
    >>> unrank_range(np.array([0, 1, 0, 1]), 30, 32, *out)   # 1k-1k: 31 white kings a black one
    >>> [int(a[0]) for a in out[:4]], [int(a[1]) for a in out[:4]]   # kings on 1 and 32, then 2 and 1
    ([0, 1, 0, 2147483648], [0, 2, 0, 1])
    """
    _walk(counts, lo, hi, out_bm, out_bk, out_wm, out_wk, out_cap, np.empty(0, dtype=np.int64), EVERY_POSITION,
          False, np.empty(0, dtype=np.bool_))


@njit(cache=True)
def unrank_captures(counts, lo, hi, out_at, out_bm, out_bk, out_wm, out_wk, crowned_only=False):
    """The positions of lo..hi of a material (Black to move) whose side to move must capture, in
    order: their indices into ``out_at``, their bitboards into ``out_bm``..``out_wk`` (each at least
    ``hi - lo`` long); returns how many (:func:`unrank_range`'s walk, the others not written).

    With ``crowned_only``, only those with a white king on White's crowning row (squares 1-4):
    the positions a crowning move of the side that just moved can lead to.

    >>> out = [np.empty(868, dtype=np.int64) for _ in range(5)]
    >>> n = unrank_captures(np.array([0, 1, 1, 0]), 0, 868, *out)   # 1k-1m
    >>> n, int(out[0][0]) < 868
    (72, True)
    >>> n = unrank_captures(np.array([0, 1, 1, 0]), 0, 868, *out, True)   # 1k-1m: no white king
    >>> n
    0
    """
    none = np.empty(0, dtype=np.bool_)
    return _walk(counts, lo, hi, out_bm, out_bk, out_wm, out_wk, none, out_at, CAPTURES_ONLY, crowned_only, none)


@njit(cache=True)
def capture_flags(counts, lo, hi, out_cap):
    """Whether each position of lo..hi of a material (Black to move) must capture, into
    ``out_cap`` (at least ``hi - lo`` long); returns how many must.

    >>> out = np.empty(4, dtype=np.bool_)
    >>> capture_flags(np.array([0, 1, 0, 1]), 30, 32, out), out[:2].tolist()   # 1k-1k: no captures
    (0, [False, False])
    """
    none, no_threats = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.bool_)
    return _walk(counts, lo, hi, none, none, none, none, out_cap, none, FLAGS_ONLY, False, no_threats)


@njit(cache=True)
def left_out_flags(counts, lo, hi, out_cap, out_threat):
    """Whether each position of lo..hi of a material (Black to move) must capture, into ``out_cap``,
    and whether it is a threat position a WLD file leaves out
    (:func:`egtb.rules.threats.threat_left_out`), into ``out_threat``, in one walk; returns how
    many must capture.

    >>> cap, threat = np.empty(992, dtype=np.bool_), np.empty(992, dtype=np.bool_)
    >>> left_out_flags(np.array([0, 1, 0, 1]), 0, 992, cap, threat), int(threat.sum())   # 1k-1k
    (72, 22)
    """
    none = np.empty(0, dtype=np.int64)
    return _walk(counts, lo, hi, none, none, none, none, out_cap, none, THREAT_FLAGS, False, out_threat)


@njit(cache=True)
def _walk(counts, lo, hi, out_bm, out_bk, out_wm, out_wk, out_cap, out_at, mode, crowned_only, out_threat):
    """:func:`unrank_range`, :func:`unrank_captures` and :func:`capture_flags` by `mode`: every
    position written at its offset from ``lo`` with whether it must capture in ``out_cap``
    (EVERY_POSITION), the capture positions one after the other with their indices in ``out_at``
    (CAPTURES_ONLY), or whether each must capture alone (FLAGS_ONLY); returns how many positions
    were written (FLAGS_ONLY: how many must capture; THREAT_FLAGS: the same, with the threat
    positions a WLD file leaves out in ``out_threat``, which the other modes leave empty). With
    ``crowned_only`` (CAPTURES_ONLY) a position without a white king on White's crowning row is
    passed over untested."""
    n_bm, n_bk, n_wm, n_wk = counts[0], counts[1], counts[2], counts[3]
    size = unit_size(n_bm, n_bk, n_wm, n_wk)
    free_squares = np.zeros(32, dtype=np.int64)
    rest_squares = np.zeros(32, dtype=np.int64)
    white_men_squares = np.zeros(32, dtype=np.int64)
    i = lo
    k = 0
    m = -1  # the men configuration of the last unit
    men_left = 0  # configurations after it with the same black men: the white men step to the next
    bm = wm = cwm = np.int64(0)
    while i < hi:
        m_next = i // size
        if m_next == m + 1 and men_left > 0:
            cwm = next_combination(cwm)
            wm = deposit_squares(cwm, white_men_squares)
            men_left -= 1
        else:
            bm, wm, cwm, men_left = _men_of(m_next, n_bm, n_wm, white_men_squares)
        m = m_next
        j = i - m * size
        free = ~(bm | wm) & MASK32
        n_free = popcount(free)
        white_count = BINOM[n_free - n_bk, n_wk]
        if n_bk:  # no black king: no square of theirs to place
            fill_squares(free, free_squares)
        white_rank = j % white_count
        cb = colex_unrank(j // white_count, n_free, n_bk)
        cw = colex_unrank(white_rank, n_free - n_bk, n_wk)
        bk = deposit_squares(cb, free_squares)
        if n_wk:
            fill_squares(free & ~bk, rest_squares)
        white_left = white_count - white_rank  # white-king placements left with these black kings
        end = min(hi, (m + 1) * size)
        while True:
            wk = deposit_squares(cw, rest_squares)
            must = (not crowned_only or (wk & WHITE_CROWN_ROW) != 0) and has_capture(bm, bk, wm, wk, 0)
            if mode == FLAGS_ONLY or mode == THREAT_FLAGS:
                out_cap[i - lo] = must
                if mode == THREAT_FLAGS:
                    out_threat[i - lo] = not must and threat_left_out(bm, bk, wm, wk, 0)
                k += must
            elif must or mode == EVERY_POSITION:
                out_bm[k], out_bk[k], out_wm[k], out_wk[k] = bm, bk, wm, wk
                if mode == CAPTURES_ONLY:
                    out_at[k] = i
                else:
                    out_cap[k] = must
                k += 1
            i += 1
            if i == end:
                break
            white_left -= 1
            if white_left == 0:  # the next black kings, the first white kings among the rest
                if n_bk:
                    cb = next_combination(cb)
                bk = deposit_squares(cb, free_squares)
                if n_wk:
                    fill_squares(free & ~bk, rest_squares)
                cw = (np.int64(1) << n_wk) - 1
                white_left = white_count
            elif n_wk:
                cw = next_combination(cw)
    return k


@njit(cache=True)
def _men_of(m, n_bm, n_wm, white_men_squares):
    """The men of configuration `m` (:func:`egtb.positions.index.unrank_men`) as int64 bitboards,
    with what steps the white men on from there: the squares white men may take beside these
    black men (written into ``white_men_squares``), the white men's subset of them (compressed),
    and how many configurations after `m` keep these black men (the white men's colex rank is the
    index's lowest digit)."""
    bm32, wm32 = unrank_men(m, n_bm, n_wm)
    bm, wm = np.int64(bm32), np.int64(wm32)
    if n_wm == 0:
        return bm, wm, np.int64(0), 0
    allowed = WHITE_MEN_SQUARES & ~bm
    fill_squares(allowed, white_men_squares)
    rank = rank_subset(wm, allowed)
    squares = popcount(allowed)
    return bm, wm, colex_unrank(rank, squares, n_wm), BINOM[squares, n_wm] - 1 - rank

