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
>>> CATEGORY_OF_CODE[CODE_OF_CATEGORY + 0].tolist(), WDL_OF_CODE[[DRAW, WIN, LOSS]].tolist()
([-2, -1, 0, 1, 2], [0, 1, -1])
"""

from __future__ import annotations

import enum

import numpy as np
from egtb.errors import InvalidArgumentError, InvalidDataError

__all__ = [
    "BLESSED_LOSS", "CATEGORY_OF_CODE", "CAT_BLESSED_LOSS", "CAT_CURSED_WIN", "CAT_DRAW", "CAT_LOSS", "CAT_WIN",
    "CODE_OF_CATEGORY", "CURSED_WIN", "Category", "DRAW", "INVALID_WDL", "LOSS", "NO_DTW", "NO_MAX_DTW", "STORED_CODES",
    "UNKNOWN",
    "UNSOLVED_CATEGORY", "WDL_DRAW", "WDL_LOSS", "WDL_OF_CODE", "WDL_WIN", "WIN", "Wdl",
]

UNKNOWN = 0  #: stored code: not solved yet (never in a finished table)
DRAW = 1  #: stored code: neither side can force a win
WIN = 2  #: stored code: the side to move wins
LOSS = 3  #: stored code: the side to move loses
#: Category code of a rule-layer position not solved yet (never in a finished table).
UNSOLVED_CATEGORY = -128
#: The DTZ a one-byte DTZ array stores for every DTZ of this many plies or more (the builder's
#: scratch under wcdf, :func:`egtb.formats.scratch.dtz_type`): a table holding it is refused,
#: as a compact ``.dtz`` file (DTZ + 1 in a byte) could not hold it either.
DTZ_SATURATED = 255
#: The codes a finished table may hold.
STORED_CODES = (DRAW, WIN, LOSS)
#: What a probe kernel writes as DTW (or DTZ) for a position whose table holds none (a compact
#: file, a master file without DTW).
NO_DTW = 0xFFFF
#: The ``max_dtw`` of a table stored without DTW in the shipped reference figures ("-" in the file).
NO_MAX_DTW = -1


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
            raise InvalidDataError(f"stored value code {code} is not DRAW, WIN or LOSS") from None

    @classmethod
    def parse(cls, text: str) -> "Wdl":
        """'win', 'draw' or 'loss' (as the CLI and JSON print them)."""
        try:
            return cls[text.upper()]
        except KeyError:
            raise InvalidArgumentError(f"unknown wdl {text!r}: expected win, draw or loss") from None


_WDL_BY_CODE = {WIN: Wdl.WIN, DRAW: Wdl.DRAW, LOSS: Wdl.LOSS}
#: A Wdl as a plain int, for numba kernels.
WDL_WIN, WDL_DRAW, WDL_LOSS = int(Wdl.WIN), int(Wdl.DRAW), int(Wdl.LOSS)
#: What a kernel gives for a code that holds no value (UNKNOWN, never in a finished table).
INVALID_WDL = -2
#: Wdl value of each stored code, for kernels; UNKNOWN maps to INVALID_WDL.
WDL_OF_CODE = np.array([INVALID_WDL, WDL_DRAW, WDL_WIN, WDL_LOSS], dtype=np.int8)


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
            raise InvalidArgumentError(f"unknown category {text!r}") from None


#: A Category as a plain int, for numba kernels.
CAT_WIN, CAT_CURSED_WIN, CAT_DRAW, CAT_BLESSED_LOSS, CAT_LOSS = 2, 1, 0, -1, -2
#: Codes of a compact category file (``.wcdf``) beyond the stored codes DRAW, WIN and
#: LOSS, which keep their meaning there (win and loss under the rule).
CURSED_WIN = 4
BLESSED_LOSS = 5
#: Category-file code of each category, indexed by category + 2 (loss .. win).
CODE_OF_CATEGORY = np.array([LOSS, BLESSED_LOSS, DRAW, CURSED_WIN, WIN], dtype=np.uint8)
#: Category of each category-file code, for kernels (code 0 unused: -3).
CATEGORY_OF_CODE = np.array([-3, CAT_DRAW, CAT_WIN, CAT_LOSS, CAT_CURSED_WIN, CAT_BLESSED_LOSS], dtype=np.int8)
