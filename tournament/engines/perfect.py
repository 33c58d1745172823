"""A perfect-play engine: table moves inside the endgame tables, a fallback outside.

In a position the tables cover, :class:`PerfectEngine` keeps the best value
under the game's move rule and counter (:func:`egtb.probe.moves.best_moves`,
the one ranking every user of the tables shares): a win is converted by the
fastest safe route (smallest DTZ, so the counter never runs out and no position
repeats), a loss resists longest, and among moves that keep the draw it prefers
those that keep the best category (a cursed win, where the opponent may still go
wrong) and plays the one a short alpha-beta search (:mod:`tournament.engines.search`)
scores highest. Tables without the preset's rule layer are used rule-free.

A win the tables give no distance for (compact files hold no DTW, and no DTZ
under "crowning" or "forty-plies") is still made to progress: the move with
the smallest "wcdf" DTZ where the files hold one (its next capture or man move
soonest), else a short search of the tables for a forced capture or man move
that keeps the win, else the winning move into a position not seen before in
the game that a deepening alpha-beta search scores best (a capture or the end
of the game inside its horizon).
Outside the tables it asks its fallback engine, or, without one, plays the
short search's choice.

>>> engine = PerfectEngine("data/egtb")                    # doctest: +SKIP
>>> engine.play(GameState("W:WK10,K14:BK1"), Limit()).move  # doctest: +SKIP
Move.from_pdn('14-9')
"""

from __future__ import annotations

import os
import time
from typing import Sequence

from egtb.errors import MissingRuleLayerError, MissingTableError
from egtb.formats.values import Category, Wdl
from egtb.probe.moves import MoveValue, Ranking, best_moves, tablebase_for
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import Board, Move
from egtb.rules.movegen import count_simple_moves
from tournament.engines.base import Engine, EngineError, GameState, Limit, PlayResult
from tournament.engines.search import KING_VALUE, MAN_VALUE, MATE_BOUND, search_position

__all__ = ["PerfectEngine"]

#: Plies of the search that orders drawing moves (and chooses outside the tables).
DEFAULT_DRAW_DEPTH = 4
#: Plies (the winner's moves and the replies between them) of the table search for a forced
#: capture or man move in a win the tables give no distance for, tried in this order.
PROGRESS_DEPTHS = (1, 3)
#: Positions that search probes at most for one move.
PROGRESS_NODES = 5_000
#: Deepest iteration, and seconds at most, of the alpha-beta search that then picks among the
#: winning moves (a capture or the end of the game inside its horizon scores highest).
PROGRESS_SEARCH_DEPTH = 24
PROGRESS_SEARCH_SECONDS = 1.0
#: The preset whose DTZ (plies to the next capture or man move) a win without a distance follows.
PROGRESS_RULE = "wcdf"


class PerfectEngine(Engine):
    """Plays perfectly wherever the endgame tables of ``tables_dir`` reach.

    ``fallback`` (any Engine) plays positions outside the tables; without it a
    ``draw_depth``-ply search does (a material and mobility count at depth 1).
    The tables are the process's one Tablebase of the directory
    (:func:`egtb.probe.moves.tablebase_for`); ``tablebase`` may pass an open
    one instead.

    >>> import tempfile
    >>> engine = PerfectEngine(tempfile.mkdtemp())            # empty: search only
    >>> move = engine.play(GameState("B:W18:B5,K1"), Limit())
    >>> str(move) in ("5-9", "1-6")
    True
    """

    def __init__(self, tables_dir: os.PathLike | str | None = None, *,
                 fallback: Engine | None = None, tablebase: Tablebase | None = None,
                 draw_depth: int = DEFAULT_DRAW_DEPTH, name: str = "perfect") -> None:
        self.tablebase = tablebase if tablebase is not None else tablebase_for(tables_dir)
        self.fallback = fallback
        self.draw_depth = draw_depth
        self.name = name
        self.last_source = ""
        """Where the last move came from: "tables", "fallback" or "search"."""
        self._nodes = 0

    def new_game(self) -> None:
        if self.fallback is not None:
            self.fallback.new_game()

    def close(self) -> None:
        """Close the fallback (the Tablebase is shared by the process and stays open)."""
        if self.fallback is not None:
            self.fallback.close()

    def play(self, state: GameState, limit: Limit) -> PlayResult:
        """The tables' move (``info["source"]`` "tables"), else the fallback's or the short search's."""
        board = state.board()
        board.quiet_plies = state.quiet_plies  # the state's counter holds even for a game started mid-count
        if not board.legal_moves():
            raise EngineError(f"{self.name}: no legal move in {board.fen()}")
        ranking = self.ranked_moves(board)
        if ranking is not None and ranking.moves:
            self.last_source = "tables"
            return PlayResult(self.choose(board, ranking), info={"source": "tables"})
        if self.fallback is not None:
            self.last_source = "fallback"
            played = PlayResult.of(self.fallback.play(state, limit))
            return PlayResult(played.move, played.score, {**played.info, "source": "fallback"})
        self.last_source = "search"
        return PlayResult(self._search_best(board, board.legal_moves()), info={"source": "search"})

    def ranked_moves(self, board: Board) -> Ranking | None:
        """The tables' ranking of ``board``'s moves under its rule and counter, or None outside the
        tables (rule-free where they hold no layer for the rule)."""
        try:
            return best_moves(self.tablebase, board)
        except MissingTableError:
            return None

    def choose(self, board: Board, ranking: Ranking | Sequence[MoveValue]) -> Move:
        """The move to play among table-ranked moves (best first, as best_moves gives).

        A win takes the first move (the fastest safe conversion), or, with no
        distance to follow, a move that makes progress (:meth:`progress_move`);
        a loss takes the first (the longest resistance); a draw takes, among
        the drawing moves that keep the best category, the one the short
        search likes best.
        """
        ranked = ranking.moves if isinstance(ranking, Ranking) else list(ranking)
        best = ranked[0]
        result = _result(best)
        if result > 0 and _distance(best) is None:
            return self.progress_move(board, [mv.move for mv in ranked if _result(mv) > 0])
        if result != 0:
            return best.move
        drawing = [mv.move for mv in ranked if _result(mv) == 0 and mv.category == best.category]
        return drawing[0] if len(drawing) == 1 else self._search_best(board, drawing)

    def progress_move(self, board: Board, winning: Sequence[Move]) -> Move:
        """Of ``winning`` (moves that keep a win the tables give no distance for), one that makes
        progress: the smallest "wcdf" DTZ, else a forced capture or man move soonest, else a
        position not seen before in the game (the deepening search's choice among those)."""
        by_dtz = self._smallest_progress_dtz(board, winning)
        if by_dtz is not None:
            return by_dtz
        self._nodes = 0
        for depth in PROGRESS_DEPTHS:
            for move in winning:
                if self._move_forces_progress(board, move, depth):
                    return move
        fresh = [move for move in winning if not _repeats(board, move)] or list(winning)
        return self._deepening_best(board, fresh)

    def _deepening_best(self, board: Board, moves: Sequence[Move]) -> Move:
        """The move of ``moves`` the alpha-beta search scores best at the deepest iteration done in
        PROGRESS_SEARCH_SECONDS (first on ties), stopping at a forced win inside the horizon."""
        if len(moves) == 1:
            return moves[0]
        deadline = time.perf_counter() + PROGRESS_SEARCH_SECONDS
        best = moves[0]
        for depth in range(2, PROGRESS_SEARCH_DEPTH + 1, 2):
            scores = []
            for move in moves:
                board.push(move)
                try:
                    scores.append(-search_position(board, depth - 1)[0])
                finally:
                    board.pop()
            best = moves[max(range(len(moves)), key=scores.__getitem__)]
            if max(scores) > MATE_BOUND or time.perf_counter() > deadline:
                break
        return best

    def _smallest_progress_dtz(self, board: Board, winning: Sequence[Move]) -> Move | None:
        """The move of ``winning`` with the smallest DTZ under PROGRESS_RULE at counter 0 (a win
        without the rule, its next capture or man move soonest), None where no file holds it."""
        if board.rule.name == PROGRESS_RULE:
            return None  # its DTZ is what the ranking lacked
        try:
            ranking = best_moves(self.tablebase, board, rule=PROGRESS_RULE, counter=0)
        except (MissingTableError, MissingRuleLayerError):
            return None
        keep = set(winning)
        for mv in ranking.moves:
            if mv.move in keep and mv.dtz is not None and mv.category is not None and mv.category > Category.DRAW:
                return mv.move
        return None

    def _move_forces_progress(self, board: Board, move: Move, depth: int) -> bool:
        """Whether ``move`` keeps the win and forces a capture or man move (by either side) within
        ``depth`` plies, never through a position seen before."""
        if _is_progress(board, move):
            return True
        if depth < 3 or self._nodes > PROGRESS_NODES:
            return False
        board.push(move)
        try:
            if board.repetition_count() > 1:
                return False
            replies = board.legal_moves()
            return bool(replies) and all(self._reply_allows_progress(board, reply, depth - 1) for reply in replies)
        finally:
            board.pop()

    def _reply_allows_progress(self, board: Board, reply: Move, depth: int) -> bool:
        """Whether after the loser's ``reply`` the winner still forces progress within ``depth`` plies."""
        if _is_progress(board, reply):
            return True
        board.push(reply)
        try:
            return any(self._keeps_win(board, move) and self._move_forces_progress(board, move, depth - 1)
                       for move in board.legal_moves())
        finally:
            board.pop()

    def _keeps_win(self, board: Board, move: Move) -> bool:
        """Whether ``move`` leads to a position lost for the opponent without the rule."""
        self._nodes += 1
        board.push(move)
        try:
            return self.tablebase.get_wdl(board) == Wdl.LOSS
        finally:
            board.pop()

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
    if mv.category is not None:
        return int(mv.category.wdl)  # a compact category file could not tell the outcome
    return int(mv.value)


def _distance(mv: MoveValue) -> int | None:
    """The distance a ranking followed: the DTZ under the rule, the DTW without it."""
    return mv.dtz if mv.category is not None else mv.dtw


def _is_progress(board: Board, move: Move) -> bool:
    """Whether ``move`` can never be undone: a capture or a man move."""
    return move.is_capture or board.piece_at(move.start) in ("b", "w")


def _repeats(board: Board, move: Move) -> bool:
    """Whether ``move`` leads to a position already seen in the game."""
    board.push(move)
    try:
        return board.repetition_count() > 1
    finally:
        board.pop()


def _material_mobility(board: Board) -> int:
    """Material (men 100, kings 140) and simple-move count for the side to move."""
    key = board.key()
    black = MAN_VALUE * board.black_men.bit_count() + KING_VALUE * board.black_kings.bit_count()
    white = MAN_VALUE * board.white_men.bit_count() + KING_VALUE * board.white_kings.bit_count()
    mobility = int(count_simple_moves(*key[:4], 0)) - int(count_simple_moves(*key[:4], 1))
    score = black - white + mobility
    return score if board.turn == 0 else -score
