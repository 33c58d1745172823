"""A perfect-play engine: table moves inside the endgame tables, a fallback outside.

In a position the tables cover, :class:`PerfectEngine` keeps the best value
under the game's move rule and counter (:meth:`egtb.probe.tablebase.Tablebase.best_moves`):
a win is converted by the fastest safe route (smallest DTZ, so the counter
never runs out and no position repeats), a loss resists longest, and among
moves that keep the draw it prefers those that keep the best category (a
cursed win, where the opponent may still go wrong) and plays the one a short
alpha-beta search (:mod:`tournament.engines.search`) scores highest. Tables
without the preset's rule layer are used rule-free. Outside the tables it asks
its fallback engine, or, without one, plays the short search's choice.

>>> engine = PerfectEngine("data/egtb")                    # doctest: +SKIP
>>> engine.play(GameState("W:WK10,K14:BK1"), Limit()).move  # doctest: +SKIP
Move.from_pdn('14-9')
"""

from __future__ import annotations

import os
from typing import Sequence

from egtb.rules.board import Board, Move
from egtb.rules.movegen import count_simple_moves
from egtb.probe.tablebase import MissingRuleLayerError, MissingTableError, MoveValue, Tablebase
from tournament.engines.base import Engine, EngineError, GameState, Limit, PlayResult
from tournament.engines.search import KING_VALUE, MAN_VALUE, search_position

__all__ = ["PerfectEngine"]

#: Plies of the search that orders drawing moves (and chooses outside the tables).
DEFAULT_DRAW_DEPTH = 4


class PerfectEngine(Engine):
    """Plays perfectly wherever the endgame tables of ``tables_dir`` reach.

    ``fallback`` (any Engine) plays positions outside the tables; without it a
    ``draw_depth``-ply search does (a material and mobility count at depth 1). ``tablebase`` may pass an open Tablebase
    instead of a directory.

    >>> import tempfile
    >>> engine = PerfectEngine(tempfile.mkdtemp())            # empty: search only
    >>> move = engine.play(GameState("B:W18:B5,K1"), Limit())
    >>> str(move) in ("5-9", "1-6")
    True
    """

    def __init__(self, tables_dir: os.PathLike | str | None = None, *,
                 fallback: Engine | None = None, tablebase: Tablebase | None = None,
                 draw_depth: int = DEFAULT_DRAW_DEPTH, name: str = "perfect") -> None:
        self.tablebase = tablebase if tablebase is not None else Tablebase(tables_dir)
        self.fallback = fallback
        self.draw_depth = draw_depth
        self.name = name
        self.last_source = ""
        """Where the last move came from: "tables", "fallback" or "search"."""

    def new_game(self) -> None:
        if self.fallback is not None:
            self.fallback.new_game()

    def close(self) -> None:
        self.tablebase.close()
        if self.fallback is not None:
            self.fallback.close()

    def play(self, state: GameState, limit: Limit) -> PlayResult:
        """The tables' move (``info["source"]`` "tables"), else the fallback's or the short search's."""
        board = state.board()
        board.quiet_plies = state.quiet_plies  # the state's counter holds even for a game started mid-count
        if not board.legal_moves():
            raise EngineError(f"{self.name}: no legal move in {board.fen()}")
        ranked = self.ranked_moves(board)
        if ranked is not None:
            self.last_source = "tables"
            return PlayResult(self.choose(board, ranked), info={"source": "tables"})
        if self.fallback is not None:
            self.last_source = "fallback"
            played = PlayResult.of(self.fallback.play(state, limit))
            return PlayResult(played.move, played.score, {**played.info, "source": "fallback"})
        self.last_source = "search"
        return PlayResult(self._search_best(board, board.legal_moves()), info={"source": "search"})

    def ranked_moves(self, board: Board) -> list[MoveValue] | None:
        """The tables' moves of ``board`` best first under its rule and counter, or None outside the tables.

        Tables without the board's rule layer give the rule-free ranking.
        """
        try:
            try:
                return self.tablebase.best_moves(board)
            except MissingRuleLayerError:
                return self.tablebase.best_moves(board, rule_free=True)
        except MissingTableError:
            return None

    def choose(self, board: Board, ranked: Sequence[MoveValue]) -> Move:
        """The move to play among table-ranked moves (best first, as best_moves gives).

        A win or a loss takes the first move (the fastest safe conversion,
        the longest resistance); a draw takes, among the drawing moves that
        keep the best category, the one the short search likes best.
        """
        best = ranked[0]
        if _result(best) != 0:
            return best.move
        drawing = [mv.move for mv in ranked if _result(mv) == 0 and mv.category == best.category]
        return drawing[0] if len(drawing) == 1 else self._search_best(board, drawing)

    def _search_best(self, board: Board, moves: Sequence[Move]) -> Move:
        """The move of ``moves`` with the best short-search score (first on ties)."""
        scores = [self._score_after(board, move) for move in moves]
        return moves[max(range(len(moves)), key=scores.__getitem__)]

    def _score_after(self, board: Board, move: Move) -> int:
        """Score for the mover of the position after ``move``."""
        board.push(move)
        try:
            if self.draw_depth > 1:
                return -search_position(board, self.draw_depth - 1)[0]
            return -_material_mobility(board)
        finally:
            board.pop()


def _result(mv: MoveValue) -> int:
    """+1, 0 or -1 for the mover: under the rule when ranked with it, else rule-free."""
    if mv.outcome is not None:
        return int(mv.outcome)
    return {"win": 1, "draw": 0, "loss": -1}[mv.value]


def _material_mobility(board: Board) -> int:
    """Material (men 100, kings 140) and simple-move count for the side to move."""
    key = board.key()
    black = MAN_VALUE * board.black_men.bit_count() + KING_VALUE * board.black_kings.bit_count()
    white = MAN_VALUE * board.white_men.bit_count() + KING_VALUE * board.white_kings.bit_count()
    mobility = int(count_simple_moves(*key[:4], 0)) - int(count_simple_moves(*key[:4], 1))
    score = black - white + mobility
    return score if board.turn == 0 else -score
