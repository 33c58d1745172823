"""Compact files: win/draw/loss (``.wld``), "wcdf" categories (``.wcdf``) and DTZ (``.dtz``), capture
positions left out.

One module per part: :mod:`.layout` (kinds, names, header), :mod:`.codec`
(runs, Huffman codes, CRC), :mod:`.writer` (a material's codes to a file; compacting a directory
of masters is the builder's, :mod:`egtb.builder.compaction`),
:mod:`.reader` (:class:`CompactTable`, index lookups) and :mod:`.sidecar` (each
file's marks file: the decoder's states the reader starts from). Probing through them,
with the capture search, is the prober's (:mod:`egtb.probe`); checking them,
the builder's (:mod:`egtb.builder.verify_compact`).

>>> from egtb.positions.material import Material
>>> compact_path("data/egtb", Material.parse("1k-1k")).name
'1k-1k.wld'
"""

from egtb.formats.compact.layout import (BLOCK_BYTES, DTZ_KINDS, FORMAT_VERSION, KINDS, RULE_KINDS, SUFFIX, WCDF,
                                         WCDF_DTZ, WDL, FileKind, category_codes, compact_path, compact_paths,
                                         dtz_codes, material_counts)
from egtb.formats.compact.reader import BlockMarks, CompactTable, open_compact
from egtb.formats.compact.sidecar import MarksFile, marks_path, open_marks
from egtb.formats.compact.writer import (CompactReport, encode_kinds, encode_values, remove_leftovers, write_compact,
                                         write_marks)

__all__ = [
    "BLOCK_BYTES", "BlockMarks", "CompactReport", "CompactTable", "DTZ_KINDS", "FORMAT_VERSION", "FileKind", "KINDS",
    "MarksFile", "RULE_KINDS", "SUFFIX", "WCDF", "WCDF_DTZ", "WDL", "category_codes", "compact_path", "compact_paths",
    "dtz_codes", "encode_kinds", "encode_values", "marks_path",
    "material_counts", "open_compact", "open_marks", "remove_leftovers", "write_compact", "write_marks",
]
