"""What a probe is asked with: positions (a Board or a FEN), bitboard arrays, a preset and a counter.

Every probe path turns its inputs into these first, and refuses bad ones with the error
family's ValueErrors.

>>> key_of(Board("W:W18:B14"))
(8192, 0, 131072, 0, 1)
"""

from __future__ import annotations

import numpy as np

from egtb.errors import InvalidArgumentError
from egtb.rules.board import DEFAULT_RULE, DRAW_RULES, Board, DrawRule

__all__ = ["PositionLike", "batch_arrays", "draw_rule", "key_of", "rule_and_counter"]

#: What a probe takes for a position.
PositionLike = Board | str


def batch_arrays(bm, bk, wm, wk, turn) -> tuple[np.ndarray, ...]:
    """The five inputs of a batch probe as writable int64 arrays of one length (a read-only array,
    such as a memory map or a broadcast turn, would compile the kernels a second time).

    >>> [a.tolist() for a in batch_arrays([1], [0], [0], [0], 1)]
    [[1], [0], [0], [0], [1]]
    """
    arrays = [np.require(a, dtype=np.int64, requirements=("C", "W")) for a in (bm, bk, wm, wk)]
    n = len(arrays[0])
    if any(a.ndim != 1 or len(a) != n for a in arrays):
        raise InvalidArgumentError("bm, bk, wm, wk must be 1-D arrays of the same length")
    turns = np.broadcast_to(np.asarray(turn, dtype=np.int64), (n,))
    return (*arrays, np.require(turns, requirements=("C", "W")))




def key_of(board: PositionLike) -> tuple[int, int, int, int, int]:
    """(bm, bk, wm, wk, turn) of a Board or FEN (ValueError for a bad FEN).

    >>> key_of("B:W32:B1")
    (1, 0, 2147483648, 0, 0)
    """
    if isinstance(board, Board):
        return board.black_men, board.black_kings, board.white_men, board.white_kings, board.turn
    if isinstance(board, str):
        return Board(board).key()
    raise TypeError(f"expected a Board or a FEN string, not {type(board).__name__}")



def draw_rule(name: str) -> DrawRule:
    """The preset called ``name`` (ValueError naming the choices).

    >>> draw_rule("wcdf").limit_plies
    80
    """
    try:
        return DRAW_RULES[name]
    except KeyError:
        raise InvalidArgumentError(f"unknown draw rule {name!r}; choose from {', '.join(DRAW_RULES)}") from None


def rule_and_counter(board: PositionLike, rule: str | None, counter: int | None) -> tuple[DrawRule, int]:
    """The preset and counter of a probe: the keywords, else the Board's, else wcdf at 0
    (ValueError for a counter outside 0..limit).

    >>> preset, count = rule_and_counter("B:W32:B1", "crowning", 3)
    >>> preset.name, count
    ('crowning', 3)
    """
    is_board = isinstance(board, Board)
    preset = draw_rule(rule) if rule is not None else board.rule if is_board else DRAW_RULES[DEFAULT_RULE]
    count = counter if counter is not None else board.quiet_plies if is_board else 0
    if not 0 <= count <= preset.limit_plies:
        raise InvalidArgumentError(f"counter {count} is outside 0..{preset.limit_plies} "
                         f"(the {preset.name} limit)")
    return preset, count


