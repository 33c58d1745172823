"""Tests for egtb.positions.index: bijective rank/unrank of slices, units and men configurations."""

from itertools import combinations
from math import comb

import numpy as np
import pytest
from numba import njit

from egtb.positions.index import (BINOM, MEN_OFFSET, global_rank, global_unrank,
                        men_config_rank, men_config_unrank, position_rank, position_unrank,
                        rank_kings, rank_men, rank_positions, rank_subset, rank_unit_kings,
                        slice_unit_size, unit_size, unrank_kings, unrank_men, unrank_positions,
                        unrank_subset, unrank_unit)
from egtb.positions.material import Material, all_materials, count_men_configs, count_positions

BLACK_MEN_OK = 0x0FFFFFFF
WHITE_MEN_OK = 0xFFFFFFF0


@njit(cache=True)
def _enumerate_slice(n_bm, n_bk, n_wm, n_wk, n_men):
    """Every position of a slice, in global-index order, via unrank_men + unrank_unit."""
    size = unit_size(n_bm, n_bk, n_wm, n_wk)
    bm = np.empty(n_men * size, np.uint32)
    wm = np.empty(n_men * size, np.uint32)
    bk = np.empty(n_men * size, np.uint32)
    wk = np.empty(n_men * size, np.uint32)
    for m in range(n_men):
        b, w = unrank_men(m, n_bm, n_wm)
        lo = m * size
        bm[lo:lo + size] = b
        wm[lo:lo + size] = w
        unrank_unit(n_bk, n_wk, b, w, bk[lo:lo + size], wk[lo:lo + size])
    return bm, bk, wm, wk


def _enumerate(m: Material):
    return _enumerate_slice(m.black_men, m.black_kings, m.white_men, m.white_kings,
                            count_men_configs(m))


def _counts(m):
    return m.black_men, m.black_kings, m.white_men, m.white_kings


def _popcounts(x):
    return np.unpackbits(x.astype("<u4").view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1)


def _assert_valid(m, bm, bk, wm, wk):
    for arr, n in zip((bm, bk, wm, wk), _counts(m)):
        assert (_popcounts(arr) == n).all()
    union = bm | bk | wm | wk
    assert (_popcounts(union) == m.pieces).all()      # no two pieces on one square
    assert not (bm & ~np.uint32(BLACK_MEN_OK)).any()
    assert not (wm & ~np.uint32(WHITE_MEN_OK)).any()


def _ranks(m, bm, bk, wm, wk):
    out = np.empty(len(bm), np.int64)
    rank_positions(bm, bk, wm, wk, *_counts(m), out)
    return out


def test_binomial_table():
    for n in range(33):
        for k in range(33):
            assert BINOM[n, k] == comb(n, k)


def test_subset_round_trip():
    allowed = 0b1011_0110_1110_0101_1111_0000_1010_0111
    positions = [i for i in range(32) if allowed >> i & 1]
    for n in range(4):
        ranks = []
        for combo in combinations(positions, n):
            subset = sum(1 << i for i in combo)
            r = rank_subset(subset, allowed)
            assert unrank_subset(r, allowed, n) == subset
            ranks.append(r)
        assert sorted(ranks) == list(range(comb(len(positions), n)))


@pytest.mark.parametrize("m", all_materials(3), ids=lambda m: m.name)
def test_small_slices_are_bijective_and_complete(m):
    bm, bk, wm, wk = _enumerate(m)
    assert len(bm) == count_positions(m)
    _assert_valid(m, bm, bk, wm, wk)
    ranks = _ranks(m, bm, bk, wm, wk)
    assert (ranks == np.arange(len(bm))).all()      # rank(unrank(i)) == i: 0..N-1, no duplicates
    keys = set(zip(bm.tolist(), bk.tolist(), wm.tolist(), wk.tolist()))
    assert len(keys) == len(bm)                      # unrank is injective


@pytest.mark.parametrize("name", ["1m-1m", "1k-1m", "2k-1k", "1m1k-1m", "2m-1k"])
def test_small_slices_match_brute_force(name):
    m = Material.parse(name)
    expected = set()
    for bm in combinations(range(28), m.black_men):
        for wm in combinations(range(4, 32), m.white_men):
            if set(bm) & set(wm):
                continue
            free = [s for s in range(32) if s not in bm and s not in wm]
            for bk in combinations(free, m.black_kings):
                for wk in combinations([s for s in free if s not in bk], m.white_kings):
                    expected.add(tuple(sum(1 << s for s in c) for c in (bm, bk, wm, wk)))
    bm, bk, wm, wk = _enumerate(m)
    assert set(zip(bm.tolist(), bk.tolist(), wm.tolist(), wk.tolist())) == expected


def test_every_four_piece_position_round_trips():
    total = 0
    for m in all_materials(4, min_pieces=4):
        bm, bk, wm, wk = _enumerate(m)
        assert (_ranks(m, bm, bk, wm, wk) == np.arange(len(bm))).all(), m.name
        total += len(bm)
    assert total == 6209316


@pytest.mark.parametrize("name", ["3k-2k", "2m1k-1m1k", "1m-4k", "3m-3m"])
def test_every_position_of_units_round_trips(name):
    m = Material.parse(name)
    size = slice_unit_size(m)
    n_men = count_men_configs(m)
    for men_index in sorted({0, n_men // 3, n_men - 1}):
        b, w = unrank_men(men_index, m.black_men, m.white_men)
        bk = np.empty(size, np.uint32)
        wk = np.empty(size, np.uint32)
        unrank_unit(m.black_kings, m.white_kings, b, w, bk, wk)
        bm = np.full(size, b, np.uint32)
        wm = np.full(size, w, np.uint32)
        _assert_valid(m, bm, bk, wm, wk)
        out = np.empty(size, np.int64)
        rank_unit_kings(bk, wk, b | w, m.black_kings, m.white_kings, out)
        assert (out == np.arange(size)).all()
        assert (_ranks(m, bm, bk, wm, wk) == men_index * size + np.arange(size)).all()


def test_unrank_unit_agrees_with_unrank_kings():
    m = Material.parse("2m1k-1m1k")
    b, w = unrank_men(1234, 2, 1)
    size = slice_unit_size(m)
    bk = np.empty(size, np.uint32)
    wk = np.empty(size, np.uint32)
    unrank_unit(1, 1, b, w, bk, wk)
    for i in range(0, size, 7):
        assert unrank_kings(i, b | w, 1, 1) == (bk[i], wk[i])
        assert rank_kings(bk[i], wk[i], b | w, 1, 1) == i


@pytest.mark.parametrize("name", ["4m-3m", "2m2k-2m1k", "6m-6m", "12m-12m", "1m4k-3k", "5k-5k"])
def test_random_sample_of_big_slices_round_trips(name):
    m = Material.parse(name)
    rng = np.random.default_rng(m.pieces)
    total = count_positions(m)
    indices = np.unique(np.concatenate([rng.integers(0, total, 20000), [0, total - 1]]))
    arrays = [np.empty(len(indices), np.uint32) for _ in range(4)]
    unrank_positions(indices.astype(np.int64), *_counts(m), *arrays)
    _assert_valid(m, *arrays)
    assert (_ranks(m, *arrays) == indices).all()


@pytest.mark.parametrize("n_bm, n_wm", [(0, 0), (1, 0), (0, 1), (1, 1), (2, 1), (2, 2), (5, 0)])
def test_men_configs_bijective(n_bm, n_wm):
    count = MEN_OFFSET[n_bm, n_wm, n_bm + 1]
    assert count == count_men_configs(Material(n_bm, 0, n_wm, 0))
    seen = set()
    for index in range(count):
        bm, wm = unrank_men(index, n_bm, n_wm)
        assert int(bm).bit_count() == n_bm and int(wm).bit_count() == n_wm
        assert not bm & wm and not bm & ~BLACK_MEN_OK and not wm & ~WHITE_MEN_OK
        assert rank_men(bm, wm, n_bm, n_wm) == index
        seen.add((int(bm), int(wm)))
    assert len(seen) == count


def test_men_config_python_api():
    m = Material(2, 0, 2, 1)
    n = count_men_configs(m)
    for index in (0, 1, n // 2, n - 1):
        bm, wm = men_config_unrank(m, index)
        assert men_config_rank(m, bm, wm) == index
    with pytest.raises(IndexError):
        men_config_unrank(m, n)
    with pytest.raises(ValueError):
        men_config_rank(m, 1 << 30, 1 << 4)   # black man on 31


def test_position_python_api_round_trip():
    rng = np.random.default_rng(7)
    for m in all_materials(6, min_pieces=5)[::9]:
        total = count_positions(m)
        for index in rng.integers(0, total, 30).tolist() + [0, total - 1]:
            pos = global_unrank(m, index)
            assert global_rank(m, *pos) == index
            men, kings = position_rank(m, *pos)
            assert position_unrank(m, men, kings) == pos
            assert men * slice_unit_size(m) + kings == index


def test_position_rank_rejects_bad_positions():
    m = Material(1, 1, 0, 1)
    with pytest.raises(ValueError):
        position_rank(m, bm=1, bk=1, wm=0, wk=2)        # king on a man
    with pytest.raises(ValueError):
        position_rank(m, bm=1, bk=2, wm=0, wk=0)        # missing white king
    with pytest.raises(IndexError):
        position_unrank(m, 0, slice_unit_size(m))


def test_unit_size_formula():
    assert unit_size(2, 1, 1, 1) == comb(29, 1) * comb(28, 1)
    assert unit_size(0, 3, 0, 2) == comb(32, 3) * comb(29, 2)
    assert slice_unit_size(Material(0, 1, 0, 1)) == 992


# the walk (egtb.positions.walk) steps from a range's first position instead of unranking each: the
# white men to their next combination under the same black men, the kings to the next placement;
# men-only materials step the men at every position, the others at each unit's end
@pytest.mark.parametrize("name", ["2m-3m", "3m-1m", "1k-4m", "4m-1k", "2m1k-2m", "1m2k-1m1k", "3k-2k", "5m-3m",
                                  "3m-4m1k"])
def test_a_walk_over_a_range_unranks_every_position_as_the_index_does(name):
    from egtb.formats.compact.layout import material_counts
    from egtb.positions.walk import capture_flags, unrank_captures, unrank_range

    m = Material.parse(name)
    total = count_positions(m)
    for lo, hi in [(0, min(total, 1_500_000)), (total - 70_001, total), (total // 2 + 13, total // 2 + 41)]:
        lo = max(lo, 0)
        walked = [np.empty(hi - lo, np.int64) for _ in range(4)]
        must = np.empty(hi - lo, np.bool_)
        unrank_range(material_counts(m), lo, hi, *walked, must)
        expected = [np.empty(hi - lo, np.uint32) for _ in range(4)]
        unrank_positions(np.arange(lo, hi, dtype=np.int64), *_counts(m), *expected)
        for got, want in zip(walked, expected):
            assert np.array_equal(got, want.astype(np.int64)), (name, lo, hi)
        flags = np.empty(hi - lo, np.bool_)
        assert capture_flags(material_counts(m), lo, hi, flags) == must.sum() and np.array_equal(flags, must)
        at = [np.empty(hi - lo, np.int64) for _ in range(5)]
        count = unrank_captures(material_counts(m), lo, hi, *at)
        assert count == must.sum() and np.array_equal(at[0][:count], lo + np.flatnonzero(must))
