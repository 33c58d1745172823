"""Compact files: their kinds, names and fixed layout (header, block index, blocks).

A compact file ``<material>.wld`` holds the value of every position of a
material (Black to move, in index order) in fixed-size blocks of
:data:`BLOCK_BYTES` bytes, so that one probe decodes one block; a category
file ``<material>.wcdf`` holds the categories under "wcdf" the same way, and a
DTZ file ``<material>.dtz`` the DTZ under "wcdf" of its wins and losses (every
other position is a don't-care, given the value before it). As
Chinook, Cake and KingsRow do, a position whose side to move must capture is
not stored (the prober recovers it by a capture search). docs/table-format.md
("Compact WLD files") gives the layout byte by byte; :mod:`.codec` the coding
of a block, :mod:`.writer` and :mod:`.reader` the files.

>>> WDL.suffix, WCDF.suffix, WCDF.rule, WDL.top, WCDF.top, WCDF_DTZ.suffix, WCDF_DTZ.contexts
('.wld', '.wcdf', 'wcdf', 1, 2, '.dtz', 1)
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from numba import njit

from egtb.errors import InvalidDataError
from egtb.formats.values import CATEGORY_OF_CODE, CODE_OF_CATEGORY, WDL_OF_CODE
from egtb.positions.material import Material

__all__ = [
    "BLOCK_BYTES", "DTZ_KINDS", "FORMAT_VERSION", "FileKind", "KINDS", "MAX_DTZ_CODE", "RULE_KINDS", "SUFFIX",
    "THREATS_VERSION",
    "WCDF", "WCDF_DTZ", "WDL", "category_codes", "compact_path", "compact_paths", "dtz_codes", "material_counts",
    "mirror_dtz_path",
]

SUFFIX = ".wld"
MAGIC = b"EGTBWLD\x00"
FORMAT_VERSION = 1
#: The version of a WLD file that also leaves out threat positions (:mod:`egtb.rules.threats`).
THREATS_VERSION = 2
#: Bytes of one coded block (the last block of a file may be shorter).
BLOCK_BYTES = 4096
BLOCK_BITS = BLOCK_BYTES * 8
#: The blocks start at a multiple of this many bytes from the start of the file.
DATA_ALIGN = 64
#: Longest Huffman code (the decoding table reads its first 8 bits, then the rest: codec.decoding_table).
MAX_CODE_BITS = 12
#: Run lengths 1..EXACT_LENGTHS have a bucket each; longer ones share buckets.
EXACT_LENGTHS = 15
#: Buckets per power of two above EXACT_LENGTHS (2 mantissa bits).
MANTISSA_BITS = 2
#: Largest exponent of a run length (runs shorter than 2**(MAX_EXPONENT + 1)).
MAX_EXPONENT = 47
NUM_BUCKETS = EXACT_LENGTHS + (MAX_EXPONENT - 3) * (1 << MANTISSA_BITS)
#: Most value codes a file kind that codes a run after the previous run's value has (a category
#: file: 1..5); a DTZ file's codes are 1..MAX_DTZ_CODE, in one context.
MAX_VALUES = 5
#: Contexts are the previous run's value code (1..values); row 0 is unused.
NUM_CONTEXTS = MAX_VALUES + 1
#: Largest value code of a DTZ file (a DTZ of 0..MAX_DTZ_CODE - 1; a win or loss under a move
#: rule of at most 126 plies has a DTZ within that: under "wcdf" it is at most 80).
MAX_DTZ_CODE = 127
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
    """Kernel value (WDL or category; DTZ) of each code (:mod:`egtb.formats.values`)."""
    after_previous: bool = True
    """Whether a run is coded after the previous run's value (a context per value, the choice
    among the other values), or all runs in one context (the choice among all values: a DTZ
    file, whose values are too many for a code table each)."""

    @property
    def contexts(self) -> int:
        """Code tables (contexts 1..contexts; row 0 of the kernels' tables is unused)."""
        return self.values if self.after_previous else 1

    @property
    def symbols(self) -> int:
        """Huffman symbols per context: (choice of the run's value, length bucket)."""
        return (self.values - 1 if self.after_previous else self.values) * NUM_BUCKETS

    @property
    def lengths_bytes(self) -> int:
        """Bytes of the code-length table after the header."""
        return self.contexts * self.symbols

    @cached_property
    def context_after(self) -> np.ndarray:
        """The context of the run after a run of each value code (0..MAX_DTZ_CODE)."""
        values = np.arange(MAX_DTZ_CODE + 1, dtype=np.uint8)
        return values if self.after_previous else np.ones_like(values)

    @cached_property
    def first_context(self) -> np.ndarray:
        """The context a block's first run is coded in, by its value code: another value's (the
        run's own cannot follow it), or the one context."""
        first = np.full(MAX_DTZ_CODE + 1, 1, dtype=np.uint8)
        if self.after_previous:
            first[1] = 2  # a run of draws (1) as after a win (2), any other as after a draw
        return first

    @cached_property
    def choice_of(self) -> np.ndarray:
        """choice_of[context, value]: the run's choice in a context (its symbol's high part)."""
        choice = np.zeros((self.contexts + 1, MAX_DTZ_CODE + 1), dtype=np.int64)
        for context in range(1, self.contexts + 1):
            for c, v in enumerate(self._choices(context)):
                choice[context, v] = c
        return choice

    @cached_property
    def value_of_choice(self) -> np.ndarray:
        """value_of_choice[context, choice]: inverse of :attr:`choice_of`."""
        value = np.zeros((self.contexts + 1, max(self.values, 1)), dtype=np.int64)
        for context in range(1, self.contexts + 1):
            for c, v in enumerate(self._choices(context)):
                value[context, c] = v
        return value

    def _choices(self, context: int) -> list[int]:
        """The values a run may have in a context, smaller code first."""
        return [v for v in range(1, self.values + 1) if not self.after_previous or v != context]

    @cached_property
    def top(self) -> int:
        """The best value for the side to move (WDL win 1, category win 2)."""
        return int(self.value_of_code.max())


#: Win/draw/loss files (``<material>.wld``): codes DRAW, WIN, LOSS.
WDL = FileKind(SUFFIX, MAGIC, 3, 0, None, WDL_OF_CODE)
#: Category files under "wcdf" (``<material>.wcdf``): codes DRAW, WIN, LOSS, CURSED_WIN, BLESSED_LOSS.
WCDF = FileKind(".wcdf", b"EGTBCAT\x00", 5, 1, "wcdf", CATEGORY_OF_CODE)
#: DTZ files under "wcdf" (``<material>.dtz``): code DTZ + 1 at the wins and losses of the category
#: file (:func:`dtz_codes`).
WCDF_DTZ = FileKind(".dtz", b"EGTBDTZ\x00", MAX_DTZ_CODE, 2, "wcdf",
                    np.arange(-1, MAX_DTZ_CODE, dtype=np.int64), after_previous=False)
#: The file kinds, by header preset field.
KINDS = {kind.preset: kind for kind in (WDL, WCDF, WCDF_DTZ)}
#: The category file kind of each preset that has one.
RULE_KINDS = {WCDF.rule: WCDF}
#: The DTZ file kind of each preset that has one (beside its category file).
DTZ_KINDS = {WCDF_DTZ.rule: WCDF_DTZ}



def compact_path(directory: os.PathLike | str, material: Material, *, kind: FileKind = WDL) -> Path:
    """The compact file of a material in a directory (``kind=WCDF``: its category file).

    >>> compact_path("data/egtb", Material.parse("1k-1k")).name
    '1k-1k.wld'
    >>> compact_path("data/egtb", Material.parse("1k-1k"), kind=WCDF).name
    '1k-1k.wcdf'
    """
    return Path(directory) / f"{material.name}{kind.suffix}"


def mirror_dtz_path(directory: os.PathLike | str, material: Material, rule: str) -> Path | None:
    """The mirror's DTZ file a material's DTZ under ``rule`` is derived from (its pair keeps the DTZ on
    that side: its own file absent, the mirror's there, the material not its own mirror), else None.

    >>> mirror_dtz_path("/nonexistent", Material.parse("1m1k-2k"), "wcdf") is None
    True
    """
    kind = DTZ_KINDS[rule]
    mirrored = material.mirrored()
    mirror = compact_path(directory, mirrored, kind=kind)
    if mirrored == material or compact_path(directory, material, kind=kind).exists() or not mirror.exists():
        return None
    return mirror


def compact_paths(directory: os.PathLike | str, material: Material) -> list[Path]:
    """The compact files of every kind a material has or may have in a directory.

    >>> [p.name for p in compact_paths("data/egtb", Material.parse("1k-1k"))]
    ['1k-1k.wld', '1k-1k.wcdf', '1k-1k.dtz']
    """
    return [compact_path(directory, material, kind=kind) for kind in KINDS.values()]


def category_codes(category: np.ndarray) -> np.ndarray:
    """Category-file codes (uint8) of categories (int8, -2..2).

    >>> category_codes(np.array([2, 1, 0, -1, -2], dtype=np.int8)).tolist()
    [2, 4, 1, 5, 3]
    """
    category = np.ascontiguousarray(category)
    codes = np.empty(len(category), dtype=np.uint8)
    _category_codes(category, CODE_OF_CATEGORY, codes)  # no index array: no need to go a slice at a time
    return codes


def dtz_codes(category: np.ndarray, dtz: np.ndarray) -> np.ndarray:
    """DTZ-file codes (uint8) of a rule layer: DTZ + 1 at its wins and losses, 0 (a don't-care,
    which the writer fills) elsewhere. ValueError for a DTZ beyond MAX_DTZ_CODE - 1.

    `category` and `dtz` are arrays, or datasets read a slice at a time (a master's layer).

    >>> dtz_codes(np.array([2, 1, 0, -2]), np.array([5, 90, 0, 0])).tolist()
    [6, 0, 0, 1]
    >>> dtz_codes(np.array([2, -2]), np.array([5, MAX_DTZ_CODE]))
    Traceback (most recent call last):
    ...
    egtb.errors.InvalidDataError: a DTZ of 127 does not fit a DTZ file (at most 126)
    """
    codes = np.empty(len(category), dtype=np.uint8)
    for start in range(0, len(category), _SLICE):
        part = slice(start, start + _SLICE)
        longest = _dtz_codes(np.ascontiguousarray(category[part]), np.ascontiguousarray(dtz[part]), codes[part])
        if longest >= MAX_DTZ_CODE:
            raise InvalidDataError(f"a DTZ of {longest} does not fit a DTZ file (at most {MAX_DTZ_CODE - 1})")
    return codes


@njit(cache=True)
def _category_codes(category, code_of_category, out):
    """out[i] = the code of category[i] (-2..2; InvalidDataError for another value)."""
    for i in range(category.shape[0]):
        k = np.int64(category[i]) + 2
        if k < 0 or k >= code_of_category.shape[0]:
            raise InvalidDataError("a category outside -2..2")
        out[i] = code_of_category[k]


@njit(cache=True)
def _dtz_codes(category, dtz, out):
    """out[i] = dtz[i] + 1 where category[i] is a win or a loss (+-2), else 0; return the longest
    such DTZ (a code is written only below MAX_DTZ_CODE; the caller refuses the rest)."""
    longest = np.int64(0)
    for i in range(category.shape[0]):
        if category[i] == 2 or category[i] == -2:
            d = np.int64(dtz[i])
            longest = max(longest, d)
            out[i] = d + 1 if d < MAX_DTZ_CODE else 0
        else:
            out[i] = 0
    return longest


#: Positions :func:`dtz_codes` converts at a time (a master's layer is read a slice at a time).
_SLICE = 1 << 22



def material_counts(material: Material) -> np.ndarray:
    """(black men, black kings, white men, white kings) of a material, for the kernels.

    >>> material_counts(Material.parse("1m1k-2k")).tolist()
    [1, 1, 0, 2]
    """
    return np.array([material.black_men, material.black_kings, material.white_men,
                     material.white_kings], dtype=np.int64)
