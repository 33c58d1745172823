"""Bijective rank/unrank of the positions of a material slice.

A slice is split into units by the configuration of the men (Chinook's
sub-slicing). Within a slice a position's global index is

    men_index * unit_size + king_index

where ``men_index`` ranks the men configuration (0 .. count_men_configs - 1) and
``king_index`` ranks the kings on the squares the men leave free
(0 .. unit_size - 1): black kings as a combination of the free squares, then
white kings as a combination of the squares still free (index =
black_rank * C(free - n_bk, n_wk) + white_rank).

A combination is ranked in the combinatorial number system (colex order):
positions p_1 < ... < p_n among the allowed squares give sum C(p_i, i). Colex
order is the numeric order of the compressed bitmask, so a unit is enumerated
in index order by Gosper's next-combination trick.

Men configurations: black men are split into those on 1-4 and those on 5-28
(``shared`` of them); configurations are grouped by ``shared`` (ascending), and
inside a group index = (front_rank * C(24, shared) + mid_rank) * C(28 - shared,
n_wm) + white_rank, white men ranked among squares 5-32 not holding a black man.

All kernels take and return bitboards as integers holding 32 bits (square s is
bit s - 1); scalar kernels return uint32 bitboards and int64 indices.

>>> from egtb.positions.material import Material
>>> m = Material(1, 1, 0, 1)
>>> position_rank(m, bm=1, bk=2, wm=0, wk=4)
(0, 0)
>>> position_unrank(m, 0, 0) == (1, 2, 0, 4)
True
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.errors import InvalidPositionError
from egtb.rules.bitboards import lowest_bit64
from egtb.rules.movegen import popcount
from egtb.rules.squares import ALL_SQUARES, BLACK_MEN_SQUARES, MAX_PER_SIDE, WHITE_MEN_SQUARES
from egtb.positions.material import (BLACK_ONLY_MEN_SQUARES, NUM_SHARED, SHARED_MEN_SQUARES, Material,
                                  count_men_configs, men_configs_with_shared)

#: BINOM[n, k] = C(n, k) for 0 <= n, k <= 32 (zero when k > n).
BINOM = np.zeros((33, 33), dtype=np.int64)
for _n in range(33):
    BINOM[_n, 0] = 1
    for _k in range(1, _n + 1):
        BINOM[_n, _k] = BINOM[_n - 1, _k - 1] + BINOM[_n - 1, _k]

_MAX_MEN = MAX_PER_SIDE
#: MEN_OFFSET[n_bm, n_wm, shared]: first men index of the group with `shared`
#: black men on squares 5-28; MEN_OFFSET[n_bm, n_wm, n_bm + 1] is the total.
MEN_OFFSET = np.zeros((_MAX_MEN + 1, _MAX_MEN + 1, _MAX_MEN + 2), dtype=np.int64)
for _bm in range(_MAX_MEN + 1):
    for _wm in range(_MAX_MEN + 1):
        for _s in range(_bm + 1):
            MEN_OFFSET[_bm, _wm, _s + 1] = (MEN_OFFSET[_bm, _wm, _s]
                                            + men_configs_with_shared(_bm, _wm, _s))

#: Bit index of the lowest set bit of x is DEBRUIJN_INDEX[((x & -x) * DEBRUIJN) >> 27].
DEBRUIJN = 0x077CB531
DEBRUIJN_INDEX = np.zeros(32, dtype=np.int64)
for _i in range(32):
    DEBRUIJN_INDEX[(((1 << _i) * DEBRUIJN) & ALL_SQUARES) >> 27] = _i

MASK32 = ALL_SQUARES


@njit(cache=True, inline="always")
def lowest_bit_index(low):
    """Bit index of a single-bit value (0-31)."""
    return DEBRUIJN_INDEX[((np.int64(low) * DEBRUIJN) & MASK32) >> 27]


@njit(cache=True)
def rank_subset(subset, allowed):
    """Colex rank of `subset` among the squares of `allowed` (subset within allowed)."""
    x = np.int64(subset) & MASK32
    allowed = np.int64(allowed) & MASK32
    rank = np.int64(0)
    i = 1
    while x:
        low = x & -x
        rank += BINOM[popcount(allowed & (low - 1)), i]
        x ^= low
        i += 1
    return rank


@njit(cache=True)
def deposit(compressed, allowed):
    """Spread the bits of `compressed` onto the set squares of `allowed` (pdep)."""
    allowed = np.int64(allowed) & MASK32
    c = np.int64(compressed)
    result = np.int64(0)
    while c:
        low = allowed & -allowed
        if c & 1:
            result |= low
        allowed ^= low
        c >>= 1
    return result


@njit(cache=True)
def unrank_subset(rank, allowed, n):
    """Inverse of :func:`rank_subset`: the n-square subset of `allowed` with that rank."""
    allowed = np.int64(allowed) & MASK32
    return deposit(colex_unrank(rank, popcount(allowed), n), allowed)


@njit(cache=True)
def colex_unrank(rank, items, n):
    """The n-subset of the bits 0..items-1 with that colex rank (:func:`unrank_subset` of the
    low `items` squares, undeposited).

    >>> bin(colex_unrank(0, 5, 2)), bin(colex_unrank(9, 5, 2))
    ('0b11', '0b11000')
    """
    r = np.int64(rank)
    p = items - 1
    compressed = np.int64(0)
    for i in range(n, 0, -1):
        while BINOM[p, i] > r:
            p -= 1
        r -= BINOM[p, i]
        compressed |= np.int64(1) << p
        p -= 1
    return compressed


@njit(cache=True)
def unit_size(n_bm, n_bk, n_wm, n_wk):
    """Number of king placements in a unit: C(32 - men, n_bk) * C(32 - men - n_bk, n_wk)."""
    free = 32 - n_bm - n_wm
    return BINOM[free, n_bk] * BINOM[free - n_bk, n_wk]


@njit(cache=True)
def rank_kings(bk, wk, occupied_by_men, n_bk, n_wk):
    """King index of (bk, wk) among the squares not in `occupied_by_men`."""
    free = ~np.int64(occupied_by_men) & MASK32
    black_rank = rank_subset(bk, free)
    free2 = free & ~np.int64(bk)
    return black_rank * BINOM[popcount(free2), n_wk] + rank_subset(wk, free2)


@njit(cache=True)
def unrank_kings(index, occupied_by_men, n_bk, n_wk):
    """Inverse of :func:`rank_kings`: the (bk, wk) uint32 bitboards of a king index."""
    free = ~np.int64(occupied_by_men) & MASK32
    white_count = BINOM[popcount(free) - n_bk, n_wk]
    bk = unrank_subset(index // white_count, free, n_bk)
    wk = unrank_subset(index % white_count, free & ~bk, n_wk)
    return np.uint32(bk), np.uint32(wk)


@njit(cache=True)
def rank_men(bm, wm, n_bm, n_wm):
    """Men-configuration index of black men `bm` (on 1-28) and white men `wm` (on 5-32)."""
    bm = np.int64(bm) & MASK32
    shared = popcount(bm & SHARED_MEN_SQUARES)
    front = rank_subset(bm & BLACK_ONLY_MEN_SQUARES, BLACK_ONLY_MEN_SQUARES)
    mid = rank_subset(bm & SHARED_MEN_SQUARES, SHARED_MEN_SQUARES)
    white_free = WHITE_MEN_SQUARES & ~bm
    white = rank_subset(wm, white_free)
    return (MEN_OFFSET[n_bm, n_wm, shared]
            + (front * BINOM[NUM_SHARED, shared] + mid) * BINOM[28 - shared, n_wm] + white)


@njit(cache=True)
def unrank_men(index, n_bm, n_wm):
    """Inverse of :func:`rank_men`: the (bm, wm) uint32 bitboards of a men index."""
    shared = 0
    while MEN_OFFSET[n_bm, n_wm, shared + 1] <= index:
        shared += 1
    rest = np.int64(index) - MEN_OFFSET[n_bm, n_wm, shared]
    white_count = BINOM[28 - shared, n_wm]
    white = rest % white_count
    rest //= white_count
    mid_count = BINOM[NUM_SHARED, shared]
    bm = (unrank_subset(rest // mid_count, BLACK_ONLY_MEN_SQUARES, n_bm - shared)
          | unrank_subset(rest % mid_count, SHARED_MEN_SQUARES, shared))
    wm = unrank_subset(white, WHITE_MEN_SQUARES & ~bm, n_wm)
    return np.uint32(bm), np.uint32(wm)


@njit(cache=True, inline="always")
def next_combination(c):
    """Gosper's hack: the next larger integer with as many set bits as c (c > 0), its division
    by the lowest bit a shift by that bit's index, the CPU's count of trailing zeros (the 64-bit
    division took about a third of a step of the compact writer's capture walk).

    >>> [int(next_combination(c)) for c in (0b0111, 0b1011, 0b1110, 1 << 31)]
    [11, 13, 19, 4294967296]
    """
    low = c & -c
    ripple = c + low
    return ripple | ((ripple ^ c) >> (lowest_bit64(c) + 2))


@njit(cache=True)
def fill_squares(allowed, squares):
    """Write the single-bit values of `allowed`'s squares, ascending, into `squares`."""
    i = 0
    while allowed:
        low = allowed & -allowed
        squares[i] = low
        allowed ^= low
        i += 1


@njit(cache=True, inline="always")
def deposit_squares(c, squares):
    """pdep of a compressed mask `c` using the single-bit values in `squares`."""
    result = np.int64(0)
    while c:
        low = c & -c
        result |= squares[lowest_bit_index(low)]
        c ^= low
    return result


@njit(cache=True)
def unrank_unit(n_bk, n_wk, bm, wm, out_bk, out_wk):
    """Fill out_bk[i], out_wk[i] with the kings of every king index i of a unit.

    The arrays must have unit_size(...) entries; men are `bm`, `wm`.
    """
    free = ~(np.int64(bm) | np.int64(wm)) & MASK32
    n_free = popcount(free)
    black_count = BINOM[n_free, n_bk]
    white_count = BINOM[n_free - n_bk, n_wk]
    free_squares = np.zeros(32, dtype=np.int64)
    rest_squares = np.zeros(32, dtype=np.int64)
    fill_squares(free, free_squares)
    cb = (np.int64(1) << n_bk) - 1
    i = 0
    for _ in range(black_count):
        bk = deposit_squares(cb, free_squares)
        fill_squares(free & ~bk, rest_squares)
        cw = (np.int64(1) << n_wk) - 1
        for _ in range(white_count):
            out_bk[i] = bk
            out_wk[i] = deposit_squares(cw, rest_squares)
            i += 1
            if n_wk:
                cw = next_combination(cw)
        if n_bk:
            cb = next_combination(cb)


#: Material codes are base-16 digits (black men, black kings, white men, white
#: kings): the index of a material in the kernels' per-material tables.
CODE_BASE = 16
NUM_CODES = CODE_BASE ** 4


@njit(cache=True, inline="always")
def material_code(n_bm, n_bk, n_wm, n_wk):
    """Code of the material with these piece counts (base-16 digits)."""
    return ((n_bm * CODE_BASE + n_bk) * CODE_BASE + n_wm) * CODE_BASE + n_wk


@njit(cache=True)
def position_index(bm, bk, wm, wk):
    """Global index of a Black-to-move position inside its material's table.

    The counts come from the bitboards: index = men_index * unit_size + king_index.
    """
    n_bm, n_bk, n_wm, n_wk = popcount(bm), popcount(bk), popcount(wm), popcount(wk)
    men = rank_men(bm, wm, n_bm, n_wm)
    kings = rank_kings(bk, wk, np.int64(bm) | np.int64(wm), n_bk, n_wk)
    return men * unit_size(n_bm, n_bk, n_wm, n_wk) + kings


@njit(cache=True)
def rank_positions(bm, bk, wm, wk, n_bm, n_bk, n_wm, n_wk, out):
    """Fill out[i] with the global index (within the slice) of position i of the arrays."""
    size = unit_size(n_bm, n_bk, n_wm, n_wk)
    for i in range(bm.shape[0]):
        men = rank_men(bm[i], wm[i], n_bm, n_wm)
        kings = rank_kings(bk[i], wk[i], np.int64(bm[i]) | np.int64(wm[i]), n_bk, n_wk)
        out[i] = men * size + kings


@njit(cache=True)
def rank_unit_kings(bk, wk, occupied_by_men, n_bk, n_wk, out):
    """Fill out[i] with the king index of (bk[i], wk[i]) in one unit."""
    for i in range(bk.shape[0]):
        out[i] = rank_kings(bk[i], wk[i], occupied_by_men, n_bk, n_wk)


@njit(cache=True)
def unrank_positions(indices, n_bm, n_bk, n_wm, n_wk, out_bm, out_bk, out_wm, out_wk):
    """Inverse of :func:`rank_positions`: fill the four bitboard arrays from global indices."""
    size = unit_size(n_bm, n_bk, n_wm, n_wk)
    for i in range(indices.shape[0]):
        bm, wm = unrank_men(indices[i] // size, n_bm, n_wm)
        bk, wk = unrank_kings(indices[i] % size, bm | wm, n_bk, n_wk)
        out_bm[i], out_bk[i], out_wm[i], out_wk[i] = bm, bk, wm, wk


# ---------------------------------------------------------------- Python level

def code_of_material(material: Material) -> int:
    """The material code of a Material.

    >>> code_of_material(Material(1, 0, 0, 1))
    4097
    """
    return int(material_code(*_counts(material)))


def material_of_code(code: int) -> Material:
    """Inverse of :func:`code_of_material`.

    >>> material_of_code(4097).name
    '1m-1k'
    """
    code, n_wk = divmod(code, CODE_BASE)
    code, n_wm = divmod(code, CODE_BASE)
    n_bm, n_bk = divmod(code, CODE_BASE)
    return Material(n_bm, n_bk, n_wm, n_wk)


def _counts(material: Material) -> tuple[int, int, int, int]:
    return (material.black_men, material.black_kings,
            material.white_men, material.white_kings)


@njit(cache=True)
def men_config_total(n_bm, n_wm):
    """Number of men configurations (units) with these men counts, for kernels
    (the same figure as :func:`egtb.positions.material.count_men_configs`).

    >>> int(men_config_total(1, 1))
    760
    """
    return MEN_OFFSET[n_bm, n_wm, n_bm + 1]


def men_config_rank(material: Material, black_men_bb: int, white_men_bb: int) -> int:
    """Index of a men configuration, 0 .. count_men_configs - 1.

    >>> men_config_rank(Material(1, 0, 1, 0), 1, 1 << 4)
    0
    """
    _check_men(material, black_men_bb, white_men_bb)
    return int(rank_men(black_men_bb, white_men_bb, material.black_men, material.white_men))


def men_config_unrank(material: Material, index: int) -> tuple[int, int]:
    """Inverse of :func:`men_config_rank`: (black men, white men) bitboards.

    >>> men_config_unrank(Material(1, 0, 1, 0), 0) == (1, 1 << 4)
    True
    """
    if not 0 <= index < count_men_configs(material):
        raise IndexError(f"men index {index} out of range for {material.name}")
    bm, wm = unrank_men(index, material.black_men, material.white_men)
    return int(bm), int(wm)


def slice_unit_size(material: Material) -> int:
    """Number of positions in each unit of a material (king placements).

    >>> slice_unit_size(Material(0, 1, 0, 1))
    992
    """
    return int(unit_size(*_counts(material)))


def position_rank(material: Material, bm: int, bk: int, wm: int, wk: int) -> tuple[int, int]:
    """(men_config_index, king_index) of a position of `material`, Black to move.

    >>> position_rank(Material(0, 1, 0, 1), bm=0, bk=1 << 31, wm=0, wk=1 << 30)
    (0, 991)
    """
    _check_men(material, bm, wm)
    _check_kings(material, bm, bk, wm, wk)
    men = rank_men(bm, wm, material.black_men, material.white_men)
    kings = rank_kings(bk, wk, bm | wm, material.black_kings, material.white_kings)
    return int(men), int(kings)


def position_unrank(material: Material, men_index: int, king_index: int
                    ) -> tuple[int, int, int, int]:
    """Inverse of :func:`position_rank`: (bm, bk, wm, wk) bitboards.

    >>> position_unrank(Material(0, 1, 0, 1), 0, 991) == (0, 1 << 31, 0, 1 << 30)
    True
    """
    bm, wm = men_config_unrank(material, men_index)
    if not 0 <= king_index < slice_unit_size(material):
        raise IndexError(f"king index {king_index} out of range for {material.name}")
    bk, wk = unrank_kings(king_index, bm | wm, material.black_kings, material.white_kings)
    return bm, int(bk), wm, int(wk)


def global_rank(material: Material, bm: int, bk: int, wm: int, wk: int) -> int:
    """Index of a position within its slice: men_index * unit size + king_index.

    >>> global_rank(Material(1, 0, 0, 1), bm=1, bk=0, wm=0, wk=1 << 1)
    0
    """
    men, kings = position_rank(material, bm, bk, wm, wk)
    return men * slice_unit_size(material) + kings


def global_unrank(material: Material, index: int) -> tuple[int, int, int, int]:
    """Inverse of :func:`global_rank`.

    >>> global_unrank(Material(1, 0, 0, 1), 0) == (1, 0, 0, 2)
    True
    """
    men, kings = divmod(index, slice_unit_size(material))
    return position_unrank(material, men, kings)


def _check_men(material: Material, bm: int, wm: int) -> None:
    if int(bm).bit_count() != material.black_men or int(wm).bit_count() != material.white_men:
        raise InvalidPositionError(f"men {bm:#x}/{wm:#x} do not match material {material.name}")
    if bm & ~BLACK_MEN_SQUARES or wm & ~WHITE_MEN_SQUARES or bm & wm:
        raise InvalidPositionError(f"men {bm:#x}/{wm:#x} stand on illegal or shared squares")


def _check_kings(material: Material, bm: int, bk: int, wm: int, wk: int) -> None:
    if int(bk).bit_count() != material.black_kings or int(wk).bit_count() != material.white_kings:
        raise InvalidPositionError(f"kings {bk:#x}/{wk:#x} do not match material {material.name}")
    if (bm | wm) & (bk | wk) or bk & wk or (bk | wk) >> 32:
        raise InvalidPositionError(f"kings {bk:#x}/{wk:#x} overlap other pieces or leave the board")
