"""How far the check of a compact-native table got: ``<material>.verify.json`` in its directory.

A check of an 8-piece material takes hours; a killed one goes on from the last
chunk it recorded, with the counts and first errors of the chunks before, so
that its report is the one an uninterrupted check gives. A material whose
check finished and passed is not checked again while its files and those of
the tables its successors lie in are unchanged (their sizes, and the sizes and
CRC-32 a compact-native table's ``.native.json`` stamp records, else their
modification times). The record is written atomically (a temporary file
renamed), so a kill leaves the one before.

>>> MaterialProgress(identity={}).next
0
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from egtb.builder.native import SUMMARY_SUFFIX
from egtb.formats.cache import file_stamp
from egtb.formats.compact import compact_paths
from egtb.positions.material import Material

__all__ = ["PROGRESS_SUFFIX", "MaterialProgress", "files_identity", "load_progress", "progress_path",
           "save_progress"]

#: The suffix of a material's check record.
PROGRESS_SUFFIX = ".verify.json"
#: Version of the record's layout: another one is not read (the check starts again).
PROGRESS_VERSION = 1


@dataclass
class MaterialProgress:
    """The check of one material so far: ``next`` its first position not checked yet."""

    identity: dict
    """The files it reads, as :func:`files_identity` gave them when it started."""
    chunk: int = 0
    """Positions a chunk (what it was started with; a resumed check goes on with its own)."""
    next: int = 0
    captures: int = 0
    decisive: int = 0
    bad: dict[str, int] = field(default_factory=dict)
    """Positions found wrong, by file suffix."""
    errors: dict[str, list[list]] = field(default_factory=dict)
    """The first of them, by file suffix: [position index, what is wrong]."""
    figures: dict | None = None
    """The table's figures counted so far (:meth:`egtb.builder.figures.TableFigures.state`); None where
    they are not counted (no DTZ, or a record begun before they were)."""
    differ: list[str] = field(default_factory=list)
    """Where the figures, once all counted, differ from the table's stamp or the reference."""
    done: bool = False
    version: int = PROGRESS_VERSION

    @property
    def passed(self) -> bool:
        """Whether the check finished and found nothing wrong."""
        return self.done and not any(self.bad.values()) and not self.differ


def progress_path(directory: os.PathLike | str, material: Material) -> Path:
    """Where the check record of a material lies.

    >>> progress_path("/t", Material.parse("4k-4k")).name
    '4k-4k.verify.json'
    """
    return Path(directory) / f"{material.name}{PROGRESS_SUFFIX}"


def files_identity(directory: os.PathLike | str, materials: list[Material]) -> dict[str, list]:
    """What tells the compact files of ``materials`` apart from rebuilt ones: each file's size and
    the CRC-32 its material's ``.native.json`` stamp records for it, or without a stamp its size
    and modification time (None for a file that is absent).

    >>> files_identity("/nonexistent", [Material.parse("1k-1k")])["1k-1k.wld"] is None
    True
    """
    directory = Path(directory)
    out: dict[str, list] = {}
    for material in materials:
        try:
            stamped = json.loads((directory / f"{material.name}{SUMMARY_SUFFIX}").read_text()).get("files", {})
        except (OSError, ValueError, AttributeError):
            stamped = {}
        for path in compact_paths(directory, material):
            stamp = file_stamp(path)
            if stamp is not None and path.name in stamped:
                stamp = [stamp[0], *stamped[path.name]]  # content, not a copy's time
            out[path.name] = stamp
    return out


def load_progress(directory: os.PathLike | str, material: Material, identity: dict) -> MaterialProgress | None:
    """The check record of a material when there is one for files of this ``identity`` (None when
    it is absent, unreadable, of another layout or of other files).

    >>> load_progress("/nonexistent", Material.parse("1k-1k"), {}) is None
    True
    """
    try:
        found = MaterialProgress(**json.loads(progress_path(directory, material).read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if found.version != PROGRESS_VERSION or found.identity != identity:
        return None
    return found


def save_progress(directory: os.PathLike | str, material: Material, progress: MaterialProgress) -> None:
    """Write a material's check record atomically (a temporary file renamed over it)."""
    path = progress_path(directory, material)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(progress), sort_keys=True))
    os.replace(tmp, path)
