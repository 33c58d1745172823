"""The quiet successors of a checked chunk read from whole units decoded once, not looked up one by one.

A king step stays in its unit (a men configuration, a range of a material's indices:
:func:`egtb.positions.index.position_index`), and a chunk of a big unit has millions of
successors in a few units of the mirror material: the same units for every chunk of that unit.
Sorting them and looking each up in its file's blocks (what :func:`egtb.builder.verify_native.check_chunk`
does for the others) costs far more than decoding those units whole once, a byte a position a
file, and gathering. :class:`DenseUnits` keeps the units decoded last, their WDL, category and
DTZ packed as :func:`egtb.builder.successor_check.pack_values` packs a successor's;
:func:`dense_successors` answers from them the quiet successors that lie in a unit worth it.

A unit is decoded only where that is cheaper than the lookups: big enough (at least
:data:`MIN_UNIT` positions, and at most the units' budget: 4k-4k's one unit of 736 M is not)
and holding at least one successor of the chunk for every :data:`POSITIONS_A_SUCCESSOR` of its
positions. Files that leave threat positions out, and layers whose DTZ is derived from the
mirror's, keep the lookups (their values need a search).

>>> units = DenseUnits(budget=1 << 20)
>>> units.positions
0
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from numba import njit

from egtb.builder.successor_check import PACK_CATEGORY_SHIFT, PACK_DTZ_SHIFT
from egtb.formats.compact import CompactTable
from egtb.formats.values import CAT_WIN
from egtb.positions.index import material_of_code, unit_size
from egtb.positions.material import Material

__all__ = ["BUDGET", "DenseUnits", "MIN_UNIT", "POSITIONS_A_SUCCESSOR", "dense_successors"]

#: Positions of the units a prober keeps decoded (2 bytes each mostly, at most 4: 512 MB).
BUDGET = 1 << 27
#: A unit of fewer positions is not decoded (its successors are few; its decode's own cost counts).
MIN_UNIT = 1 << 16
#: A unit is decoded when a chunk has a successor in it for every this many of its positions
#: (a decode takes about 8 ns a position for its three files, a lookup of a successor 60-100 ns
#: with its share of the sort; the chunks of one unit share the units they reach).
POSITIONS_A_SUCCESSOR = 64


class DenseUnits:
    """The units a check decoded last, packed (at most 4 bytes a position), at most ``budget`` positions.

    >>> DenseUnits(budget=10).budget
    10
    """

    def __init__(self, *, budget: int = BUDGET) -> None:
        self.budget = budget
        self._units: OrderedDict[tuple[Material, int, str | None], np.ndarray] = OrderedDict()
        self.positions = 0
        """Positions held now."""

    def packed(self, table: CompactTable, material: Material, unit: int, size: int, rule: str | None) -> np.ndarray:
        """The packed values of the positions of one unit of ``table`` (``size`` positions from
        ``unit * size``), decoded now unless held: with ``rule``, the category and the DTZ of a
        win or loss too (0 elsewhere, as the lookups give them)."""
        key = (material, unit, rule)
        found = self._units.get(key)
        if found is not None:
            self._units.move_to_end(key)
            return found
        found = _decoded(table, unit * size, (unit + 1) * size, rule)
        while self._units and self.positions + size > self.budget:
            self.positions -= len(self._units.popitem(last=False)[1])
        self._units[key] = found
        self.positions += size
        return found


def _decoded(table: CompactTable, lo: int, hi: int, rule: str | None) -> np.ndarray:
    """Positions lo..hi of a table packed as a successor's values are (PACK_*_SHIFT), in the fewest
    bytes that hold them: a unit of a layer whose DTZ stays under 2**10 in 16 bits a position, the
    rest in 32, a WLD file alone in 8."""
    wdl = (table.codes(lo, hi), np.asarray(table.kind.value_of_code, dtype=np.int32))
    if rule is None:
        packed = np.empty(hi - lo, dtype=np.int8)
        none = (np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int32))
        _pack(*wdl, *none, *none, packed)
        return packed
    layer = table.layer(rule)
    dtz_file = layer.dtz_file
    packed = np.empty(hi - lo, dtype=np.int16 if layer.max_dtz < 1 << (15 - PACK_DTZ_SHIFT) else np.int32)
    _pack(*wdl, layer.codes(lo, hi), np.asarray(layer.kind.value_of_code, dtype=np.int32),
          dtz_file.codes(lo, hi), np.asarray(dtz_file.kind.value_of_code, dtype=np.int32), packed)
    return packed


@njit(cache=True)
def _pack(wdl, wdl_of, category, category_of, dtz, dtz_of, out):
    """Pack each position's values from its files' codes (the value of each code in ``*_of``):
    without category codes, category 0 and no DTZ; the DTZ only of a win or loss."""
    rule = category.shape[0] > 0
    for i in range(out.shape[0]):
        c = category_of[category[i]] if rule else 0
        d = dtz_of[dtz[i]] if rule and (c == CAT_WIN or c == -CAT_WIN) else 0
        out[i] = (wdl_of[wdl[i]] + 1) | ((c + 2) << PACK_CATEGORY_SHIFT) | (d << PACK_DTZ_SHIFT)


def _unit_worth_it(table: CompactTable, rule: str | None) -> bool:
    """Whether a table's successors can be read from decoded units (no search needed)."""
    if table.threats:
        return False
    return rule is None or table.layer(rule).dtz_file is not None


def dense_successors(prober, keys: np.ndarray, codes: list[int], index_bits: int, rule: str | None,
                     units: DenseUnits) -> tuple[np.ndarray, np.ndarray]:
    """(the places in ``keys`` answered, their packed values as int64) of the quiet successors of a
    chunk that lie in units worth decoding (see the module), read from ``units``. ``keys`` are
    :func:`egtb.builder.successor_check.quiet_successors`' (table rank, index, must capture),
    ``codes`` the material code of each rank; ``prober`` opens the tables."""
    materials = [material_of_code(code) for code in codes]
    sizes = np.array([unit_size(m.black_men, m.black_kings, m.white_men, m.white_kings) for m in materials],
                     dtype=np.int64)
    decoded = (sizes >= MIN_UNIT) & (sizes <= units.budget)  # the tables whose units may be decoded
    low, high = np.full(len(codes), -1, dtype=np.int64), np.full(len(codes), -1, dtype=np.int64)
    _unit_range(keys, index_bits, sizes, decoded, low, high)
    places, values = [], []
    for r, material in enumerate(materials):
        size = int(sizes[r])
        if low[r] < 0:
            continue
        counts = np.zeros(int(high[r] - low[r]) + 2, dtype=np.int64)
        _count_units(keys, index_bits, r, size, int(low[r]), counts)
        counts = counts[:-1]
        chosen = np.flatnonzero(counts * POSITIONS_A_SUCCESSOR >= size)
        if not len(chosen):
            continue
        table = prober.table(material)
        if not _unit_worth_it(table, rule):
            continue
        for unit, count in zip((chosen + low[r]).tolist(), counts[chosen].tolist()):
            here, found = np.empty(count + 1, dtype=np.int64), np.empty(count + 1, dtype=np.int64)
            _gather(keys, index_bits, r, size, unit, units.packed(table, material, unit, size, rule), here, found)
            places.append(here[:count])
            values.append(found[:count])
    if not places:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(places), np.concatenate(values)


@njit(cache=True)
def _unit_range(keys, index_bits, sizes, decoded, low, high):
    """The lowest and highest unit (``low``, ``high`` by table rank, given as -1: then none) of the
    quiet successors of each table whose units may be decoded (``decoded`` by rank; ``sizes`` its
    units' positions). No branch on a successor's capture bit, which is random: the CPU would
    mispredict half of them."""
    mask = (np.int64(1) << index_bits) - 1
    inverse = 1.0 / sizes
    none = np.int64(1) << 62
    low[:] = none
    for s in range(keys.shape[0]):
        key = keys[s]
        r = key >> (index_bits + 1)
        unit = _unit_of((key >> 1) & mask, sizes[r], inverse[r])
        held = ((key & 1) == 0) & decoded[r]
        low[r] = min(low[r], unit if held else none)
        high[r] = max(high[r], unit if held else -1)
    for r in range(low.shape[0]):
        if low[r] == none:
            low[r] = -1


@njit(cache=True)
def _count_units(keys, index_bits, rank, size, low, counts):
    """The quiet successors of table ``rank`` in each of its units from ``low`` on (``counts`` has
    a slot more, where the others go)."""
    mask = (np.int64(1) << index_bits) - 1
    spare = counts.shape[0] - 1
    inverse = 1.0 / size
    for s in range(keys.shape[0]):
        key = keys[s]
        here = ((key & 1) == 0) & ((key >> (index_bits + 1)) == rank)
        counts[_unit_of((key >> 1) & mask, size, inverse) - low if here else spare] += 1


@njit(cache=True, inline="always")
def _unit_of(index, size, inverse):
    """index // size, by a multiplication (``inverse`` = 1 / size) put right: a division of 64-bit
    integers takes tens of cycles."""
    unit = np.int64(index * inverse)
    if unit * size > index:
        return unit - 1
    return unit + 1 if (unit + 1) * size <= index else unit


@njit(cache=True)
def _gather(keys, index_bits, rank, size, unit, packed, places, out):
    """The places of the quiet successors in one unit of table ``rank``, and their packed values
    (``packed``: the unit's, from its first position; ``places`` and ``out`` have a slot more). The
    places are found first, then read: the reads of the unit, which miss the caches, do not wait
    on the search."""
    mask = (np.int64(1) << index_bits) - 1
    first = unit * size
    last = places.shape[0] - 1
    k = 0
    for s in range(keys.shape[0]):
        key = keys[s]
        offset = ((key >> 1) & mask) - first
        places[k] = s
        k = min(k + (((key & 1) == 0) & ((key >> (index_bits + 1)) == rank) & (offset >= 0) & (offset < size)), last)
    for j in range(k):
        out[j] = packed[((keys[places[j]] >> 1) & mask) - first]
