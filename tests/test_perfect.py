"""Tests of tournament.engines.perfect.PerfectEngine: random and searching opponents, under the move rule."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import forward_search
from egtb.probe.moves import best_moves
from egtb.rules.board import Board, Move
from egtb.positions.index import global_unrank
from egtb.positions.material import Material, count_positions
from egtb.rules.notation import Placement, format_fen
from egtb.probe.tablebase import Tablebase
from tournament.engines.base import Engine, GameState, Limit
from tournament.engines.random import RandomEngine
from tournament.engines.perfect import PerfectEngine
from tournament.engines.search import SearchEngine
from egtb.formats.values import Category, Wdl


@pytest.fixture(scope="session")
def tables_dir(built_tables) -> Path:
    """Every table up to 4 pieces with all rule layers (cursed wins first appear at 4 pieces)."""
    return built_tables(4)


def play_out(board: Board, players: dict[int, Engine], *, max_plies: int) -> int:
    """Play until the game ends or max_plies; return the plies played."""
    plies = 0
    while board.outcome() is None and plies < max_plies:
        move = players[board.turn].play(GameState.from_board(board), Limit()).move
        board.push(move if isinstance(move, Move) else Move.from_pdn(move, board))
        plies += 1
    return plies


def winning_kings_positions(tb: Tablebase, count: int) -> list[str]:
    """Positions of 2 kings (Black, to move) against 1 king that the tables call won."""
    material, rng, fens = Material(0, 2, 0, 1), random.Random(5), []
    while len(fens) < count:
        fen = format_fen(Placement(*global_unrank(material, rng.randrange(count_positions(material))), 0))
        if tb.probe(fen).value is Wdl.WIN and tb.probe_dtw(fen) > 5:
            fens.append(fen)
    return fens


@pytest.mark.parametrize("seed", range(6))
def test_wins_two_kings_against_one_within_dtw(tables_dir, seed):
    engine = PerfectEngine(tables_dir)
    fen = winning_kings_positions(engine.tablebase, 6)[seed]
    board = Board(fen)
    dtw = engine.tablebase.probe_dtw(board)
    plies = play_out(board, {0: engine, 1: RandomEngine(seed=seed)}, max_plies=dtw)
    outcome = board.outcome()
    assert outcome is not None and outcome.winner == 0, fen
    assert plies <= dtw
    assert engine.last_source == "tables"


def test_longest_loss_and_shortest_win(tables_dir):
    """The engine's move against each move's DTW solved again by tests/forward_search.py.

    Kings only, 2 against 1: every capture ends the game and the lone king never has one in a
    lost position (it would draw), so the move rule's DTZ is the DTW here and the wcdf ranking
    is the rule-free one.
    """
    engine = PerfectEngine(tables_dir)
    assert str(engine.play(GameState.from_board(Board("W:W18:B5")), Limit())) == "18-14"
    losing = forward_search.move_values("B:WK4,K31:BK24")  # 4 moves, lost in 2, 8, 24 or 32 plies
    assert len(losing) == 4 and {value for value, _ in losing.values()} == {"loss"}
    longest = max(losing, key=lambda text: losing[text][1])
    assert sorted(dtw for _, dtw in losing.values())[-2] < losing[longest][1]  # one longest
    assert str(engine.play(GameState("B:WK4,K31:BK24"), Limit())) == longest
    winning = forward_search.move_values("W:WK14,K28:BK2")  # 6 winning moves, one of them fastest
    wins = {text: dtw for text, (value, dtw) in winning.items() if value == "win"}
    assert len(wins) >= 3 and sorted(wins.values())[0] < sorted(wins.values())[1]
    assert str(engine.play(GameState("W:WK14,K28:BK2"), Limit())) == min(wins, key=wins.get)


def test_keeps_the_draw(tables_dir):
    engine = PerfectEngine(tables_dir)
    board = Board("B:WK10:BK1")  # 1-5 draws, 1-6 loses at once
    assert str(engine.play(GameState.from_board(board), Limit())) == "1-5"
    rng = random.Random(3)
    for _ in range(20):  # drawn king-against-king games stay drawn against a random mover
        board = Board("B:WK26:BK8")
        play_out(board, {0: engine, 1: RandomEngine(seed=rng.randrange(99))}, max_plies=40)
        outcome = board.outcome()
        assert outcome is None or outcome.winner != 1


def test_fallback_outside_the_tables(tables_dir):
    class Scripted(Engine):
        def play(self, state, limit):
            return state.board().legal_moves()[-1]

    engine = PerfectEngine(tables_dir, fallback=Scripted())
    board = Board()
    assert engine.play(GameState.from_board(board), Limit()).move == board.legal_moves()[-1]
    assert engine.last_source == "fallback"
    alone = PerfectEngine(tables_dir)
    assert alone.play(GameState.from_board(board), Limit()).move in board.legal_moves()
    assert alone.last_source == "search"


# --- under the move rule ------------------------------------------------------

def positions_of(tb: Tablebase, material: Material, rule: str, want, count: int, seed: int) -> list[str]:
    """Up to ``count`` FENs of a material (Black to move) whose probe under ``rule`` satisfies ``want``."""
    rng, fens = random.Random(seed), []
    for _ in range(20_000):
        fen = format_fen(Placement(*global_unrank(material, rng.randrange(count_positions(material))), 0))
        if want(tb.probe(fen, rule=rule)):
            fens.append(fen)
            if len(fens) == count:
                break
    return fens


def play_checked(board: Board, players: dict[int, Engine], perfect: int, tb: Tablebase, *,
                 max_plies: int = 300) -> int | None:
    """Play on; assert the perfect side never lets its outcome under the rule drop; return the winner.

    Before each of its moves the perfect side's outcome at the current counter
    is read from the tables: once a win, the game must be won; once at least
    a draw, it must never be lost.
    """
    best = -1
    for _ in range(max_plies):
        if board.outcome() is not None:
            break
        if board.turn == perfect and board.piece_count() <= 4:
            best = max(best, int(tb.probe_outcome(board)))
        move = players[board.turn].play(GameState.from_board(board), Limit()).move
        board.push(move if isinstance(move, Move) else Move.from_pdn(move, board))
    outcome = board.outcome()
    winner = None if outcome is None else outcome.winner
    if best == 1:
        assert winner == perfect, (board.start_fen, board.quiet_plies)
    if best == 0:
        assert winner != 1 - perfect, board.start_fen
    return winner


@pytest.mark.parametrize("opponent", ["random", "search"])
def test_converts_a_win_with_no_ply_to_spare(tables_dir, opponent):
    engine = PerfectEngine(tables_dir)
    tb = engine.tablebase
    fens = positions_of(tb, Material(0, 2, 0, 1), "wcdf", lambda r: r.category is Category.WIN and r.dtz > 9, 3, 1)
    assert len(fens) == 3  # the loop below checks something
    for seed, fen in enumerate(fens):
        dtz = tb.probe_dtz(fen)
        board = Board(fen, quiet_plies=80 - dtz)  # the win just fits: one slow move draws
        assert tb.probe(board).outcome is Wdl.WIN
        defender = RandomEngine(seed=seed) if opponent == "random" else SearchEngine(depth=3)
        assert play_checked(board, {0: engine, 1: defender}, 0, tb) == 0
        assert board.outcome().termination.name in ("NO_PIECES", "NO_MOVES")


def test_needs_a_man_move_to_reset_the_counter(tables_dir):
    """Near the limit, only a man move (zeroing under wcdf) keeps the win: the engine finds it."""
    engine = PerfectEngine(tables_dir)
    tb = engine.tablebase
    found = 0
    for fen in positions_of(tb, Material(1, 1, 0, 1), "wcdf", lambda r: r.category is Category.WIN, 200, 2):
        for counter in (78, 79):
            board = Board(fen, quiet_plies=counter)
            if tb.probe(board).outcome is not Wdl.WIN:
                continue
            moves = best_moves(tb, board).moves
            if any(m.outcome is Wdl.WIN and m.counter > 0 for m in moves):
                continue  # a quiet move would do too
            move = engine.play(GameState.from_board(board), Limit()).move
            assert move == moves[0].move and moves[0].counter == 0 and moves[0].outcome is Wdl.WIN
            assert play_checked(board, {0: engine, 1: SearchEngine(depth=2)}, 0, tb) == 0
            found += 1
            if found == 4:
                return
    pytest.fail(f"only {found} positions need a man move in time")


@pytest.mark.parametrize("opponent", ["random", "search", "perfect"])
def test_holds_the_draw_of_a_rule_free_loss(tables_dir, opponent):
    """White to move is lost without the rule but drawn under it (blessed, or too late in the count)."""
    engine = PerfectEngine(tables_dir)
    tb = engine.tablebase
    cursed = positions_of(tb, Material(0, 2, 1, 1), "forty-plies",
                          lambda r: r.category is Category.CURSED_WIN, 3, 3)
    assert cursed, "no cursed win found in 2k-1m1k under forty-plies"
    for seed, fen in enumerate(cursed):
        attacker = {"random": RandomEngine(seed=seed), "search": SearchEngine(depth=3),
                    "perfect": PerfectEngine(tablebase=tb)}[opponent]
        board = Board(fen, rule="forty-plies")
        assert tb.probe(board).value is Wdl.WIN and tb.probe(board).outcome is Wdl.DRAW
        assert play_checked(board, {0: attacker, 1: engine}, 1, tb) != 0


@pytest.mark.parametrize("seed", range(3))
def test_cursed_side_never_loses_and_wins_when_the_defence_slips(tables_dir, seed):
    engine = PerfectEngine(tables_dir)
    tb = engine.tablebase
    fens = positions_of(tb, Material(0, 2, 1, 1), "forty-plies",
                        lambda r: r.category is Category.CURSED_WIN, 3, 4)
    board = Board(fens[seed], rule="forty-plies")
    winner = play_checked(board, {0: engine, 1: RandomEngine(seed=seed)}, 0, tb)
    assert winner != 1


def test_late_counter_turns_a_win_into_a_held_draw(tables_dir):
    engine = PerfectEngine(tables_dir)
    tb = engine.tablebase
    fen = positions_of(tb, Material(0, 2, 0, 1), "wcdf", lambda r: r.category is Category.WIN and r.dtz > 9, 1, 5)[0]
    board = Board(fen, quiet_plies=80 - tb.probe_dtz(fen) + 1)
    assert tb.probe(board).outcome is Wdl.DRAW  # won without the rule, one ply too late with it
    winner = play_checked(board, {0: SearchEngine(depth=3), 1: engine}, 1, tb)
    assert winner is None and board.outcome().termination.name in ("MOVE_RULE", "REPETITION")


def test_the_starting_counter_survives_the_replay(tables_dir):
    """A game set up part-way through a quiet phase keeps its counter when an engine replays it."""
    board = Board("B:WK29:BK1,5", quiet_plies=70)
    board.push_pdn("1-6")
    board.push_pdn("29-25")
    replayed = GameState.from_board(board).board()
    assert (replayed.quiet_plies, replayed.start_quiet_plies) == (72, 70)


def test_page_engines_play_for_the_counter_they_are_given(tables_dir):
    """The page's perfect engine (a ``hub-engine perfect`` process) hears the counter in Hub's ``pos``:
    one ply from the move rule the win is gone, and it plays another move than at counter 0."""
    from tournament.web.engines import EngineService

    fen, late_counter = "B:WK14:BK1,K15", 79  # a win at counter 0 (15-10, the smallest DTZ), a draw at 79
    here = PerfectEngine(tables_dir)
    expected = {counter: str(here.play(GameState(fen, start_quiet_plies=counter, quiet_plies=counter), Limit()).move)
                for counter in (0, late_counter)}
    assert expected[0] != expected[late_counter]
    with EngineService(tables_dir=tables_dir) as engines:
        played = {counter: engines.play(fen=fen, moves=[], rule="wcdf", strength="perfect", counter=counter)
                  for counter in (late_counter, 0)}
    assert {counter: reply.move for counter, reply in played.items()} == expected
    assert {reply.source for reply in played.values()} == {"tables"}


def _self_play(engine: PerfectEngine, board: Board, max_plies: int = 200) -> None:
    """Play ``engine`` against itself from ``board`` until the game ends."""
    while board.outcome() is None and len(board.move_stack) < max_plies:
        board.push(engine.play(GameState.from_board(board), Limit()).move)


@pytest.mark.parametrize("keep_dtz", [True, False])
def test_wins_on_compact_files_without_the_rule_layer(compact_tables, tmp_path, keep_dtz):
    """Issue 32 defect 3: compact files hold no forty-plies layer and no DTW, so every winning move
    looked alike and perfect repeated 10-15 1-5 14-10 5-1 into a draw. It must make progress: by the
    wcdf DTZ (the .dtz files), or without them by its short search for a capture or man move."""
    directory = compact_tables(3)
    if not keep_dtz:
        directory = tmp_path / "no-dtz"
        directory.mkdir()
        for path in compact_tables(3).iterdir():
            if ".dtz" not in path.name:
                (directory / path.name).symlink_to(path)
    engine = PerfectEngine(tablebase=Tablebase(directory))
    board = Board("W:WK10,K14:BK1", rule="forty-plies" if keep_dtz else "crowning")
    assert best_moves(engine.tablebase, board).rule_free  # no layer for the preset: values only
    _self_play(engine, board)
    outcome = board.outcome()
    assert outcome is not None and outcome.winner == 1, (outcome, [str(m) for m in board.move_stack])
