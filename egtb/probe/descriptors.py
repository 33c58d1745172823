"""The one place that builds the rows the prober's kernels read: a table's descriptor rows.

Two kinds of row, one per family of kernels:

- a lookup row (``COL_*`` columns of :mod:`egtb.probe.kernels`, one row per material
  code) for the single-probe kernels (:func:`~egtb.probe.kernels.probe_value_one`,
  :func:`~egtb.probe.kernels.probe_rule_one`) and the gathering kernels of batches:
  :func:`blocks_row` for a master table's values or a master layer (their block maps),
  :func:`coded_row` for a compact file (capture positions left out);
- a batch row (``D_*`` columns of :mod:`egtb.probe.compact_kernels`) for the compact
  batch kernel: :func:`master_batch_row` and :func:`compact_batch_row`.

Each table kind (:mod:`egtb.probe.tables`, :mod:`egtb.probe.compact_tables`) gives its own
rows through these (``kernel_row()``, ``batch_row()``); the prober and the batch paths only
put them by material code (:func:`rows_by_code`, :func:`gather_maps`).

>>> rows_by_code([]).shape == (NUM_CODES, ROW_WIDTH)
True
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from egtb.positions.index import NUM_CODES, code_of_material
from egtb.probe.compact_kernels import (D_BLOCKS, D_DATA, D_DATA_LEN, D_DTW, D_DTW_WIDE, D_EXCEPTION_COUNT,
                                        D_EXCEPTIONS, D_KIND, D_LUT, D_MARK_COUNTS, D_MARKS, D_SIZE, D_STARTS,
                                        D_THREATS, D_WIDTH, KIND_COMPACT)
from egtb.probe.kernels import (COL_CATEGORY_AT, COL_CODED_AT, COL_DERIVED, COL_DTZ_AT, COL_DTZ_CODED_AT,
                                COL_DTZ_WIDE, COL_MAX_DTZ, COL_SIZE, DERIVED, DERIVED_MAN_RESETS, ROW_WIDTH)
from egtb.rules.draw_rules import DrawRule

__all__ = ["blocks_row", "coded_row", "compact_batch_row", "gather_maps", "master_batch_row", "rows_by_code"]


def blocks_row(size: int, blocks) -> np.ndarray:
    """The lookup row of a master table's values (or a master layer): its ``size`` and the
    addresses of its block map ``blocks`` (:class:`egtb.probe.tables.BlockMap`) of values and of
    distances (0 where it holds none), with the distances' width.

    >>> blocks_row(0, None).tolist()
    [0, 0, 0, 0, 0, 0, 0, 0]
    """
    row = np.zeros(ROW_WIDTH, dtype=np.int64)
    if blocks is not None:
        row[[COL_SIZE, COL_CATEGORY_AT, COL_DTZ_AT, COL_DTZ_WIDE]] = (
            size, blocks.values_at.ctypes.data, blocks.distances_at.ctypes.data if blocks.holds_distances else 0,
            blocks.wide)
    return row


def coded_row(size: int, coded, *, max_dtz: int | None = None, dtz_file=None, distances=None,
              derived: DrawRule | None = None) -> np.ndarray:
    """The lookup row of a compact file ``coded`` (capture positions left out): its size, its lookup
    descriptor, the largest DTZ of a win or loss when known (``max_dtz``), the lookup descriptor of
    its compact DTZ file (``dtz_file``), the block map of a master layer's DTZ beside it
    (``distances``, whose values are the DTZ), and with ``derived`` (the file's rule) whether its
    DTZ is derived from its moves instead (:mod:`egtb.probe.derived_dtz`).

    >>> coded_row(0, None).tolist()
    [0, 0, 0, 0, 0, -1, 0, 0]
    """
    row = np.zeros(ROW_WIDTH, dtype=np.int64)
    row[COL_SIZE] = size
    row[COL_CODED_AT] = 0 if coded is None else coded.lookup.ctypes.data
    row[COL_MAX_DTZ] = -1 if max_dtz is None else max_dtz
    row[COL_DTZ_CODED_AT] = 0 if dtz_file is None else dtz_file.lookup.ctypes.data
    if distances is not None:
        row[COL_DTZ_AT], row[COL_DTZ_WIDE] = distances.values_at.ctypes.data, distances.value_type is np.uint16
    if derived is not None:
        row[COL_DERIVED] = DERIVED_MAN_RESETS if derived.man_move_resets else DERIVED
    return row


def rows_by_code(tables: Iterable) -> np.ndarray:
    """The lookup rows (NUM_CODES x ROW_WIDTH) of tables or layers by material code: each one's
    ``kernel_row()``, zero where a material has none."""
    rows = np.zeros((NUM_CODES, ROW_WIDTH), dtype=np.int64)
    for table in tables:
        rows[code_of_material(table.material)] = table.kernel_row()
    return rows


def gather_maps(rows: np.ndarray) -> tuple[np.ndarray, ...]:
    """(sizes, wdl_at, dtw_at, dtw_wide) by material code, the arguments of
    :func:`egtb.probe.kernels.gather`, from master tables' lookup rows (dtw_at 0: no DTW).

    >>> [a.dtype.name for a in gather_maps(rows_by_code([]))]
    ['int64', 'int64', 'int64', 'bool']
    """
    return (np.ascontiguousarray(rows[:, COL_SIZE]), np.ascontiguousarray(rows[:, COL_CATEGORY_AT]),
            np.ascontiguousarray(rows[:, COL_DTZ_AT]), rows[:, COL_DTZ_WIDE].astype(np.bool_))


def master_batch_row(size: int, blocks, kind: int) -> np.ndarray:
    """The batch row of a master table's values or a master layer's categories (``kind``:
    KIND_MASTER or KIND_MASTER_CATEGORY): the addresses of its block map ``blocks``, of values
    and of distances (0 where it holds none).

    >>> master_batch_row(0, None, 1).tolist()[:2]
    [1, 0]
    """
    row = np.zeros(D_WIDTH, dtype=np.int64)
    row[D_KIND], row[D_SIZE] = kind, size
    if blocks is not None:
        row[D_DATA] = blocks.values_at.ctypes.data
        row[D_DTW] = blocks.distances_at.ctypes.data if blocks.holds_distances else 0
        row[D_DTW_WIDE] = blocks.wide
    return row


def compact_batch_row(coded) -> np.ndarray:
    """The batch row of a compact file (:class:`egtb.formats.compact.CompactTable`): its blocks,
    their starts, their marks and the decoding table, read through the marks."""
    row = np.zeros(D_WIDTH, dtype=np.int64)
    row[D_SIZE] = len(coded)
    row[D_KIND] = KIND_COMPACT
    row[D_DATA] = coded.data.ctypes.data if len(coded.data) else 0
    row[D_DATA_LEN] = len(coded.data)
    row[D_STARTS] = coded.starts.ctypes.data
    row[D_MARKS] = coded.marks_at.ctypes.data
    row[D_MARK_COUNTS] = coded.mark_counts.ctypes.data
    row[D_LUT] = coded.lut.ctypes.data
    row[D_BLOCKS] = coded.n_blocks
    row[D_EXCEPTIONS], row[D_EXCEPTION_COUNT] = coded.exceptions.ctypes.data, len(coded.exceptions)
    row[D_THREATS] = coded.threats
    return row
