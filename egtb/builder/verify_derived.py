"""The DTZ a derived side's check finds, kept for its mirror's check.

From 8 pieces a pair keeps its DTZ on one side (:mod:`egtb.probe.derived_dtz`). The kept
side's DTZ is checked against its successors' DTZ, and those lie on the derived side, which
has no DTZ file: deriving each from its moves, one more ply into the kept side's file, made
the kept side's check 3-4 times slower than the derived side's. The derived side's own check
finds those values anyway (the fastest win or slowest loss over its successors, their DTZ read
from the kept side's file, :func:`egtb.builder.successor_check.check_positions`). It writes
them here, a byte a position (``<material>.<rule>.verify-dtz``), and the mirror's check reads
its successors' DTZ from that file.

The file is written as ``<name>.part`` chunk by chunk, flushed before the check's progress
record is saved (so a resumed check finds what its record counts), and renamed once the
derived side is checked to its end: only a finished file is read. Its space is taken at the
start (``posix_fallocate``), so a full disk is an ``OSError`` then, not a fault later.

>>> from egtb.positions.material import Material
>>> derived_path("/t", Material.parse("4k-1m3k"), "wcdf").name
'4k-1m3k.wcdf.verify-dtz'
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from egtb.errors import TableError
from egtb.formats.compact import RULE_KINDS, compact_path
from egtb.formats.compact.layout import mirror_dtz_path
from egtb.positions.material import Material, count_positions

__all__ = ["DERIVED_SUFFIX", "DerivedWriter", "derived_path", "derived_sides", "open_derived", "remove_derived",
           "rule_of"]

#: The suffix of a derived side's DTZ kept for its mirror's check.
DERIVED_SUFFIX = ".verify-dtz"
#: Added to the name while the file is written.
PART_SUFFIX = ".part"


def rule_of(directory: os.PathLike | str, material: Material) -> str | None:
    """The rule of a material's category file (``.wcdf``), None without one.

    >>> rule_of("/nonexistent", Material.parse("1k-1k")) is None
    True
    """
    return next((r for r, kind in RULE_KINDS.items() if compact_path(directory, material, kind=kind).exists()), None)


def derived_sides(directory: os.PathLike | str, materials: list[Material]) -> dict[Material, Material]:
    """{derived side: its mirror} of the pairs of ``materials`` that keep their DTZ on one side
    (the derived side's DTZ file absent, its mirror's there), both among ``materials``.

    >>> derived_sides("/nonexistent", [Material.parse("1k-2k"), Material.parse("2k-1k")])
    {}
    """
    found, chosen = {}, set(materials)
    for material in materials:
        rule = rule_of(directory, material)
        if rule is not None and material.mirrored() in chosen and mirror_dtz_path(directory, material, rule):
            found[material] = material.mirrored()
    return found


def derived_path(directory: os.PathLike | str, material: Material, rule: str, *, part: bool = False) -> Path:
    """Where the DTZ under ``rule`` that the check of ``material`` (a derived side) found is kept."""
    name = f"{material.name}.{rule}{DERIVED_SUFFIX}"
    return Path(directory) / (name + PART_SUFFIX if part else name)


class DerivedWriter:
    """The file a derived side's check writes its DTZ into, a chunk at a time.

    ``fresh``: a new file (one left before is replaced); else the part a killed check left, which
    must exist (``FileNotFoundError``).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> w = DerivedWriter(d, Material.parse("1k-1k"), "wcdf", fresh=True)
    >>> w.write(2, np.array([0, 3, 5])); w.finish()
    >>> open_derived(d, Material.parse("1k-1k"), "wcdf")[:6].tolist()
    [0, 0, 0, 3, 5, 0]
    """

    def __init__(self, directory: os.PathLike | str, material: Material, rule: str, *, fresh: bool) -> None:
        self.material = material
        self.path = derived_path(directory, material, rule, part=True)
        self.done_path = derived_path(directory, material, rule)
        size = count_positions(material)
        if fresh:
            self.done_path.unlink(missing_ok=True)
            with open(self.path, "wb") as fh:
                os.posix_fallocate(fh.fileno(), 0, size)
        elif self.path.stat().st_size != size:
            raise FileNotFoundError(f"{self.path} holds {self.path.stat().st_size} bytes, not {size}")
        self._values = np.memmap(self.path, dtype=np.uint8, mode="r+", shape=(size,))

    def write(self, lo: int, dtz: np.ndarray) -> None:
        """Put the DTZ of positions lo.. (0 where it has none)."""
        if len(dtz) and int(dtz.max()) > 255:
            raise TableError(f"{self.path}: a DTZ of {int(dtz.max())} plies does not fit a byte "
                             f"(the DTZ its successors give {self.material.name}'s positions)")
        self._values[lo:lo + len(dtz)] = dtz

    def flush(self) -> None:
        """Write what was put to the disk (before the check's record counts it)."""
        self._values.flush()

    def finish(self) -> None:
        """The derived side checked to its end: its file can be read."""
        self.flush()
        del self._values
        os.replace(self.path, self.done_path)


def open_derived(directory: os.PathLike | str, material: Material, rule: str) -> np.ndarray | None:
    """The finished DTZ file of a derived side (read-only, a byte a position), or None.

    >>> open_derived("/nonexistent", Material.parse("1k-1k"), "wcdf") is None
    True
    """
    path = derived_path(directory, material, rule)
    size = count_positions(material)
    if not path.exists() or path.stat().st_size != size:
        return None
    return np.memmap(path, dtype=np.uint8, mode="r", shape=(size,))


def remove_derived(directory: os.PathLike | str, material: Material, rule: str) -> None:
    """Delete a derived side's DTZ file, finished or not.

    >>> remove_derived("/nonexistent", Material.parse("1k-1k"), "wcdf")
    """
    for part in (False, True):
        derived_path(directory, material, rule, part=part).unlink(missing_ok=True)
