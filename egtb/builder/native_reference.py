"""Reference figures of a compact-native table recomputed from its compact files' data.

A compact-native table (:mod:`egtb.builder.native`) has no master to recompute
its reference rows from; its stamp carries the figures the builder counted.
:func:`native_figures` counts them again from the ``.wld``, ``.wcdf`` and
``.dtz`` files alone, through the compact prober: every stored position
decoded, every position the files leave out (the side to move must capture, or a threat
position a WLD file of version 2 leaves out) answered by the prober's search. The checksums
are those a master of the same
table would carry (:func:`egtb.formats.master.stored_checksums`): CRC-32 of the
stored value codes (packed four a byte), and of a layer's categories then its DTZ in the stored
type (a capture position's DTZ 1, a draw's 0, as the solver leaves them). A quiet cursed win or
blessed loss has its DTZ (past the limit) in no compact file: where a table has any, its row's
longest DTZ of a cursed win or blessed loss and its layer checksum are the stamp's (what the
builder counted from the DTZ it solved), every other figure recounted.
``bench/make_reference.py`` writes the 8-piece rows from them.

>>> native_reference_lines("/nonexistent", [])
([], [])
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

from egtb.builder.figures import TableFigures
from egtb.builder.native import LEAN_RULES, read_summary, summary_path
from egtb.builder.reference import ReferenceEntry, RuleReferenceEntry, layer_line, table_line
from egtb.builder.verify_compact import CHUNK as VERIFY_CHUNK
from egtb.builder.successor_check import unranked
from egtb.builder.verify_compact import CompactProber, passed_figures
from egtb.builder.verify_native import check_chunk
from egtb.errors import InvalidArgumentError, TableError
from egtb.formats.master import PER_BYTE
from egtb.formats.compact import material_counts
from egtb.positions.material import Material, count_positions
from egtb.rules.threats import threat_flags

__all__ = ["native_figures", "native_reference_lines", "range_values"]

#: Positions unranked and probed at a time.
CHUNK = 1 << 22


def native_figures(directory: os.PathLike | str, material: Material, *, rule: str = LEAN_RULES,
                   chunk: int = CHUNK) -> tuple[ReferenceEntry, RuleReferenceEntry]:
    """The figures of a compact-native table (its ``tables.tsv`` and ``rule_layers.tsv`` rows),
    recomputed from its compact files in `directory`, ``chunk`` positions at a time (only the
    blocks of a chunk decoded: memory bounded by the chunk, not the table); MissingTableError
    when one is absent.

    >>> native_figures("/nonexistent", Material.parse("1k-1k"), chunk=3)
    Traceback (most recent call last):
    ...
    egtb.errors.InvalidArgumentError: chunk 3 is not a multiple of 4 (the packed values' bytes)
    """
    return _counted(directory, material, rule=rule, chunk=chunk).entries()


def _counted(directory: os.PathLike | str, material: Material, *, rule: str, chunk: int = CHUNK) -> TableFigures:
    """:func:`native_figures`' count (with its quiet cursed wins and blessed losses, whose DTZ no file holds)."""
    if chunk % PER_BYTE:
        raise InvalidArgumentError(f"chunk {chunk} is not a multiple of {PER_BYTE} (the packed values' bytes)")
    prober = CompactProber(directory)
    figures = TableFigures()
    total = count_positions(material)
    for lo in range(0, total, chunk):
        figures.add(*range_values(prober, material, lo, min(lo + chunk, total), rule=rule))
    return figures


def range_values(prober: CompactProber, material: Material, lo: int, hi: int, *,
                 rule: str = LEAN_RULES) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(WDL, category, DTZ, must capture) of positions lo..hi of a compact-native table (what
    :meth:`egtb.builder.figures.TableFigures.add` counts): the stored ones decoded, those the
    files leave out from the prober's search, a derived side's DTZ from its successors."""
    table = prober.table(material)
    layer = table.layer(rule)
    boards, cap = unranked(material_counts(material), lo, hi)
    value_of, category_of = np.array(table.value_of, np.int8), np.array(layer.value_of, np.int8)
    wdl, category = value_of[table.codes(lo, hi)], category_of[layer.codes(lo, hi)]  # this range's blocks
    left_out = cap
    if table.threats:  # and the threat positions its WLD file leaves out (their DTZ is stored)
        left_out = np.empty(hi - lo, dtype=np.bool_)
        threat_flags(*boards, 0, left_out)
        left_out |= cap
    searched = np.flatnonzero(left_out)
    if len(searched):
        found = tuple(a[searched] for a in boards)
        wdl[searched] = prober.probe_batch(*found, 0)[0]
        category[searched] = prober.probe_batch(*found, 0, rule=rule)[0]
    return wdl, category, _stored_dtz(prober, material, layer, lo, hi, category, rule), cap


def _stored_dtz(prober: CompactProber, material: Material, layer, lo: int, hi: int, category: np.ndarray,
                rule: str) -> np.ndarray:
    """The DTZ of positions lo..hi (meaningful where a win or loss need not capture): from the
    layer's DTZ file, or where its pair keeps the DTZ on the other side the one its moves give,
    as the check against the successors finds it (:func:`egtb.builder.verify_native.check_chunk`,
    a verify chunk at a time: 6 times faster than deriving each from its moves); TableError when
    a position there disagrees with its successors."""
    if not layer.dtz_derived:
        return np.asarray(layer.dtz_file.kind.value_of_code)[layer.dtz_file.codes(lo, hi)]
    dtz = np.zeros(hi - lo, dtype=np.int64)
    for first in range(lo, hi, VERIFY_CHUNK):
        found = check_chunk(prober, material, first, min(first + VERIFY_CHUNK, hi), rule=rule)
        wrong = np.flatnonzero(found.flags)
        if len(wrong):
            raise TableError(f"{layer.path}: position {first + int(wrong[0])} of {material.name} disagrees with "
                             f"its successors (`egtb verify` names what is wrong)")
        dtz[first - lo:first - lo + len(found.derived)] = found.derived
    return dtz


def native_reference_lines(directory: os.PathLike | str, materials: list[Material], *,
                           rule: str = LEAN_RULES) -> tuple[list[str], list[str]]:
    """The ``tables.tsv`` and ``rule_layers.tsv`` lines of compact-native `materials`, as
    :func:`egtb.builder.reference.reference_lines` gives a master's: the figures ``egtb verify``
    counted where it passed the files there now (:func:`egtb.builder.verify_compact.passed_figures`),
    else those :func:`native_figures` counts."""
    figures = [(material, _figures(directory, material, rule)) for material in materials]
    return ([table_line(material, values) for material, (values, _) in figures],
            [layer_line(material, rule, layer) for material, (_, layer) in figures])


def _figures(directory: os.PathLike | str, material: Material, rule: str) -> tuple[ReferenceEntry, RuleReferenceEntry]:
    """A compact-native table's reference figures: those its passed check recorded, else counted
    now; with quiet cursed wins or blessed losses, the longest DTZ of one and the layer checksum
    from its stamp (TableError when it has none)."""
    figures = passed_figures(directory, material) if rule == LEAN_RULES else None
    if figures is None:
        figures = _counted(directory, material, rule=rule)
    values, layer = figures.entries()
    if figures.dtz_unknown:
        stamped = (read_summary(directory, material) or {}).get("rules", {}).get(rule)
        if stamped is None:
            raise TableError(f"{material.name}: {figures.dtz_unknown} quiet cursed wins or blessed losses, whose DTZ "
                             f"no compact file holds, and no {rule} layer in {summary_path(directory, material).name} "
                             "to take their longest DTZ and the layer checksum from")
        layer = replace(layer, max_dtz_cursed=stamped["max_dtz_cursed"], checksum_crc32=stamped["checksum_crc32"])
    return values, layer
