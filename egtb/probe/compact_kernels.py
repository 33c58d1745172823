"""The compact batch prober: a numba kernel over compact files (and master tables).

A compact file's value at a position is decoded from its block's marks (the
decoder's state every few runs, :class:`egtb.formats.compact.CompactTable`,
kept in the process's cache): at most :func:`~egtb.formats.compact.reader.mark_spacing`
runs from the mark before it, or fewer when the previous position of the
batch lay in the same block just before it (the kernel continues from there).
A block without marks in memory stops the kernel; the caller makes them
(``load_block``) and resumes. Positions whose side to move must capture are
resolved by a capture search in the kernel (explicit stack), the capture
search of single probes being :meth:`egtb.probe.tablebase.Tablebase`'s. A
:class:`CompactBatches` holds a prober's table descriptors; :func:`probe_batch`
runs a batch.

A batch over tables of many positions (7 pieces) is probed in the order of
its positions, so that the positions of a block come together (each decoded
from the one before) and its capture searches become one batch of their
successors (probed the same way) instead of a search per position.

>>> int(ORDER_ABOVE).bit_length() - 1
28
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numba import njit

from egtb.errors import MissingRuleLayerError, TableError
from egtb.formats.compact.codec import MARK_SHIFT, block_of, decode_from, last_mark_from, refined
from egtb.formats.compact.layout import BLOCK_BYTES, DTZ_KINDS, RULE_KINDS, WDL, FileKind
from egtb.formats.pointers import int8_ptr, int32_ptr, int64_ptr, uint16_ptr, uint8_ptr
from egtb.positions.index import NUM_CODES, material_of_code
from egtb.positions.material import count_positions
from egtb.probe.kernels import (BLOCK_MASK, BLOCK_SHIFT, LEVEL_WIDTH, MAX_SEARCH_DEPTH, NO_DTW, S_BEST, absolute,
                                block_address, mark_threat, next_child, open_level, threat_category)
from egtb.probe.locate import CODE_NO_OPPONENT, CODE_NO_PIECES, has_moves, locate_all, locate_valid
from egtb.rules.captures import CAPTURE_ROWS, MAX_JUMPS, has_capture
from egtb.rules.perft import CH_OK, CH_OM, CH_PK, CH_PM, MAX_CHILDREN, child_positions
from egtb.rules.threats import threat_left_out

__all__ = ["CompactBatches", "ORDER_ABOVE", "probe_batch", "probe_dtz_batch"]

#: Kernel status codes (what stopped a batch).
ST_OK = 0
ST_MISSING = 1  #: a table is not loaded: detail = material code
ST_RANGE = 3  #: an index beyond its table
ST_MISSING_BLOCK = 4  #: a block is not in memory (a master block, or a compact block's marks): detail = row, block
#: Kinds of table a kernel sees per material code.
KIND_NONE = 0
KIND_MASTER = 1  #: master value codes (mapped by the kernel's value_of_code)
KIND_COMPACT = 2
KIND_MASTER_CATEGORY = 3  #: a master rule layer's categories (int8), read as they are
#: Kernel results beside values: a capture search is due; a threat position's search (one move
#: deep, :mod:`egtb.rules.threats`) is due; the batch stopped (see status).
NEEDS_SEARCH = 9
NEEDS_THREAT_SEARCH = 10
STOPPED = -9


#: Columns of the per-table descriptor rows the batch kernel reads (int64 each).
D_KIND = 0  #: KIND_NONE, KIND_MASTER, KIND_COMPACT or KIND_MASTER_CATEGORY
D_SIZE = 1  #: positions
D_DATA = 2  #: address of the block map of master codes (uint8) or categories (int8), or of the compact blocks
D_DATA_LEN = 3  #: bytes of the compact blocks
D_STARTS = 4  #: address of the block starts (int64, blocks + 1)
D_MARKS = 5  #: address of the blocks' marks addresses (int64 each, 0: not in memory)
D_MARK_COUNTS = 6  #: address of the blocks' numbers of marks (int64)
D_LUT = 7  #: address of the decoding table (int32, two levels: codec.decoding_table)
D_BLOCKS = 8  #: blocks
D_DTW = 10  #: address of the block map of a master table's DTW (its layer's DTZ for KIND_MASTER_CATEGORY); 0: none
D_DTW_WIDE = 11  #: 1 when that DTW (DTZ) is uint16, 0 when uint8
D_EXCEPTIONS = 12  #: address of a category file's exceptions (int64, ascending; :func:`refined`)
D_EXCEPTION_COUNT = 13  #: their number (0: a file not coded as exceptions)
D_THREATS = 14  #: 1 when its WLD file leaves threat positions out (:mod:`egtb.rules.threats`)
D_WIDTH = 15
#: Columns of the decoder's memo (int64 each): the last run a compact lookup decoded, from which
#: the next lookup in the same block continues when it lies at or after it.
M_ROW = 0  #: the table row (-1: none)
M_BLOCK = 1  #: the block
M_START = 2  #: the run's first offset in the block
M_NEXT = 3  #: the next run's mark (its first offset, token's bit offset and context, as a block's marks)
M_VALUE = 4  #: the run's value code
M_MARK = 5  #: the place of the last mark at or before it in the block's marks
M_WIDTH = 6
#: A batch over tables of more positions than this is probed in the order of its positions.
ORDER_ABOVE = 1 << 28


@njit(cache=True)
def _compact_value(row, index, desc, memo, status, value_of):
    """Value (WDL or category) of position `index` of compact table `row`, decoded from its block's
    marks (or from the memo's run, when the batch's previous lookup lies just before it in the
    same block); STOPPED when the block's marks are not in memory (see status)."""
    starts = int64_ptr(desc[row, D_STARTS])
    if memo[M_ROW] == row and starts[memo[M_BLOCK]] <= index < starts[memo[M_BLOCK] + 1]:
        block = memo[M_BLOCK]
    else:
        block = block_of(starts, desc[row, D_BLOCKS], index)
    marks = int64_ptr(desc[row, D_MARKS])[block]
    if marks == 0:
        status[0], status[2], status[3] = ST_MISSING_BLOCK, row, block
        return STOPPED
    offset = index - starts[block]
    ahead = memo[M_ROW] == row and memo[M_BLOCK] == block and memo[M_START] <= offset
    if ahead and offset < memo[M_NEXT] >> MARK_SHIFT:  # in the memo's run
        return value_of[refined(memo[M_VALUE], index, desc[row, D_EXCEPTIONS], desc[row, D_EXCEPTION_COUNT])]
    at = last_mark_from(int64_ptr(marks), int64_ptr(desc[row, D_MARK_COUNTS])[block], offset,
                        memo[M_MARK] if ahead else -1)
    mark = int64_ptr(marks)[at]
    if ahead and memo[M_NEXT] >= mark:  # continue from the memo's run: no further back than the mark
        mark = memo[M_NEXT]
    start = block * BLOCK_BYTES
    stop = min(start + BLOCK_BYTES, desc[row, D_DATA_LEN])
    value, run_start, next_mark = decode_from(uint8_ptr(desc[row, D_DATA]), start, stop,
                                              int32_ptr(desc[row, D_LUT]), mark, offset)
    memo[M_ROW], memo[M_BLOCK], memo[M_START], memo[M_NEXT], memo[M_VALUE] = row, block, run_start, next_mark, value
    memo[M_MARK] = at
    return value_of[refined(value, index, desc[row, D_EXCEPTIONS], desc[row, D_EXCEPTION_COUNT])]


@njit(cache=True, inline="always")
def _table_value(code, index, capture, bm, bk, wm, wk, turn, rows, desc, memo, status, value_of, top):
    """Value (WDL, or category when top is 2) of a located position without search;
    NEEDS_SEARCH when a capture search must give it, NEEDS_THREAT_SEARCH when its file leaves it
    out as a threat position, STOPPED when the batch stops (see status).
    ``capture``: whether its side to move must capture (1, 0), or -1 to find out."""
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
    if capture == 1 or (capture < 0 and has_capture(bm, bk, wm, wk, turn)):
        return NEEDS_SEARCH
    if desc[row, D_THREATS] and threat_left_out(bm, bk, wm, wk, turn):
        return NEEDS_THREAT_SEARCH
    return _compact_value(row, index, desc, memo, status, value_of)


@njit(cache=True)
def _search_captures(bm, bk, wm, wk, turn, rows, desc, memo, status, children, scratch, levels, value_of, top):
    """Value of a position whose side must capture: depth-first over the captures (explicit stack).

    The best over the captures of minus the successor's value (a capture
    resets the move-rule counter, so categories negate like WDL values); a
    level stops at its first winning capture. The children of level L are rows
    L * MAX_CHILDREN.. of `children`, side-relative (:func:`child_positions`);
    ``levels[L]`` holds their number, the next one and the best value so far.
    A threat position its file leaves out is searched over all its moves the
    same way (:func:`~egtb.probe.kernels.mark_threat`); so is the position itself
    when it is one (the caller then finds its category: :func:`threat_category`).
    """
    pm, pk, om, ok = absolute(bm, bk, wm, wk, turn)  # the same swap turns it side-relative
    open_level(pm, pk, om, ok, turn, 0, children, scratch, levels, top)
    level = np.int64(0)
    while True:
        level, row = next_child(levels, level, top)
        if level < 0:
            return row
        cturn = (turn + level + 1) & 1
        pm, pk, om, ok = children[row, CH_PM], children[row, CH_PK], children[row, CH_OM], children[row, CH_OK]
        cbm, cbk, cwm, cwk = absolute(pm, pk, om, ok, cturn)
        code, index = locate_valid(cbm, cbk, cwm, cwk, cturn)
        v = _table_value(code, index, -1, cbm, cbk, cwm, cwk, cturn, rows, desc, memo, status, value_of, top)
        if v == STOPPED:
            return STOPPED
        if v != NEEDS_SEARCH and v != NEEDS_THREAT_SEARCH:
            levels[level, S_BEST] = max(levels[level, S_BEST], -v)
        else:
            level += 1
            open_level(pm, pk, om, ok, cturn, level, children, scratch, levels, top)
            if v == NEEDS_THREAT_SEARCH:
                row = rows[code]
                mark_threat(levels, level, index, desc[row, D_EXCEPTIONS], desc[row, D_EXCEPTION_COUNT])


@njit(cache=True)
def probe_kernel(bm, bk, wm, wk, turn, order, codes, indices, capture, first, rows, desc, memo, value_of,
                 out_value, out_dist, status, search):
    """Values and distances of the positions order[first:] into out_value[first:], out_dist[first:];
    stops at a missing table or a block not in memory.

    ``bm``..``turn`` are the positions, ``order`` the order to probe them in;
    ``codes`` and ``indices`` locate them (:func:`egtb.probe.locate.locate_all`,
    or the prober's own pass) and ``capture`` says whether their side to move
    must capture (1, 0), in that order already (:func:`sorted_batch`), or is
    empty (then found here). A position is read through ``order`` only where
    that is needed. ``value_of`` maps stored codes to values: WDL (+1/0/-1) and DTW for WLD
    files and master rule layers (:data:`FileKind.value_of_code`).
    ``memo`` is the decoder's memo (M_* columns, :class:`BatchPool`).
    The distance comes from master tables (NO_DTW where a compact file answered).
    status = [kind, step, detail, block]: ST_OK, or what stopped the batch at
    which step of ``order`` (the caller loads the table and resumes there).
    Without ``search`` a position whose side must capture keeps the value
    NEEDS_SEARCH (and distance NO_DTW): the caller probes their captures as a batch. A threat
    position its file leaves out is searched here while every table and block the search
    reads is in memory (a level stops at its first win), else it keeps NEEDS_THREAT_SEARCH
    for that batch (no stop: a batch meeting many blocks for the first time would stop at each).
    """
    top = np.int64(max(value_of[1], value_of[2]))
    children = np.empty((MAX_SEARCH_DEPTH * MAX_CHILDREN, 4), dtype=np.int64)
    scratch = np.empty((CAPTURE_ROWS + MAX_JUMPS + 1, 4), dtype=np.int64)
    levels = np.zeros((MAX_SEARCH_DEPTH, LEVEL_WIDTH), dtype=np.int64)
    status[0] = ST_OK
    end = order.shape[0]
    flags = capture.shape[0] > 0
    for i in range(first, end):  # a tight loop first: many table reads in flight
        code, index = np.int64(codes[i]), np.int64(indices[i])
        cap = np.int64(capture[i]) if flags else -1
        pbm = pbk = pwm = pwk = pturn = np.int64(0)
        if code < 0 or cap < 0 or (rows[code] >= 0 and desc[rows[code], D_THREATS]):
            j = order[i]
            pbm, pbk, pwm, pwk, pturn = np.int64(bm[j]), np.int64(bk[j]), np.int64(wm[j]), np.int64(wk[j]), turn[j]
        v = _table_value(code, index, cap, pbm, pbk, pwm, pwk, pturn, rows, desc, memo, status, value_of, top)
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
        if v == NEEDS_SEARCH or v == NEEDS_THREAT_SEARCH:
            j = order[i]
            best = _search_captures(np.int64(bm[j]), np.int64(bk[j]), np.int64(wm[j]), np.int64(wk[j]), turn[j],
                                    rows, desc, memo, status, children, scratch, levels, value_of, top)
            if best == STOPPED and not search:  # left to the batch of successors
                status[0] = ST_OK
                out_dist[i] = NO_DTW
                continue
            if best == STOPPED:
                status[1] = i
                return
            if v == NEEDS_THREAT_SEARCH and top == 2:
                row = rows[codes[i]]
                best = threat_category(best, np.int64(indices[i]), desc[row, D_EXCEPTIONS],
                                       desc[row, D_EXCEPTION_COUNT])
            v = best
            out_value[i] = v
        out_dist[i] = _distance_of(np.int64(codes[i]), np.int64(indices[i]), v, rows, desc)


@njit(cache=True)
def capture_children(bm, bk, wm, wk, turn, needs, first, out):
    """The positions after each capture of the positions first.. that ``needs`` marks (the
    opponent to move), as ``out`` rows (bm, bk, wm, wk, turn, parent position) in order.

    Returns (the position it stopped at, rows filled): it stops before a
    position whose captures no longer fit in ``out`` (the caller gives more
    rows and goes on from there), at len(bm) when done.
    """
    children = np.empty((MAX_CHILDREN, 4), dtype=np.int64)
    scratch = np.empty((CAPTURE_ROWS + MAX_JUMPS + 1, 4), dtype=np.int64)
    k = 0
    for i in range(first, bm.shape[0]):
        if not needs[i]:
            continue
        pm, pk, om, ok = absolute(np.int64(bm[i]), np.int64(bk[i]), np.int64(wm[i]), np.int64(wk[i]), turn[i])
        m = child_positions(pm, pk, om, ok, turn[i], children, 0, scratch)
        if k + m > out.shape[0]:
            return i, k
        cturn = 1 - turn[i]
        for j in range(m):
            cbm, cbk, cwm, cwk = absolute(children[j, CH_PM], children[j, CH_PK], children[j, CH_OM],
                                           children[j, CH_OK], cturn)
            out[k, 0], out[k, 1], out[k, 2], out[k, 3], out[k, 4], out[k, 5] = cbm, cbk, cwm, cwk, cturn, i
            k += 1
    return bm.shape[0], k


@njit(cache=True)
def threat_categories(values, threat, codes, indices, rows, desc):
    """The categories of the threat positions (``threat``) of a batch whose searches gave
    ``values`` (in place): :func:`threat_category` with each one's file's exceptions."""
    for i in range(values.shape[0]):
        if threat[i]:
            row = rows[codes[i]]
            values[i] = threat_category(values[i], np.int64(indices[i]), desc[row, D_EXCEPTIONS],
                                        desc[row, D_EXCEPTION_COUNT])


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
    """The table descriptors and the decoder's memo of one kind of batch probe (WDL, or the
    categories of one preset) for one owner. The compact blocks' marks it reads are the
    tables' own (in the process's cache, under its budget)."""

    def __init__(self, kind: FileKind, *, distances: bool = True) -> None:
        self.kind = kind
        self.distances = distances
        """Whether the master tables' distances are read (not for the successors of captures)."""
        self.rows = np.full(NUM_CODES, -1, dtype=np.int64)
        self.desc = np.zeros((0, D_WIDTH), dtype=np.int64)
        self.tables: list = []  # keeps every described table's arrays alive
        self.memo = np.full(M_WIDTH, -1, dtype=np.int64)
        """The decoder's memo the kernels take (M_* columns)."""

    def describe_loaded(self, code: int, load: Callable[[int], object]) -> None:
        """Describe the table ``load(code)`` gives (its layer of this pool's preset, if any)."""
        table = load(code)
        self.describe(code, table if self.kind.rule is None else table.layer(self.kind.rule))

    def describe(self, code: int, table) -> None:
        """Add (or replace) the table of a material code: a table kind of the prober (its
        ``batch_row(kind, distances=...)``: a compact file's blocks read through their marks, a
        master table's or rule layer's block maps of values, and of distances unless
        :attr:`distances` is False). The object kept for the row is the one the kernel's missed
        blocks are loaded from (its ``batch_source(...)``): the compact file, or the master's
        block map."""
        row = table.batch_row(self.kind, distances=self.distances)
        table = table.batch_source(distances=self.distances)
        self.memo[M_ROW] = -1
        index = self.rows[code]
        if index >= 0:
            self.desc[index] = row
            self.tables[index] = table
        else:
            self.rows[code] = len(self.tables)
            self.desc = np.vstack([self.desc, row[None, :]])
            self.tables.append(table)


class CompactBatches:
    """A prober's batch pools: one per kind of batch (WDL, or a preset's categories), made when
    first used. The prober owns it (no state kept beside it, keyed by the prober).

    >>> batches = CompactBatches()
    >>> batches.pool(None).kind.suffix, batches.pool("wcdf").kind.suffix
    ('.wld', '.wcdf')
    """

    def __init__(self) -> None:
        self._pools: dict[tuple[str | None, bool], BatchPool] = {}
        self._dtz_pools: dict[str, BatchPool] = {}

    def pool(self, rule: str | None, *, distances: bool = True) -> BatchPool:
        """The pool of WDL probes (rule None) or of a preset's categories; without ``distances``,
        the pool that reads no master table's distances (the successors of captures)."""
        found = self._pools.get((rule, distances))
        if found is None:
            found = self._pools[rule, distances] = BatchPool(WDL if rule is None else RULE_KINDS[rule],
                                                             distances=distances)
        return found

    def dtz_pool(self, rule: str) -> BatchPool:
        """The pool of a preset's compact DTZ files (:func:`probe_dtz_batch`)."""
        found = self._dtz_pools.get(rule)
        if found is None:
            found = self._dtz_pools[rule] = BatchPool(DTZ_KINDS[rule], distances=False)
        return found

    def clear(self) -> None:
        """Forget every pool (and the tables they describe)."""
        self._pools.clear()
        self._dtz_pools.clear()


def _search_as_a_batch(arrays: tuple[np.ndarray, ...], order: np.ndarray, located: tuple[np.ndarray, np.ndarray],
                       out_value: np.ndarray, load: Callable[[int], object], *, state: BatchPool,
                       batches: CompactBatches) -> None:
    """Values of the positions left NEEDS_SEARCH or NEEDS_THREAT_SEARCH in ``out_value`` (the
    values of ``arrays`` in ``order``, located at ``located`` in that order): their moves'
    successors (captures, where they must capture) probed as one batch (in the order of their
    positions, each searched the same way), then the best over each position's moves; a
    threat position's category then looked up (:func:`threat_categories`)."""
    rule, top = state.kind.rule, int(state.kind.value_of_code.max())
    threat = out_value == NEEDS_THREAT_SEARCH
    searched = (out_value == NEEDS_SEARCH) | threat  # in ``order``
    needs = np.zeros(len(order), dtype=np.bool_)  # by position
    needs[order[searched]] = True
    count = int(np.count_nonzero(needs))
    if not count:
        return
    parts, first = [], 0
    while first < len(needs):  # about 2 captures a position: rarely more than one part
        part = np.empty((2 * count + MAX_CHILDREN, 6), dtype=np.int64)
        first, filled = capture_children(*arrays, needs, first, part)
        parts.append(part[:filled])
    rows = parts[0] if len(parts) == 1 else np.concatenate(parts)
    child_arrays = tuple(np.ascontiguousarray(rows[:, k]) for k in range(5))
    child_values, _ = probe_batch(child_arrays, load, batches=batches, rule=rule, distances=False)
    values = np.zeros(len(needs), dtype=np.int64)
    best_of_children(np.ascontiguousarray(rows[:, 5]), child_values, top, values)
    found = values[order]
    if top == 2 and threat.any():
        threat_categories(found, threat, *located, state.rows, state.desc)
    out_value[searched] = found[searched]


class SortedBatch(NamedTuple):
    """A batch's positions in the order of their tables and indices (:func:`sorted_batch`)."""

    order: np.ndarray
    """The positions in that order (int64)."""
    codes: np.ndarray
    """Their material codes, in that order (int32, as :func:`probe_batch` passes them)."""
    indices: np.ndarray
    """Their indices, in that order."""
    capture: np.ndarray
    """Whether their side to move must capture (uint8, 0 where the code is negative), in that order."""


def sorted_batch(arrays: tuple[np.ndarray, ...], codes: np.ndarray, indices: np.ndarray) -> SortedBatch | None:
    """A batch's positions (``arrays``, located at material ``codes``, int32, and ``indices``) sorted by
    table and index, when their tables hold more than ORDER_ABOVE positions (None otherwise: the
    order matters little). One key a position (table rank, index, must capture) is sorted: the
    sorted keys give the codes, indices and capture flags in order, no gathering.

    >>> sorted_batch((), np.array([3, 3, -1]), np.array([5, 1, 0])) is None
    True
    """
    present = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=NUM_CODES))
    sizes = [count_positions(material_of_code(int(code))) for code in present]
    if sum(sizes) <= ORDER_ABOVE:
        return None
    rank = np.zeros(NUM_CODES, dtype=np.int64)  # the tables' ranks from 1 (0: no table)
    rank[present] = np.arange(1, len(present) + 1)
    index_bits = max(sizes).bit_length()
    keys = np.empty(len(codes), dtype=np.int64)
    sort_keys(*arrays, codes, indices, rank, index_bits, keys)
    order, keys = radix_sort(keys, len(present).bit_length() + index_bits + 1)
    code_of_rank = np.concatenate([[CODE_NO_PIECES], present]).astype(np.int64)
    out = SortedBatch(order, np.empty(len(keys), dtype=np.int32), np.empty(len(keys), dtype=np.int64),
                      np.empty(len(keys), dtype=np.uint8))
    unpack_keys(keys, order, codes, code_of_rank, index_bits, out.codes, out.indices, out.capture)
    return out


@njit(cache=True)
def sort_keys(bm, bk, wm, wk, turn, codes, indices, rank, index_bits, out):
    """Each position's key: its table's rank, its index, whether its side must capture (the low bit)."""
    for i in range(codes.shape[0]):
        code = codes[i]
        if code < 0:
            out[i] = 0
        else:
            capture = 1 if has_capture(np.int64(bm[i]), np.int64(bk[i]), np.int64(wm[i]), np.int64(wk[i]),
                                       turn[i]) else 0
            out[i] = (rank[code] << (index_bits + 1)) | (np.int64(indices[i]) << 1) | capture


@njit(cache=True)
def unpack_keys(keys, order, codes, code_of_rank, index_bits, out_codes, out_indices, out_capture):
    """The codes, indices and capture flags of sorted keys (:func:`sort_keys`); the positions
    without a table (rank 0, first) keep their own codes."""
    mask = (np.int64(1) << index_bits) - 1
    for i in range(keys.shape[0]):
        key = keys[i]
        rank = key >> (index_bits + 1)
        out_codes[i] = code_of_rank[rank] if rank else codes[order[i]]
        out_indices[i] = (key >> 1) & mask
        out_capture[i] = key & 1


#: Most bits of a digit of :func:`radix_sort`: its counts (2**11 of them) and the places it writes
#: to stay in the first caches (digits of 16 bits scattered to 65,536 places, twice as slow).
DIGIT_BITS = 11


@njit(cache=True)
def radix_sort(keys, bits):
    """(The permutation that sorts non-negative keys below 2**bits, the keys sorted) (stable: a
    least significant digit first radix sort, digits of at most DIGIT_BITS, the counts of every
    digit in one pass; each key and its place packed into one int64 where they fit, so a pass
    moves one array). 2 M random keys of 39 bits: 39 CPU ms, np.argsort 187, digits of 16 bits 90.

    >>> [a.tolist() for a in radix_sort(np.array([5, 1 << 40, 0, 5]), 41)]
    [[2, 0, 3, 1], [0, 5, 5, 1099511627776]]
    """
    n = keys.shape[0]
    passes = max((bits + DIGIT_BITS - 1) // DIGIT_BITS, 1)
    digit = (bits + passes - 1) // passes  # equal digits: 31 bits in three of 11, 30 in three of 10
    mask = (np.int64(1) << digit) - 1
    counts = np.zeros((passes, 1 << digit), dtype=np.int64)
    for i in range(n):
        for p in range(passes):
            counts[p, (keys[i] >> (p * digit)) & mask] += 1
    place_bits = _bit_length(max(n - 1, 1))
    if bits + place_bits <= 63:  # key << place_bits | place: one array to move
        moved = np.empty(n, dtype=np.int64)
        for i in range(n):
            moved[i] = (keys[i] << place_bits) | i
        spare = np.empty(n, dtype=np.int64)
        for p in range(passes):
            if _into_starts(counts[p], n, (moved[0] >> (place_bits + p * digit)) & mask if n else 0):
                shift = place_bits + p * digit
                for i in range(n):
                    d = (moved[i] >> shift) & mask
                    spare[counts[p, d]] = moved[i]
                    counts[p, d] += 1
                moved, spare = spare, moved
        order = np.empty(n, dtype=np.int64)
        low = (np.int64(1) << place_bits) - 1
        for i in range(n):
            order[i], spare[i] = moved[i] & low, moved[i] >> place_bits
        return order, spare
    order, spare = np.arange(n), np.empty(n, dtype=np.int64)
    sorted_keys, spare_keys = keys.copy(), np.empty(n, dtype=np.int64)
    for p in range(passes):
        if _into_starts(counts[p], n, (sorted_keys[0] >> (p * digit)) & mask if n else 0):
            for i in range(n):
                d = (sorted_keys[i] >> (p * digit)) & mask
                spare[counts[p, d]], spare_keys[counts[p, d]] = order[i], sorted_keys[i]
                counts[p, d] += 1
            order, spare = spare, order
            sorted_keys, spare_keys = spare_keys, sorted_keys
    return order, sorted_keys


@njit(cache=True, inline="always")
def _bit_length(value):
    """Bits of a positive int64."""
    bits = 0
    while value >> bits:
        bits += 1
    return bits


@njit(cache=True, inline="always")
def _into_starts(counts, n, first_digit):
    """Turn a digit's counts into the place each digit's keys start at; False when every key has
    the same digit (``first_digit``, the first key's: nothing to move, the counts left as they are)."""
    if n == 0 or counts[first_digit] == n:
        return False
    total = 0
    for d in range(counts.shape[0]):
        total, counts[d] = total + counts[d], total
    return True


def _mark_ahead(located: tuple[np.ndarray, np.ndarray], state: BatchPool,
                load: Callable[[int], object]) -> None:
    """Make the marks of every compact block a batch in the order of its positions reaches, a table
    at a time, before the kernel runs (so that it does not stop at each block it is first to read)."""
    codes, indices = located
    bounds = np.flatnonzero(np.diff(codes)) + 1
    for lo, hi in zip(np.concatenate([[0], bounds]).tolist(), np.concatenate([bounds, [len(codes)]]).tolist()):
        code = int(codes[lo])
        if code < 0 or lo == hi:
            continue
        if state.rows[code] < 0:
            state.describe_loaded(code, load)
        state.tables[int(state.rows[code])].load_blocks(indices[lo:hi])


def probe_batch(arrays: tuple[np.ndarray, ...], load: Callable[[int], object], *,
                batches: CompactBatches, rule: str | None = None,
                located: tuple[np.ndarray, np.ndarray] | None = None,
                distances: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """WDL (int8) and DTW (uint16, NO_DTW where a compact file answered) of many positions;
    with ``rule`` ("wcdf"), the category at counter 0 (int8) and DTZ (NO_DTW likewise).

    ``arrays`` are (bm, bk, wm, wk, turn) int64 arrays of valid positions;
    ``load(code)`` returns the table of a material code (master or compact,
    MissingTableError when absent); with ``rule`` its ``layer(rule)`` is
    probed (MissingRuleLayerError when absent). Capture positions of compact
    tables are resolved by a capture search in the kernel, through the pools of
    ``batches`` (the prober's). ``located`` are the
    positions' (material codes, indices) when the caller has them already.
    A batch over tables of many positions is probed in the order of its
    positions (:func:`sorted_batch`), its compact blocks' marks made (or
    checked, from their marks files) first, and its capture searches probed
    as one batch of their successors. Without ``distances`` no master table's
    distance is read (the distances are then NO_DTW).
    """
    if rule is not None and rule not in RULE_KINDS:
        raise MissingRuleLayerError(f"compact files hold no categories for preset {rule!r} "
                                    f"(only {', '.join(RULE_KINDS)})")
    state = batches.pool(rule, distances=distances)
    # one type per argument, so that each kernel is compiled for one signature: the positions
    # writable int64, the material codes int32 (as the prober's locate_batch and sorted_batch give them)
    arrays = tuple(np.require(a, dtype=np.int64, requirements=("C", "W")) for a in arrays)
    n = len(arrays[0])
    if located is None:
        located = (np.empty(n, dtype=np.int32), np.empty(n, dtype=np.int64))
        locate_all(*arrays, *located)
    else:
        located = (np.ascontiguousarray(located[0], dtype=np.int32), np.ascontiguousarray(located[1], dtype=np.int64))
    batch = sorted_batch(arrays, *located)
    if batch is None:
        return _probe_in_order(arrays, np.arange(n), located, np.zeros(0, dtype=np.uint8), load, state,
                               batches, search=True)
    # the positions of a block together, each decoded from the one before
    _mark_ahead((batch.codes, batch.indices), state, load)
    value, dist = _probe_in_order(arrays, batch.order, (batch.codes, batch.indices), batch.capture, load,
                                  state, batches, search=False)
    out_value, out_dist = np.empty_like(value), np.empty_like(dist)
    scatter_rows(batch.order, value, dist, out_value, out_dist)
    return out_value, out_dist


def probe_dtz_batch(arrays: tuple[np.ndarray, ...], located: tuple[np.ndarray, np.ndarray],
                    files: dict[int, object], *, batches: CompactBatches, rule: str) -> np.ndarray:
    """The DTZ (uint16) of wins and losses under ``rule`` from compact DTZ files (``files``, by
    material code): 1 where the side to move must capture (the capture zeroes the counter).

    ``arrays`` (bm, bk, wm, wk, turn) and ``located`` (material codes, indices)
    are valid positions of those materials. They are probed in the order of
    their positions (each lookup continuing from the one before in the same
    block), the marks of every block they reach made (or checked) first, a
    table at a time.
    """
    state = batches.dtz_pool(rule)
    for code, dtz_file in files.items():
        if state.rows[code] < 0 or state.tables[int(state.rows[code])] is not dtz_file:
            state.describe(code, dtz_file)
    codes, indices = located
    rank = np.zeros(NUM_CODES, dtype=np.int64)
    present = np.array(sorted(files), dtype=np.int64)
    rank[present] = np.arange(len(present))
    index_bits = max(count_positions(material_of_code(int(c))) for c in present).bit_length()
    order, _ = radix_sort((rank[codes] << index_bits) | indices, len(present).bit_length() + index_bits)
    in_order = tuple(np.ascontiguousarray(a[order]) for a in (*arrays, codes, indices))
    _mark_ahead(in_order[5:], state, lambda code: files[code])
    out = np.empty(len(order), dtype=np.uint16)
    status = np.zeros(4, dtype=np.int64)
    first = 0
    while True:
        dtz_kernel(*in_order, first, state.rows, state.desc, state.memo, state.kind.value_of_code, out, status)
        if status[0] == ST_OK:
            break
        first = int(status[1])  # a block's marks left the cache meanwhile: made again
        state.tables[int(status[2])].load_block(int(status[3]))
    dtz = np.empty_like(out)
    dtz[order] = out
    return dtz


@njit(cache=True)
def dtz_kernel(bm, bk, wm, wk, turn, codes, indices, first, rows, desc, memo, value_of, out, status):
    """DTZ of the positions first.. (in the order of their positions) from compact DTZ files into
    ``out`` (``value_of``: code -> DTZ), 1 where the side to move must capture; stops at a block
    whose marks are not in memory (status as :func:`probe_kernel`'s)."""
    status[0] = ST_OK
    for i in range(first, codes.shape[0]):
        if has_capture(np.int64(bm[i]), np.int64(bk[i]), np.int64(wm[i]), np.int64(wk[i]), turn[i]):
            out[i] = 1
            continue
        v = _compact_value(rows[codes[i]], np.int64(indices[i]), desc, memo, status, value_of)
        if v == STOPPED:
            status[1] = i
            return
        out[i] = v
    status[1] = codes.shape[0]


@njit(cache=True)
def scatter_rows(order, value, dist, out_value, out_dist):
    """out_value[order[i]] = value[i], and the same for the distances."""
    for i in range(order.shape[0]):
        out_value[order[i]] = value[i]
        out_dist[order[i]] = dist[i]


def _probe_in_order(arrays: tuple[np.ndarray, ...], order: np.ndarray, located: tuple[np.ndarray, np.ndarray],
                    capture: np.ndarray, load: Callable[[int], object], state: BatchPool,
                    batches: CompactBatches, *, search: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`probe_batch` of the positions ``arrays`` in ``order`` (``located`` and ``capture``
    in that order, see :func:`probe_kernel`), the values and distances in that order: capture
    positions searched one by one in the kernel (``search``), or probed as one batch of their
    successors (through the pools of ``batches``)."""
    n = len(order)
    out_value = np.zeros(n, dtype=np.int8)
    out_dist = np.zeros(n, dtype=np.uint16)
    status = np.zeros(4, dtype=np.int64)
    first = 0
    while True:
        probe_kernel(*arrays, order, *located, capture, first, state.rows, state.desc, state.memo,
                     state.kind.value_of_code, out_value, out_dist, status, search)
        kind, first = int(status[0]), int(status[1])
        if kind == ST_OK:
            if not search:
                _search_as_a_batch(arrays, order, located, out_value, load, state=state, batches=batches)
            return out_value, out_dist
        if kind == ST_MISSING:
            state.describe_loaded(int(status[2]), load)
            continue
        if kind == ST_MISSING_BLOCK:
            state.tables[int(status[2])].load_block(int(status[3]))
            continue
        raise TableError(f"{state.tables[int(status[2])].path}: an index fell outside the table")
