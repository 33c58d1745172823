"""Material slices, colour normalisation and exact position counts.

A material slice is the number of black men, black kings, white men and white
kings, always with Black to move: a position with White to move is stored as
its mirror (square s -> 33 - s, colours swapped). Black men stand only on
squares 1-28 and white men only on 5-32 (men never stand on their own crowning
row), so the counts below are the published counts of the checkers proof.

>>> m = Material.parse("2m1k-1k")
>>> m, m.pieces, m.name
(Material(black_men=2, black_kings=1, white_men=0, white_kings=1), 4, '2m1k-1k')
>>> count_placements(2), count_placements(2, both_colours=True)
(6972, 3488)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from math import comb

import numpy as np
from numba import njit

from egtb.errors import InvalidArgumentError
from egtb.rules.squares import ALL_SQUARES, BLACK, MAX_PER_SIDE, WHITE

#: Squares 1-4 (black men only), 5-28 (either colour), 29-32 (white men only).
BLACK_ONLY_MEN_SQUARES = 0x0000000F
SHARED_MEN_SQUARES = 0x0FFFFFF0
NUM_BLACK_ONLY = 4
NUM_SHARED = 24
NUM_MEN_SQUARES = 28

_SIDE_RE = re.compile(r"^(?:(\d+)m)?(?:(\d+)k)?$")


@dataclass(frozen=True, order=True)
class Material:
    """Piece counts of a slice, Black to move.

    >>> Material(1, 0, 0, 2).mirrored()
    Material(black_men=0, black_kings=2, white_men=1, white_kings=0)
    """

    black_men: int
    """Black men (on squares 1-28)."""
    black_kings: int
    """Black kings (anywhere)."""
    white_men: int
    """White men (on squares 5-32)."""
    white_kings: int
    """White kings (anywhere)."""

    def __post_init__(self) -> None:
        counts = (self.black_men, self.black_kings, self.white_men, self.white_kings)
        if any(c < 0 for c in counts):
            raise InvalidArgumentError(f"negative piece count in {counts}")

    @property
    def pieces(self) -> int:
        """Total number of pieces on the board."""
        return self.black_men + self.black_kings + self.white_men + self.white_kings

    @property
    def men(self) -> int:
        """Number of men of both colours."""
        return self.black_men + self.white_men

    @property
    def black(self) -> int:
        """Number of black pieces."""
        return self.black_men + self.black_kings

    @property
    def white(self) -> int:
        """Number of white pieces."""
        return self.white_men + self.white_kings

    def mirrored(self) -> Material:
        """The same material with colours swapped."""
        return Material(self.white_men, self.white_kings, self.black_men, self.black_kings)

    @property
    def name(self) -> str:
        """Short name: black side, '-', white side; '0' for an empty side.

        >>> Material(2, 0, 0, 0).name, Material(0, 0, 1, 1).name
        ('2m-0', '0-1m1k')
        """
        return f"{_side_name(self.black_men, self.black_kings)}-" \
               f"{_side_name(self.white_men, self.white_kings)}"

    @classmethod
    def parse(cls, name: str) -> Material:
        """Inverse of :attr:`name`.

        >>> Material.parse("1m2k-3m")
        Material(black_men=1, black_kings=2, white_men=3, white_kings=0)
        """
        sides = name.strip().split("-")
        if len(sides) != 2:
            raise InvalidArgumentError(f"material name {name!r} is not 'BLACK-WHITE'")
        black, white = (_parse_side(side, name) for side in sides)
        return cls(*black, *white)

    def __str__(self) -> str:
        return self.name


def pair_of(material: Material) -> tuple[Material, ...]:
    """The materials of a pair (a material and its colours swapped, solved together), smaller first.

    >>> [m.name for m in pair_of(Material.parse("1k-1m"))]
    ['1k-1m', '1m-1k']
    """
    mirrored = material.mirrored()
    return (material,) if mirrored == material else tuple(sorted((material, mirrored)))


def successor_materials(material: Material) -> set[Material]:
    """Materials (normalised, both colours present) Black's moves can lead to outside the pair.

    >>> sorted(m.name for m in successor_materials(Material.parse("1m1k-1k")))
    ['1k-2k']
    """
    out = set()
    bm, bk, wm, wk = material.black_men, material.black_kings, material.white_men, \
        material.white_kings
    movers = [(bm, bk)] + ([(bm - 1, bk + 1)] if bm else [])
    for nbm, nbk in movers:
        for nwm in range(wm + 1):
            for nwk in range(wk + 1):
                if nwm + nwk == 0 or (nbm, nbk, nwm, nwk) == (bm, bk, wm, wk):
                    continue
                out.add(Material(nwm, nwk, nbm, nbk))
    return out - set(pair_of(material))


def _side_name(men: int, kings: int) -> str:
    parts = (f"{men}m" if men else "") + (f"{kings}k" if kings else "")
    return parts or "0"


def _parse_side(side: str, name: str) -> tuple[int, int]:
    if side == "0":
        return 0, 0
    match = _SIDE_RE.match(side)
    if not side or match is None:
        raise InvalidArgumentError(f"bad side {side!r} in material name {name!r}")
    men, kings = match.groups()
    return int(men or 0), int(kings or 0)


def all_materials(max_pieces: int, *, min_pieces: int = 2,
                  max_per_side: int = MAX_PER_SIDE) -> list[Material]:
    """Every material with both colours present and min..max pieces, sorted.

    >>> [m.name for m in all_materials(2)]
    ['1k-1k', '1k-1m', '1m-1k', '1m-1m']
    """
    result = []
    for n in range(max(min_pieces, 2), max_pieces + 1):
        result += [m for m in _materials_with(n, max_per_side=max_per_side)
                   if m.black and m.white]
    return sorted(result, key=lambda m: (m.pieces, m.name))


def _materials_with(n: int, *, max_per_side: int) -> list[Material]:
    """Every material (one colour may be absent) with exactly n pieces."""
    result = []
    for bm in range(n + 1):
        for bk in range(n + 1 - bm):
            for wm in range(n + 1 - bm - bk):
                m = Material(bm, bk, wm, n - bm - bk - wm)
                if m.black <= max_per_side and m.white <= max_per_side:
                    result.append(m)
    return result


def men_configs_with_shared(n_bm: int, n_wm: int, shared: int) -> int:
    """Men configurations with exactly `shared` black men on squares 5-28.

    >>> men_configs_with_shared(1, 1, 0)   # black man on 1-4, white man on 5-32
    112
    """
    return (comb(NUM_BLACK_ONLY, n_bm - shared) * comb(NUM_SHARED, shared)
            * comb(NUM_MEN_SQUARES - shared, n_wm)) if 0 <= shared <= n_bm else 0


def count_men_configs(material: Material) -> int:
    """Number of men configurations (black men on 1-28, white men on 5-32).

    >>> count_men_configs(Material(1, 0, 1, 0))
    760
    """
    bm, wm = material.black_men, material.white_men
    return sum(men_configs_with_shared(bm, wm, k) for k in range(bm + 1))


def count_king_placements(material: Material) -> int:
    """Number of king placements for one men configuration (a unit's size).

    >>> count_king_placements(Material(1, 1, 0, 1))   # 31 * 30
    930
    """
    free = 32 - material.men
    return comb(free, material.black_kings) * comb(free - material.black_kings,
                                                    material.white_kings)


def count_positions(material: Material) -> int:
    """Exact number of positions (Black to move) of a material slice.

    >>> count_positions(Material(0, 1, 0, 1))
    992
    """
    return count_men_configs(material) * count_king_placements(material)


def count_placements(n: int, *, both_colours: bool = False,
                     max_per_side: int = MAX_PER_SIDE) -> int:
    """Number of placements of n pieces of any colours (side to move not counted).

    With ``both_colours`` only placements where both colours are present count.

    >>> [count_placements(n) for n in (1, 2, 3)]
    [120, 6972, 261224]
    """
    return sum(count_positions(m) for m in _materials_with(n, max_per_side=max_per_side)
               if not both_colours or (m.black and m.white))


def material_of(bm: int, bk: int, wm: int, wk: int) -> Material:
    """The material of four bitboards.

    >>> material_of(0b11, 0, 0, 1 << 31)
    Material(black_men=2, black_kings=0, white_men=0, white_kings=1)
    """
    return Material(int(bm).bit_count(), int(bk).bit_count(),
                    int(wm).bit_count(), int(wk).bit_count())


def mirror(bitboard: int) -> int:
    """Mirror a bitboard: square s -> 33 - s (bit i -> bit 31 - i).

    >>> mirror(1) == 1 << 31, mirror(0b1010) == (1 << 30) | (1 << 28)
    (True, True)
    """
    return int(f"{int(bitboard) & ALL_SQUARES:032b}"[::-1], 2)


@njit(cache=True)
def mirror_bb(bitboard):
    """Numba kernel: bit reversal of a 32-bit bitboard, returned as uint32."""
    x = np.int64(bitboard) & ALL_SQUARES
    x = ((x >> 1) & 0x55555555) | ((x & 0x55555555) << 1)
    x = ((x >> 2) & 0x33333333) | ((x & 0x33333333) << 2)
    x = ((x >> 4) & 0x0F0F0F0F) | ((x & 0x0F0F0F0F) << 4)
    x = ((x >> 8) & 0x00FF00FF) | ((x & 0x00FF00FF) << 8)
    x = ((x >> 16) & 0x0000FFFF) | ((x & 0x0000FFFF) << 16)
    return np.uint32(x)


def normalise(bm: int, bk: int, wm: int, wk: int, turn: int) -> tuple[int, int, int, int]:
    """Colour-normalised bitboards (bm, bk, wm, wk), Black to move.

    With White to move, every square is mirrored and colours are swapped.

    >>> normalise(1, 0, 1 << 31, 0, WHITE) == (1, 0, 1 << 31, 0)
    True
    """
    if turn == BLACK:
        return int(bm), int(bk), int(wm), int(wk)
    if turn != WHITE:
        raise InvalidArgumentError(f"turn must be BLACK (0) or WHITE (1), not {turn!r}")
    return mirror(wm), mirror(wk), mirror(bm), mirror(bk)


@njit(cache=True)
def normalise_bb(bm, bk, wm, wk, turn):
    """Numba kernel of :func:`normalise`; returns four uint32 bitboards."""
    if turn == 0:
        return np.uint32(bm), np.uint32(bk), np.uint32(wm), np.uint32(wk)
    return mirror_bb(wm), mirror_bb(wk), mirror_bb(bm), mirror_bb(bk)
