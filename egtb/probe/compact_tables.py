"""Compact files as the prober sees them: one kind per file, each answering its own reads.

A compact file (:class:`egtb.formats.compact.CompactTable`, read through its blocks'
marks) leaves out the positions whose side to move must capture; the prober searches
them. Its three kinds here add what :class:`egtb.probe.tables.Layer` declares:

- :class:`CompactWdl`: a ``.wld`` file, the WDL of a material (no DTW); its rule
  layer (:meth:`~egtb.formats.compact.CompactTable.layer`) is the category file beside it;
- :class:`CompactCategories`: a ``.wcdf`` file, the categories at counter 0, with its
  DTZ file when there is one (the DTZ of wins and losses only);
- :class:`CompactDtz`: a ``.dtz`` file, the DTZ of wins and losses.

>>> open_compact("/nonexistent/1k-1k.wld")
Traceback (most recent call last):
...
egtb.errors.TableError: /nonexistent/1k-1k.wld: unreadable compact file (No such file or directory)
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from egtb.errors import TableError
from egtb.formats.cache import TableCache
from egtb.formats.compact.layout import DTZ_KINDS, RULE_KINDS, FileKind
from egtb.formats.compact.reader import CompactTable
from egtb.formats.values import CAT_DRAW, CAT_LOSS, CAT_WIN
from egtb.probe.descriptors import coded_row, compact_batch_row
from egtb.probe.tables import KnownMaxDtz
from egtb.rules.draw_rules import DRAW_RULES

__all__ = ["CompactCategories", "CompactDtz", "CompactWdl", "open_compact"]


class _CompactKind(CompactTable):
    """What every compact kind answers: values at indices not due to capture, its descriptor rows."""

    stores_captures = False
    """Positions whose side to move must capture are left out (the prober searches them)."""
    full = None
    """No master file beside it (see :class:`egtb.probe.tables.PairedTable`)."""
    holds_distances = False

    @property
    def coded(self) -> "_CompactKind":
        """The compact file whose coded blocks the kernels read: this one."""
        return self

    def open_sibling(self, path: Path) -> CompactTable:
        """Another compact file of this material, as the kind its suffix names."""
        return _KIND_OF_SUFFIX.get(path.suffix, CompactWdl)(path, cache=self.cache)

    def stored_value(self, index: int, capture: bool) -> int | None:
        """The value, None where the side to move must capture (the file leaves it out)."""
        return None if capture else self.value_at(index)

    def kernel_row(self) -> np.ndarray:
        """The single-probe kernels' row: its lookup descriptor."""
        return coded_row(len(self), self)

    def batch_row(self, kind: FileKind, *, distances: bool) -> np.ndarray:
        """The batch kernel's row (TableError when the file is not of ``kind``)."""
        if self.kind is not kind:
            raise TableError(f"{self.path}: a {self.kind.suffix} file where a {kind.suffix} file was expected")
        return compact_batch_row(self)

    def batch_source(self, *, distances: bool) -> "_CompactKind":
        return self

    def distances_beside(self) -> None:
        """None: no master file beside it."""
        return None

    def kernel_layers(self) -> dict:
        """None of its layers is read by the rule kernel from memory (each is a compact file)."""
        return {}


class CompactWdl(_CompactKind):
    """A ``.wld`` file: the WDL of a material, capture positions left out; no DTW."""


class CompactCategories(KnownMaxDtz, _CompactKind):
    """A category file (``.wcdf``): the categories at counter 0, capture positions left out, and
    the DTZ of wins and losses from its DTZ file (:attr:`dtz_file`) when there is one."""

    @property
    def holds_distances(self) -> bool:
        """Whether it answers DTZ by a read: with its DTZ file."""
        return self.dtz_file is not None

    def dtz_at(self, index: int, category: int, capture: bool) -> int | None:
        """0 for a draw; a win's or loss's from the DTZ file (1 where the side to move must
        capture: its move zeroes the counter); None without a DTZ file (but for those two when its
        DTZ is derived: the prober derives the others, :mod:`egtb.probe.derived_dtz`), and for a
        cursed win or blessed loss (the DTZ file holds those of wins and losses only)."""
        if self.dtz_file is None and not self.dtz_derived:
            return None
        if category == CAT_DRAW:
            return 0
        if category not in (CAT_WIN, CAT_LOSS):
            return None
        if capture:
            return 1
        return None if self.dtz_file is None else self.dtz_file.value_at(index)

    def kernel_row(self) -> np.ndarray:
        """The rule kernel's row: its lookup descriptor, largest DTZ and DTZ file's descriptor (or
        that its DTZ is derived)."""
        return coded_row(len(self), self, max_dtz=self.max_dtz, dtz_file=self.dtz_file,
                         derived=DRAW_RULES[self.kind.rule] if self.dtz_derived else None)


class CompactDtz(_CompactKind):
    """A ``.dtz`` file: the DTZ of wins and losses (``value_at``), capture positions left out."""


#: The kind of each rule layer's file by its suffix (a ``.wld`` file otherwise).
_KIND_OF_SUFFIX = {**{kind.suffix: CompactCategories for kind in RULE_KINDS.values()},
                   **{kind.suffix: CompactDtz for kind in DTZ_KINDS.values()}}


def open_compact(path: os.PathLike | str, *, cache: TableCache | None = None) -> CompactWdl:
    """Open a ``.wld`` file for probing; its rule layers open as :class:`CompactCategories` with
    their :class:`CompactDtz` files. Its decoded blocks go to ``cache`` (default: the process's).

    >>> open_compact("/nonexistent/2k-1k.wld", cache=TableCache())      # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    egtb.errors.TableError: /nonexistent/2k-1k.wld: unreadable compact file (...)
    """
    return CompactWdl(path, cache=cache)
