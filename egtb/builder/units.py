"""A material pair's units: one men configuration of M with its mirror in mirror(M).

King moves stay inside a unit; a man move goes to a unit whose potential
(:func:`config_potential`) is one higher, so units solve by decreasing
potential (:func:`order_units`). :func:`locate_unit` finds where a unit's
halves lie in the solver's flat arrays (:mod:`egtb.builder.solve`).

>>> [int(c) for c in order_units(1, 0, False)][:3]
[24, 25, 26]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.positions.index import (BINOM, deposit_squares, fill_squares, material_code, men_config_total,
                                  next_combination, popcount, rank_men, unrank_men, unrank_subset)
from egtb.positions.material import BLACK_ONLY_MEN_SQUARES, NUM_SHARED, SHARED_MEN_SQUARES, mirror_bb
from egtb.rules.squares import WHITE_MEN_SQUARES

__all__ = ["config_potential", "locate_unit", "order_units", "row_sum", "unit_potentials"]

#: Squares by bit of their row number (row = square // 4): rows 1, 3, 5, 7; rows 2, 3, 6, 7;
#: rows 4-7. The sum of the rows of a set of squares is a sum of three popcounts.
ROW_BIT_SQUARES = (0xF0F0F0F0, 0xFF00FF00, 0xFFFF0000)


@njit(cache=True, inline="always")
def row_sum(squares):
    """Sum of the rows (0-7, square // 4) of a set of squares."""
    return (popcount(squares & ROW_BIT_SQUARES[0]) + 2 * popcount(squares & ROW_BIT_SQUARES[1])
            + 4 * popcount(squares & ROW_BIT_SQUARES[2]))


@njit(cache=True, inline="always")
def config_potential(bm, wm):
    """Sum of rows of black men plus sum of (7 - row) of white men; +1 per man move.

    >>> int(config_potential(np.int64(1 << 4), np.int64(1 << 31)))
    1
    """
    return row_sum(bm) + 7 * popcount(wm) - row_sum(wm)


@njit(cache=True)
def order_units(n_bm, n_wm, symmetric):
    """Men-configuration indices of M to solve, by decreasing potential.

    For a symmetric material only one of (c, mirror c) is kept (the smaller index).
    Ties keep index order, so the order is deterministic.

    The configurations are enumerated in index order (:func:`egtb.positions.index.rank_men`:
    the black men unranked once per placement, the white men's placements then
    following one another), and sorted by counting (potentials are below
    7 * men): a few seconds less for the biggest all-men 6-piece pairs.

    >>> [int(c) for c in order_units(1, 0, False)][:3]
    [24, 25, 26]
    """
    n_configs = men_config_total(n_bm, n_wm)
    potential = np.empty(n_configs, dtype=np.int16)  # -1: not kept
    white_squares = np.zeros(32, dtype=np.int64)
    c = 0
    for shared in range(n_bm + 1):
        front_count = BINOM[popcount(BLACK_ONLY_MEN_SQUARES), n_bm - shared]
        mid_count = BINOM[NUM_SHARED, shared]
        white_count = BINOM[28 - shared, n_wm]
        if mid_count == 0 or white_count == 0:
            continue
        for front in range(front_count):
            front_men = unrank_subset(front, BLACK_ONLY_MEN_SQUARES, n_bm - shared)
            for mid in range(mid_count):
                bm = front_men | unrank_subset(mid, SHARED_MEN_SQUARES, shared)
                fill_squares(WHITE_MEN_SQUARES & ~bm, white_squares)
                cw = (np.int64(1) << n_wm) - 1
                for _ in range(white_count):
                    wm = deposit_squares(cw, white_squares)
                    potential[c] = config_potential(bm, wm)
                    if symmetric and rank_men(mirror_bb(wm), mirror_bb(bm), n_bm, n_wm) < c:
                        potential[c] = -1
                    c += 1
                    if n_wm:
                        cw = next_combination(cw)
    top = 7 * (n_bm + n_wm)
    starts = np.zeros(top + 2, dtype=np.int64)
    for c in range(n_configs):
        starts[top - potential[c]] += 1  # by decreasing potential; not kept: past the end
    total = 0
    for p in range(top + 1):
        starts[p], total = total, total + starts[p]
    out = np.empty(total, dtype=np.int64)
    for c in range(n_configs):
        if potential[c] >= 0:
            out[starts[top - potential[c]]] = c
            starts[top - potential[c]] += 1
    return out


@njit(cache=True)
def unit_potentials(configs, n_bm, n_wm):
    """The potential (:func:`config_potential`) of each men configuration of `configs`.

    >>> [int(p) for p in unit_potentials(order_units(1, 0, False), 1, 0)][:5]
    [6, 6, 6, 6, 5]
    """
    out = np.empty(configs.shape[0], dtype=np.int64)
    for u in range(configs.shape[0]):
        bm, wm = unrank_men(configs[u], n_bm, n_wm)
        out[u] = config_potential(bm, wm)
    return out


@njit(cache=True)
def locate_unit(ca, counts, offsets, size, men, base):
    """Fill the men (`men[h]`: black, white) and flat offsets (`base[h]`) of the halves of unit `ca`.

    Half 0 is men configuration `ca` of M, half 1 its mirror in mirror(M);
    returns the number of halves (1 when the two are the same).
    """
    bm_a, wm_a = unrank_men(ca, counts[0, 0], counts[0, 2])
    men[0, 0], men[0, 1] = bm_a, wm_a
    men[1, 0], men[1, 1] = mirror_bb(wm_a), mirror_bb(bm_a)
    cb = rank_men(men[1, 0], men[1, 1], counts[1, 0], counts[1, 2])
    symmetric = True
    for j in range(4):
        if counts[0, j] != counts[1, j]:
            symmetric = False
    base[0] = offsets[material_code(counts[0, 0], counts[0, 1], counts[0, 2], counts[0, 3])] \
        + ca * size
    base[1] = offsets[material_code(counts[1, 0], counts[1, 1], counts[1, 2], counts[1, 3])] \
        + cb * size
    return 1 if (symmetric and cb == ca) else 2
