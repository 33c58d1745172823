"""Compact WLD files: win/draw/loss only, capture positions left out, RLE + Huffman blocks.

A compact file ``<material>.wld`` holds the value of every position of a
material (Black to move, in index order) in fixed-size blocks of
:data:`BLOCK_BYTES` bytes, so that one probe decodes one block. As Chinook,
Cake and KingsRow do, a position whose side to move must capture is not
stored: the writer gives it whatever value is cheapest to code (the value of
the position before it) and the prober recovers its true value by a capture
search through the tables (captures shrink the material, so the search ends).

Coding: the values form runs; a run is one token, coded with a canonical
Huffman code per file chosen by the previous run's value (3 contexts). A
token's symbol says which of the two other values the run has and its length
bucket; long runs add raw extra bits. docs/table-format.md ("Compact WLD
files") gives the layout byte by byte.

>>> length_symbol(1), length_symbol(15), length_symbol(16), length_symbol(23)
((0, 0, 0), (14, 0, 0), (15, 2, 0), (16, 2, 3))
>>> [length_of(*length_symbol(n)) for n in (1, 15, 16, 23, 1 << 40)] == [1, 15, 16, 23, 1 << 40]
True
"""

from __future__ import annotations

import bisect
from array import array
import heapq
import os
import struct
import time
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from numba import carray, njit

from egtb.errors import MissingRuleLayerError, MissingTableError, TableError
from egtb.rules.movegen import (M_BK, M_BM, M_WK, M_WM, MAX_MOVES, MOVE_WIDTH, count_simple_moves,
                                generate_moves, has_capture, popcount)
from egtb.rules.perft import CAPTURE_ROWS, CH_OK, CH_OM, CH_PK, CH_PM, MAX_CHILDREN, MAX_JUMPS, child_positions
from egtb.formats import master
from egtb.positions.index import (MEN_OFFSET, NUM_CODES, material_code, material_of_code,
                               position_index, unit_size, unrank_men, unrank_unit)
from egtb.positions.material import Material, count_positions, mirror_bb
from egtb.formats.values import DRAW, LOSS, UNKNOWN, WDL_OF_CODE, WIN
from egtb.build.verify import VerifyReport
from egtb.rules.notation import Placement, format_fen
from egtb.formats.pointers import int8_ptr, int32_ptr, int64_ptr, uint16_ptr, uint32_ptr, uint8_ptr

__all__ = [
    "BLOCK_BYTES", "CompactReport", "CompactTable", "FORMAT_VERSION", "SUFFIX",
    "compact_directory", "compact_material", "compact_path", "open_compact", "verify_compact",
]

SUFFIX = ".wld"
MAGIC = b"EGTBWLD\x00"
FORMAT_VERSION = 1
#: Bytes of one coded block (the last block of a file may be shorter).
BLOCK_BYTES = 4096
BLOCK_BITS = BLOCK_BYTES * 8
#: The blocks start at a multiple of this many bytes from the start of the file.
DATA_ALIGN = 64
#: Longest Huffman code; the decoding table has 2**MAX_CODE_BITS entries per context.
MAX_CODE_BITS = 12
#: Run lengths 1..EXACT_LENGTHS have a bucket each; longer ones share buckets.
EXACT_LENGTHS = 15
#: Buckets per power of two above EXACT_LENGTHS (2 mantissa bits).
MANTISSA_BITS = 2
#: Largest exponent of a run length (runs shorter than 2**(MAX_EXPONENT + 1)).
MAX_EXPONENT = 47
NUM_BUCKETS = EXACT_LENGTHS + (MAX_EXPONENT - 3) * (1 << MANTISSA_BITS)
#: Most value codes a file kind has (a category file: 1..5).
MAX_VALUES = 5
#: Contexts are the previous run's value code (1..values); row 0 is unused.
NUM_CONTEXTS = MAX_VALUES + 1
#: Fixed header: magic, version, preset, counts, positions, block bytes, code
#: bits, blocks, max runs, buckets, data offset, header CRC (see the docs).
HEADER = struct.Struct("<8sHH4BQIIQIIQI4x")
INDEX_ENTRY = struct.Struct("<QIB3x")
#: What the batch kernel writes as DTW (or DTZ) for a position answered from a compact file.
NO_DTW = 0xFFFF
#: Most runs a block may hold: a token takes at least one bit (and the pool's
#: int16 bucket entries index runs).
MAX_RUNS = BLOCK_BITS
#: Decoded blocks kept per Tablebase for single probes.
DEFAULT_CACHE_BLOCKS = 2048
#: Bytes of the numba batch block pool per Tablebase (and per kind of file probed).
DEFAULT_POOL_BYTES = 64 << 20

#: Value codes of a category file beyond the WLD codes (DRAW, WIN, LOSS keep theirs).
CURSED_WIN = 4
BLESSED_LOSS = 5
#: Category-file code of each category, indexed by category + 2 (loss .. win).
CODE_OF_CATEGORY = np.array([LOSS, BLESSED_LOSS, DRAW, CURSED_WIN, WIN], dtype=np.uint8)
#: Value (+1/0/-1) of each WLD code, for the kernels (0 and the category codes unused).
WDL_VALUE_OF_CODE = np.array([-2, 0, 1, -1, -2, -2], dtype=np.int8)
#: Category (+2..-2) of each category-file code, for the kernels (0 unused).
CATEGORY_OF_CODE = np.array([-3, 0, 2, -2, 1, -1], dtype=np.int8)


@dataclass(frozen=True)
class FileKind:
    """A kind of compact file: what its values are and how a reader recognises it."""

    suffix: str
    """File name suffix after the material name."""
    magic: bytes
    """First 8 bytes of the file."""
    values: int
    """Value codes 1..values (contexts 1..values, choices 0..values - 2)."""
    preset: int
    """Header field at offset 10: 0 for WLD, 1 for the categories under "wcdf"."""
    rule: str | None
    """The move-rule preset of the categories (None for WLD)."""
    value_of_code: np.ndarray
    """Kernel value (WDL or category) of each code."""

    @property
    def symbols(self) -> int:
        """Huffman symbols per context: (choice of the next value, length bucket)."""
        return (self.values - 1) * NUM_BUCKETS

    @property
    def lengths_bytes(self) -> int:
        """Bytes of the code-length table after the header."""
        return self.values * self.symbols

    @cached_property
    def top(self) -> int:
        """The best value for the side to move (WDL win 1, category win 2)."""
        return int(self.value_of_code.max())


#: Win/draw/loss files (``<material>.wld``): codes DRAW, WIN, LOSS.
WLD = FileKind(SUFFIX, MAGIC, 3, 0, None, WDL_VALUE_OF_CODE)
#: Category files under "wcdf" (``<material>.wcdf``): codes DRAW, WIN, LOSS, CURSED_WIN, BLESSED_LOSS.
WCDF = FileKind(".wcdf", b"EGTBCAT\x00", 5, 1, "wcdf", CATEGORY_OF_CODE)
#: The file kinds, by header preset field.
KINDS = {kind.preset: kind for kind in (WLD, WCDF)}
#: The category file kind of each preset that has one.
RULE_KINDS = {kind.rule: kind for kind in KINDS.values() if kind.rule}

#: Kernel status codes (what stopped a batch).
ST_OK = 0
ST_MISSING = 1  #: a table is not loaded: detail = material code
ST_CORRUPT = 2  #: a block fails its CRC or does not decode: detail = code, block
ST_RANGE = 3  #: an index beyond its table
#: Kinds of table a kernel sees per material code.
KIND_NONE = 0
KIND_MASTER = 1  #: master value codes (mapped by the kernel's value_of_code)
KIND_COMPACT = 2
KIND_MASTER_CATEGORY = 3  #: a master rule layer's categories (int8), read as they are
#: Kernel results beside values: a capture search is due; the batch stopped (see status).
NEEDS_SEARCH = 9
STOPPED = -9

#: The value a block's first run is coded after (any value other than the run's).
FIRST_CONTEXT = np.array([DRAW, WIN, DRAW, DRAW, DRAW, DRAW], dtype=np.uint8)
#: NEXT_VALUE[prev, choice]: the values other than prev, smaller code first (a WLD file
#: uses choices 0 and 1, which are the same as for 3 values).
NEXT_VALUE = np.zeros((NUM_CONTEXTS, MAX_VALUES - 1), dtype=np.uint8)
#: CHOICE_OF[prev, value]: inverse of NEXT_VALUE.
CHOICE_OF = np.zeros((NUM_CONTEXTS, NUM_CONTEXTS), dtype=np.int64)
for _p in range(1, NUM_CONTEXTS):
    for _c, _v in enumerate(v for v in range(1, NUM_CONTEXTS) if v != _p):
        NEXT_VALUE[_p, _c] = _v
        CHOICE_OF[_p, _v] = _c


def _crc_table() -> np.ndarray:
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[i] = c
    return table


#: CRC-32 (zlib's polynomial) byte table for the kernels.
CRC_TABLE = _crc_table()


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
def fill_captures(counts, values):
    """Give each must-capture position the value before it (after it at the start); count them."""
    n_bm, n_bk, n_wm, n_wk = counts[0], counts[1], counts[2], counts[3]
    size = unit_size(n_bm, n_bk, n_wm, n_wk)
    n_men = MEN_OFFSET[n_bm, n_wm, n_bm + 1]
    bk_arr = np.empty(size, dtype=np.int64)
    wk_arr = np.empty(size, dtype=np.int64)
    leading = -1  # end of the leading run of capture positions, while still open
    captures = 0
    prev = UNKNOWN
    for m in range(n_men):
        bm, wm = unrank_men(m, n_bm, n_wm)
        bm, wm = np.int64(bm), np.int64(wm)
        unrank_unit(n_bk, n_wk, bm, wm, bk_arr, wk_arr)
        base = m * size
        for j in range(size):
            if has_capture(bm, bk_arr[j], wm, wk_arr[j], 0):
                captures += 1
                if prev == UNKNOWN:
                    leading = base + j
                else:
                    values[base + j] = prev
            else:
                prev = values[base + j]
    if prev == UNKNOWN:
        prev = DRAW
    for i in range(leading + 1):
        values[i] = prev
    return captures


@njit(cache=True)
def count_runs(values):
    """Number of runs of equal values."""
    if values.shape[0] == 0:
        return 0
    runs = 1
    for i in range(1, values.shape[0]):
        if values[i] != values[i - 1]:
            runs += 1
    return runs


@njit(cache=True)
def find_runs(values, run_vals, run_lens):
    """Fill the value and length of every run."""
    r = 0
    start = 0
    for i in range(1, values.shape[0] + 1):
        if i == values.shape[0] or values[i] != values[i - 1]:
            run_vals[r] = values[start]
            run_lens[r] = i - start
            r += 1
            start = i


@njit(cache=True)
def count_symbols(run_vals, run_lens, hist):
    """Symbol frequencies per context (a file's first run after FIRST_CONTEXT)."""
    prev = FIRST_CONTEXT[run_vals[0]] if run_vals.shape[0] else DRAW
    for r in range(run_vals.shape[0]):
        v = run_vals[r]
        bucket, _, _ = length_symbol(run_lens[r])
        hist[prev, CHOICE_OF[prev, v] * NUM_BUCKETS + bucket] += 1
        prev = v


@njit(cache=True)
def encode_blocks(run_vals, run_lens, codes, lengths, out, block_starts, block_ctx, block_runs):
    """Code the runs into BLOCK_BYTES blocks of `out`; return (blocks, bytes used).

    ``codes[ctx, sym]`` is the bit-reversed Huffman code, ``lengths[ctx, sym]``
    its length. A run that does not fit goes whole to the next block.
    """
    k = 0
    block_starts[0] = 0
    prev = FIRST_CONTEXT[run_vals[0]] if run_vals.shape[0] else DRAW
    block_ctx[0] = prev
    block_runs[0] = 0
    acc = np.uint64(0)
    acc_bits = 0
    used = 0  # bits used in block k
    byte = 0  # next byte to write
    pos = np.int64(0)
    for r in range(run_vals.shape[0]):
        v = run_vals[r]
        n = run_lens[r]
        bucket, xb, extra = length_symbol(n)
        sym = CHOICE_OF[prev, v] * NUM_BUCKETS + bucket
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
            prev = FIRST_CONTEXT[v]
            block_ctx[k] = prev
            block_runs[k] = 0
            sym = CHOICE_OF[prev, v] * NUM_BUCKETS + bucket
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
        pos += n
        prev = v
        block_runs[k] += 1
    if acc_bits:
        out[byte] = np.uint8(acc & np.uint64(0xFF))
        byte += 1
    return k + 1, byte


@njit(cache=True, inline="always")
def crc32(data, start, stop):
    """CRC-32 (as zlib.crc32) of data[start:stop] (an array or a raw pointer).

    >>> crc32(np.frombuffer(b"checkers", dtype=np.uint8), 0, 8) == zlib.crc32(b"checkers")
    True
    """
    c = np.uint32(0xFFFFFFFF)
    for i in range(start, stop):
        c = CRC_TABLE[(c ^ np.uint32(data[i])) & np.uint32(0xFF)] ^ (c >> np.uint32(8))
    return c ^ np.uint32(0xFFFFFFFF)


@njit(cache=True)
def decode_block(data, start, stop, count, prev, lut, out_ends, out_vals):
    """Decode the runs of one block (bytes data[start:stop], `count` positions).

    `data` and `lut` (the :func:`decoding_table` flattened by rows of
    2**MAX_CODE_BITS) are arrays or raw pointers (the batch kernel's block pool).

    Fills out_ends (run end offsets in the block) and out_vals (value codes);
    returns the number of runs, or -1 when the bits do not decode to exactly
    `count` positions.
    """
    mask = np.uint64((1 << MAX_CODE_BITS) - 1)
    acc = np.uint64(0)
    acc_bits = 0
    p = start
    pos = np.int64(0)
    r = 0
    while pos < count:
        while acc_bits <= 56:
            if p < stop:
                acc |= np.uint64(data[p]) << np.uint64(acc_bits)
            p += 1
            acc_bits += 8
        entry = lut[np.int64(prev) * (1 << MAX_CODE_BITS) + np.int64(acc & mask)]
        n = entry & 15
        if n == 0:
            return -1
        acc >>= np.uint64(n)
        acc_bits -= n
        sym = entry >> 4
        choice = sym // NUM_BUCKETS
        bucket = sym - choice * NUM_BUCKETS
        xb = extra_bits(bucket)
        extra = np.int64(0)
        if xb:
            extra = np.int64(acc & ((np.uint64(1) << np.uint64(xb)) - np.uint64(1)))
            acc >>= np.uint64(xb)
            acc_bits -= xb
        pos += length_of(bucket, xb, extra)
        if pos > count or r >= out_ends.shape[0] or p > stop + 8:
            return -1
        prev = NEXT_VALUE[prev, choice]
        out_ends[r] = pos
        out_vals[r] = prev
        r += 1
    return r


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


def decoding_table(lengths: np.ndarray) -> np.ndarray:
    """Lookup table [context, next MAX_CODE_BITS bits] -> symbol << 4 | length (0: no code)."""
    lut = np.zeros((len(lengths), 1 << MAX_CODE_BITS), dtype=np.int32)
    for ctx in range(1, len(lengths)):
        row_lengths = lengths[ctx]
        codes = canonical_codes(row_lengths)
        for s in np.flatnonzero(row_lengths).tolist():
            n = int(row_lengths[s])
            lut[ctx, int(codes[s])::1 << n] = (s << 4) | n
    return lut


# ------------------------------------------------------------------ writing

@dataclass
class CompactReport:
    """What compacting a material (or a directory) produced."""

    positions: int = 0
    """Positions of the tables."""
    captures: int = 0
    """Of which must-capture positions (left out)."""
    runs: int = 0
    """Runs of equal values after filling the capture positions."""
    bytes: int = 0
    """Size of the compact files."""
    tables: int = 0
    """Files written."""
    seconds: float = 0.0
    """Wall time."""
    rule_bytes: int = 0
    """Size of the category files (``.wcdf``), not counted in ``bytes``."""
    by_pieces: dict = field(default_factory=dict)
    """Piece count -> [positions, bytes, tables, rule_bytes]."""

    @property
    def bits_per_position(self) -> float:
        """File bits per position (all positions counted)."""
        return 8 * self.bytes / self.positions if self.positions else 0.0

    def add(self, other: "CompactReport", pieces: int) -> None:
        """Add a material's report to the totals."""
        self.positions += other.positions
        self.captures += other.captures
        self.runs += other.runs
        self.bytes += other.bytes
        self.tables += other.tables
        self.rule_bytes += other.rule_bytes
        row = self.by_pieces.setdefault(pieces, [0, 0, 0, 0])
        row[0] += other.positions
        row[1] += other.bytes
        row[2] += other.tables
        row[3] += other.rule_bytes


def compact_path(directory: os.PathLike | str, material: Material, *, kind: FileKind = WLD) -> Path:
    """The compact file of a material in a directory (``kind=WCDF``: its category file).

    >>> compact_path("data/egtb", Material.parse("1k-1k")).name
    '1k-1k.wld'
    >>> compact_path("data/egtb", Material.parse("1k-1k"), kind=WCDF).name
    '1k-1k.wcdf'
    """
    return Path(directory) / f"{material.name}{kind.suffix}"


def category_codes(category: np.ndarray) -> np.ndarray:
    """Category-file codes (uint8) of categories (int8, -2..2).

    >>> category_codes(np.array([2, 1, 0, -1, -2], dtype=np.int8)).tolist()
    [2, 4, 1, 5, 3]
    """
    return CODE_OF_CATEGORY[np.asarray(category, dtype=np.int64) + 2]


def _counts(material: Material) -> np.ndarray:
    return np.array([material.black_men, material.black_kings, material.white_men,
                     material.white_kings], dtype=np.int64)


def encode_values(material: Material, wld: np.ndarray, *, kind: FileKind = WLD
                  ) -> tuple[bytes, CompactReport]:
    """The compact file's bytes for a material's value codes (uint8, one per position).

    The codes are those of ``kind``: DRAW, WIN, LOSS for a WLD file, also
    CURSED_WIN and BLESSED_LOSS for a category file (see :func:`category_codes`).
    """
    values = np.ascontiguousarray(wld, dtype=np.uint8).copy()
    if len(values) != count_positions(material):
        raise ValueError(f"{material.name}: {len(values)} values for "
                         f"{count_positions(material)} positions")
    captures = int(fill_captures(_counts(material), values))
    n_runs = int(count_runs(values))
    run_vals = np.empty(n_runs, dtype=np.uint8)
    run_lens = np.empty(n_runs, dtype=np.int64)
    find_runs(values, run_vals, run_lens)
    del values
    if n_runs and int(run_vals.max()) > kind.values:
        raise ValueError(f"{material.name}: value code {int(run_vals.max())} is not a "
                         f"{kind.suffix} code (1..{kind.values})")
    hist = np.zeros((kind.values + 1, kind.symbols), dtype=np.int64)
    count_symbols(run_vals, run_lens, hist)
    lengths = _code_lengths(hist, run_lens, kind)
    codes = np.stack([canonical_codes(row) for row in lengths])
    bound = int((lengths.max() + MAX_EXPONENT) * n_runs // 8)
    capacity = (bound // (BLOCK_BYTES - 16) + 2) * BLOCK_BYTES
    out = np.zeros(capacity, dtype=np.uint8)
    max_blocks = capacity // BLOCK_BYTES + 1
    starts = np.zeros(max_blocks, dtype=np.int64)
    ctx = np.zeros(max_blocks, dtype=np.uint8)
    runs = np.zeros(max_blocks, dtype=np.int64)
    n_blocks, used = encode_blocks(run_vals, run_lens, codes, lengths, out, starts, ctx, runs)
    data = out[:used].tobytes()
    blob = _file_bytes(material, len(wld), data, starts[:n_blocks], ctx[:n_blocks],
                       int(runs[:n_blocks].max(initial=1)), lengths, kind)
    return blob, CompactReport(len(wld), captures, n_runs, len(blob), 1)


def _code_lengths(hist: np.ndarray, run_lens: np.ndarray, kind: FileKind) -> np.ndarray:
    """Huffman code lengths per context; every symbol a block start may need gets a code."""
    top = int(length_symbol(int(run_lens.max()))[0]) if len(run_lens) else 0
    smoothed = hist.copy()
    for choice in range(kind.values - 1):
        smoothed[1:, choice * NUM_BUCKETS:choice * NUM_BUCKETS + top + 1] += 1
    lengths = np.zeros_like(hist)
    for c in range(1, kind.values + 1):
        lengths[c] = huffman_lengths(smoothed[c])
    return lengths


def _file_bytes(material: Material, positions: int, data: bytes, starts: np.ndarray,
                ctx: np.ndarray, max_runs: int, lengths: np.ndarray, kind: FileKind) -> bytes:
    n_blocks = len(starts)
    index_bytes = INDEX_ENTRY.size * n_blocks
    data_offset = -(-(HEADER.size + kind.lengths_bytes + index_bytes) // DATA_ALIGN) * DATA_ALIGN
    index = bytearray()
    for k in range(n_blocks):
        block = data[k * BLOCK_BYTES:(k + 1) * BLOCK_BYTES]
        index += INDEX_ENTRY.pack(int(starts[k]), zlib.crc32(block), int(ctx[k]))
    table = lengths[1:].astype(np.uint8).tobytes()
    head = HEADER.pack(kind.magic, FORMAT_VERSION, kind.preset, material.black_men, material.black_kings,
                       material.white_men, material.white_kings, positions, BLOCK_BYTES,
                       MAX_CODE_BITS, n_blocks, max_runs, NUM_BUCKETS, data_offset, 0)
    crc = zlib.crc32(index, zlib.crc32(table, zlib.crc32(head[:-8])))
    head = head[:-8] + struct.pack("<I4x", crc)
    meta = head + table + bytes(index)
    return meta + bytes(data_offset - len(meta)) + data


def write_compact(path: os.PathLike | str, blob: bytes) -> Path:
    """Write a compact file atomically (temporary name, fsync, rename)."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(blob)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def compact_material(tables: os.PathLike | str, material: Material, *,
                     out: os.PathLike | str | None = None) -> CompactReport:
    """Write ``<material>.wld`` (in ``out``, default ``tables``) from the master table,
    and ``<material>.wcdf`` (the categories under "wcdf") when the master has that layer.

    Raises FileNotFoundError when the master file is absent, TableError when broken.
    """
    path = master.table_path(tables, material)
    if not path.exists():
        raise FileNotFoundError(f"no table for {material.name}: {path} is missing")
    rules = tuple(r for r in master.rule_presets_in(path) if r in RULE_KINDS)
    data = master.open_table(path, rules=rules)
    out = out if out is not None else tables
    blob, report = encode_values(material, data.wld)
    data.wld = data.dtw = None  # free them before the layers are coded
    write_compact(compact_path(out, material), blob)
    for rule in rules:
        kind = RULE_KINDS[rule]
        blob, _ = encode_values(material, category_codes(data.rules[rule].category), kind=kind)
        write_compact(compact_path(out, material, kind=kind), blob)
        report.rule_bytes += len(blob)
    return report


def compact_directory(tables: os.PathLike | str, *, out: os.PathLike | str | None = None,
                      jobs: int = 1, materials: list[Material] | None = None,
                      on_done: Callable[[Material, CompactReport], None] | None = None
                      ) -> CompactReport:
    """Compact every master table of a directory (largest first over ``jobs`` processes).

    >>> compact_directory("/nonexistent").tables
    0
    """
    started = time.perf_counter()
    tables = Path(tables)
    out = Path(out) if out is not None else tables
    if materials is None:
        materials = master.stored_materials(tables)
    if materials:
        out.mkdir(parents=True, exist_ok=True)
    todo = sorted(materials, key=count_positions, reverse=True)
    total = CompactReport()
    for material, report in _compact_all(tables, out, todo, jobs):
        total.add(report, material.pieces)
        if on_done is not None:
            on_done(material, report)
    total.seconds = time.perf_counter() - started
    return total


def _compact_one(tables: Path, out: Path, material: Material) -> tuple[Material, CompactReport]:
    return material, compact_material(tables, material, out=out)


def _compact_all(tables: Path, out: Path, todo: list[Material], jobs: int):
    if jobs <= 1 or len(todo) <= 1:
        for material in todo:
            yield _compact_one(tables, out, material)
        return
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        futures = [pool.submit(_compact_one, tables, out, m) for m in todo]
        for future in futures:
            yield future.result()


# ------------------------------------------------------------------ reading

_SERIAL = [0]


class CompactTable:
    """One open compact file (WLD or categories): header, block index and the blocks (memory-mapped).

    >>> CompactTable("/nonexistent/1k-1k.wld")
    Traceback (most recent call last):
    ...
    egtb.errors.TableError: /nonexistent/1k-1k.wld: unreadable compact file (No such file or directory)
    """

    dtw = None
    rules: dict = {}
    """No rule layer in the kernels' sense: a category file is opened by :meth:`layer`."""

    def __init__(self, path: os.PathLike | str, *, cache: "BlockCache | None" = None) -> None:
        self.path = Path(path)
        self._layers: dict[str, CompactTable] = {}
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(HEADER.size)
                self._parse_header(head)
                head += fh.read(self.kind.lengths_bytes)
                self._parse_lengths(head)
                index = fh.read(INDEX_ENTRY.size * self.n_blocks)
            self._parse_index(head, index)
            size = self.path.stat().st_size
            self.data = (np.memmap(self.path, dtype=np.uint8, mode="r", offset=self.data_offset)
                         .view(np.ndarray)  # a plain array for numba; the map stays open
                         if size > self.data_offset else np.zeros(0, dtype=np.uint8))
        except OSError as exc:
            raise TableError(f"{self.path}: unreadable compact file ({exc.strerror or exc})") from exc
        self.cache = cache if cache is not None else BlockCache()
        _SERIAL[0] += 1
        self.serial = _SERIAL[0]
        self._ends = np.empty(self.max_runs, dtype=np.int64)
        self._vals = np.empty(self.max_runs, dtype=np.uint8)
        self.value_of = tuple(int(v) for v in self.kind.value_of_code)
        """WDL (WLD file) or category (category file) of each value code."""

    def _parse_header(self, head: bytes) -> None:
        kind = KINDS.get(HEADER.unpack(head)[2]) if len(head) == HEADER.size else None
        if kind is None or head[:8] != kind.magic:
            raise TableError(f"{self.path}: not a compact WLD or category file")
        self.kind = kind
        (_, version, _, bm, bk, wm, wk, positions, block_bytes, code_bits, n_blocks, max_runs,
         buckets, data_offset, _) = HEADER.unpack(head)
        if version != FORMAT_VERSION:
            raise TableError(f"{self.path}: compact format version {version} is not {FORMAT_VERSION}")
        if (block_bytes, code_bits, buckets) != (BLOCK_BYTES, MAX_CODE_BITS, NUM_BUCKETS):
            raise TableError(f"{self.path}: unsupported block size, code length or buckets")
        self.material = Material(bm, bk, wm, wk)
        self.positions = positions
        self.n_blocks = n_blocks
        self.max_runs = max(1, max_runs)
        self.data_offset = data_offset

    def _parse_lengths(self, head: bytes) -> None:
        kind = self.kind
        if len(head) != HEADER.size + kind.lengths_bytes:
            raise TableError(f"{self.path}: truncated code-length table")
        lengths = np.zeros((kind.values + 1, kind.symbols), dtype=np.int64)
        lengths[1:] = np.frombuffer(head[HEADER.size:], dtype=np.uint8).reshape(kind.values, -1)
        self.lut = decoding_table(lengths)

    def _parse_index(self, head: bytes, index: bytes) -> None:
        if len(index) != INDEX_ENTRY.size * self.n_blocks:
            raise TableError(f"{self.path}: truncated block index")
        stored = HEADER.unpack(head[:HEADER.size])[-1]
        crc = zlib.crc32(index, zlib.crc32(head[HEADER.size:], zlib.crc32(head[:HEADER.size - 8])))
        if crc != stored:
            raise TableError(f"{self.path}: header checksum mismatch (file corrupted)")
        entries = np.frombuffer(index, dtype=np.dtype([("start", "<u8"), ("crc", "<u4"),
                                                       ("ctx", "u1"), ("pad", "V3")]))
        self.starts = np.append(entries["start"].astype(np.int64), np.int64(self.positions))
        self.crcs = np.ascontiguousarray(entries["crc"], dtype=np.uint32)
        self.ctx = np.ascontiguousarray(entries["ctx"], dtype=np.uint8)
        self._starts_list = self.starts.tolist()

    def __repr__(self) -> str:
        return f"CompactTable({str(self.path)!r}, blocks={self.n_blocks})"

    @property
    def nbytes(self) -> int:
        """Bytes of the file (what a Tablebase counts against its memory limit)."""
        return int(self.data_offset + len(self.data))

    def __len__(self) -> int:
        return self.positions

    def layer(self, rule: str) -> "CompactTable":
        """The category file of a preset next to this WLD file (opened once, sharing the cache).

        MissingRuleLayerError when there is none: compact category files exist
        for "wcdf" only, and hold no DTZ.
        """
        found = self._layers.get(rule)
        if found is not None:
            return found
        kind = RULE_KINDS.get(rule)
        path = self.path.with_suffix(kind.suffix) if kind is not None and self.kind is WLD else None
        if path is None or not path.exists():
            raise MissingRuleLayerError(
                f"{self.path}: a compact file has no rule layer for preset {rule!r} "
                f"(compact category files exist for {', '.join(RULE_KINDS)} only, "
                f"as <material>{WCDF.suffix}); probe with rule_free=True")
        found = self._layers[rule] = CompactTable(path, cache=self.cache)
        if found.material != self.material or found.positions != self.positions:
            raise TableError(f"{path}: holds material {found.material.name}, not {self.material.name}")
        return found

    def block_of(self, index: int) -> int:
        """The block holding a position index."""
        if not 0 <= index < self.positions:
            raise IndexError(f"{self.path}: position {index} outside 0..{self.positions - 1}")
        return bisect.bisect_right(self._starts_list, index) - 1

    def decode(self, block: int) -> tuple[np.ndarray, np.ndarray]:
        """(run ends, run values) of a block, checked; TableError names a damaged block."""
        lo = block * BLOCK_BYTES
        hi = min(lo + BLOCK_BYTES, len(self.data))
        if zlib.crc32(self.data[lo:hi]) != int(self.crcs[block]):
            raise TableError(f"{self.path}: block {block} is damaged (CRC-32 mismatch)")
        count = self._starts_list[block + 1] - self._starts_list[block]
        n = decode_block(self.data, lo, hi, count, self.ctx[block], self.lut.reshape(-1),
                         self._ends, self._vals)
        if n < 0:
            raise TableError(f"{self.path}: block {block} does not decode")
        return self._ends[:n].copy(), self._vals[:n].copy()

    def value(self, index: int) -> int:
        """Stored value code of a position (meaningless where the side to move must capture)."""
        starts = self._starts_list
        block = bisect.bisect_right(starts, index) - 1
        if not 0 <= index < self.positions:
            raise IndexError(f"{self.path}: position {index} outside 0..{self.positions - 1}")
        key = (self.serial << 32) | block
        blocks = self.cache.blocks
        runs = blocks.get(key)
        if runs is None:
            ends, vals = self.decode(block)
            runs = (array("q", ends.tobytes()), vals.tobytes())  # 9 bytes a run
            self.cache.put(key, runs)
        else:
            blocks.move_to_end(key)
        return runs[1][bisect.bisect_right(runs[0], index - starts[block])]

    def values(self) -> np.ndarray:
        """Stored value codes of every position (uint8), decoding every block."""
        out = np.empty(self.positions, dtype=np.uint8)
        for block in range(self.n_blocks):
            ends, vals = self.decode(block)
            base = self._starts_list[block]
            out[base:base + int(ends[-1]) if len(ends) else base] = np.repeat(
                vals, np.diff(ends, prepend=0))
        return out


class BlockCache:
    """LRU of decoded blocks (run ends as an int64 array, values as bytes), shared by a
    Tablebase's tables: at most ``max_blocks`` blocks, each at most 9 * MAX_RUNS bytes
    (about 60 KB for a typical 5-piece block)."""

    def __init__(self, max_blocks: int = DEFAULT_CACHE_BLOCKS) -> None:
        self.max_blocks = max_blocks
        self.blocks: OrderedDict = OrderedDict()
        """Decoded blocks by key (table serial << 32 | block), least recently used first."""

    def __len__(self) -> int:
        return len(self.blocks)

    def put(self, key: int, runs: tuple[array, bytes]) -> None:
        """Remember a decoded block, forgetting the least recently used beyond max_blocks."""
        self.blocks[key] = runs
        while len(self.blocks) > self.max_blocks:
            self.blocks.popitem(last=False)


def open_compact(path: os.PathLike | str, *, owner: object | None = None) -> CompactTable:
    """Open a compact file, sharing ``owner``'s block cache (a Tablebase) when given."""
    return CompactTable(path, cache=_state(owner).cache if owner is not None else None)


# ------------------------------------------------------------------ probing (Python)

WDL_WIN, WDL_DRAW, WDL_LOSS = 1, 0, -1


@njit(cache=True)
def capture_successors(bm, bk, wm, wk, turn, moves):
    """Generate the legal moves into ``moves``; return how many."""
    return generate_moves(np.int64(bm), np.int64(bk), np.int64(wm), np.int64(wk), turn, moves)


#: Move buffer of the single-probe capture search (read out before any recursion).
_MOVES = np.empty((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)


def probe_position(table: CompactTable, key: tuple[int, int, int, int, int], index: int,
                   capture: bool, probe_key: Callable[[tuple], tuple[int, object]]
                   ) -> tuple[int, None]:
    """(value, None) of a position of a compact table; ``probe_key`` probes successors.

    The value is the WDL (+1/0/-1) from a WLD file, the category at counter 0
    (+2..-2) from a category file. A position whose side to move must capture
    is resolved by searching its captures (all of them lead to smaller
    material): the best over them of minus the successor's value. Under
    "wcdf" that holds for categories too, as a capture resets the counter: the
    successors are at counter 0, where their categories are. ``index`` and
    ``capture`` (whether the side to move must capture) come from
    :func:`egtb.probe.tablebase.locate_capture`.
    """
    if not capture:
        return table.value_of[table.value(index)], None
    n = capture_successors(*key, _MOVES)
    turn = 1 - key[4]
    top = table.kind.top
    best = -top
    for bm, bk, wm, wk in _MOVES[:n, M_BM:M_WK + 1].tolist():
        best = max(best, -probe_key((bm, bk, wm, wk, turn))[0])
        if best == top:
            break
    return best, None


# ------------------------------------------------------------------ probing (numba batch)

#: Columns of the per-table descriptor rows the batch kernel reads (int64 each).
D_KIND = 0  #: KIND_NONE, KIND_MASTER, KIND_COMPACT or KIND_MASTER_CATEGORY
D_SIZE = 1  #: positions
D_DATA = 2  #: address of the master codes (uint8) or categories (int8), or of the compact blocks
D_DATA_LEN = 3  #: bytes of the compact blocks
D_STARTS = 4  #: address of the block starts (int64, blocks + 1)
D_CRCS = 5  #: address of the block CRCs (uint32)
D_CTX = 6  #: address of the block contexts (uint8)
D_LUT = 7  #: address of the decoding table (int32, NUM_CONTEXTS x 2**MAX_CODE_BITS)
D_BLOCKS = 8  #: blocks
D_SLOTS = 9  #: address of the table's page map (int64 per page of PAGE_POSITIONS: pool slot or -1)
D_DTW = 10  #: address of a master table's DTW (of its layer's DTZ for KIND_MASTER_CATEGORY)
D_DTW_WIDE = 11  #: 1 when that DTW (DTZ) is uint16, 0 when uint8
D_WIDTH = 12
#: Positions of a page of the batch pool: a table's positions i with the same i >> PAGE_SHIFT.
PAGE_SHIFT = 16
PAGE_POSITIONS = 1 << PAGE_SHIFT
PAGE_MASK = PAGE_POSITIONS - 1
#: Pages start at multiples of this many bytes in the pool.
PAGE_ALIGN = 64
#: Columns of the pool descriptor (int64 each; addresses, so that the kernels pass one array).
PL_PAGES = 0  #: address of the pages (uint8, slots x page bytes)
PL_PAGE_BYTES = 1  #: bytes of a page
PL_SLOTS = 2  #: pages the pool holds
PL_OWNER = 3  #: address of each slot's (table row, page), int64; row -1: free
PL_ENDS = 4  #: address of the decoding scratch: run ends (int64)
PL_VALS = 5  #: address of the decoding scratch: run value codes (uint8)
PL_LUT = 6  #: address of the value of each packed byte's places (int8, see :func:`page_values`)
PL_PER_BYTE = 7  #: values a byte packs, as base-PL_BASE digits
PL_BASE = 8  #: the number of value codes
PL_REPEAT = 9  #: the byte whose every place holds digit 1
PL_RECIPROCAL = 10  #: ceil(2**RECIPROCAL_BITS / PL_PER_BYTE), to divide page offsets
PL_CLOCK = 11  #: the next slot to fill
PL_MEMO_ROW = 12  #: the table row whose block the scratch holds (-1: none)
PL_MEMO_BLOCK = 13  #: that block
PL_MEMO_RUNS = 14  #: its runs
PL_RUNS = 15  #: runs the decoding scratch holds at most
PL_WIDTH = 16
#: Bits of the fixed-point reciprocal (exact for every page offset, see :func:`_byte_and_place`).
RECIPROCAL_BITS = 32
#: Columns of the page value table: a byte's places (at most 8 values a byte).
LUT_PLACES = 8


def packing(kind: FileKind) -> tuple[int, int, int, int]:
    """(values a byte packs, base, repeat, reciprocal) of a kind of file in the batch pool.

    A WLD file's three codes pack five to a byte (3**5 = 243), a category
    file's five codes three to a byte (5**3 = 125), as base-3 or base-5
    digits (code - 1); repeat is the byte whose every digit is 1.

    >>> packing(WLD)[:3], packing(WCDF)[:3]
    ((5, 3, 121), (3, 5, 31))
    """
    per_byte = 1
    while kind.values ** (per_byte + 1) <= 256:
        per_byte += 1
    repeat = sum(kind.values ** k for k in range(per_byte))
    return per_byte, kind.values, repeat, -(-(1 << RECIPROCAL_BITS) // per_byte)


def page_values(kind: FileKind) -> np.ndarray:
    """The value (WDL or category) of each place of each packed byte: entry byte * LUT_PLACES + place.

    >>> lut = page_values(WLD)
    >>> [int(lut[(0 + 1 * 3 + 2 * 9) * LUT_PLACES + place]) for place in range(3)]   # draw, win, loss
    [0, 1, -1]
    """
    per_byte, base, _, _ = packing(kind)
    lut = np.zeros(256 * LUT_PLACES, dtype=np.int8)
    for byte in range(base ** per_byte):
        for place in range(per_byte):
            lut[byte * LUT_PLACES + place] = kind.value_of_code[(byte // base ** place) % base + 1]
    return lut


def page_bytes(kind: FileKind) -> int:
    """Bytes of one page of the pool (PAGE_POSITIONS packed values, aligned).

    >>> page_bytes(WLD), page_bytes(WCDF)
    (13120, 21888)
    """
    return -(-(-(-PAGE_POSITIONS // packing(kind)[0])) // PAGE_ALIGN) * PAGE_ALIGN


@njit(cache=True, inline="always")
def _locate(bm, bk, wm, wk, turn):
    """(material code, index); code -2 when the side to move has no piece, -3 no opponent."""
    if turn == 1:
        bm, bk, wm, wk = (np.int64(mirror_bb(wm)), np.int64(mirror_bb(wk)),
                          np.int64(mirror_bb(bm)), np.int64(mirror_bb(bk)))
    n_bm, n_bk, n_wm, n_wk = popcount(bm), popcount(bk), popcount(wm), popcount(wk)
    if n_bm + n_bk == 0:
        return -2, np.int64(0)
    if n_wm + n_wk == 0:
        return -3, np.int64(0)
    return material_code(n_bm, n_bk, n_wm, n_wk), position_index(bm, bk, wm, wk)


@njit(cache=True, inline="always")
def _byte_and_place(offset, pool):
    """(byte, place) of a page offset: offset // per_byte and offset % per_byte, by a multiply.

    Exact for offsets below 2**32 / per_byte**2, far above PAGE_POSITIONS.
    """
    byte = (offset * pool[PL_RECIPROCAL]) >> RECIPROCAL_BITS
    return byte, offset - byte * pool[PL_PER_BYTE]


@njit(cache=True, inline="always")
def _page_value(row, index, desc, pool, status):
    """Value (WDL or category) of position `index` of compact table `row`, from its page in the
    block pool (filled first when absent); STOPPED when a block is damaged (see status).

    A table's page map (D_SLOTS) gives the pool slot of each of its pages (-1
    when absent): a probe reads one entry of it and one byte of the pool.
    """
    page = index >> PAGE_SHIFT
    slot = int64_ptr(desc[row, D_SLOTS])[page]
    if slot < 0:
        slot = _fill_page(row, page, desc, pool, status)
        if slot < 0:
            return STOPPED
    byte, place = _byte_and_place(index & PAGE_MASK, pool)
    packed = np.int64(uint8_ptr(pool[PL_PAGES])[slot * pool[PL_PAGE_BYTES] + byte])
    return np.int64(int8_ptr(pool[PL_LUT])[packed * LUT_PLACES + place])


@njit(cache=True)
def _fill_page(row, page, desc, pool, status):
    """Fill the clock's next pool slot with a page of compact table `row`, decoding the blocks
    it overlaps; return the slot, or -1 when a block is damaged (status set)."""
    slot = pool[PL_CLOCK]
    pool[PL_CLOCK] = (slot + 1) % pool[PL_SLOTS]
    owner = int64_ptr(pool[PL_OWNER])
    if owner[2 * slot] >= 0:
        int64_ptr(desc[owner[2 * slot], D_SLOTS])[owner[2 * slot + 1]] = -1
        owner[2 * slot] = -1
    out = uint8_ptr(pool[PL_PAGES] + slot * pool[PL_PAGE_BYTES])
    ends, vals = int64_ptr(pool[PL_ENDS]), uint8_ptr(pool[PL_VALS])
    starts = int64_ptr(desc[row, D_STARTS])
    lo = page << PAGE_SHIFT
    hi = min(lo + PAGE_POSITIONS, desc[row, D_SIZE])
    block = _block_of(starts, desc[row, D_BLOCKS], lo)
    pos = lo
    writer = (np.int64(0), np.int64(0), np.int64(1), np.int64(0))  # byte, place, weight, packed so far
    while pos < hi:
        n = _decoded_block(row, block, desc, pool, status)
        if n < 0:
            return -1
        base = starts[block]
        stop = min(starts[block + 1], hi)
        r = _run_at(ends, n, pos - base)
        while pos < stop:
            end = min(base + ends[r], stop)
            writer = _put_run(out, writer, np.int64(vals[r]) - 1, end - pos, pool)
            pos = end
            r += 1
        block += 1
    if writer[1]:
        out[writer[0]] = writer[3]
    owner[2 * slot], owner[2 * slot + 1] = row, page
    int64_ptr(desc[row, D_SLOTS])[page] = slot
    return slot


@njit(cache=True, inline="always")
def _block_of(starts, n_blocks, index):
    """The block holding a position index (starts: the first index of each block)."""
    lo, hi = 0, n_blocks - 1
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if starts[mid] <= index:
            lo = mid
        else:
            hi = mid - 1
    return lo


@njit(cache=True, inline="always")
def _run_at(ends, n, offset):
    """The first of runs 0..n-1 whose end (exclusive) is beyond a block offset."""
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if ends[mid] > offset:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _decoded_block(row, block, desc, pool, status):
    """Decode a block of compact table `row` into the pool's scratch runs (unless it holds them);
    return their number, or -1 when the block is damaged (status set)."""
    if pool[PL_MEMO_ROW] == row and pool[PL_MEMO_BLOCK] == block:
        return pool[PL_MEMO_RUNS]
    pool[PL_MEMO_ROW] = -1
    data = uint8_ptr(desc[row, D_DATA])
    start = block * BLOCK_BYTES
    stop = min(start + BLOCK_BYTES, desc[row, D_DATA_LEN])
    if crc32(data, start, stop) != uint32_ptr(desc[row, D_CRCS])[block]:
        status[0], status[2], status[3] = ST_CORRUPT, row, block
        return -1
    starts = int64_ptr(desc[row, D_STARTS])
    n = decode_block(data, start, stop, starts[block + 1] - starts[block], uint8_ptr(desc[row, D_CTX])[block],
                     int32_ptr(desc[row, D_LUT]), carray(int64_ptr(pool[PL_ENDS]), pool[PL_RUNS]),
                     uint8_ptr(pool[PL_VALS]))
    if n < 0:
        status[0], status[2], status[3] = ST_CORRUPT, row, block
        return -1
    pool[PL_MEMO_ROW], pool[PL_MEMO_BLOCK], pool[PL_MEMO_RUNS] = row, block, n
    return n


@njit(cache=True, inline="always")
def _put_run(out, writer, digit, length, pool):
    """Append `length` values `digit` to a page being packed; return the writer's new state.

    The writer is (byte, place, weight, packed): the next place to fill, its
    weight (base ** place) and the partial byte so far (written when full).
    """
    byte, place, weight, packed = writer
    per_byte, base = pool[PL_PER_BYTE], pool[PL_BASE]
    while length > 0 and place != 0:  # finish the partial byte
        packed += digit * weight
        weight *= base
        place += 1
        length -= 1
        if place == per_byte:
            out[byte] = packed
            byte, place, weight, packed = byte + 1, 0, 1, 0
    full = digit * pool[PL_REPEAT]
    while length >= per_byte:  # whole bytes
        out[byte] = full
        byte += 1
        length -= per_byte
    while length > 0:  # start the next byte
        packed += digit * weight
        weight *= base
        place += 1
        length -= 1
    return byte, place, weight, packed


@njit(cache=True, inline="always")
def _table_value(code, index, bm, bk, wm, wk, turn, rows, desc, pool, status, value_of, top):
    """Value (WDL, or category when top is 2) of a located position without search;
    NEEDS_SEARCH when a capture search must give it, STOPPED when the batch stops (see status)."""
    if code == -2:
        return -top
    if code == -3:
        moves = count_simple_moves(bm, bk, wm, wk, turn) > 0 or has_capture(bm, bk, wm, wk, turn)
        return top if moves else -top
    row = rows[code]
    if row < 0:
        status[0], status[2] = ST_MISSING, code
        return STOPPED
    if index >= desc[row, D_SIZE]:
        status[0], status[2] = ST_RANGE, row
        return STOPPED
    kind = desc[row, D_KIND]
    if kind == KIND_MASTER:
        return value_of[uint8_ptr(desc[row, D_DATA])[index]]
    if kind == KIND_MASTER_CATEGORY:
        return int8_ptr(desc[row, D_DATA])[index]
    if has_capture(bm, bk, wm, wk, turn):
        return NEEDS_SEARCH
    return _page_value(row, index, desc, pool, status)


@njit(cache=True, inline="always")
def _absolute(pm, pk, om, ok, turn):
    """(bm, bk, wm, wk) of a side-relative position (the side to move's pieces first)."""
    if turn == 0:
        return pm, pk, om, ok
    return om, ok, pm, pk


@njit(cache=True)
def _search_captures(bm, bk, wm, wk, turn, rows, desc, pool, status, children, scratch, levels, value_of, top):
    """Value of a position whose side must capture: depth-first over the captures (explicit stack).

    The best over the captures of minus the successor's value (a capture
    resets the move-rule counter, so categories negate like WDL values); a
    level stops at its first winning capture. The children of level L are rows
    L * MAX_CHILDREN.. of `children`, side-relative (:func:`child_positions`);
    ``levels[L]`` holds their number, the next one and the best value so far.
    """
    level = 0
    pm, pk, om, ok = _absolute(bm, bk, wm, wk, turn)  # the same swap turns it side-relative
    levels[0, S_MOVES] = child_positions(pm, pk, om, ok, turn, children, 0, scratch)
    levels[0, S_NEXT] = 0
    levels[0, S_BEST] = -top
    while True:
        if levels[level, S_NEXT] == levels[level, S_MOVES] or levels[level, S_BEST] == top:
            v = levels[level, S_BEST]
            if level == 0:
                return v
            level -= 1
            levels[level, S_BEST] = max(levels[level, S_BEST], -v)
            continue
        row = level * MAX_CHILDREN + levels[level, S_NEXT]
        levels[level, S_NEXT] += 1
        cturn = (turn + level + 1) & 1
        pm, pk, om, ok = children[row, CH_PM], children[row, CH_PK], children[row, CH_OM], children[row, CH_OK]
        cbm, cbk, cwm, cwk = _absolute(pm, pk, om, ok, cturn)
        code, index = _locate(cbm, cbk, cwm, cwk, cturn)
        v = _table_value(code, index, cbm, cbk, cwm, cwk, cturn, rows, desc, pool, status, value_of, top)
        if v == STOPPED:
            return STOPPED
        if v != NEEDS_SEARCH:
            levels[level, S_BEST] = max(levels[level, S_BEST], -v)
            continue
        level += 1
        levels[level, S_MOVES] = child_positions(pm, pk, om, ok, cturn, children, level * MAX_CHILDREN, scratch)
        levels[level, S_NEXT] = 0
        levels[level, S_BEST] = -top


#: Levels of the capture search stack (each level removes a piece).
MAX_SEARCH_DEPTH = 25
#: Columns of a search level: its children, the next child to probe, the best value so far.
S_MOVES = 0
S_NEXT = 1
S_BEST = 2


@njit(cache=True)
def locate_all(bm, bk, wm, wk, turn, codes, indices):
    """(material code, index) of every position, as :func:`_locate` gives them."""
    for i in range(bm.shape[0]):
        codes[i], indices[i] = _locate(np.int64(bm[i]), np.int64(bk[i]), np.int64(wm[i]),
                                       np.int64(wk[i]), turn[i])


@njit(cache=True)
def probe_kernel(bm, bk, wm, wk, turn, codes, indices, first, rows, desc, pool, value_of,
                 out_value, out_dist, status):
    """Values and distances of positions first.. into out_value, out_dist; stops at a missing
    table or a damaged block.

    ``codes`` and ``indices`` locate the positions (:func:`locate_all`, or the
    prober's own pass). ``value_of`` maps stored codes to values: WDL (+1/0/-1) and DTW for WLD
    files and master values, or categories (+2..-2) and DTZ for category
    files and master rule layers (:data:`FileKind.value_of_code`).
    ``pool`` describes the block pool (PL_* columns, :class:`_BatchState`).
    The distance comes from master tables (NO_DTW where a compact file answered).
    status = [kind, position, detail, block]: ST_OK, or what stopped the batch
    at which position (the caller loads the table and resumes there).
    """
    top = np.int64(max(value_of[1], value_of[2]))
    children = np.empty((MAX_SEARCH_DEPTH * MAX_CHILDREN, 4), dtype=np.int64)
    scratch = np.empty((CAPTURE_ROWS + MAX_JUMPS + 1, 4), dtype=np.int64)
    levels = np.zeros((MAX_SEARCH_DEPTH, 3), dtype=np.int64)
    status[0] = ST_OK
    end = bm.shape[0]
    for i in range(first, end):  # a tight loop first: many table reads in flight
        v = _table_value(np.int64(codes[i]), np.int64(indices[i]), np.int64(bm[i]), np.int64(bk[i]),
                         np.int64(wm[i]), np.int64(wk[i]), turn[i], rows, desc, pool, status, value_of, top)
        if v == STOPPED:
            end = i  # finish the positions before it, then stop there
            break
        out_value[i] = v
    status[1] = end
    for i in range(first, end):  # then the capture searches and the distances
        v = np.int64(out_value[i])
        if v == NEEDS_SEARCH:
            v = _search_captures(np.int64(bm[i]), np.int64(bk[i]), np.int64(wm[i]), np.int64(wk[i]), turn[i],
                                 rows, desc, pool, status, children, scratch, levels, value_of, top)
            if v == STOPPED:
                status[1] = i
                return
            out_value[i] = v
        out_dist[i] = _distance_of(np.int64(codes[i]), np.int64(indices[i]), v, rows, desc)


@njit(cache=True, inline="always")
def _distance_of(code, index, v, rows, desc):
    """DTW (DTZ) of a probed position: from its master table (layer), NO_DTW from a compact one."""
    if code < 0:
        return 1 if v > 0 else 0
    row = rows[code]
    kind = desc[row, D_KIND]
    if kind != KIND_MASTER and kind != KIND_MASTER_CATEGORY:
        return NO_DTW
    if v == 0:
        return 0
    if desc[row, D_DTW_WIDE]:
        return np.int64(uint16_ptr(desc[row, D_DTW])[index])
    return np.int64(uint8_ptr(desc[row, D_DTW])[index])


class _BatchState:
    """The numba block pool and table descriptors of one kind of batch probe (WDL, or the
    categories of one preset) for one owner.

    The pool holds pages of PAGE_POSITIONS consecutive positions of a table,
    their values packed as base-3 (WLD) or base-5 (categories) digits, five or
    three a byte: at most ``pool_bytes`` of them, reused in turn (a clock). A
    page is filled from the blocks it overlaps when first probed.
    """

    def __init__(self, kind: FileKind, pool_bytes: int = DEFAULT_POOL_BYTES) -> None:
        self.kind = kind
        self.rows = np.full(NUM_CODES, -1, dtype=np.int64)
        self.desc = np.zeros((0, D_WIDTH), dtype=np.int64)
        self.tables: list = []  # keeps every described table's arrays alive
        self.slot_maps: list[np.ndarray] = []  # each table's page map
        slots = max(16, pool_bytes // page_bytes(kind))
        self.pages = np.zeros((slots, page_bytes(kind)), dtype=np.uint8)
        self.owner = np.full((slots, 2), -1, dtype=np.int64)  # (table row, page) of each slot
        self.lut = page_values(kind)
        self.ends = np.zeros(1, dtype=np.int64)
        self.vals = np.zeros(1, dtype=np.uint8)
        self.pool = np.zeros(PL_WIDTH, dtype=np.int64)
        """The pool descriptor the kernels take (PL_* columns)."""
        pool = self.pool
        pool[PL_PAGES], pool[PL_PAGE_BYTES], pool[PL_SLOTS] = self.pages.ctypes.data, self.pages.shape[1], slots
        pool[PL_OWNER], pool[PL_LUT] = self.owner.ctypes.data, self.lut.ctypes.data
        pool[PL_PER_BYTE], pool[PL_BASE], pool[PL_REPEAT], pool[PL_RECIPROCAL] = packing(kind)
        self._ensure_scratch(1)

    def describe(self, code: int, table) -> None:
        """Add (or replace) the table of a material code: a CompactTable, a master table
        (``wld``, ``dtw``) or a master rule layer (``category``, ``dtz``)."""
        row = np.zeros(D_WIDTH, dtype=np.int64)
        slot_map = np.zeros(1, dtype=np.int64)
        if isinstance(table, CompactTable):
            if table.kind is not self.kind:
                raise TableError(f"{table.path}: a {table.kind.suffix} file where a "
                                 f"{self.kind.suffix} file was expected")
            slot_map = np.full((len(table) + PAGE_MASK) >> PAGE_SHIFT, -1, dtype=np.int64)
            row[D_SIZE] = len(table)
            row[D_KIND] = KIND_COMPACT
            row[D_DATA] = table.data.ctypes.data if len(table.data) else 0
            row[D_DATA_LEN] = len(table.data)
            row[D_STARTS] = table.starts.ctypes.data
            row[D_CRCS] = table.crcs.ctypes.data
            row[D_CTX] = table.ctx.ctypes.data
            row[D_LUT] = table.lut.ctypes.data
            row[D_BLOCKS] = table.n_blocks
            self._ensure_scratch(table.max_runs)
        else:
            values, dist = (table.category, table.dtz) if self.kind.rule else (table.wld, table.dtw)
            row[D_KIND] = KIND_MASTER_CATEGORY if self.kind.rule else KIND_MASTER
            row[D_DATA] = values.ctypes.data
            row[D_SIZE] = min(len(values), len(dist))
            row[D_DTW] = dist.ctypes.data
            row[D_DTW_WIDE] = dist.dtype.itemsize == 2
        row[D_SLOTS] = slot_map.ctypes.data
        self.pool[PL_MEMO_ROW] = -1
        index = self.rows[code]
        if index >= 0:
            self.owner[self.owner[:, 0] == index] = -1  # its pages are the old table's
            self.desc[index] = row
            self.tables[index] = table
            self.slot_maps[index] = slot_map
        else:
            self.rows[code] = len(self.tables)
            self.desc = np.vstack([self.desc, row[None, :]])
            self.tables.append(table)
            self.slot_maps.append(slot_map)

    def _ensure_scratch(self, max_runs: int) -> None:
        """Decoding scratch for blocks of max_runs runs."""
        if max_runs > len(self.ends) or self.pool[PL_ENDS] == 0:
            self.ends = np.zeros(max_runs, dtype=np.int64)
            self.vals = np.zeros(max_runs, dtype=np.uint8)
            self.pool[PL_ENDS], self.pool[PL_VALS] = self.ends.ctypes.data, self.vals.ctypes.data
            self.pool[PL_RUNS] = max_runs
        self.pool[PL_MEMO_ROW] = -1


class _OwnerState:
    """What one owner (a Tablebase) keeps for compact files: the block cache of single
    probes, and a batch state per kind of batch (created when first used)."""

    def __init__(self) -> None:
        self.cache = BlockCache()
        self.batches: dict[str | None, _BatchState] = {}

    def batch(self, rule: str | None) -> _BatchState:
        """The batch state of WDL probes (rule None) or of a preset's categories."""
        state = self.batches.get(rule)
        if state is None:
            state = self.batches[rule] = _BatchState(WLD if rule is None else RULE_KINDS[rule])
        return state


_STATES: "weakref.WeakKeyDictionary[object, _OwnerState]" = weakref.WeakKeyDictionary()


def _state(owner: object) -> _OwnerState:
    state = _STATES.get(owner)
    if state is None:
        state = _STATES[owner] = _OwnerState()
    return state


def probe_batch(arrays: tuple[np.ndarray, ...], load: Callable[[int], object], *,
                owner: object, rule: str | None = None,
                located: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """WDL (int8) and DTW (uint16, NO_DTW where a compact file answered) of many positions;
    with ``rule`` ("wcdf"), the category at counter 0 (int8) and DTZ (NO_DTW likewise).

    ``arrays`` are (bm, bk, wm, wk, turn) int64 arrays of valid positions;
    ``load(code)`` returns the table of a material code (master or compact,
    MissingTableError when absent); with ``rule`` its ``layer(rule)`` is
    probed (MissingRuleLayerError when absent). Capture positions of compact
    tables are resolved by a capture search in the kernel. ``located`` are the
    positions' (material codes, indices) when the caller has them already.
    """
    if rule is not None and rule not in RULE_KINDS:
        raise MissingRuleLayerError(f"compact files hold no categories for preset {rule!r} "
                                    f"(only {', '.join(RULE_KINDS)})")
    state = _state(owner).batch(rule)
    n = len(arrays[0])
    if located is None:
        located = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
        locate_all(*arrays, *located)
    out_value = np.zeros(n, dtype=np.int8)
    out_dist = np.zeros(n, dtype=np.uint16)
    status = np.zeros(4, dtype=np.int64)
    first = 0
    while True:
        probe_kernel(*arrays, *located, first, state.rows, state.desc, state.pool, state.kind.value_of_code,
                     out_value, out_dist, status)
        kind, first = int(status[0]), int(status[1])
        if kind == ST_OK:
            return out_value, out_dist
        if kind == ST_MISSING:
            code = int(status[2])
            table = load(code)
            state.describe(code, table if rule is None else table.layer(rule))
            continue
        table = state.tables[int(status[2])]
        name = getattr(table, "path", None) or material_of_code(
            int(np.flatnonzero(state.rows == int(status[2]))[0])).name
        if kind == ST_CORRUPT:
            raise TableError(f"{name}: block {int(status[3])} is damaged (CRC-32 mismatch)")
        raise TableError(f"{name}: an index fell outside the table")


# ------------------------------------------------------------------ verification

@dataclass
class CompactVerifyReport(VerifyReport):
    """Outcome of :func:`verify_compact`: ``tables`` and ``checked`` count the WLD files and
    their positions, ``layers`` and ``layer_checked`` the category files and theirs."""

    captures: int = 0
    """Positions whose value came from the capture search."""
    layers: int = 0
    """Category files (``.wcdf``) checked."""
    layer_checked: int = 0
    """Positions whose category was checked."""


@njit(cache=True)
def _unrank_chunk(counts, lo, hi, out_bm, out_bk, out_wm, out_wk, out_cap):
    """Bitboards of positions lo..hi of a material (Black to move) and whether each must capture."""
    n_bm, n_bk, n_wm, n_wk = counts[0], counts[1], counts[2], counts[3]
    size = unit_size(n_bm, n_bk, n_wm, n_wk)
    bk_arr = np.empty(size, dtype=np.int64)
    wk_arr = np.empty(size, dtype=np.int64)
    m_done = -1
    bm = wm = np.int64(0)
    for i in range(lo, hi):
        m = i // size
        if m != m_done:
            bm32, wm32 = unrank_men(m, n_bm, n_wm)
            bm, wm = np.int64(bm32), np.int64(wm32)
            unrank_unit(n_bk, n_wk, bm, wm, bk_arr, wk_arr)
            m_done = m
        j = i - m * size
        out_bm[i - lo], out_bk[i - lo], out_wm[i - lo], out_wk[i - lo] = bm, bk_arr[j], wm, wk_arr[j]
        out_cap[i - lo] = has_capture(bm, bk_arr[j], wm, wk_arr[j], 0)


@njit(cache=True)
def _successors_chunk(bm, bk, wm, wk, offsets, s_bm, s_bk, s_wm, s_wk):
    """Every position's successors (White to move) into s_*; offsets[i] is where i's start."""
    moves = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    k = 0
    for i in range(bm.shape[0]):
        offsets[i] = k
        n = generate_moves(bm[i], bk[i], wm[i], wk[i], 0, moves)
        if k + n > s_bm.shape[0]:
            return -1
        for m in range(n):
            s_bm[k], s_bk[k], s_wm[k], s_wk[k] = (moves[m, M_BM], moves[m, M_BK],
                                                  moves[m, M_WM], moves[m, M_WK])
            k += 1
    offsets[bm.shape[0]] = k
    return k


@njit(cache=True)
def _check_successors(values, offsets, succ_wdl, errors):
    """Count positions whose value is not the best over its successors (no move: loss)."""
    bad = 0
    for i in range(values.shape[0]):
        best = WDL_LOSS
        for k in range(offsets[i], offsets[i + 1]):
            best = max(best, -succ_wdl[k])
        if best != values[i]:
            if bad < errors.shape[0]:
                errors[bad] = i
            bad += 1
    return bad


def verify_compact(directory: os.PathLike | str, *, materials: list[Material] | None = None,
                   masters: os.PathLike | str | None = None, chunk: int = 1 << 20,
                   max_reported: int = 20) -> CompactVerifyReport:
    """Check the compact files of a directory, probing through them alone.

    Every position (stored or recovered by the capture search) is compared with
    the master table in ``masters`` (default: the same directory) when there is
    one, else checked against its successors (its value is the best over its
    moves, probed from the compact files; no move is a loss). A category file
    (``.wcdf``) is compared with the master's rule layer when there is one,
    else with the WLD file (a category's win or loss side must be its WDL).
    Damaged blocks and missing files count as errors, named in the messages.

    >>> verify_compact("/nonexistent").ok
    False
    """
    from egtb.positions.index import global_unrank
    directory = Path(directory)
    masters = Path(masters) if masters is not None else directory
    if materials is None:
        materials = master.stored_materials(directory, suffix=SUFFIX)
    report = CompactVerifyReport()
    prober = CompactProber(directory)
    for material in materials:
        for rule in (None, *(r for r, kind in RULE_KINDS.items()
                             if compact_path(directory, material, kind=kind).exists())):
            kind = RULE_KINDS[rule] if rule else WLD
            if rule is None:
                report.tables += 1
            else:
                report.layers += 1
            try:
                bad, caps, errors = _verify_one(prober, masters, material, chunk, max_reported, rule)
            except (TableError, FileNotFoundError) as exc:
                report.errors += 1
                report.messages.append(str(exc))
                continue
            if rule is None:
                report.checked += count_positions(material)
                report.captures += caps
            else:
                report.layer_checked += count_positions(material)
            report.errors += bad
            for index, what in errors[:max(0, max_reported - len(report.messages))]:
                fen = format_fen(Placement(*global_unrank(material, index), 0))
                report.messages.append(f"{fen} ({material.name}{kind.suffix} #{index}): {what}")
    return report


class CompactProber:
    """Batch probes through the compact files of one directory only (what verification uses).

    >>> CompactProber("/nonexistent").probe_batch(np.array([1]), np.array([0]), np.array([0]),
    ...                                           np.array([0]), 1)[0].tolist()   # White has no pieces
    [-1]
    """

    def __init__(self, directory: os.PathLike | str) -> None:
        self.directory = Path(directory)

    def table(self, material: Material) -> CompactTable:
        """The compact table of a material (MissingTableError when absent)."""
        path = compact_path(self.directory, material)
        if not path.exists():
            raise MissingTableError(f"no compact table for material {material.name} in "
                                    f"{self.directory} ({path.name} is missing)")
        return open_compact(path, owner=self)

    def probe_batch(self, bm, bk, wm, wk, turn, *, rule: str | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """WDL (or with ``rule`` the category) and NO_DTW of valid positions given as bitboard arrays."""
        arrays = [np.ascontiguousarray(a, dtype=np.int64) for a in (bm, bk, wm, wk)]
        turns = np.ascontiguousarray(np.broadcast_to(np.asarray(turn, dtype=np.int64),
                                                     (len(arrays[0]),)))
        return probe_batch((*arrays, turns), lambda code: self.table(material_of_code(code)),
                           owner=self, rule=rule)


def _reference(masters: Path, material: Material, rule: str | None) -> np.ndarray | None:
    """The master's WDL (rule None) or categories of a material, None without a master."""
    path = master.table_path(masters, material)
    if not path.exists():
        return None
    if rule is None:
        wld, _ = master.load_material(masters, material)
        return WDL_OF_CODE[wld]
    if rule not in master.rule_presets_in(path):
        return None
    return master.open_table(path, rules=(rule,)).rules[rule].category


def _verify_one(prober: CompactProber, masters: Path, material: Material, chunk: int,
                max_reported: int, rule: str | None = None) -> tuple[int, int, list[tuple[int, str]]]:
    table = prober.table(material)
    (table.layer(rule) if rule else table).values()  # every block's CRC and decoding
    reference = _reference(masters, material, rule)
    counts = _counts(material)
    total = count_positions(material)
    bad, caps, errors = 0, 0, []
    for lo in range(0, total, chunk):
        hi = min(lo + chunk, total)
        bm, bk, wm, wk = (np.empty(hi - lo, dtype=np.int64) for _ in range(4))
        cap = np.empty(hi - lo, dtype=np.bool_)
        _unrank_chunk(counts, lo, hi, bm, bk, wm, wk, cap)
        caps += int(cap.sum())
        got, _ = prober.probe_batch(bm, bk, wm, wk, 0, rule=rule)
        if reference is not None:
            wrong = np.flatnonzero(got != reference[lo:hi])
            what = "differs from the master table"
        elif rule is None:
            wrong = _successor_errors(prober, bm, bk, wm, wk, got)
            what = "is not the best value over its successors"
        else:
            wrong = np.flatnonzero(np.sign(got) != prober.probe_batch(bm, bk, wm, wk, 0)[0])
            what = f"disagrees with {material.name}{SUFFIX}"
        bad += len(wrong)
        errors += [(lo + int(i), f"{'recovered' if cap[i] else 'stored'} "
                                 f"{'category' if rule else 'value'} {what}")
                   for i in wrong[:max_reported]]
    return bad, caps, errors


def _successor_errors(prober: CompactProber, bm, bk, wm, wk, wdl) -> np.ndarray:
    offsets = np.empty(len(bm) + 1, dtype=np.int64)
    cap = len(bm) * 64
    s = [np.empty(cap, dtype=np.int64) for _ in range(4)]
    k = int(_successors_chunk(bm, bk, wm, wk, offsets, *s))
    if k < 0:
        raise ValueError("more than 64 moves per position on average in a verify chunk")
    succ_wdl, _ = prober.probe_batch(*(a[:k] for a in s), 1)
    errors = np.zeros(len(bm), dtype=np.int64)
    bad = _check_successors(wdl.astype(np.int64), offsets, succ_wdl.astype(np.int64), errors)
    return errors[:bad]
