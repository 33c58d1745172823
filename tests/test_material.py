"""Tests for egtb.positions.material: slices, counts, colour normalisation."""

from itertools import combinations

import numpy as np
import pytest

from egtb.positions.material import (Material, all_materials, count_men_configs, count_placements,
                           count_positions, material_of, mirror, mirror_bb, normalise,
                           normalise_bb)
from egtb.rules.squares import BLACK, WHITE

ALL_PLACEMENTS = [120, 6972, 261224, 7092774, 148688232, 2503611964, 34779531480]
BOTH_COLOURS = [3488, 196032, 6209316, 139450808, 2426085676]


@pytest.mark.parametrize("n, expected", list(enumerate(ALL_PLACEMENTS, start=1)))
def test_published_placement_counts(n, expected):
    assert count_placements(n) == expected


@pytest.mark.parametrize("n, expected", list(enumerate(BOTH_COLOURS, start=2)))
def test_published_both_colour_counts(n, expected):
    assert count_placements(n, both_colours=True) == expected


def test_both_colour_counts_are_sums_over_all_materials():
    for n in range(2, 7):
        materials = [m for m in all_materials(n) if m.pieces == n]
        assert sum(count_positions(m) for m in materials) == BOTH_COLOURS[n - 2]


def _brute_force_count(m: Material) -> int:
    count = 0
    for bm in combinations(range(1, 29), m.black_men):
        for wm in combinations(range(5, 33), m.white_men):
            if set(bm) & set(wm):
                continue
            free = [s for s in range(1, 33) if s not in bm and s not in wm]
            for bk in combinations(free, m.black_kings):
                rest = len(free) - m.black_kings
                count += len(list(combinations(range(rest), m.white_kings)))
    return count


@pytest.mark.parametrize("name", ["1m-1m", "2m-1m", "1m1k-1m", "1k-2k", "1m-2m", "2m-0"])
def test_count_positions_matches_brute_force(name):
    m = Material.parse(name)
    assert count_positions(m) == _brute_force_count(m)


def test_men_configs_one_each():
    # black man on 1-4 (4 * 28) or on 5-28 (24 * 27)
    assert count_men_configs(Material(1, 0, 1, 0)) == 4 * 28 + 24 * 27


def test_all_materials_properties():
    materials = all_materials(6)
    assert len(materials) == len(set(materials))
    assert all(2 <= m.pieces <= 6 and m.black and m.white for m in materials)
    assert [m.name for m in all_materials(2)] == ["1k-1k", "1k-1m", "1m-1k", "1m-1m"]
    assert set(all_materials(5)) == {m.mirrored() for m in all_materials(5)}
    assert max(m.black for m in all_materials(14, min_pieces=14)) == 12


def test_material_name_round_trip():
    for m in all_materials(8) + [Material(3, 0, 0, 0), Material(0, 0, 0, 0), Material(12, 0, 0, 12)]:
        assert Material.parse(m.name) == m
    assert Material(2, 1, 0, 1).name == "2m1k-1k"
    assert Material(0, 0, 1, 0).name == "0-1m"


@pytest.mark.parametrize("bad", ["2m1k", "1x-1k", "m-1k", "1k1m-1k", "1k-1k-1k", "-1k"])
def test_material_parse_rejects(bad):
    with pytest.raises(ValueError):
        Material.parse(bad)


def test_material_mirrored_and_pieces():
    m = Material(2, 1, 0, 3)
    assert m.mirrored() == Material(0, 3, 2, 1)
    assert m.mirrored().mirrored() == m
    assert (m.pieces, m.men, m.black, m.white) == (6, 2, 3, 3)
    with pytest.raises(ValueError):
        Material(-1, 0, 0, 0)


def test_mirror_squares_and_involution():
    rng = np.random.default_rng(1)
    for s in range(1, 33):
        assert mirror(1 << (s - 1)) == 1 << (33 - s - 1)
    for x in rng.integers(0, 2**32, size=2000, dtype=np.uint64):
        x = int(x)
        assert mirror(mirror(x)) == x
        assert int(mirror_bb(x)) == mirror(x)
        assert int(mirror_bb(np.uint32(x))) == mirror(x)
        assert mirror(x).bit_count() == x.bit_count()


def _random_position(rng):
    squares = rng.permutation(np.arange(1, 33))[: rng.integers(2, 9)]
    bm = bk = wm = wk = 0
    for s in squares:
        s = int(s)
        kind = rng.integers(0, 4)
        if kind == 0 and s <= 28:
            bm |= 1 << (s - 1)
        elif kind == 2 and s >= 5:
            wm |= 1 << (s - 1)
        elif kind in (0, 1):
            bk |= 1 << (s - 1)
        else:
            wk |= 1 << (s - 1)
    return bm, bk, wm, wk


def test_normalise_properties():
    rng = np.random.default_rng(2)
    for _ in range(2000):
        pos = _random_position(rng)
        assert normalise(*pos, BLACK) == pos
        flipped = normalise(*pos, WHITE)
        assert normalise(*flipped, WHITE) == pos          # involution
        assert material_of(*flipped) == material_of(*pos).mirrored()  # colours swapped
        bm, bk, wm, wk = flipped
        assert bm & ~0x0FFFFFFF == 0 and wm & ~0xFFFFFFF0 == 0     # men on legal squares
        assert (bm | bk | wm | wk).bit_count() == sum(x.bit_count() for x in pos)
        assert tuple(int(x) for x in normalise_bb(*pos, WHITE)) == flipped
        assert tuple(int(x) for x in normalise_bb(*pos, BLACK)) == pos


def test_normalise_rejects_bad_turn():
    with pytest.raises(ValueError):
        normalise(1, 0, 0, 0, 2)
