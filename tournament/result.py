"""How a game ended: the termination kinds, a game's result, an adjudicator's verdict.

Shared by the game loop (:mod:`tournament.game`), the adjudicators
(:mod:`tournament.adjudicate`) and the records, so that none of them imports another.

>>> GameResult(winner=None, termination=GameTermination.NORMAL, reason="move rule").result
'1/2-1/2'
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from egtb.rules.board import BLACK, DEFAULT_RULE, Color
from egtb.rules.notation import START_FEN

__all__ = ["Adjudication", "GameResult", "GameTermination", "color_name"]


class GameTermination(str, enum.Enum):
    """The kind of a game's end, as written in the PDN Termination tag."""

    NORMAL = "normal"
    """By the rules: no piece, no move, the move rule, repetition."""
    ADJUDICATION = "adjudication"
    """By an adjudicator (the endgame tables or a heuristic)."""
    ILLEGAL_MOVE = "illegal move"
    """The engine to move played a move that is not legal."""
    TIME_FORFEIT = "time forfeit"
    """The engine to move overran its time (or never answered)."""
    CRASH = "crash"
    """The engine raised, died or answered garbage."""
    MAX_LENGTH = "max length"
    """The game reached the configured maximum length (a draw)."""


def color_name(color: Color) -> str:
    """'Black' or 'White'.

    >>> color_name(0), color_name(1)
    ('Black', 'White')
    """
    return "Black" if color == BLACK else "White"


@dataclass(frozen=True)
class GameResult:
    """How one game went and how it ended.

    >>> r = GameResult(winner=BLACK, termination=GameTermination.NORMAL, reason="White has no legal move")
    >>> r.result, GameResult.from_dict(r.to_dict()) == r
    ('1-0', True)
    """

    winner: Color | None
    """BLACK, WHITE, or None for a draw."""
    termination: GameTermination
    """The kind of end."""
    reason: str
    """Human-readable reason, e.g. "White (random) played an illegal move 11-16"."""
    moves: tuple[str, ...] = ()
    """Every move of the game in PDN notation, the opening's included."""
    start_fen: str = START_FEN
    """FEN of the game's first position."""
    opening_plies: int = 0
    """How many of ``moves`` came from the opening rather than the engines."""
    time_used: tuple[float, float] = (0.0, 0.0)
    """Seconds Black and White spent thinking."""
    rule: str = DEFAULT_RULE
    """Draw-rule preset the game was played under."""
    move_times: tuple[float, ...] = ()
    """Seconds each engine move took, in order (the moves after the opening)."""
    clocks: tuple[float | None, ...] = ()
    """Clock left to the mover after each engine move (None without a clock)."""
    scores: tuple[int | None, ...] = ()
    """Score each engine reported with its move, hundredths of a man for the mover (None: none)."""
    final_clocks: tuple[float | None, float | None] = (None, None)
    """Black's and White's clocks at the end; below zero for a side that lost on time."""

    @property
    def result(self) -> str:
        """PDN result: "1-0" when Black won, "0-1" when White won, "1/2-1/2"."""
        if self.winner is None:
            return "1/2-1/2"
        return "1-0" if self.winner == BLACK else "0-1"

    @property
    def plies(self) -> int:
        """Number of moves (plies) in the game."""
        return len(self.moves)

    @property
    def is_fault(self) -> bool:
        """Whether an engine fault decided the game."""
        return self.termination in (GameTermination.ILLEGAL_MOVE, GameTermination.TIME_FORFEIT, GameTermination.CRASH)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (see :meth:`from_dict`)."""
        return {
            "winner": self.winner, "termination": self.termination.value, "reason": self.reason,
            "moves": list(self.moves), "start_fen": self.start_fen, "opening_plies": self.opening_plies,
            "time_used": list(self.time_used), "rule": self.rule, "move_times": list(self.move_times),
            "clocks": list(self.clocks), "scores": list(self.scores), "final_clocks": list(self.final_clocks),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GameResult":
        """The GameResult that :meth:`to_dict` wrote (records written before clocks were kept read too)."""
        return cls(
            winner=data["winner"], termination=GameTermination(data["termination"]), reason=data["reason"],
            moves=tuple(data["moves"]), start_fen=data["start_fen"], opening_plies=data["opening_plies"],
            time_used=tuple(data["time_used"]), rule=data["rule"],
            move_times=tuple(data.get("move_times", ())), clocks=tuple(data.get("clocks", ())),
            scores=tuple(data.get("scores", ())), final_clocks=tuple(data.get("final_clocks", (None, None))),
        )


@dataclass(frozen=True)
class Adjudication:
    """An adjudicator's verdict."""

    winner: Color | None
    """BLACK, WHITE or None for a draw."""
    termination: GameTermination
    """ADJUDICATION, or MAX_LENGTH for the length cap."""
    reason: str
    """Human-readable reason for the record."""
