"""A table's reference figures counted slice by slice, in index order.

The figures ``egtb/data/reference/`` lists of a material (its ``tables.tsv``
row: counts and the CRC-32 of its packed value codes; its ``rule_layers.tsv``
row: category counts, longest DTZ and the layer's CRC-32), added up from
consecutive slices of its positions, each slice's WDL, category and DTZ
complete (the positions whose side to move must capture answered by the
search, as a master holds them). Its state is plain JSON, so a check that
records its progress (:mod:`.verify_progress`) can go on counting after a
kill. :func:`egtb.builder.native_reference.native_figures` and the verify
of a compact-native table count with it.

>>> import json
>>> figures = TableFigures()
>>> captures = np.array([False, False, False, True])
>>> figures.add(np.array([1, 0, -1, 1]), np.array([2, 0, -2, 1]), np.array([5, 0, 4, 93]), captures)
>>> figures = TableFigures.from_state(json.loads(json.dumps(figures.state())))
>>> figures.add(np.array([1]), np.array([1]), np.array([9]), np.array([False]))
>>> values, layer = figures.entries()
>>> values.positions, values.wins, values.losses, values.draws
(5, 3, 1, 1)
>>> layer.wins, layer.cursed_wins, layer.max_dtz, layer.max_dtz_cursed, figures.dtz_unknown
(1, 2, 5, 1, 1)
"""

from __future__ import annotations

import zlib

import numpy as np

from egtb.builder.native import LayerChecksum
from egtb.builder.pipeline import count_codes
from egtb.builder.reference import ReferenceEntry, RuleReferenceEntry
from egtb.builder.rule_layer import LayerTally
from egtb.formats.master import pack_wdl
from egtb.formats.values import CAT_CURSED_WIN, CAT_WIN, DRAW, LOSS, NO_MAX_DTW, WIN

__all__ = ["TableFigures", "slice_dtz"]

#: Stored value code of each value for the side to move (loss, draw, win), indexed by value + 1.
CODE_OF_WDL = np.array([LOSS, DRAW, WIN], dtype=np.uint8)


def slice_dtz(category: np.ndarray, capture: np.ndarray, dtz: np.ndarray) -> np.ndarray:
    """The DTZ a master holds for a slice, from the DTZ read or derived for its stored positions:
    a draw's 0, a capture position's 1 (the capture zeroes), a win's or loss's ``dtz``. A quiet
    cursed win or blessed loss has its DTZ in no compact file: 0 here (see :class:`TableFigures`).

    >>> slice_dtz(np.array([2, 0, -2, 1, 1]), np.array([False, False, True, True, False]),
    ...           np.array([7, 9, 9, 9, 9])).tolist()
    [7, 0, 1, 1, 0]
    """
    return np.where(capture, np.where(category == 0, 0, 1), np.where(np.abs(category) == CAT_WIN, dtz, 0))


class TableFigures:
    """The reference figures of a table (values and its lean rule layer), its slices added in index
    order (the checksums run over them in that order).

    A quiet cursed win or blessed loss (won or lost without the rule, drawn by it, its side to move
    free not to capture) has a DTZ past the limit that no compact file holds. Where a table has
    any (``dtz_unknown``), the longest DTZ of a cursed win or blessed loss and the layer's
    checksum (which covers every DTZ) are not the master's: only the builder's stamp has them."""

    def __init__(self) -> None:
        self.codes = np.zeros(4, dtype=np.int64)
        self.value_crc = 0
        self.tally = LayerTally()
        self.checksum = LayerChecksum(np.dtype("<u2"))  # a DTZ of 256 plies or more would be stored in two bytes
        self.dtz_unknown = 0
        """Quiet cursed wins and blessed losses counted: their DTZ held by no compact file."""

    def add(self, wdl: np.ndarray, category: np.ndarray, dtz: np.ndarray, capture: np.ndarray) -> None:
        """Count the next slice: every position's WDL (-1, 0, 1), category, the DTZ of its stored
        wins and losses and whether its side to move must capture. A slice that is not the last
        holds a multiple of 4 positions (the packed values' bytes)."""
        codes = CODE_OF_WDL[np.asarray(wdl, dtype=np.int64) + 1]
        count_codes(codes, self.codes)
        self.value_crc = zlib.crc32(pack_wdl(codes), self.value_crc)
        category = np.asarray(category, dtype=np.int8)
        dtz = slice_dtz(category, capture, dtz)
        self.tally.add(category, dtz)
        self.checksum.add(category, dtz)
        self.dtz_unknown += int(np.count_nonzero((np.abs(category) == CAT_CURSED_WIN) & ~capture))

    def entries(self) -> tuple[ReferenceEntry, RuleReferenceEntry]:
        """The table's ``tables.tsv`` figures (no DTW: a compact table holds none) and its layer's
        ``rule_layers.tsv`` figures, of the slices added."""
        wins, cursed_wins, draws, blessed_losses, losses = self.tally.counts[::-1].tolist()
        return (ReferenceEntry(positions=self.checksum.positions, wins=int(self.codes[WIN]),
                               losses=int(self.codes[LOSS]), draws=int(self.codes[DRAW]), max_dtw=NO_MAX_DTW,
                               checksum_crc32=self.value_crc),
                RuleReferenceEntry(wins=wins, cursed_wins=cursed_wins, draws=draws, blessed_losses=blessed_losses,
                                   losses=losses, max_dtz=self.tally.max_dtz, max_dtz_cursed=self.tally.max_cursed,
                                   checksum_crc32=self.checksum.value()))

    def state(self) -> dict:
        """What :meth:`from_state` takes again (plain JSON types)."""
        return {"codes": self.codes.tolist(), "value_crc": self.value_crc, "tally": self.tally.state(),
                "checksum": self.checksum.state(), "dtz_unknown": self.dtz_unknown}

    @classmethod
    def from_state(cls, state: dict) -> "TableFigures":
        """The figures :meth:`state` recorded, to add more slices to."""
        figures = cls()
        figures.codes = np.array(state["codes"], dtype=np.int64)
        figures.value_crc = int(state["value_crc"])
        figures.tally = LayerTally.from_state(state["tally"])
        figures.checksum = LayerChecksum.from_state(state["checksum"])
        figures.dtz_unknown = int(state["dtz_unknown"])
        return figures
