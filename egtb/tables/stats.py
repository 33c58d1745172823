"""Statistics of a table directory: per material and per piece count.

Read from the file attributes only (cheap): positions, wins, losses, draws,
max DTW with a FEN reaching it, bytes on disk and bits per position.

>>> PUBLISHED_POSITIONS[2]
3488
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from egtb.tables import storage
from egtb.tables.material import Material

#: Positions with both colours present, one side to move (checkers proof tables).
PUBLISHED_POSITIONS = {2: 3488, 3: 196032, 4: 6209316, 5: 139450808, 6: 2426085676}


@dataclass
class TableStats:
    """Figures of one material, or totals of a piece count (material = 'N pieces')."""

    material: str
    """Material name, or 'N pieces' for a total."""
    pieces: int
    """Number of pieces."""
    positions: int = 0
    """Positions (Black to move)."""
    wins: int = 0
    """Positions the side to move wins."""
    losses: int = 0
    """Positions the side to move loses."""
    draws: int = 0
    """Drawn positions."""
    max_dtw: int = 0
    """Longest DTW (plies)."""
    max_dtw_fen: str = ""
    """A position reaching the longest DTW."""
    bytes: int = 0
    """Bytes on disk."""

    @property
    def bits_per_position(self) -> float:
        """Bits on disk per position."""
        return 8 * self.bytes / self.positions if self.positions else 0.0

    def add(self, other: TableStats) -> None:
        """Add a material's figures to this total."""
        self.positions += other.positions
        self.wins += other.wins
        self.losses += other.losses
        self.draws += other.draws
        self.bytes += other.bytes
        if other.max_dtw > self.max_dtw or not self.max_dtw_fen:
            self.max_dtw, self.max_dtw_fen = other.max_dtw, other.max_dtw_fen

    def as_dict(self) -> dict:
        """Fields plus bits per position."""
        return dict(asdict(self), bits_per_position=round(self.bits_per_position, 4))


def material_stats(path: os.PathLike | str) -> TableStats:
    """Figures of one table file (attributes only)."""
    attrs = storage.read_attrs(path)
    material = Material.parse(str(attrs["material"]))
    return TableStats(material.name, material.pieces, int(attrs["positions"]),
                      int(attrs["wins"]), int(attrs["losses"]), int(attrs["draws"]),
                      int(attrs["max_dtw"]), str(attrs["max_dtw_fen"]),
                      os.path.getsize(path))


def directory_stats(directory: os.PathLike | str) -> tuple[list[TableStats], list[TableStats]]:
    """(per material, per piece count) figures of every table in a directory."""
    tables = [material_stats(storage.table_path(directory, m))
              for m in storage.stored_materials(directory)]
    totals: dict[int, TableStats] = {}
    for t in tables:
        totals.setdefault(t.pieces, TableStats(f"{t.pieces} pieces", t.pieces)).add(t)
    return tables, [totals[n] for n in sorted(totals)]


def format_stats(tables: list[TableStats], totals: list[TableStats]) -> str:
    """A plain-text report; totals are compared with the published counts."""
    header = (f"{'material':<14}{'positions':>13}{'wins':>13}{'losses':>13}{'draws':>13}"
              f"{'maxDTW':>7}{'bytes':>12}{'bits/pos':>9}  longest")
    lines = [header]
    for t in tables + totals:
        lines.append(f"{t.material:<14}{t.positions:>13}{t.wins:>13}{t.losses:>13}"
                     f"{t.draws:>13}{t.max_dtw:>7}{t.bytes:>12}{t.bits_per_position:>9.3f}"
                     f"  {t.max_dtw_fen}")
    for t in totals:
        expected = PUBLISHED_POSITIONS.get(t.pieces)
        if expected is not None:
            mark = "matches" if expected == t.positions else "DIFFERS from"
            lines.append(f"{t.pieces} pieces: {t.positions} positions {mark} the published "
                         f"{expected}")
    return "\n".join(lines)


def stats_json(tables: list[TableStats], totals: list[TableStats]) -> str:
    """The same figures as JSON."""
    return json.dumps({"materials": [t.as_dict() for t in tables],
                       "pieces": [dict(t.as_dict(),
                                       published=PUBLISHED_POSITIONS.get(t.pieces))
                                  for t in totals]}, indent=2)
