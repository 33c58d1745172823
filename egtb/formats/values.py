"""Every encoding of a table value, in one place.

Stored codes (what a table file holds, one byte per position, for the side to
move) are plain module constants so that numba kernels can use them; the public
face of a value is :class:`Wdl` (as python-chess spells it: ``+1`` win, ``0``
draw, ``-1`` loss) and, under a move rule, :class:`Category` (python-chess's
five values: ``+2`` win, ``+1`` cursed win, ``0`` draw, ``-1`` blessed loss,
``-2`` loss).

>>> Wdl.of_code(WIN), Wdl.of_code(LOSS).name
(<Wdl.WIN: 1>, 'LOSS')
>>> str(Wdl.DRAW), Wdl.parse("loss")
('draw', <Wdl.LOSS: -1>)
>>> Category.CURSED_WIN.wdl, str(Category.BLESSED_LOSS)
(<Wdl.WIN: 1>, 'blessed-loss')
"""

from __future__ import annotations

import enum

import numpy as np

__all__ = [
    "Category", "DRAW", "LOSS", "STORED_CODES", "UNKNOWN", "UNSOLVED_CATEGORY", "WIN", "WDL_OF_CODE", "Wdl",
]

UNKNOWN = 0  #: stored code: not solved yet (never in a finished table)
DRAW = 1  #: stored code: neither side can force a win
WIN = 2  #: stored code: the side to move wins
LOSS = 3  #: stored code: the side to move loses
#: Category code of a rule-layer position not solved yet (never in a finished table).
UNSOLVED_CATEGORY = -128
#: The codes a finished table may hold.
STORED_CODES = (DRAW, WIN, LOSS)


class Wdl(enum.IntEnum):
    """Win, draw or loss for the side to move, without the move rule."""

    LOSS = -1
    DRAW = 0
    WIN = 1

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def of_code(cls, code: int) -> "Wdl":
        """The Wdl of a stored code; ValueError for UNKNOWN or garbage."""
        try:
            return _WDL_BY_CODE[int(code)]
        except KeyError:
            raise ValueError(f"stored value code {code} is not DRAW, WIN or LOSS") from None

    @classmethod
    def parse(cls, text: str) -> "Wdl":
        """'win', 'draw' or 'loss' (as the CLI and JSON print them)."""
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown wdl {text!r}: expected win, draw or loss") from None


_WDL_BY_CODE = {WIN: Wdl.WIN, DRAW: Wdl.DRAW, LOSS: Wdl.LOSS}
#: Wdl value of each stored code, for kernels; UNKNOWN maps to -2 (invalid).
WDL_OF_CODE = np.array([-2, Wdl.DRAW, Wdl.WIN, Wdl.LOSS], dtype=np.int8)


class Category(enum.IntEnum):
    """Value at counter 0 under a move-rule preset (Syzygy's five categories)."""

    LOSS = -2
    """Lost under the rule: the winner converts in time."""
    BLESSED_LOSS = -1
    """Lost without the rule, drawn by it."""
    DRAW = 0
    CURSED_WIN = 1
    """Won without the rule, drawn by it."""
    WIN = 2
    """Won under the rule."""

    def __str__(self) -> str:
        return self.name.lower().replace("_", "-")

    @property
    def wdl(self) -> Wdl:
        """The value without the move rule."""
        return Wdl((self > 0) - (self < 0))

    @classmethod
    def parse(cls, text: str) -> "Category":
        """'win', 'cursed-win', 'draw', 'blessed-loss' or 'loss'."""
        try:
            return cls[text.upper().replace("-", "_")]
        except KeyError:
            raise ValueError(f"unknown category {text!r}") from None
