"""The dependencies' categories packed three to a byte (egtb.formats.packed)."""

import numpy as np

from egtb.formats.packed import packed_size, pack_into, unpack
from egtb.formats.values import CAT_LOSS, CAT_WIN


def test_every_category_reads_back_at_every_offset():
    rng = np.random.default_rng(7)
    categories = rng.integers(CAT_LOSS, CAT_WIN + 1, size=1000).astype(np.int8)
    row = np.zeros(packed_size(len(categories) + 2), dtype=np.uint8)
    for start in (0, 1, 2):  # a slice may begin inside a byte
        pack_into(row, start, categories)
        assert np.array_equal(unpack(row, start, start + len(categories)), categories)


def test_slices_written_apart_leave_each_other_alone():
    first = np.array([2, -2, 1, 0, -1], dtype=np.int8)
    second = np.array([-1, -1, 2, 2], dtype=np.int8)
    row = np.full(packed_size(9), 0, dtype=np.uint8)
    pack_into(row, 5, second)  # the later slice first, sharing byte 1 with the earlier one
    pack_into(row, 0, first)
    assert unpack(row, 0, 9).tolist() == first.tolist() + second.tolist()
    assert int(row.max()) < 125  # every byte a three-digit base-5 number


def test_short_slices_at_every_offset_keep_the_digits_around_them():
    rng = np.random.default_rng(11)
    for start in range(6):
        for length in range(9):  # none, part of one byte, across bytes, whole bytes and parts
            around = rng.integers(CAT_LOSS, CAT_WIN + 1, size=18).astype(np.int8)
            row = np.zeros(packed_size(18), dtype=np.uint8)
            pack_into(row, 0, around)
            categories = rng.integers(CAT_LOSS, CAT_WIN + 1, size=length).astype(np.int8)
            pack_into(row, start, categories)
            expected = around.copy()
            expected[start:start + length] = categories
            assert unpack(row, 0, 18).tolist() == expected.tolist(), (start, length)
