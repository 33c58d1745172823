"""Reference figures of finished tables, kept in the repository.

``egtb/data/reference/tables.tsv`` (package data) lists, for every material up to 6 pieces, the
counts of wins, losses and draws, the longest DTW and the CRC-32 checksum of a
table built and verified by this project. A table built anywhere else must
match them exactly: the build is deterministic whatever the worker count.

>>> reference = load_reference()
>>> reference["2k-1k"].wins > reference["2k-1k"].losses
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from egtb.tables import storage
from egtb.tables.material import Material
from egtb.tables.values import DRAW, LOSS, WIN

#: The reference file shipped with the project.
REFERENCE_PATH = Path(str(resources.files("egtb").joinpath("data", "reference", "tables.tsv")))
_FIELDS = ("positions", "wins", "losses", "draws", "max_dtw", "checksum_crc32")


@dataclass(frozen=True)
class ReferenceEntry:
    """Figures of one finished table."""

    positions: int
    """Positions in the table."""
    wins: int
    """Positions won by the side to move."""
    losses: int
    """Positions lost by the side to move."""
    draws: int
    """Drawn positions."""
    max_dtw: int
    """Longest distance to win, in plies."""
    checksum_crc32: int
    """CRC-32 of the stored datasets (docs/table-format.md)."""


def load_reference(path: os.PathLike | str = REFERENCE_PATH) -> dict[str, ReferenceEntry]:
    """Reference entries by material name; ValueError names a malformed line."""
    entries = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        name, *values = line.split("\t")
        if len(values) != len(_FIELDS):
            raise ValueError(f"{path}:{number}: expected {len(_FIELDS) + 1} tab-separated fields")
        try:
            entries[Material.parse(name).name] = ReferenceEntry(*(int(v) for v in values))
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
    return entries


def figures_from_data(path: os.PathLike | str) -> ReferenceEntry:
    """A table's figures recomputed from its stored data, never from its attributes.

    The checksum is computed afresh over the stored datasets, so a file whose
    data was changed after writing differs from the reference even though its
    attributes still carry the old figures.
    """
    data = storage.open_table(path, check=False)
    counts = np.bincount(data.wld, minlength=4)
    return ReferenceEntry(
        positions=len(data.wld), wins=int(counts[WIN]), losses=int(counts[LOSS]), draws=int(counts[DRAW]),
        max_dtw=int(data.dtw.max()) if len(data.dtw) else 0,
        checksum_crc32=storage.checksum(storage.pack_wld(data.wld), data.dtw))


def compare_with_reference(directory: os.PathLike | str, materials: list[Material], *,
                           reference: dict[str, ReferenceEntry] | None = None) -> list[str]:
    """One message per table whose figures differ from the reference (none: all agree).

    Materials the reference does not list are skipped.
    """
    reference = load_reference() if reference is None else reference
    problems = []
    for material in materials:
        expected = reference.get(material.name)
        if expected is None:
            continue
        path = storage.table_path(directory, material)
        found = figures_from_data(path)
        if found != expected:
            differ = [f"{name} {getattr(found, name)} (reference {getattr(expected, name)})"
                      for name in _FIELDS if getattr(found, name) != getattr(expected, name)]
            problems.append(f"{path}: differs from the reference: {', '.join(differ)}")
    return problems
