"""A dependency's categories packed three to a byte: what a pair's exits read of the finished
tables, at a third of a byte a position.

A pair's exits (captures, crownings) land in finished tables, and all they read there is a
rule layer's category at counter 0 (an exit always zeroes the counter): one of five values,
win, cursed win, draw, blessed loss, loss (:data:`egtb.formats.values.CAT_LOSS` ..
:data:`egtb.formats.values.CAT_WIN`). Five values take three base-5 digits to a byte
(5**3 = 125 <= 256), so a dependency costs a pair's scratch 0.34 bytes a position instead of
one: at 8 pieces the largest pair's dependencies (28.5 G positions) take 9.5 GB, not 28.5.
Chinook and KingsRow kept their sub-databases in a few bits a position the same way.

Digit ``k % 3`` of byte ``k // 3`` holds position k's category plus 2 (0 = loss .. 4 = win).

>>> row = np.zeros(packed_size(5), dtype=np.uint8)
>>> pack_into(row, 0, np.array([2, -2, 0, 1, -1], dtype=np.int8))
>>> [int(packed_category(row, k)) for k in range(5)], len(row)
([2, -2, 0, 1, -1], 2)
>>> unpack(row, 1, 4).tolist()
[-2, 0, 1]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.formats.values import CAT_LOSS

#: Positions a byte holds.
DIGITS = 3
#: The weight of each digit in its byte.
POWERS = np.array([1, 5, 25], dtype=np.int64)
#: The category held by digit d of a byte b: ``CATEGORY_OF_DIGIT[b, d]`` (bytes above 124 never
#: occur; they read as a loss).
CATEGORY_OF_DIGIT = np.array([[(b // 5**d) % 5 + CAT_LOSS if b < 125 else CAT_LOSS
                               for d in range(DIGITS)] for b in range(256)], dtype=np.int8)


def packed_size(positions: int) -> int:
    """Bytes that hold `positions` packed categories.

    >>> packed_size(0), packed_size(3), packed_size(4)
    (0, 1, 2)
    """
    return (positions + DIGITS - 1) // DIGITS


@njit(cache=True, inline="always")
def packed_category(row, k):
    """The category of position k of a packed row."""
    return CATEGORY_OF_DIGIT[row[k // DIGITS], k % DIGITS]


@njit(cache=True)
def pack_into(row, start, categories):
    """Write `categories` (int8, each a finished category) as positions start.. of a packed row,
    leaving its other digits as they are (a slice may begin or end inside a byte).

    The bytes the slice fills whole are written in one step each (a pair packs every
    dependency it loads: up to 5 pieces, 141 M positions a layer)."""
    n = categories.shape[0]
    head = min(n, (DIGITS - start % DIGITS) % DIGITS)  # digits before the first whole byte
    whole = (n - head) // DIGITS
    _pack_digits(row, start, categories, 0, head)
    at = (start + head) // DIGITS
    for b in range(whole):
        i = head + DIGITS * b
        row[at + b] = np.uint8(np.int64(categories[i]) + 5 * np.int64(categories[i + 1])
                               + 25 * np.int64(categories[i + 2]) - 31 * CAT_LOSS)
    _pack_digits(row, start, categories, head + DIGITS * whole, n)


@njit(cache=True, inline="always")
def _pack_digits(row, start, categories, first, last):
    """Write categories first..last-1 one digit at a time, keeping the byte's other digits."""
    for i in range(first, last):
        k = start + i
        at = k // DIGITS
        weight = POWERS[k % DIGITS]
        byte = np.int64(row[at])
        old = (byte // weight) % 5
        row[at] = np.uint8(byte + (np.int64(categories[i]) - CAT_LOSS - old) * weight)


@njit(cache=True)
def unpack(row, start, stop):
    """Positions start..stop-1 of a packed row as int8 categories."""
    out = np.empty(stop - start, dtype=np.int8)
    for k in range(start, stop):
        out[k - start] = packed_category(row, k)
    return out
