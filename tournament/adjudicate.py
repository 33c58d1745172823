"""Adjudicators: one small tracker per rule that may end a game early.

Each tracker has ``reset()`` (a game starts), ``update(board)`` (called on the
start position and after every ply) and ``adjudicatable()`` (the verdict, or
None while the game goes on). The game asks them in order, so put
:class:`TablebaseAdjudicator` first: it is exact. The heuristics
(:class:`MaterialAdjudicator`, :class:`DrawAdjudicator`) and the length cap
(:class:`MaxLengthAdjudicator`) follow.

>>> from egtb.rules.board import Board
>>> cap = MaxLengthAdjudicator(max_plies=2)
>>> board = Board()
>>> cap.update(board); cap.adjudicatable() is None
True
>>> board.push_pdn("11-15"); board.push_pdn("23-19"); cap.update(board)
Move.from_pdn('11-15')
Move.from_pdn('23-19')
>>> cap.adjudicatable().reason
'game reached the maximum length of 2 plies'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from egtb.errors import MissingTableError
from egtb.probe.moves import probe_position, tablebase_for
from egtb.probe.tablebase import ProbeResult, Tablebase, Wdl
from egtb.rules.board import BLACK, WHITE, Board, Color
from tournament.result import Adjudication, GameTermination, color_name

__all__ = [
    "Adjudication",
    "Adjudicator",
    "DrawAdjudicator",
    "MaterialAdjudicator",
    "MaxLengthAdjudicator",
    "ResignAdjudicator",
    "ResignRule",
    "ScoreDrawAdjudicator",
    "ScoreDrawRule",
    "TablebaseAdjudicator",
    "build_adjudicators",
    "open_tablebase",
]


class Adjudicator(Protocol):
    """What the game loop needs from an adjudicator."""

    def reset(self) -> None:
        """Forget the previous game."""

    def update(self, board: Board) -> None:
        """Look at the position after the latest ply."""

    def adjudicatable(self) -> Adjudication | None:
        """The verdict, or None while the game goes on."""


class TablebaseAdjudicator:
    """Ends the game with the table's result once few enough pieces remain (exact).

    The table gives the result under the game's move rule from the current
    counter (``probe(board).outcome``: a win only when the winner can convert
    before the counter runs out), so the game ends as soon as it reaches a
    position the tables hold, whatever the counter; the reason names the
    category and the DTZ. Where the tables hold no layer for the game's preset
    (:func:`egtb.probe.moves.probe_position` gives the rule-free answer), a
    draw is still one under the rule and ends the game, while a win or a loss
    may not be and is played on; so is a position outside the tables.

    >>> from egtb.probe.tablebase import Tablebase
    >>> adj = TablebaseAdjudicator(Tablebase("/nonexistent"), max_pieces=4)
    >>> adj.update(Board("B:W5,6,10:B1")); adj.adjudicatable().reason   # no legal move: no table needed
    'tablebase: White wins (loss, DTZ 0, counter 0 of 80 under wcdf; 4 pieces, Black to move)'
    """

    def __init__(self, tablebase: Tablebase, *, max_pieces: int) -> None:
        self.tablebase = tablebase
        self.max_pieces = max_pieces
        self._verdict: Adjudication | None = None

    def reset(self) -> None:
        self._verdict = None

    def update(self, board: Board) -> None:
        pieces = board.piece_count()
        if self._verdict is not None or pieces > self.max_pieces:
            return
        try:
            result = probe_position(self.tablebase, board)
        except MissingTableError:
            return  # outside the tables: play on
        if result.outcome is not None:
            self._verdict = _rule_verdict(result, board, pieces)
        elif result.value == Wdl.DRAW:  # no layer for the preset: a draw without the rule is one with it
            self._verdict = _rule_free_draw(board, pieces)

    def adjudicatable(self) -> Adjudication | None:
        return self._verdict


def _rule_verdict(result: ProbeResult, board: Board, pieces: int) -> Adjudication:
    """The Adjudication for a probe under the move rule, naming category and DTZ.

    >>> from egtb.probe.tablebase import Category
    >>> result = ProbeResult(Wdl.WIN, None, Wdl.DRAW, Category.CURSED_WIN, 95, "wcdf", 0)
    >>> _rule_verdict(result, Board("B:WK30:BK1,K2"), 3).reason
    'tablebase: draw (cursed-win, DTZ 95, counter 0 of 80 under wcdf; 3 pieces, Black to move)'
    """
    detail = (f"({result.category}, DTZ {result.dtz}, counter {board.quiet_plies} of "
              f"{board.rule.limit_plies} under {board.rule.name}; {pieces} pieces, {color_name(board.turn)} to move)")
    if result.outcome == Wdl.DRAW:
        return Adjudication(None, GameTermination.ADJUDICATION, f"tablebase: draw {detail}")
    winner = board.turn if result.outcome == Wdl.WIN else 1 - board.turn
    return Adjudication(winner, GameTermination.ADJUDICATION, f"tablebase: {color_name(winner)} wins {detail}")


def _rule_free_draw(board: Board, pieces: int) -> Adjudication:
    """The Adjudication for a draw without the move rule, from tables without the game's preset."""
    return Adjudication(None, GameTermination.ADJUDICATION,
                        f"tablebase: draw (without the move rule: these tables hold no {board.rule.name} layer; "
                        f"{pieces} pieces, {color_name(board.turn)} to move)")


class MaxLengthAdjudicator:
    """Draws the game once it has ``max_plies`` moves (the opening's included)."""

    def __init__(self, *, max_plies: int) -> None:
        if max_plies < 1:
            raise ValueError(f"max_plies must be positive, got {max_plies}")
        self.max_plies = max_plies
        self._plies = 0

    def reset(self) -> None:
        self._plies = 0

    def update(self, board: Board) -> None:
        self._plies = len(board.move_stack)

    def adjudicatable(self) -> Adjudication | None:
        if self._plies < self.max_plies:
            return None
        return Adjudication(None, GameTermination.MAX_LENGTH,
                            f"game reached the maximum length of {self.max_plies} plies")


def _material(board: Board, color: Color) -> float:
    """Men count 1, kings 1.5."""
    men, kings = ((board.black_men, board.black_kings) if color == BLACK else (board.white_men, board.white_kings))
    return bin(men).count("1") + 1.5 * bin(kings).count("1")


class MaterialAdjudicator:
    """Heuristic resignation: a side down ``margin`` material for ``plies`` plies in a row loses.

    Men count 1 and kings 1.5.

    >>> adj = MaterialAdjudicator(margin=3, plies=1)
    >>> adj.update(Board("B:W30:B1,2,3,4")); adj.adjudicatable().winner
    0
    """

    def __init__(self, *, margin: float = 3.0, plies: int = 10) -> None:
        self.margin = margin
        self.plies = plies
        self._leader: Color | None = None
        self._count = 0

    def reset(self) -> None:
        self._leader, self._count = None, 0

    def update(self, board: Board) -> None:
        diff = _material(board, BLACK) - _material(board, WHITE)
        leader = BLACK if diff >= self.margin else WHITE if -diff >= self.margin else None
        self._count = self._count + 1 if leader is not None and leader == self._leader else int(leader is not None)
        self._leader = leader

    def adjudicatable(self) -> Adjudication | None:
        if self._leader is None or self._count < self.plies:
            return None
        return Adjudication(self._leader, GameTermination.ADJUDICATION,
                            f"material: {color_name(self._leader)} ahead by {self.margin} or more for {self.plies} plies")


class DrawAdjudicator:
    """Heuristic draw: from ply ``after`` on, equal material unchanged for ``plies`` plies in a row.

    >>> adj = DrawAdjudicator(after=0, plies=1)
    >>> adj.update(Board("B:WK30:BK1")); adj.adjudicatable().reason
    'draw: equal material unchanged for 1 plies'
    """

    def __init__(self, *, after: int = 60, plies: int = 20) -> None:
        self.after = after
        self.plies = plies
        self._last: tuple[int, int, int, int] | None = None
        self._count = 0

    def reset(self) -> None:
        self._last, self._count = None, 0

    def update(self, board: Board) -> None:
        counts = tuple(bin(b).count("1") for b in (board.black_men, board.black_kings,
                                                   board.white_men, board.white_kings))
        equal = _material(board, BLACK) == _material(board, WHITE) and len(board.move_stack) >= self.after
        self._count = self._count + 1 if equal and counts == self._last else int(equal)
        self._last = counts

    def adjudicatable(self) -> Adjudication | None:
        if self._count < self.plies:
            return None
        return Adjudication(None, GameTermination.ADJUDICATION,
                            f"draw: equal material unchanged for {self.plies} plies")


def open_tablebase(directory: str | Path) -> Tablebase:
    """The process's one Tablebase of a directory (:func:`egtb.probe.moves.tablebase_for`), opened
    once per worker. Raises ValueError when the directory does not exist.

    >>> open_tablebase("/nonexistent")
    Traceback (most recent call last):
    ...
    ValueError: table directory '/nonexistent' does not exist (--tables)
    """
    if not Path(directory).is_dir():
        raise ValueError(f"table directory {str(directory)!r} does not exist (--tables)")
    return tablebase_for(directory)


@dataclass(frozen=True)
class ScoreDrawRule:
    """cutechess's ``-draw movenumber=N movecount=M score=S``: a draw once both engines have
    reported scores within S for M consecutive moves each, from move N on."""

    movenumber: int = 0
    """First move number (1 = the first move of the game) at which a draw may be given."""
    movecount: int = 10
    """Consecutive moves of each engine that must all be within the score."""
    score: int = 0
    """Largest absolute score, in hundredths of a man."""

    @classmethod
    def parse(cls, tokens: Sequence[str]) -> "ScoreDrawRule":
        """From ``["movenumber=40", "movecount=8", "score=10"]``.

        >>> ScoreDrawRule.parse(["movenumber=40", "movecount=8", "score=10"])
        ScoreDrawRule(movenumber=40, movecount=8, score=10)
        """
        return cls(**_rule_fields(tokens, {"movenumber": int, "movecount": int, "score": int}, "--draw-adjudication"))


@dataclass(frozen=True)
class ResignRule:
    """cutechess's ``-resign movecount=M score=S twosided=BOOL``: an engine whose own score was
    S or more below zero for M consecutive moves loses (twosided: and its opponent's was S or
    more above zero for as many)."""

    movecount: int = 3
    """Consecutive moves of the losing engine at or below -score."""
    score: int = 500
    """Threshold in hundredths of a man."""
    twosided: bool = False
    """Whether the winner's scores must agree."""

    @classmethod
    def parse(cls, tokens: Sequence[str]) -> "ResignRule":
        """From ``["movecount=3", "score=400", "twosided=true"]``.

        >>> ResignRule.parse(["movecount=3", "score=400", "twosided=true"])
        ResignRule(movecount=3, score=400, twosided=True)
        """
        return cls(**_rule_fields(tokens, {"movecount": int, "score": int, "twosided": _boolean},
                                  "--resign-adjudication"))


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "yes", "1", "on"):
        return True
    if text.lower() in ("false", "no", "0", "off"):
        return False
    raise ValueError(text)


def _rule_fields(tokens: Sequence[str], kinds: dict[str, Any], option: str) -> dict[str, Any]:
    """``key=value`` tokens checked against ``kinds``; ValueError naming the option and the token."""
    fields: dict[str, Any] = {}
    for token in tokens:
        key, equals, value = token.partition("=")
        if not equals or key not in kinds:
            raise ValueError(f"{option}: {token!r} is not one of {', '.join(k + '=' for k in kinds)}")
        try:
            fields[key] = kinds[key](value)
        except ValueError:
            raise ValueError(f"{option}: bad value in {token!r}") from None
        if isinstance(fields[key], int) and not isinstance(fields[key], bool) and fields[key] < 0:
            raise ValueError(f"{option}: {token!r} must not be negative")
    return fields


class _ScoreStreaks:
    """Per colour, how many consecutive moves the engine's reported score passed each test of
    :meth:`_tests`; told each score by the game loop (a move without a score breaks every streak)."""

    def __init__(self, rule: Any) -> None:
        self.rule = rule
        self.reset()

    def reset(self) -> None:
        self._streaks = {name: [0, 0] for name in self._tests()}
        self._ply = 0

    def update(self, board: Board) -> None:
        self._ply = len(board.move_stack)

    def _tests(self) -> dict[str, Callable[[int], bool]]:
        raise NotImplementedError

    def record_score(self, color: Color, score: int | None) -> None:
        """The score ``color``'s engine gave with its move (None: none, which breaks its streaks)."""
        for name, passes in self._tests().items():
            streak = self._streaks[name]
            streak[color] = streak[color] + 1 if score is not None and passes(score) else 0


class ScoreDrawAdjudicator(_ScoreStreaks):
    """Draw by the engines' scores (see :class:`ScoreDrawRule`); told each score by the game loop."""

    def _tests(self) -> dict[str, Callable[[int], bool]]:
        return {"level": lambda score: abs(score) <= self.rule.score}

    def adjudicatable(self) -> Adjudication | None:
        move_number = self._ply // 2 + 1
        if move_number >= self.rule.movenumber and min(self._streaks["level"]) >= max(1, self.rule.movecount):
            return Adjudication(None, GameTermination.ADJUDICATION,
                                f"draw adjudication: both engines scored within {self.rule.score / 100:.2f} "
                                f"for {self.rule.movecount} moves")
        return None


class ResignAdjudicator(_ScoreStreaks):
    """Resignation by the engines' scores (see :class:`ResignRule`); told each score by the game loop."""

    def _tests(self) -> dict[str, Callable[[int], bool]]:
        return {"losing": lambda score: score <= -self.rule.score,
                "winning": lambda score: score >= self.rule.score}

    def adjudicatable(self) -> Adjudication | None:
        count = max(1, self.rule.movecount)
        losing, winning = self._streaks["losing"], self._streaks["winning"]
        for loser in (BLACK, WHITE):
            if losing[loser] >= count and (not self.rule.twosided or winning[1 - loser] >= count):
                return Adjudication(1 - loser, GameTermination.ADJUDICATION,
                                    f"resign adjudication: {color_name(loser)} scored {-self.rule.score / 100:.2f} "
                                    f"or worse for {self.rule.movecount} moves")
        return None


def build_adjudicators(
    *,
    tablebase: Tablebase | None = None,
    max_pieces: int | None = None,
    max_plies: int | None = None,
    heuristics: bool = False,
    draw_rule: ScoreDrawRule | None = None,
    resign_rule: ResignRule | None = None,
) -> list[Adjudicator]:
    """The adjudicators of a game in the order they are asked: tables, heuristics, scores, length cap.

    ``max_pieces`` defaults to the most pieces of any of its tables (``largest_pieces``: a piece
    count built in part counts; its missing materials are played on).

    >>> [type(a).__name__ for a in build_adjudicators(max_plies=200, heuristics=True)]
    ['MaterialAdjudicator', 'DrawAdjudicator', 'MaxLengthAdjudicator']
    """
    adjudicators: list[Adjudicator] = []
    if tablebase is not None:
        pieces = max_pieces if max_pieces is not None else tablebase.largest_pieces
        adjudicators.append(TablebaseAdjudicator(tablebase, max_pieces=pieces))
    if heuristics:
        adjudicators += [MaterialAdjudicator(), DrawAdjudicator()]
    if resign_rule is not None:
        adjudicators.append(ResignAdjudicator(resign_rule))
    if draw_rule is not None:
        adjudicators.append(ScoreDrawAdjudicator(draw_rule))
    if max_plies is not None:
        adjudicators.append(MaxLengthAdjudicator(max_plies=max_plies))
    return adjudicators

