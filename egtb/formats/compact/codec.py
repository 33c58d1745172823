"""The coding of a compact block: runs of values, canonical Huffman codes per context, CRC-32.

The values form runs; a run is one token, coded with a canonical Huffman code
per file chosen by the previous run's value (one context per value; a DTZ
file, whose values are many, codes every run in one context). A token's
symbol says which value the run has (which of the others, after the previous
one) and its length bucket; long runs add raw extra bits. The file kind's
tables (:class:`~egtb.formats.compact.layout.FileKind`: ``first_context``,
``context_after``, ``choice_of``) say which. Everything here is a pure function of
arrays (numba kernels, and the Huffman code construction in Python).

>>> length_symbol(1), length_symbol(15), length_symbol(16), length_symbol(23)
((0, 0, 0), (14, 0, 0), (15, 2, 0), (16, 2, 3))
>>> [length_of(*length_symbol(n)) for n in (1, 15, 16, 23, 1 << 40)] == [1, 15, 16, 23, 1 << 40]
True
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

from egtb.formats.compact.layout import (BLOCK_BITS, BLOCK_BYTES, EXACT_LENGTHS, MANTISSA_BITS, MAX_CODE_BITS,
                                         NUM_BUCKETS, FileKind)
from egtb.formats.pointers import as_int32_ptr, int32_ptr, int64_ptr, uint8_ptr
from egtb.formats.values import UNKNOWN

__all__ = [
    "LOOKUP_WIDTH", "MARK_SHIFT", "block_of", "canonical_codes", "close_runs", "count_symbols", "crc32",
    "decode_block", "decode_from", "decoding_table", "encode_blocks",
    "huffman_lengths", "last_mark", "last_mark_from", "length_of", "length_symbol", "lookup_value", "mark_block",
    "refined", "value_at_index",
]

def _crc_table() -> np.ndarray:
    table = np.zeros((8, 256), dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[0, i] = c
    for k in range(1, 8):
        table[k] = (table[k - 1] >> 8) ^ table[0, table[k - 1] & 0xFF]
    return table


#: CRC-32 (zlib's polynomial) tables for the kernels: row 0 a byte's, row k a byte's k bytes further on.
CRC_TABLES = _crc_table()


# ------------------------------------------------------------------ coding kernels

@njit(cache=True, inline="always")
def length_symbol(n):
    """(bucket, extra bits, extra value) of a run length n >= 1."""
    if n <= EXACT_LENGTHS:
        return n - 1, 0, 0
    e = _floor_log2(n)
    xb = e - MANTISSA_BITS
    m = (n >> xb) & ((1 << MANTISSA_BITS) - 1)
    return EXACT_LENGTHS + (e - 4) * (1 << MANTISSA_BITS) + m, xb, n & ((np.int64(1) << xb) - 1)


@njit(cache=True, inline="always")
def length_of(bucket, xb, extra):
    """Inverse of :func:`length_symbol`."""
    if bucket < EXACT_LENGTHS:
        return np.int64(bucket + 1)
    m = (bucket - EXACT_LENGTHS) & ((1 << MANTISSA_BITS) - 1)
    return (np.int64((1 << MANTISSA_BITS) | m) << xb) | extra


@njit(cache=True, inline="always")
def extra_bits(bucket):
    """Raw bits after a bucket's code."""
    if bucket < EXACT_LENGTHS:
        return 0
    return (bucket - EXACT_LENGTHS) // (1 << MANTISSA_BITS) + 4 - MANTISSA_BITS


@njit(cache=True, inline="always")
def _floor_log2(n):
    e = 0
    while n > 1:
        n >>= 1
        e += 1
    return e


@njit(cache=True)
def close_runs(values, must, open_run, run_vals, run_lens):
    """Extend the open run (``open_run``: its value and length; at a file's start, the file's last
    value and 0) by a chunk of a file's codes: the runs the chunk closes go to ``run_vals``,
    ``run_lens`` (each at least as long as the chunk), the last stays open; return how many closed.

    A don't-care, a position whose side to move must capture (``must``) or whose code is 0
    (UNKNOWN: a DTZ file's draws), takes the value before it, so it extends the open run (at a
    file's start, a run of the file's last value). One pass over the chunk, the values untouched.

    >>> open_run, vals, lens = np.array([1, 2]), np.empty(3, dtype=np.uint8), np.empty(3, dtype=np.int64)
    >>> must = np.array([0, 0, 1, 0], dtype=np.bool_)
    >>> n = close_runs(np.array([1, 0, 2, 3], dtype=np.uint8), must, open_run, vals, lens)
    >>> n, vals[:n].tolist(), lens[:n].tolist(), open_run.tolist()
    (1, [1], [5], [3, 1])
    >>> open_run = np.array([2, 0])  # a file's start, its last value 2: don't-cares before its first value
    >>> n = close_runs(np.array([0, 2, 3], dtype=np.uint8), np.zeros(3, dtype=np.bool_), open_run, vals, lens)
    >>> n, vals[:n].tolist(), lens[:n].tolist(), open_run.tolist()
    (1, [2], [2], [3, 1])
    """
    v0, n0 = open_run[0], open_run[1]
    closed = 0
    for i in range(values.shape[0]):  # without branches (a run is ~7 positions at 6 pieces: 25-37% faster)
        v = np.int64(values[i])
        extends = (v == v0) | (v == UNKNOWN) | must[i]
        run_vals[closed] = v0  # the open run, kept (counted) only when position i closes it
        run_lens[closed] = n0
        closed += (not extends) & (n0 > 0)
        v0 = v0 if extends else v
        n0 = n0 + 1 if extends else 1
    open_run[0], open_run[1] = v0, n0
    return closed


@njit(cache=True)
def count_symbols(run_vals, run_lens, n, hist, ctx, first_context, context_after, choice_of):
    """Add the symbols of the first `n` runs to their contexts' frequencies, going on from context
    `ctx` (-1 when they start the file: the first in the ``first_context`` of its value; the file
    kind's tables, see :class:`~egtb.formats.compact.layout.FileKind`); return the context after
    them."""
    for r in range(n):
        v = run_vals[r]
        if ctx < 0:
            ctx = first_context[v]
        bucket, _, _ = length_symbol(run_lens[r])
        hist[ctx, choice_of[ctx, v] * NUM_BUCKETS + bucket] += 1
        ctx = context_after[v]
    return ctx


#: Fields of an encoder's state between two calls of :func:`encode_blocks`.
S_PREV, S_ACC, S_ACC_BITS, S_USED, S_BYTE, S_POS = range(6)


@njit(cache=True)
def encode_blocks(run_vals, run_lens, n, codes, lengths, out, block_starts, block_ctx, block_runs, state,
                  first_context, context_after, choice_of):
    """Code the first `n` runs into BLOCK_BYTES blocks of `out`, going on from ``state`` (the
    context, -1 before the file's first run; the bits not yet written; the bits used of the block
    being filled and its next byte; the position reached): block 0 of `out`, and entry 0 of the
    block arrays (first position, context, runs), are the block being filled. Return the index of
    the block being filled after them (those before it are complete).

    ``codes[ctx, sym]`` is the bit-reversed Huffman code, ``lengths[ctx, sym]``
    its length; the last three are the file kind's tables (as :func:`count_symbols`).
    A run that does not fit goes whole to the next block, whose first run is
    coded in ``first_context`` of its value.
    """
    k = 0
    prev = state[S_PREV]
    acc = np.uint64(state[S_ACC])
    acc_bits = state[S_ACC_BITS]
    used = state[S_USED]  # bits used in block k
    byte = state[S_BYTE]  # next byte to write
    pos = state[S_POS]
    for r in range(n):
        v = run_vals[r]
        length = run_lens[r]
        if prev < 0:
            prev = first_context[v]
            block_ctx[0] = prev
        bucket, xb, extra = length_symbol(length)
        sym = choice_of[prev, v] * NUM_BUCKETS + bucket
        nbits = lengths[prev, sym] + xb
        if used + nbits > BLOCK_BITS:
            if acc_bits:
                out[byte] = np.uint8(acc & np.uint64(0xFF))
            acc = np.uint64(0)
            acc_bits = 0
            k += 1
            byte = k * BLOCK_BYTES
            used = 0
            block_starts[k] = pos
            prev = first_context[v]
            block_ctx[k] = prev
            block_runs[k] = 0
            sym = choice_of[prev, v] * NUM_BUCKETS + bucket
            nbits = lengths[prev, sym] + xb
        acc |= np.uint64(codes[prev, sym]) << np.uint64(acc_bits)
        acc_bits += lengths[prev, sym]
        while acc_bits >= 8:
            out[byte] = np.uint8(acc & np.uint64(0xFF))
            byte += 1
            acc >>= np.uint64(8)
            acc_bits -= 8
        if xb:
            acc |= np.uint64(extra) << np.uint64(acc_bits)
            acc_bits += xb
            while acc_bits >= 8:
                out[byte] = np.uint8(acc & np.uint64(0xFF))
                byte += 1
                acc >>= np.uint64(8)
                acc_bits -= 8
        used += nbits
        pos += length
        prev = context_after[v]
        block_runs[k] += 1
    state[S_PREV], state[S_ACC], state[S_ACC_BITS] = prev, np.int64(acc), acc_bits
    state[S_USED], state[S_BYTE], state[S_POS] = used, byte, pos
    return k


@njit(cache=True)
def crc32(data, start, stop):
    """CRC-32 (as zlib.crc32) of data[start:stop] (a uint8 array or a raw pointer), eight bytes
    a step (slicing by 8: about 3 µs for 4 KB, against 10 µs a byte at a time).

    >>> import zlib
    >>> [crc32(np.frombuffer(b"checkers, draughts", dtype=np.uint8), 0, n) == zlib.crc32(b"checkers, draughts"[:n])
    ...  for n in (0, 8, 18)]
    [True, True, True]
    """
    t = CRC_TABLES
    c = np.uint32(0xFFFFFFFF)
    i = start
    while i + 8 <= stop:
        a = c ^ (np.uint32(data[i]) | (np.uint32(data[i + 1]) << 8) | (np.uint32(data[i + 2]) << 16)
                 | (np.uint32(data[i + 3]) << 24))
        b = (np.uint32(data[i + 4]) | (np.uint32(data[i + 5]) << 8) | (np.uint32(data[i + 6]) << 16)
             | (np.uint32(data[i + 7]) << 24))
        c = (t[7, a & 0xFF] ^ t[6, (a >> 8) & 0xFF] ^ t[5, (a >> 16) & 0xFF] ^ t[4, a >> 24]
             ^ t[3, b & 0xFF] ^ t[2, (b >> 8) & 0xFF] ^ t[1, (b >> 16) & 0xFF] ^ t[0, b >> 24])
        i += 8
    while i < stop:
        c = t[0, (c ^ np.uint32(data[i])) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
        i += 1
    return c ^ np.uint32(0xFFFFFFFF)


@njit(cache=True)
def check_blocks(blocks, data, crcs, marks, offsets, marks_crcs):
    """The first of ``blocks`` whose bytes (4 KB of ``data``) or marks (the bytes ``marks[8 *
    offsets[b]:8 * offsets[b + 1]]``) do not have their CRC-32 (``crcs``, ``marks_crcs``), or -1
    when all do."""
    for k in range(blocks.shape[0]):
        b = blocks[k]
        lo = b * BLOCK_BYTES
        if (crc32(data, lo, min(lo + BLOCK_BYTES, data.shape[0])) != crcs[b]
                or crc32(marks, 8 * offsets[b], 8 * offsets[b + 1]) != marks_crcs[b]):
            return b
    return -1


@njit(cache=True, inline="always")
def _refill(data, p, stop, acc, acc_bits):
    """The bit accumulator topped up to at least 56 bits from data[p:stop] (zeros past
    ``stop``): (p, acc, acc_bits). A token's code takes at most 12 bits; its extra bits take the
    rest, but for runs of more than 2**45 positions, which no table has (a table of ten pieces
    holds fewer than 2**39): :func:`_next_token` refills again for those.

    Eight bytes go in at once where the block has them (a byte at a time, in a loop whose end the
    CPU mispredicts, a sparse lookup took 4-14% longer): the accumulator takes what fits above its bits, and
    ``p`` counts the whole bytes that went in; the bits of the byte after them are the stream's
    own, as the next refill puts them again (Giesen's refill, "Reading bits in far too many ways")."""
    if acc_bits < 64 and p + 8 <= stop:
        word = (np.uint64(data[p]) | (np.uint64(data[p + 1]) << np.uint64(8))
                | (np.uint64(data[p + 2]) << np.uint64(16)) | (np.uint64(data[p + 3]) << np.uint64(24))
                | (np.uint64(data[p + 4]) << np.uint64(32)) | (np.uint64(data[p + 5]) << np.uint64(40))
                | (np.uint64(data[p + 6]) << np.uint64(48)) | (np.uint64(data[p + 7]) << np.uint64(56)))
        return p + ((63 - acc_bits) >> 3), acc | (word << np.uint64(acc_bits)), acc_bits | 56
    while acc_bits <= 56:
        if p < stop:
            acc |= np.uint64(data[p]) << np.uint64(acc_bits)
        p += 1
        acc_bits += 8
    return p, acc, acc_bits


@njit(cache=True, inline="always")
def _next_token(data, p, stop, acc, acc_bits, ctx, lut):
    """Decode one token in context ``ctx`` at the accumulator's low bits (refilled from
    data[p:stop] first).

    One lookup gives everything for a code of at most LUT_FIRST_BITS bits, two for a longer one
    (see :func:`decoding_table`); returns (run length, its value code, the next run's context, p,
    acc, acc_bits); length 0 when the bits are no code.
    """
    p, acc, acc_bits = _refill(data, p, stop, acc, acc_bits)
    table = as_int32_ptr(lut)  # through an array, the decode took twice as long
    first_bits = np.int64(acc & np.uint64((1 << LUT_FIRST_BITS) - 1))
    entry = np.int64(table[np.int64(ctx) * (1 << LUT_FIRST_BITS) + first_bits])
    if entry < 0:  # a longer code: its entry among those of the next bits
        entry = np.int64(table[(entry & LUT_OFFSET_MASK)
                               + np.int64((acc >> np.uint64(LUT_FIRST_BITS)) & np.uint64(LUT_SECOND_MASK))])
    n = entry & 15
    xb = (entry >> LUT_EXTRA_SHIFT) & 63
    acc >>= np.uint64(n)
    acc_bits -= n
    if xb > acc_bits:  # extra bits of a run of more than 2**45 positions
        p, acc, acc_bits = _refill(data, p, stop, acc, acc_bits)
    extra = np.int64(acc & ((np.uint64(1) << np.uint64(xb)) - np.uint64(1)))
    acc >>= np.uint64(xb)
    acc_bits -= xb
    return ((((entry >> LUT_LEAD_SHIFT) & 15) << xb) | extra, (entry >> LUT_VALUE_SHIFT) & 127,
            (entry >> LUT_CONTEXT_SHIFT) & 127, p, acc, acc_bits)


@njit(cache=True)
def decode_block(data, start, stop, count, ctx, lut, out_ends, out_vals):
    """Decode the runs of one block (bytes data[start:stop], `count` positions, its first run in
    context ``ctx``).

    `data` and `lut` (the :func:`decoding_table`) are arrays or raw pointers (the batch kernel's
    block pool).

    Fills out_ends (run end offsets in the block) and out_vals (value codes);
    returns the number of runs, or -1 when the bits do not decode to exactly
    `count` positions.
    """
    acc = np.uint64(0)
    acc_bits = 0
    p = start
    pos = np.int64(0)
    r = 0
    while pos < count:
        n, value, ctx, p, acc, acc_bits = _next_token(data, p, stop, acc, acc_bits, ctx, lut)
        pos += n
        if n == 0 or pos > count or r >= out_ends.shape[0] or p > stop + 8:
            return -1
        out_ends[r] = pos
        out_vals[r] = value
        r += 1
    return r


#: A block's marks (decoder states every few runs) are int64: the run's first offset in the block
#: << MARK_SHIFT | its token's bit offset in the block << 8 | its context (the previous run's value
#: code, or a DTZ file's one context).
MARK_SHIFT = 24


@njit(cache=True)
def mark_block(data, start, stop, count, ctx, lut, every, out_marks):
    """Decode one block (as :func:`decode_block`) and keep a mark every `every` runs, the first
    at run 0: a probe then decodes from the mark before its offset (:func:`value_in_block`).

    Returns the number of marks, or -1 when the bits do not decode to exactly
    `count` positions (or `out_marks` is too short).
    """
    acc = np.uint64(0)
    acc_bits = 0
    p = start
    pos = np.int64(0)
    left = 0  # runs before the next mark
    k = 0
    while pos < count:
        if left == 0:
            if k >= out_marks.shape[0]:
                return -1
            bit = (p - start) * 8 - acc_bits
            out_marks[k] = (pos << MARK_SHIFT) | (np.int64(bit) << 8) | np.int64(ctx)
            k += 1
            left = every
        n, _, ctx, p, acc, acc_bits = _next_token(data, p, stop, acc, acc_bits, ctx, lut)
        pos += n
        if n == 0 or pos > count or p > stop + 8:
            return -1
        left -= 1
    return k


@njit(cache=True, inline="always")
def last_at_most(values, n, key):
    """The last of the ascending values[0:n] at most ``key`` (0 when none is)."""
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if values[mid] <= key:
            lo = mid
        else:
            hi = mid - 1
    return lo


@njit(cache=True, inline="always")
def last_mark(marks, n_marks, offset):
    """The last of marks[0:n_marks] at or before a block offset."""
    return marks[last_mark_from(marks, n_marks, offset, -1)]


@njit(cache=True, inline="always")
def last_mark_from(marks, n_marks, offset, known):
    """The place of the last of marks[0:n_marks] at or before a block offset, given ``known``: that
    of an offset before it (-1: none). Ascending lookups close together mostly stay before the
    next mark, and skip the search."""
    key = (offset << MARK_SHIFT) | ((1 << MARK_SHIFT) - 1)
    if known >= 0 and (known + 1 >= n_marks or marks[known + 1] > key):
        return known
    return last_at_most(marks, n_marks, key)


@njit(cache=True, inline="always")
def decode_from(data, start, stop, lut, mark, offset):
    """The run holding a block offset, decoding from a mark at or before it: (its value code,
    its first offset, the mark of the next run: its first offset, token's bit offset, context)."""
    pos = mark >> MARK_SHIFT
    bit = (mark >> 8) & 0xFFFF
    ctx = mark & 0xFF
    p, acc, acc_bits = _refill(data, start + (bit >> 3), stop, np.uint64(0), 0)
    acc >>= np.uint64(bit & 7)
    acc_bits -= bit & 7
    while True:
        n, value, ctx, p, acc, acc_bits = _next_token(data, p, stop, acc, acc_bits, ctx, lut)
        pos += n
        if offset < pos or n == 0:
            return (np.int64(value), pos - n,
                    (pos << MARK_SHIFT) | (np.int64((p - start) * 8 - acc_bits) << 8) | np.int64(ctx))


#: Columns of a compact file's lookup descriptor (int64 each, :attr:`CompactTable.lookup`): the
#: addresses of its coded blocks, block starts (blocks + 1), blocks' mark addresses (0: none in
#: memory) and numbers of marks, and decoding table; its bytes of blocks and its blocks; the
#: address and number of its exceptions (a category file coded as exceptions, :func:`refined`);
#: 1 when its WLD file leaves threat positions out (:mod:`egtb.rules.threats`).
(L_DATA, L_STARTS, L_MARKS, L_MARK_COUNTS, L_LUT, L_DATA_LEN, L_BLOCKS, L_EXCEPTIONS, L_EXCEPTION_COUNT,
 L_THREATS) = range(10)
LOOKUP_WIDTH = 10
#: The value codes an exception turns into a cursed win or blessed loss (adding EXCEPTION_STEP).
EXCEPTION_WIN, EXCEPTION_LOSS, EXCEPTION_STEP = 2, 3, 2


@njit(cache=True, inline="always")
def refined(value, index, exceptions, count):
    """The category code of a position of a category file coded as exceptions
    (:mod:`.exceptions`) from its WLD file's ``value``: a win or loss at one of the ``count``
    ascending exception indices (at address ``exceptions``) is a cursed win or blessed loss; a
    file with no exceptions (every other file) leaves every value as it is."""
    if count == 0 or (value != EXCEPTION_WIN and value != EXCEPTION_LOSS):
        return value
    at = int64_ptr(exceptions)
    return value + EXCEPTION_STEP if at[last_at_most(at, count, index)] == index else value


@njit(cache=True, inline="always")
def block_of(starts, n_blocks, index):
    """The block holding a position index (starts: the first index of each block)."""
    return last_at_most(starts, n_blocks, index)


@njit(cache=True)
def lookup_value(lookup, index):
    """Value code of a position of a compact file (``lookup``: its descriptor, by address), or
    -1 - block when that block's marks are not in memory."""
    desc = int64_ptr(lookup)
    starts = int64_ptr(desc[L_STARTS])
    block = block_of(starts, desc[L_BLOCKS], index)
    marks = int64_ptr(desc[L_MARKS])[block]
    if marks == 0:
        return -1 - block
    offset = index - starts[block]
    start = block * BLOCK_BYTES
    value, _, _ = decode_from(uint8_ptr(desc[L_DATA]), start, min(start + BLOCK_BYTES, desc[L_DATA_LEN]),
                                 int32_ptr(desc[L_LUT]),
                                 last_mark(int64_ptr(marks), int64_ptr(desc[L_MARK_COUNTS])[block], offset), offset)
    return refined(value, index, desc[L_EXCEPTIONS], desc[L_EXCEPTION_COUNT])


@njit(cache=True)
def value_at_index(lookup, index):
    """:func:`lookup_value` from Python (all arguments integers: a call costs the least)."""
    return lookup_value(lookup, index)


# ------------------------------------------------------------------ Huffman (tables only)

def huffman_lengths(freqs: np.ndarray, *, max_bits: int = MAX_CODE_BITS) -> np.ndarray:
    """Code lengths (0 for unused symbols) of a Huffman code, limited to max_bits.

    >>> huffman_lengths(np.array([5, 1, 1, 0])).tolist()
    [1, 2, 2, 0]
    """
    freqs = np.asarray(freqs, dtype=np.int64).copy()
    while True:
        lengths = _huffman(freqs)
        if lengths.max(initial=0) <= max_bits:
            return lengths
        freqs = np.where(freqs > 0, np.maximum(freqs >> 1, 1), 0)


def _huffman(freqs: np.ndarray) -> np.ndarray:
    used = np.flatnonzero(freqs)
    lengths = np.zeros(len(freqs), dtype=np.int64)
    if len(used) == 1:
        lengths[used[0]] = 1
        return lengths
    heap = [(int(freqs[s]), i, [int(s)]) for i, s in enumerate(used)]
    heapq.heapify(heap)
    tie = len(heap)
    while len(heap) > 1:
        fa, _, a = heapq.heappop(heap)
        fb, _, b = heapq.heappop(heap)
        for s in a + b:
            lengths[s] += 1
        heapq.heappush(heap, (fa + fb, tie, a + b))
        tie += 1
    return lengths


def canonical_codes(lengths: np.ndarray) -> np.ndarray:
    """Bit-reversed canonical codes (deflate's order: by length, then symbol).

    >>> canonical_codes(np.array([1, 2, 2, 0])).tolist()   # 0, 10, 11 reversed
    [0, 1, 3, 0]
    """
    codes = np.zeros(len(lengths), dtype=np.int64)
    code = 0
    prev_len = 0
    for s in sorted(np.flatnonzero(lengths).tolist(), key=lambda s: (lengths[s], s)):
        code <<= int(lengths[s]) - prev_len
        prev_len = int(lengths[s])
        codes[s] = int(f"{code:0{prev_len}b}"[::-1], 2)
        code += 1
    return codes


#: A decoding table entry (int32): the code's length (bits 0-3, 0: no code), the run's value
#: (bits 4-10), its extra bits (11-16), its length's leading part (17-20: the run's length is
#: lead << extra bits | their value) and the next run's context (21-27).
LUT_VALUE_SHIFT = 4
LUT_EXTRA_SHIFT = 11
LUT_LEAD_SHIFT = 17
LUT_CONTEXT_SHIFT = 21
#: The decoding table's first level reads this many bits (:func:`decoding_table`) ...
LUT_FIRST_BITS = 8
#: ... and an entry with this bit (the sign of an int32) sends a longer code to its second level.
LUT_LONG = -(1 << 31)
LUT_OFFSET_MASK = (1 << 31) - 1
LUT_SECOND_MASK = (1 << (MAX_CODE_BITS - LUT_FIRST_BITS)) - 1


def decoding_table(lengths: np.ndarray, kind: FileKind) -> np.ndarray:
    """Lookup table of the tokens (see LUT_*_SHIFT; 0: no code) of a file of ``kind`` whose code
    lengths are ``lengths[context, symbol]``, in two levels so that what a decode mostly reads stays
    in the CPU's first cache: ``2**LUT_FIRST_BITS`` entries a context, at ``context <<
    LUT_FIRST_BITS`` plus the next bits; where those begin a longer code the entry is negative,
    and ``entry & LUT_OFFSET_MASK`` is where the ``2**(MAX_CODE_BITS - LUT_FIRST_BITS)`` entries of
    the bits after them begin (the 95-97% of an 8-piece WLD file's tokens that take 8 bits or
    fewer are one lookup).

    >>> from egtb.formats.compact.layout import WDL
    >>> lut = decoding_table(np.array([[0, 0], [1, 1]]), WDL)   # context 1: two symbols of 1 bit
    >>> [(e & 15, e >> LUT_VALUE_SHIFT & 127, e >> LUT_LEAD_SHIFT & 15) for e in lut[256:258].tolist()]
    [(1, 2, 1), (1, 2, 2)]
    """
    full = np.zeros((len(lengths), 1 << MAX_CODE_BITS), dtype=np.int32)
    for ctx in range(1, len(lengths)):
        row_lengths = lengths[ctx]
        codes = canonical_codes(row_lengths)
        for s in np.flatnonzero(row_lengths).tolist():
            n = int(row_lengths[s])
            choice, bucket = divmod(s, NUM_BUCKETS)
            xb = int(extra_bits(bucket))
            lead = int(length_of(bucket, xb, 0)) >> xb
            value = int(kind.value_of_choice[ctx, choice])
            full[ctx, int(codes[s])::1 << n] = (int(kind.context_after[value]) << LUT_CONTEXT_SHIFT) | (
                lead << LUT_LEAD_SHIFT) | (xb << LUT_EXTRA_SHIFT) | (value << LUT_VALUE_SHIFT) | n
    first = 1 << LUT_FIRST_BITS
    # the entries of each context's first bits, by the bits after them (index: first bits + first * next bits)
    groups = full.reshape(len(lengths), 1 << (MAX_CODE_BITS - LUT_FIRST_BITS), first).transpose(0, 2, 1)
    longer = (groups != groups[:, :, :1]).any(axis=2)  # a code of more than LUT_FIRST_BITS bits begins there
    table = groups[:, :, 0].astype(np.int64)
    table[longer] = (len(lengths) * first + groups.shape[2] * np.arange(int(longer.sum()))) | LUT_LONG
    return np.concatenate([table.reshape(-1).astype(np.int32), groups[longer].reshape(-1)])
