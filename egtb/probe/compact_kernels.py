"""The compact batch prober: a numba kernel over compact files (and master tables), with its block pool.

Positions of a compact file are read from a pool of pages (PAGE_POSITIONS
consecutive positions of a table, packed as base-3 or base-5 digits) filled
from the coded blocks on first use; positions whose side to move must capture
are resolved by a capture search in the kernel (explicit stack), the capture
search of single probes being :meth:`egtb.probe.tablebase.Tablebase`'s. A
:class:`CompactBatches` holds a prober's pools; :func:`probe_batch` runs a batch.

A batch over tables of more pages than the pool holds (7 pieces: about 530,000
pages of WDL values) is probed in the order of its pages, so that each page is
filled once per batch rather than once per position, and its capture searches
become one batch of their successors (probed the same way) instead of a search
per position, whose successors would each miss the pool.

>>> packing(WDL)[:3], packing(WCDF)[:3]
((5, 3, 121), (3, 5, 31))
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import carray, njit

from egtb.errors import MissingRuleLayerError, TableError
from egtb.formats.compact.codec import crc32, decode_block
from egtb.formats.compact.layout import BLOCK_BYTES, RULE_KINDS, WCDF, WDL, FileKind
from egtb.formats.pointers import int8_ptr, int32_ptr, int64_ptr, uint16_ptr, uint32_ptr, uint8_ptr
from egtb.positions.index import NUM_CODES, material_of_code
from egtb.positions.material import count_positions
from egtb.probe.kernels import BLOCK_MASK, BLOCK_SHIFT, NO_DTW, block_address
from egtb.probe.locate import CODE_NO_OPPONENT, CODE_NO_PIECES, has_moves, locate_all, locate_valid
from egtb.rules.movegen import has_capture
from egtb.rules.perft import CAPTURE_ROWS, CH_OK, CH_OM, CH_PK, CH_PM, MAX_CHILDREN, MAX_JUMPS, child_positions

__all__ = ["CompactBatches", "DEFAULT_POOL_BYTES", "probe_batch"]

#: Bytes of the numba batch block pool per prober (and per kind of file probed).
DEFAULT_POOL_BYTES = 64 << 20
#: Kernel status codes (what stopped a batch).
ST_OK = 0
ST_MISSING = 1  #: a table is not loaded: detail = material code
ST_CORRUPT = 2  #: a block fails its CRC or does not decode: detail = code, block
ST_RANGE = 3  #: an index beyond its table
ST_MISSING_BLOCK = 4  #: a master table's block is not in memory: detail = table row, block
#: Kinds of table a kernel sees per material code.
KIND_NONE = 0
KIND_MASTER = 1  #: master value codes (mapped by the kernel's value_of_code)
KIND_COMPACT = 2
KIND_MASTER_CATEGORY = 3  #: a master rule layer's categories (int8), read as they are
#: Kernel results beside values: a capture search is due; the batch stopped (see status).
NEEDS_SEARCH = 9
STOPPED = -9


#: Columns of the per-table descriptor rows the batch kernel reads (int64 each).
D_KIND = 0  #: KIND_NONE, KIND_MASTER, KIND_COMPACT or KIND_MASTER_CATEGORY
D_SIZE = 1  #: positions
D_DATA = 2  #: address of the block map of master codes (uint8) or categories (int8), or of the compact blocks
D_DATA_LEN = 3  #: bytes of the compact blocks
D_STARTS = 4  #: address of the block starts (int64, blocks + 1)
D_CRCS = 5  #: address of the block CRCs (uint32)
D_CTX = 6  #: address of the block contexts (uint8)
D_LUT = 7  #: address of the decoding table (int32, NUM_CONTEXTS x 2**MAX_CODE_BITS)
D_BLOCKS = 8  #: blocks
D_SLOTS = 9  #: address of the table's page map (int64 per page of PAGE_POSITIONS: pool slot or -1)
D_DTW = 10  #: address of the block map of a master table's DTW (its layer's DTZ for KIND_MASTER_CATEGORY); 0: none
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

    >>> packing(WDL)[:3], packing(WCDF)[:3]
    ((5, 3, 121), (3, 5, 31))
    """
    per_byte = 1
    while kind.values ** (per_byte + 1) <= 256:
        per_byte += 1
    repeat = sum(kind.values ** k for k in range(per_byte))
    return per_byte, kind.values, repeat, -(-(1 << RECIPROCAL_BITS) // per_byte)


def page_values(kind: FileKind) -> np.ndarray:
    """The value (WDL or category) of each place of each packed byte: entry byte * LUT_PLACES + place.

    >>> lut = page_values(WDL)
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

    >>> page_bytes(WDL), page_bytes(WCDF)
    (13120, 21888)
    """
    return -(-(-(-PAGE_POSITIONS // packing(kind)[0])) // PAGE_ALIGN) * PAGE_ALIGN


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
    if code == CODE_NO_PIECES:
        return -top
    if code == CODE_NO_OPPONENT:
        return top if has_moves(bm, bk, wm, wk, turn) else -top
    row = rows[code]
    if row < 0:
        status[0], status[2] = ST_MISSING, code
        return STOPPED
    if index >= desc[row, D_SIZE]:
        status[0], status[2] = ST_RANGE, row
        return STOPPED
    kind = desc[row, D_KIND]
    if kind == KIND_MASTER or kind == KIND_MASTER_CATEGORY:
        values = block_address(desc[row, D_DATA], index)
        if values == 0:
            status[0], status[2], status[3] = ST_MISSING_BLOCK, row, index >> BLOCK_SHIFT
            return STOPPED
        if kind == KIND_MASTER:
            return value_of[uint8_ptr(values)[index & BLOCK_MASK]]
        return int8_ptr(values)[index & BLOCK_MASK]
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
        code, index = locate_valid(cbm, cbk, cwm, cwk, cturn)
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
def probe_kernel(bm, bk, wm, wk, turn, codes, indices, first, rows, desc, pool, value_of,
                 out_value, out_dist, status, search):
    """Values and distances of positions first.. into out_value, out_dist; stops at a missing
    table or a damaged block.

    ``codes`` and ``indices`` locate the positions (:func:`egtb.probe.locate.locate_all`, or the
    prober's own pass). ``value_of`` maps stored codes to values: WDL (+1/0/-1) and DTW for WLD
    files and master values, or categories (+2..-2) and DTZ for category
    files and master rule layers (:data:`FileKind.value_of_code`).
    ``pool`` describes the block pool (PL_* columns, :class:`BatchPool`).
    The distance comes from master tables (NO_DTW where a compact file answered).
    status = [kind, position, detail, block]: ST_OK, or what stopped the batch
    at which position (the caller loads the table and resumes there).
    Without ``search`` a position whose side must capture keeps the value
    NEEDS_SEARCH (and distance NO_DTW): the caller probes its captures as a batch.
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
        if v == NEEDS_SEARCH and not search:
            out_dist[i] = NO_DTW
            continue
        if v == NEEDS_SEARCH:
            v = _search_captures(np.int64(bm[i]), np.int64(bk[i]), np.int64(wm[i]), np.int64(wk[i]), turn[i],
                                 rows, desc, pool, status, children, scratch, levels, value_of, top)
            if v == STOPPED:
                status[1] = i
                return
            out_value[i] = v
        out_dist[i] = _distance_of(np.int64(codes[i]), np.int64(indices[i]), v, rows, desc)


@njit(cache=True)
def capture_children(bm, bk, wm, wk, turn, needs, counts, out):
    """The positions after each capture of the positions ``needs`` marks (the opponent to move).

    With ``out`` of no rows, only counts each position's captures into
    ``counts`` and returns the total; else fills ``out`` rows (bm, bk, wm,
    wk, turn, parent position) in order and returns their number.
    """
    children = np.empty((MAX_CHILDREN, 4), dtype=np.int64)
    scratch = np.empty((CAPTURE_ROWS + MAX_JUMPS + 1, 4), dtype=np.int64)
    k = 0
    for i in range(bm.shape[0]):
        if not needs[i]:
            continue
        pm, pk, om, ok = _absolute(np.int64(bm[i]), np.int64(bk[i]), np.int64(wm[i]), np.int64(wk[i]), turn[i])
        m = child_positions(pm, pk, om, ok, turn[i], children, 0, scratch)
        counts[i] = m
        if out.shape[0] == 0:
            k += m
            continue
        cturn = 1 - turn[i]
        for j in range(m):
            cbm, cbk, cwm, cwk = _absolute(children[j, CH_PM], children[j, CH_PK], children[j, CH_OM],
                                           children[j, CH_OK], cturn)
            out[k, 0], out[k, 1], out[k, 2], out[k, 3], out[k, 4], out[k, 5] = cbm, cbk, cwm, cwk, cturn, i
            k += 1
    return k


@njit(cache=True)
def best_of_children(parents, child_values, top, out_value):
    """Each parent's value: the best over its children of minus the child's value."""
    for k in range(parents.shape[0]):
        out_value[parents[k]] = -top
    for k in range(parents.shape[0]):
        v = -np.int64(child_values[k])
        if v > out_value[parents[k]]:
            out_value[parents[k]] = v


@njit(cache=True, inline="always")
def _distance_of(code, index, v, rows, desc):
    """DTW (DTZ) of a probed position: from its master table (layer), NO_DTW from a compact one."""
    if code < 0:
        return 1 if v > 0 else 0
    row = rows[code]
    kind = desc[row, D_KIND]
    if kind != KIND_MASTER and kind != KIND_MASTER_CATEGORY:
        return NO_DTW
    if desc[row, D_DTW] == 0:
        return NO_DTW
    if v == 0:
        return 0
    distances = block_address(desc[row, D_DTW], index)  # in memory with the value's block
    if desc[row, D_DTW_WIDE]:
        return np.int64(uint16_ptr(distances)[index & BLOCK_MASK])
    return np.int64(uint8_ptr(distances)[index & BLOCK_MASK])


class BatchPool:
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
        """Add (or replace) the table of a material code: a compact table (one that leaves the
        capture positions out: its blocks are read through the pool), or a master table or
        rule layer (its ``kernel_arrays()``: values, and distances or None)."""
        row = np.zeros(D_WIDTH, dtype=np.int64)
        slot_map = np.zeros(1, dtype=np.int64)
        if not table.stores_captures:
            table = table.coded  # the compact file (with a master file beside it, too)
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
            blocks = table.kernel_arrays()
            row[D_KIND] = KIND_MASTER_CATEGORY if self.kind.rule else KIND_MASTER
            row[D_DATA] = blocks.values_at.ctypes.data
            row[D_SIZE] = len(table)
            row[D_DTW] = 0 if blocks.names[1] is None else blocks.distances_at.ctypes.data
            row[D_DTW_WIDE] = blocks.wide
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


class CompactBatches:
    """A prober's batch pools: one per kind of batch (WDL, or a preset's categories), made when
    first used. The prober owns it (no state kept beside it, keyed by the prober).

    >>> batches = CompactBatches(pool_bytes=1)
    >>> batches.pool(None).kind.suffix, batches.pool("wcdf").kind.suffix
    ('.wld', '.wcdf')
    """

    def __init__(self, *, pool_bytes: int = DEFAULT_POOL_BYTES) -> None:
        self.pool_bytes = pool_bytes
        self._pools: dict[str | None, BatchPool] = {}

    def pool(self, rule: str | None) -> BatchPool:
        """The pool of WDL probes (rule None) or of a preset's categories."""
        found = self._pools.get(rule)
        if found is None:
            kind = WDL if rule is None else RULE_KINDS[rule]
            found = self._pools[rule] = BatchPool(kind, self.pool_bytes)
        return found

    def clear(self) -> None:
        """Forget every pool (and the tables they describe)."""
        self._pools.clear()


def _search_as_a_batch(arrays: tuple[np.ndarray, ...], out_value: np.ndarray, load: Callable[[int], object], *,
                       batches: CompactBatches, rule: str | None, top: int) -> None:
    """Values of the positions left NEEDS_SEARCH in ``out_value``: their captures' successors
    probed as one batch (in the order of their pages, each searched the same way), then the
    best over each position's captures."""
    needs = out_value == NEEDS_SEARCH
    if not needs.any():
        return
    counts = np.zeros(len(needs), dtype=np.int64)
    total = capture_children(*arrays, needs, counts, np.zeros((0, 6), dtype=np.int64))
    rows = np.empty((total, 6), dtype=np.int64)
    capture_children(*arrays, needs, counts, rows)
    child_arrays = tuple(np.ascontiguousarray(rows[:, k]) for k in range(5))
    child_values, _ = probe_batch(child_arrays, load, batches=batches, rule=rule)
    values = np.zeros(len(needs), dtype=np.int64)
    best_of_children(np.ascontiguousarray(rows[:, 5]), child_values, top, values)
    out_value[needs] = values[needs]


def page_order(codes: np.ndarray, indices: np.ndarray, slots: int) -> np.ndarray | None:
    """The positions (material codes, indices) sorted by table and index, when their tables
    have more pages than a pool of ``slots`` pages holds (None otherwise: any order reads
    each page once).

    >>> page_order(np.array([3, 3, -1]), np.array([5, 1, 0]), 16) is None
    True
    """
    present = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=NUM_CODES))
    pages = sum(-(-count_positions(material_of_code(int(code))) // PAGE_POSITIONS) for code in present)
    if pages <= slots:
        return None
    return np.argsort((codes.astype(np.int64) << 40) | indices)


def probe_batch(arrays: tuple[np.ndarray, ...], load: Callable[[int], object], *,
                batches: CompactBatches, rule: str | None = None,
                located: tuple[np.ndarray, np.ndarray] | None = None,
                ordered: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """WDL (int8) and DTW (uint16, NO_DTW where a compact file answered) of many positions;
    with ``rule`` ("wcdf"), the category at counter 0 (int8) and DTZ (NO_DTW likewise).

    ``arrays`` are (bm, bk, wm, wk, turn) int64 arrays of valid positions;
    ``load(code)`` returns the table of a material code (master or compact,
    MissingTableError when absent); with ``rule`` its ``layer(rule)`` is
    probed (MissingRuleLayerError when absent). Capture positions of compact
    tables are resolved by a capture search in the kernel, through the pools of
    ``batches`` (the prober's). ``located`` are the
    positions' (material codes, indices) when the caller has them already.
    A batch over tables of more pages than the pool holds is probed in the
    order of its pages (:func:`page_order`) unless ``ordered`` says it is.
    """
    if rule is not None and rule not in RULE_KINDS:
        raise MissingRuleLayerError(f"compact files hold no categories for preset {rule!r} "
                                    f"(only {', '.join(RULE_KINDS)})")
    state = batches.pool(rule)
    n = len(arrays[0])
    if located is None:
        located = (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
        locate_all(*arrays, *located)
    order = None if ordered else page_order(*located, len(state.owner))
    if order is not None:  # more pages than the pool holds: each page filled once, in order
        value, dist = probe_batch(tuple(a[order] for a in arrays), load, batches=batches, rule=rule,
                                  located=(located[0][order], located[1][order]), ordered=True)
        out_value, out_dist = np.empty_like(value), np.empty_like(dist)
        out_value[order], out_dist[order] = value, dist
        return out_value, out_dist
    search = not ordered  # ordered: the captures are probed as one batch, in the order of their pages
    out_value = np.zeros(n, dtype=np.int8)
    out_dist = np.zeros(n, dtype=np.uint16)
    status = np.zeros(4, dtype=np.int64)
    first = 0
    while True:
        probe_kernel(*arrays, *located, first, state.rows, state.desc, state.pool, state.kind.value_of_code,
                     out_value, out_dist, status, search)
        kind, first = int(status[0]), int(status[1])
        if kind == ST_OK:
            if not search:
                _search_as_a_batch(arrays, out_value, load, batches=batches, rule=rule,
                                   top=int(state.kind.value_of_code.max()))
            return out_value, out_dist
        if kind == ST_MISSING:
            code = int(status[2])
            table = load(code)
            state.describe(code, table if rule is None else table.layer(rule))
            continue
        if kind == ST_MISSING_BLOCK:
            state.tables[int(status[2])].load_block(int(status[3]))
            continue
        table = state.tables[int(status[2])]
        name = getattr(table, "path", None) or material_of_code(
            int(np.flatnonzero(state.rows == int(status[2]))[0])).name
        if kind == ST_CORRUPT:
            raise TableError(f"{name}: block {int(status[3])} is damaged (CRC-32 mismatch)")
        raise TableError(f"{name}: an index fell outside the table")
