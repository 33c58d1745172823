"""Tests of tournament.adjudicate, mostly with a fake tablebase answering as Tablebase.probe does."""

from __future__ import annotations

from egtb.errors import MissingRuleLayerError, MissingTableError
from egtb.formats.values import Category, Wdl
from egtb.probe.tablebase import ProbeResult, Tablebase
from egtb.rules.board import BLACK, WHITE, Board
from tournament.adjudicate import (
    DrawAdjudicator, MaterialAdjudicator, MaxLengthAdjudicator, ResignRule, ScoreDrawAdjudicator,
    ScoreDrawRule, TablebaseAdjudicator, build_adjudicators,
)
from tournament.engines.base import GameState, Limit, PlayResult
from tournament.engines.random import RandomEngine
from tournament.game import play_game
from tournament.result import GameTermination


class FakeTablebase:
    """Knows every position with at most ``pieces`` pieces: the side with more pieces wins (DTZ 0,
    so the win fits any counter), else a draw; answers as Tablebase.probe does."""

    def __init__(self, pieces: int = 3) -> None:
        self.largest_pieces = pieces
        self.probes = 0

    def probe(self, board: Board, *, rule_free: bool = False) -> ProbeResult:
        self.probes += 1
        if board.piece_count() > self.largest_pieces:
            raise MissingTableError(f"no table for {board.fen()}")
        own, other = _counts(board)
        value = Wdl((own > other) - (own < other))
        if rule_free:
            return ProbeResult(value, None)
        return ProbeResult(value, None, value, Category(2 * value), 0, board.rule.name, board.quiet_plies)


def _counts(board: Board) -> tuple[int, int]:
    black = bin(board.black_men | board.black_kings).count("1")
    white = bin(board.white_men | board.white_kings).count("1")
    return (black, white) if board.turn == BLACK else (white, black)


def test_table_value_is_seen_from_the_side_to_move() -> None:
    adj = TablebaseAdjudicator(FakeTablebase(), max_pieces=3)
    adj.update(Board("W:WK30:BK1,K2"))  # White to move, one piece against two: loses
    verdict = adj.adjudicatable()
    assert verdict.winner == BLACK and verdict.termination is GameTermination.ADJUDICATION
    assert verdict.reason == "tablebase: Black wins (loss, DTZ 0, counter 0 of 80 under wcdf; 3 pieces, White to move)"
    adj.reset()
    assert adj.adjudicatable() is None
    adj.update(Board("B:WK30:BK1"))
    assert adj.adjudicatable().winner is None and "draw" in adj.adjudicatable().reason


def test_too_many_pieces_are_not_probed() -> None:
    table = FakeTablebase(pieces=32)
    adj = TablebaseAdjudicator(table, max_pieces=4)
    adj.update(Board())
    assert adj.adjudicatable() is None and table.probes == 0


def test_game_adjudicated_as_soon_as_the_table_has_the_position() -> None:
    table = FakeTablebase(pieces=4)
    start = "B:W25,26,27:BK1,K2"  # 5 pieces: played on until the first capture
    result = play_game(RandomEngine(seed=1), RandomEngine(seed=2), start_fen=start,
                       adjudicators=build_adjudicators(tablebase=table))
    board = Board(start)
    for text in result.moves:
        board.push_pdn(text)
    assert result.termination is GameTermination.ADJUDICATION
    assert board.piece_count() == 4 and board.copy().pop().is_capture
    own, other = _counts(board)
    expected = None if own == other else (board.turn if own > other else 1 - board.turn)
    assert result.winner == expected


def test_game_over_by_rules_beats_the_table() -> None:
    result = play_game(RandomEngine(seed=1), RandomEngine(seed=2), start_fen="B:W5,6,10:B1",
                       adjudicators=build_adjudicators(tablebase=FakeTablebase(pieces=4)))
    assert result.termination is GameTermination.NORMAL and result.reason == "Black has no legal move"


def test_start_position_in_the_table_ends_at_once() -> None:
    result = play_game(RandomEngine(seed=1), RandomEngine(seed=2), start_fen="B:WK30:BK1,K5",
                       adjudicators=[TablebaseAdjudicator(FakeTablebase(), max_pieces=3)])
    assert (result.plies, result.winner, result.termination) == (0, BLACK, GameTermination.ADJUDICATION)


def test_max_length() -> None:
    result = play_game(RandomEngine(seed=1), RandomEngine(seed=2), adjudicators=[MaxLengthAdjudicator(max_plies=10)])
    assert (result.plies, result.winner, result.termination) == (10, None, GameTermination.MAX_LENGTH)


def test_max_length_counts_opening_moves() -> None:
    result = play_game(RandomEngine(seed=1), RandomEngine(seed=2), opening_moves=("9-13", "21-17", "5-9"),
                       adjudicators=[MaxLengthAdjudicator(max_plies=3)])
    assert result.plies == 3 and result.termination is GameTermination.MAX_LENGTH


def test_material_adjudicator_needs_a_lasting_lead() -> None:
    adj = MaterialAdjudicator(margin=2, plies=2)
    adj.update(Board("B:W30:B1,2,3"))
    assert adj.adjudicatable() is None
    adj.update(Board("W:W30:B1,2,3"))
    assert adj.adjudicatable().winner == BLACK
    adj.update(Board("B:W30,31:B1,2,3"))
    assert adj.adjudicatable() is None


def test_draw_adjudicator() -> None:
    adj = DrawAdjudicator(after=0, plies=2)
    adj.update(Board("B:WK30:BK1"))
    adj.update(Board("W:WK30:BK5"))
    assert adj.adjudicatable().winner is None
    adj.update(Board("B:WK30:BK5,K6"))
    assert adj.adjudicatable() is None


def test_order_tables_first() -> None:
    adjudicators = build_adjudicators(tablebase=FakeTablebase(), max_plies=100, heuristics=True)
    assert isinstance(adjudicators[0], TablebaseAdjudicator) and adjudicators[0].max_pieces == 3
    assert isinstance(adjudicators[-1], MaxLengthAdjudicator)
    assert build_adjudicators(tablebase=FakeTablebase(), max_pieces=2)[0].max_pieces == 2


def test_real_tables_up_to_three_pieces(built_tables) -> None:
    table = Tablebase(built_tables(3))
    start = "B:W25,26:BK1,K2"  # 4 pieces: adjudicated at the first capture (the seeds make it come)
    result = play_game(RandomEngine(seed=4), RandomEngine(seed=5), start_fen=start,
                       adjudicators=build_adjudicators(tablebase=table, max_pieces=3))
    board = Board(start)
    for text in result.moves:
        board.push_pdn(text)
    assert result.termination is GameTermination.ADJUDICATION
    assert board.piece_count() == 3 and board.copy().pop().is_capture
    value = table.probe_outcome(board)  # under the game's rule, from the game's counter
    assert result.winner == (None if value == 0 else board.turn if value > 0 else 1 - board.turn)
    assert f"DTZ {table.probe_dtz(board)}, counter {board.quiet_plies} of 80 under wcdf" in result.reason
    at_once = play_game(RandomEngine(seed=1), RandomEngine(seed=2), start_fen="W:WK30:BK1,K2",
                        adjudicators=build_adjudicators(tablebase=table))
    assert (at_once.plies, at_once.winner) == (0, BLACK)  # two kings against one win


class RuleTablebase(FakeTablebase):
    """FakeTablebase answering under the move rule: a fixed category and DTZ for the side to move."""

    def __init__(self, category: int, dtz: int) -> None:
        super().__init__()
        self.category, self.dtz = Category(category), dtz

    def probe(self, board: Board, *, rule_free: bool = False) -> ProbeResult:
        if board.piece_count() > self.largest_pieces:
            raise MissingTableError(f"no table for {board.fen()}")
        if rule_free:
            return ProbeResult(self.category.wdl, None)
        fits = self.dtz + board.quiet_plies <= board.rule.limit_plies
        outcome = Wdl(self.category // 2) if fits else Wdl.DRAW  # WIN (2) -> +1, LOSS (-2) -> -1
        return ProbeResult(self.category.wdl, None, outcome, self.category, self.dtz, board.rule.name,
                           board.quiet_plies)


def _quiet_board(fen: str, *, quiet_plies: int, rule: str = "wcdf") -> Board:
    return Board(fen, rule=rule, quiet_plies=quiet_plies)


def test_result_under_the_rule_is_scored_at_once_whatever_the_counter() -> None:
    fen = "B:WK30:BK1,K2"  # Black to move
    fits = TablebaseAdjudicator(RuleTablebase(Category.WIN, dtz=20), max_pieces=3)
    fits.update(_quiet_board(fen, quiet_plies=60))  # 80 - 60 = 20 plies left: the win fits exactly
    assert fits.adjudicatable().winner == BLACK
    assert fits.adjudicatable().reason == ("tablebase: Black wins (win, DTZ 20, counter 60 of 80 under wcdf; "
                                           "3 pieces, Black to move)")
    too_long = TablebaseAdjudicator(RuleTablebase(Category.WIN, dtz=21), max_pieces=3)
    too_long.update(_quiet_board(fen, quiet_plies=60))  # one ply too many: the rule draws it, now
    assert too_long.adjudicatable().winner is None
    assert too_long.adjudicatable().reason.startswith("tablebase: draw (win, DTZ 21, counter 60 of 80")


def test_forty_plies_preset_tightens_the_window() -> None:
    adj = TablebaseAdjudicator(RuleTablebase(Category.LOSS, dtz=41), max_pieces=3)
    adj.update(_quiet_board("B:WK30:BK1,K2", quiet_plies=0, rule="forty-plies"))
    assert adj.adjudicatable().winner is None
    adj.reset()
    adj.update(_quiet_board("B:WK30:BK1,K2", quiet_plies=0, rule="wcdf"))
    assert adj.adjudicatable().winner == WHITE


def test_cursed_win_is_a_draw_from_the_start() -> None:
    adj = TablebaseAdjudicator(RuleTablebase(Category.CURSED_WIN, dtz=95), max_pieces=3)
    adj.update(_quiet_board("B:WK30:BK1,K2", quiet_plies=0))
    assert adj.adjudicatable().winner is None
    assert "cursed-win, DTZ 95" in adj.adjudicatable().reason


class NoLayer(RuleTablebase):
    """A table file without the game's rule layer: values without the rule only."""

    def probe(self, board: Board, *, rule_free: bool = False) -> ProbeResult:
        if not rule_free:
            raise MissingRuleLayerError(f"no {board.rule.name} layer in 1k-2k.h5")
        return super().probe(board, rule_free=True)


def test_missing_rule_layer_plays_a_win_on() -> None:
    adj = TablebaseAdjudicator(NoLayer(Category.WIN, dtz=3), max_pieces=3)
    adj.update(Board("B:WK30:BK1,K2"))
    assert adj.adjudicatable() is None  # won without the rule, maybe drawn with it


def test_missing_rule_layer_still_ends_a_draw() -> None:
    adj = TablebaseAdjudicator(NoLayer(Category.DRAW, dtz=0), max_pieces=3)
    adj.update(Board("B:WK30:BK1,K2", rule="forty-plies"))
    verdict = adj.adjudicatable()
    assert verdict.winner is None and "no forty-plies layer" in verdict.reason


def test_compact_files_without_the_preset_adjudicate_only_draws(compact_tables) -> None:
    """Issue 32 defect 3: a compact directory holds no forty-plies layer."""
    adj = TablebaseAdjudicator(Tablebase(compact_tables(3)), max_pieces=3)
    adj.update(Board("W:WK10,K14:BK1", rule="forty-plies", quiet_plies=39))  # the masters say draw
    assert adj.adjudicatable() is None
    adj.update(Board("B:WK10:BK1", rule="forty-plies"))
    assert adj.adjudicatable().winner is None


# --- score adjudication (cutechess's -draw and -resign) ------------------------------


class ScoredRandom(RandomEngine):
    """A random mover that reports the same score with every move."""

    def __init__(self, seed: int, score: int | None) -> None:
        super().__init__(seed=seed)
        self.score = score

    def play(self, state: GameState, limit: Limit) -> PlayResult:
        return PlayResult(super().play(state, limit).move, self.score)


def test_score_draw_after_the_move_number_and_count() -> None:
    rule = ScoreDrawRule(movenumber=5, movecount=2, score=10)
    result = play_game(ScoredRandom(1, 5), ScoredRandom(2, -10), adjudicators=build_adjudicators(draw_rule=rule))
    assert (result.termination, result.winner) == (GameTermination.ADJUDICATION, None)
    assert result.plies == 8  # move 5 starts at ply 8; both had scored within 0.10 for 2 moves by then
    assert result.reason == "draw adjudication: both engines scored within 0.10 for 2 moves"
    wide = play_game(ScoredRandom(1, 5), ScoredRandom(2, -11), adjudicators=[ScoreDrawAdjudicator(rule),
                                                                              MaxLengthAdjudicator(max_plies=30)])
    assert wide.termination is GameTermination.MAX_LENGTH  # White's -0.11 is outside the window


def test_resign_when_an_engine_sees_itself_lost() -> None:
    rule = ResignRule(movecount=3, score=500)
    result = play_game(ScoredRandom(1, -500), ScoredRandom(2, None), adjudicators=build_adjudicators(resign_rule=rule))
    assert (result.termination, result.winner, result.plies) == (GameTermination.ADJUDICATION, WHITE, 5)
    assert result.reason == "resign adjudication: Black scored -5.00 or worse for 3 moves"
    assert result.scores[0::2] == (-500,) * 3
    two_sided = ResignRule(movecount=3, score=500, twosided=True)
    agreed = play_game(ScoredRandom(1, -600), ScoredRandom(2, 600),
                       adjudicators=build_adjudicators(resign_rule=two_sided))
    assert (agreed.winner, agreed.plies) == (WHITE, 6)  # after White's third winning score too
    disputed = play_game(ScoredRandom(1, -600), ScoredRandom(2, None),
                         adjudicators=build_adjudicators(resign_rule=two_sided, max_plies=20))
    assert disputed.termination is GameTermination.MAX_LENGTH


def test_tables_come_before_the_scores() -> None:
    order = build_adjudicators(tablebase=FakeTablebase(), draw_rule=ScoreDrawRule(), resign_rule=ResignRule(),
                               max_plies=10)
    assert [type(a).__name__ for a in order] == ["TablebaseAdjudicator", "ResignAdjudicator",
                                                 "ScoreDrawAdjudicator", "MaxLengthAdjudicator"]


def test_rules_parse_and_reject_bad_tokens() -> None:
    import pytest

    assert ScoreDrawRule.parse(["score=5"]) == ScoreDrawRule(score=5)
    for bad in (["colour=1"], ["movecount=x"], ["movecount=-1"], ["movecount"]):
        with pytest.raises(ValueError, match="--resign-adjudication"):
            ResignRule.parse(bad)
