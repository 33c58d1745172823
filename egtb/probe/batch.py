"""Batch probes: the values of many positions given as bitboard arrays, rule-free or under a rule.

A batch over master tables alone runs the gathering kernels
(:func:`~egtb.probe.kernels.gather`, :func:`~egtb.probe.kernels.gather_rule`), in the
order of the blocks when they do not fit in the cache; one over compact files runs the
compact batch kernel (:func:`egtb.probe.compact_kernels.probe_batch`, its capture search
inside), then reads the distances of the master files beside them where they are asked
for. Each table kind gives its own kernel rows (:mod:`egtb.probe.descriptors`).

>>> from egtb.probe.tablebase import Tablebase
>>> probe_batch(Tablebase("/nonexistent"), np.array([0]), np.array([0]), np.array([0]), np.array([1]), 0)[0].tolist()
[-1]
"""

from __future__ import annotations

from collections.abc import Callable
import numpy as np

from egtb.errors import InvalidArgumentError, InvalidPositionError, MissingRuleLayerError, TableError
from egtb.formats.values import CAT_LOSS, CAT_WIN, WDL_DRAW, WDL_LOSS, WDL_OF_CODE, WDL_WIN
from egtb.positions.index import NUM_CODES, code_of_material, material_of_code
from egtb.probe.compact_kernels import probe_batch as probe_compact_batch, probe_dtz_batch
from egtb.probe.derived_dtz import derive
from egtb.probe.descriptors import gather_maps, rows_by_code
from egtb.probe.inputs import batch_arrays, draw_rule
from egtb.probe.kernels import (BLOCK_SHIFT, NO_DTW, fill_terminal, fill_terminal_rule, gather, gather_distance,
                                gather_rule)
from egtb.probe.locate import locate_batch
from egtb.probe.tables import Layer
from egtb.rules.board import DEFAULT_RULE, DrawRule

# ``tb`` is the egtb.probe.tablebase.Tablebase probing (not imported: it imports this module).

__all__ = ["MASTER_BYTES_A_POSITION", "derived_dtz", "probe_batch", "probe_batch_rule"]

#: Bytes a position of a master table takes in the block cache at most (value, DTW or DTZ): a
#: batch over tables larger than the budget is gathered in the order of its blocks.
MASTER_BYTES_A_POSITION = 3


def probe_batch(tb: "Tablebase", bm: np.ndarray, bk: np.ndarray, wm: np.ndarray, wk: np.ndarray,
                turn: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """WDL (int8: +1, 0, -1) and DTW (uint16) of many positions given as bitboard arrays.

    ``turn`` is an array or one side for every position. Raises ValueError
    when a position is invalid and MissingTableError when a needed table
    is absent (positions without pieces on one side need none). A WDL of
    -2 would mark an unsolved entry, which a finished table never holds.

    >>> from egtb.probe.tablebase import Tablebase
>>> tb = Tablebase("/nonexistent")
    >>> wdl, dtw = probe_batch(tb, np.array([1]), np.array([0]), np.array([0]),
    ...                           np.array([0]), 1)   # White has no pieces
    >>> wdl.tolist(), dtw.tolist()
    ([-1], [0])
    """
    arrays = batch_arrays(bm, bk, wm, wk, turn)
    n = len(arrays[0])
    codes, indices, tables = _locate_batch(tb, arrays)
    if not all(t.stores_captures for t in tables):  # the compact kernel's capture search
        out_wdl, out_dtw = probe_compact_batch(arrays, tb.table, batches=tb.batches,
                                               located=(codes, indices))
        beside = [full for full in (t.distances_beside() for t in tables) if full is not None]
        if beside:  # the DTW of master files beside compact ones
            maps, scratch = gather_maps(rows_by_code(beside)), np.zeros(n, dtype=np.int8)
            _fill_distances(codes, indices, np.ones(n, dtype=np.bool_), beside,
                            lambda c, i, first, out: gather(c, i, first, *maps, WDL_OF_CODE, scratch, out),
                            out=out_dtw)
        return out_wdl, out_dtw
    out_wdl = np.zeros(n, dtype=np.int8)
    out_dtw = np.zeros(n, dtype=np.uint16)
    maps = gather_maps(rows_by_code(tables))
    order = _block_order(tb, codes, indices, tables)
    (c, i), (wdl, dtw) = _in_order(order, (codes, indices), (out_wdl, out_dtw))
    _run_to_end(lambda first: gather(c, i, first, *maps, WDL_OF_CODE, wdl, dtw),
                n, lambda stop: _table_of(tables, c[stop]).load_block(int(i[stop]) >> BLOCK_SHIFT),
                f"an index fell outside its table in {tb.directory}")
    if order is not None:
        out_wdl[order], out_dtw[order] = wdl, dtw
    fill_terminal(*arrays, codes, out_wdl, out_dtw)
    return out_wdl, out_dtw

def _block_order(tb: "Tablebase", codes: np.ndarray, indices: np.ndarray, tables: list[Layer]) -> np.ndarray | None:
    """The order of a batch's positions by table and block when the blocks of its master
    tables do not fit in the cache's budget (each block is then read once), else None
    (the order given: every block read stays)."""
    budget = tb._blocks_cache.max_bytes
    if budget is None or sum(len(t) for t in tables) * MASTER_BYTES_A_POSITION <= budget:
        return None
    return np.argsort((codes.astype(np.int64) << 40) | indices)

def _locate_batch(tb: "Tablebase", arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, list]:
    """(material codes, indices, the tables they need) of a batch.

    Raises ValueError naming the first invalid position.
    """
    n = len(arrays[0])
    codes = np.empty(n, dtype=np.int32)
    indices = np.empty(n, dtype=np.int64)
    present = np.zeros(NUM_CODES, dtype=np.bool_)
    first = locate_batch(*arrays, codes, indices, present)
    if first >= 0:
        raise InvalidPositionError(f"invalid position at {first}: "
                         f"{tuple(int(a[first]) for a in arrays)}")
    return codes, indices, [tb.table(code) for code in np.flatnonzero(present).tolist()]

def probe_batch_rule(tb: "Tablebase", bm: np.ndarray, bk: np.ndarray, wm: np.ndarray, wk: np.ndarray,
                     turn: np.ndarray | int, counter: np.ndarray | int, *,
                     rule: str = DEFAULT_RULE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outcome under ``rule`` from ``counter``, category and DTZ of many positions through ``tb``
    (:meth:`egtb.probe.tablebase.Tablebase.probe_batch_rule` says what they are).

    >>> from egtb.probe.tablebase import Tablebase
>>> tb = Tablebase("/nonexistent")
    >>> outcome, category, dtz = probe_batch_rule(tb, np.array([0, 1]), np.array([0, 0]),
    ...     np.array([1 << 20, 0]), np.array([0, 0]), 0, np.array([80, 79]))
    >>> outcome.tolist(), category.tolist(), dtz.tolist()   # no pieces; then no opponent
    ([-1, 1], [-2, 2], [0, 1])
    """
    preset = draw_rule(rule)
    arrays = batch_arrays(bm, bk, wm, wk, turn)
    n = len(arrays[0])
    counters = np.ascontiguousarray(np.broadcast_to(np.asarray(counter, dtype=np.int64), (n,)))
    if n and (counters.min() < 0 or counters.max() > preset.limit_plies):
        raise InvalidArgumentError(f"counters must lie in 0..{preset.limit_plies} under {preset.name}, "
                         f"got {int(counters.min())}..{int(counters.max())}")
    codes, indices, tables = _locate_batch(tb, arrays)
    layers = [table.layer(preset.name) for table in tables]
    if not all(layer.stores_captures for layer in layers):
        return _probe_batch_rule_compact(tb, arrays, (codes, indices), counters, preset, layers)
    rows = rows_by_code(layers)
    out_outcome = np.zeros(n, dtype=np.int8)
    out_category = np.zeros(n, dtype=np.int8)
    out_dtz = np.zeros(n, dtype=np.uint16)
    limit = preset.limit_plies
    order = _block_order(tb, codes, indices, layers)
    (c, i, k), outs = _in_order(order, (codes, indices, counters), (out_outcome, out_category, out_dtz))
    _run_to_end(lambda first: gather_rule(c, i, first, rows, k, limit, *outs),
                n, lambda stop: _table_of(layers, c[stop]).load_block(int(i[stop]) >> BLOCK_SHIFT),
                f"an index fell outside its {preset.name} layer in {tb.directory}")
    if order is not None:
        out_outcome[order], out_category[order], out_dtz[order] = outs
    fill_terminal_rule(*arrays, codes, counters, limit, out_outcome, out_category, out_dtz)
    return out_outcome, out_category, out_dtz


def _probe_batch_rule_compact(tb: "Tablebase", arrays: tuple[np.ndarray, ...],
                              located: tuple[np.ndarray, np.ndarray], counters: np.ndarray,
                              rule: DrawRule, layers: list[Layer]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:meth:`probe_batch_rule` through compact category files (and master layers); the DTZ
    of a master file beside a compact one is read where the outcome needs it (a win or a
    loss from a counter above 0), and only there."""
    category, dtz = probe_compact_batch(arrays, tb.table, batches=tb.batches, rule=rule.name,
                                        located=located)
    longest = np.full(NUM_CODES, rule.limit_plies + 1, dtype=np.int64)  # max DTZ by code, when known
    for layer in layers:
        if layer.max_dtz is not None:
            longest[code_of_material(layer.material)] = layer.max_dtz
    codes = located[0]
    late = ((np.abs(category) == CAT_WIN) & (counters > 0)  # the outcomes that need the DTZ
            & (counters + longest[np.maximum(codes, 0)] > rule.limit_plies))
    files = {code_of_material(layer.material): layer.dtz_file for layer in layers if layer.dtz_file is not None}
    if files:  # the DTZ of wins and losses from compact DTZ files
        chosen = _wanted_of(codes, late & (dtz == NO_DTW), list(files))
        if len(chosen):
            dtz[chosen] = probe_dtz_batch(tuple(a[chosen] for a in arrays), (codes[chosen], located[1][chosen]),
                                          files, batches=tb.batches, rule=rule.name)
    beside = [full for full in (layer.distances_beside() for layer in layers) if full is not None]
    if beside:  # the DTZ of master files beside compact ones, alone
        rows = rows_by_code(beside)
        _fill_distances(*located, late & (dtz == NO_DTW), beside,
                        lambda c, i, first, out: gather_distance(c, i, first, rows, out), out=dtz)
    derived = [code_of_material(layer.material) for layer in layers if layer.dtz_derived]
    if derived:  # the DTZ of a material whose pair holds it on the mirror's side: from its moves
        chosen = _wanted_of(codes, late & (dtz == NO_DTW), derived)
        if len(chosen):
            dtz[chosen] = derived_dtz(tb, tuple(a[chosen] for a in arrays), category[chosen], rule)
    unknown = dtz == NO_DTW
    late = np.flatnonzero(unknown & late)
    if len(late):
        i = int(late[0])
        raise MissingRuleLayerError(
            f"position {i} {tuple(int(a[i]) for a in arrays)}: a compact category file holds "
            f"no DTZ, so its {rule.name} outcome from counter {int(counters[i])} needs its DTZ: the "
            f"material's .dtz file (or its mirror's) or the master file")
    fits = np.where(unknown, 0, dtz) + counters <= rule.limit_plies
    outcome = np.where(fits & (category == CAT_WIN), WDL_WIN,
                       np.where(fits & (category == CAT_LOSS), WDL_LOSS, WDL_DRAW)).astype(np.int8)
    return outcome, category, dtz


def derived_dtz(tb: "Tablebase", arrays: tuple[np.ndarray, ...], category: np.ndarray, rule: DrawRule) -> np.ndarray:
    """The DTZ (uint16) under ``rule`` of wins and losses (``category`` at counter 0) of materials
    whose DTZ is derived from their moves (:mod:`egtb.probe.derived_dtz`), the positions after
    them probed through ``tb`` (their DTZ read from the mirror's DTZ file).

    >>> from egtb.probe.tablebase import Tablebase
    >>> from egtb.rules.board import DRAW_RULES
    >>> no = np.zeros(0, dtype=np.int64)
    >>> derived_dtz(Tablebase("/nonexistent"), (no,) * 5, no, DRAW_RULES["wcdf"]).tolist()
    []
    """
    return derive(arrays, category, limit=rule.limit_plies, man_resets=rule.man_move_resets,
                  probe=lambda children, counter: probe_batch_rule(tb, *children, counter, rule=rule.name)[1:],
                  where=f"{tb.directory} ({rule.name} DTZ derived from the mirrors' files)")


def _fill_distances(codes: np.ndarray, indices: np.ndarray, wanted: np.ndarray, fulls: list[Layer],
                    gather_into: Callable[[np.ndarray, np.ndarray, int, np.ndarray], tuple[int, int]], *,
                    out: np.ndarray) -> np.ndarray:
    """Distances (DTW or DTZ) from master tables or layers ``fulls`` of the ``wanted`` positions
    in their materials, written into ``out`` (uint16); ``gather_into(codes, indices, first, out)``
    runs a gathering kernel over those positions, reading the blocks it stops at.

    The positions go in the order of their blocks, so that each block is read once.
    """
    chosen = _wanted_of(codes, wanted, [code_of_material(full.material) for full in fulls])
    if len(chosen):
        chosen = chosen[np.argsort((codes[chosen].astype(np.int64) << 40) | indices[chosen])]
        sub_codes = np.ascontiguousarray(codes[chosen])
        sub_indices = np.ascontiguousarray(indices[chosen])
        got = np.zeros(len(chosen), dtype=np.uint16)
        _run_to_end(lambda first: gather_into(sub_codes, sub_indices, first, got), len(chosen),
                    lambda stop: _table_of(fulls, sub_codes[stop]).load_block(int(sub_indices[stop]) >> BLOCK_SHIFT),
                    "an index fell outside its master table")
        out[chosen] = got
    return out


def _wanted_of(codes: np.ndarray, wanted: np.ndarray, material_codes: list[int]) -> np.ndarray:
    """The places of the ``wanted`` positions whose material code (``codes``; negative: no table)
    is one of ``material_codes``.

    >>> _wanted_of(np.array([3, -1, 5, 3]), np.array([True, True, True, False]), [3]).tolist()
    [0]
    """
    mine = np.zeros(NUM_CODES, dtype=np.bool_)
    mine[material_codes] = True
    return np.flatnonzero(wanted & (codes >= 0) & mine[np.maximum(codes, 0)])


def _in_order(order: np.ndarray | None, inputs: tuple[np.ndarray, ...],
              outputs: tuple[np.ndarray, ...]) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The inputs taken in ``order`` and fresh outputs for them; as they are when ``order`` is None."""
    if order is None:
        return inputs, outputs
    return tuple(a[order] for a in inputs), tuple(np.zeros_like(a) for a in outputs)


def _table_of(tables: list[Layer], code: int) -> Layer:
    """The table (or layer) of a material code among those of a batch."""
    material = material_of_code(int(code))
    return next(table for table in tables if table.material == material)


def _run_to_end(run: Callable[[int], tuple[int, int]], n: int, load: Callable[[int], None],
                outside: str) -> None:
    """Call a gathering kernel from position 0 until it reaches ``n``, reading the block it
    stops at each time (``load(stop)``); TableError ``outside`` when an index fell outside."""
    first = 0
    while True:
        stop, bad = run(first)
        if bad:
            raise TableError(outside)
        if stop >= n:
            return
        load(stop)
        first = stop
