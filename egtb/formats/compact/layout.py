"""Compact files: their kinds, names and fixed layout (header, block index, blocks).

A compact file ``<material>.wld`` holds the value of every position of a
material (Black to move, in index order) in fixed-size blocks of
:data:`BLOCK_BYTES` bytes, so that one probe decodes one block; a category
file ``<material>.wcdf`` holds the categories under "wcdf" the same way. As
Chinook, Cake and KingsRow do, a position whose side to move must capture is
not stored (the prober recovers it by a capture search). docs/table-format.md
("Compact WLD files") gives the layout byte by byte; :mod:`.codec` the coding
of a block, :mod:`.writer` and :mod:`.reader` the files.

>>> WDL.suffix, WCDF.suffix, WCDF.rule, WDL.top, WCDF.top
('.wld', '.wcdf', 'wcdf', 1, 2)
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from egtb.formats.values import CATEGORY_OF_CODE, CODE_OF_CATEGORY, WDL_OF_CODE
from egtb.positions.material import Material

__all__ = [
    "BLOCK_BYTES", "FORMAT_VERSION", "FileKind", "KINDS", "RULE_KINDS", "SUFFIX", "WCDF", "WDL",
    "category_codes", "compact_path", "compact_paths", "material_counts",
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
#: Most runs a block may hold: a token takes at least one bit (and the pool's
#: int16 bucket entries index runs).
MAX_RUNS = BLOCK_BITS


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
    """Kernel value (WDL or category) of each code (:mod:`egtb.formats.values`)."""

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
#: Win/draw/loss files (``<material>.wld``): codes DRAW, WIN, LOSS.
WDL = FileKind(SUFFIX, MAGIC, 3, 0, None, WDL_OF_CODE)
#: Category files under "wcdf" (``<material>.wcdf``): codes DRAW, WIN, LOSS, CURSED_WIN, BLESSED_LOSS.
WCDF = FileKind(".wcdf", b"EGTBCAT\x00", 5, 1, "wcdf", CATEGORY_OF_CODE)
#: The file kinds, by header preset field.
KINDS = {kind.preset: kind for kind in (WDL, WCDF)}
#: The category file kind of each preset that has one.
RULE_KINDS = {kind.rule: kind for kind in KINDS.values() if kind.rule}



def compact_path(directory: os.PathLike | str, material: Material, *, kind: FileKind = WDL) -> Path:
    """The compact file of a material in a directory (``kind=WCDF``: its category file).

    >>> compact_path("data/egtb", Material.parse("1k-1k")).name
    '1k-1k.wld'
    >>> compact_path("data/egtb", Material.parse("1k-1k"), kind=WCDF).name
    '1k-1k.wcdf'
    """
    return Path(directory) / f"{material.name}{kind.suffix}"


def compact_paths(directory: os.PathLike | str, material: Material) -> list[Path]:
    """The compact files of every kind a material has or may have in a directory.

    >>> [p.name for p in compact_paths("data/egtb", Material.parse("1k-1k"))]
    ['1k-1k.wld', '1k-1k.wcdf']
    """
    return [compact_path(directory, material, kind=kind) for kind in KINDS.values()]


def category_codes(category: np.ndarray) -> np.ndarray:
    """Category-file codes (uint8) of categories (int8, -2..2).

    >>> category_codes(np.array([2, 1, 0, -1, -2], dtype=np.int8)).tolist()
    [2, 4, 1, 5, 3]
    """
    category = np.asarray(category)
    codes = np.empty(len(category), dtype=np.uint8)
    for start in range(0, len(category), _SLICE):  # a slice at a time: indices are 8 bytes each
        codes[start:start + _SLICE] = CODE_OF_CATEGORY[category[start:start + _SLICE].astype(np.int64) + 2]
    return codes


#: Positions :func:`category_codes` converts at a time (a 7-piece material has over a billion).
_SLICE = 1 << 22



def material_counts(material: Material) -> np.ndarray:
    """(black men, black kings, white men, white kings) of a material, for the kernels.

    >>> material_counts(Material.parse("1m1k-2k")).tolist()
    [1, 1, 0, 2]
    """
    return np.array([material.black_men, material.black_kings, material.white_men,
                     material.white_kings], dtype=np.int64)
