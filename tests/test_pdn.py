"""Tests for egtb.rules.pdn: writing, reading, round trips, and replay by pydraughts."""

from __future__ import annotations

import io
import random

import pytest

from egtb.rules.board import Board, Move
from egtb.rules.notation import parse_fen
from egtb.rules.pdn import Game, PdnError, game_from_board, read_games, write_game

draughts = pytest.importorskip("draughts")


def random_game(seed: int, *, fen: str | None = None, max_plies: int = 300) -> Board:
    rng = random.Random(seed)
    board = Board(fen)
    while not board.is_game_over() and len(board.move_stack) < max_plies:
        board.push(rng.choice(board.legal_moves()))
    return board


RANDOM_STARTS = [None, None, None, "W:W18,22,K30:B9,10,K27", "B:WK29,K31,24:BK2,K4,9"]


def random_games(count: int) -> list[Board]:
    return [random_game(seed, fen=RANDOM_STARTS[seed % len(RANDOM_STARTS)]) for seed in range(count)]


# --- writing ----------------------------------------------------------------


def test_write_standard_start():
    game = Game(headers={"White": "W", "Event": "E", "Black": "B", "Annotator": "x"},
                moves=["11-15", "23-19", "8-11"], result="1/2-1/2")
    assert write_game(game) == (
        '[Event "E"]\n[Black "B"]\n[White "W"]\n[Annotator "x"]\n[GameType "21"]\n'
        '[Result "1/2-1/2"]\n\n1. 11-15 23-19 2. 8-11 1/2-1/2\n'
    )


def test_write_setup_position_with_white_to_move():
    text = write_game(Game(fen="W:W18,22:B14,K1", moves=["18x9", "1-5", "22-17"], result="*"))
    assert '[FEN "W:W18,22:BK1,14"]\n[SetUp "1"]\n' in text
    assert text.endswith("\n1... 18x9 2. 1-5 22-17 *\n")


def test_write_escapes_quotes_and_wraps_long_movetext():
    board = random_game(1)
    text = write_game(game_from_board(board, headers={"Event": 'the "big" one'}))
    assert '[Event "the \\"big\\" one"]' in text
    assert all(len(line) <= 79 for line in text.splitlines())
    assert read_games(text)[0].headers["Event"] == 'the "big" one'


def test_write_rejects_unknown_result():
    with pytest.raises(ValueError, match="unknown result"):
        write_game(Game(result="2-0"))


# --- reading ----------------------------------------------------------------


def test_read_skips_comments_variations_and_marks():
    text = """
[Event "Test"]
[Result "1-0"]
{opening comment}
1. 11-15 {a comment
over lines} 23-19! 2. 8-11 (2. 9-14 22-17) 22-17?! $3 3. 9-13 1-0
"""
    (game,) = read_games(text)
    assert game.headers == {"Event": "Test"}
    assert game.moves == ["11-15", "23-19", "8-11", "22-17", "9-13"]
    assert game.result == "1-0"


def test_read_several_games_and_result_spellings():
    text = '[Event "a"]\n1. 11-15 2-0\n\n[Event "b"]\n1. 9-13 1-1\n[Event "c"]\n1. 10-14\n'
    games = read_games(text)
    assert [g.headers["Event"] for g in games] == ["a", "b", "c"]
    assert [g.result for g in games] == ["1-0", "1/2-1/2", "*"]


def test_read_result_from_tag_when_movetext_has_none():
    (game,) = read_games('[Result "0-1"]\n1. 11-15 23-19')
    assert game.result == "0-1" and game.moves == ["11-15", "23-19"]


def test_read_fen_tag_sets_the_start():
    (game,) = read_games('[GameType "21"]\n[SetUp "1"]\n[FEN "W:W21-32:B1-11,15"]\n1... 23-19 *')
    assert game.fen == "W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,15"
    assert game.headers == {}


def test_read_from_file_object_and_path(tmp_path):
    text = write_game(Game(moves=["11-15"], result="*"))
    path = tmp_path / "g.pdn"
    path.write_text(text)
    assert read_games(io.StringIO(text)) == read_games(path) == [Game(moves=["11-15"])]


def test_read_rejects_other_variants_and_garbage():
    with pytest.raises(ValueError, match="GameType"):
        read_games('[GameType "20"]\n1. 32-28 *')
    with pytest.raises(ValueError, match="cannot read 'e3-f4'"):
        read_games("1. e3-f4 *")


def test_read_empty_text():
    assert read_games("") == []


# --- boards -----------------------------------------------------------------


def test_game_board_replays_the_moves():
    board = random_game(3)
    game = game_from_board(board)
    assert game.board().fen() == board.fen()
    assert game.result == (board.outcome().result() if board.outcome() else "*")


def test_game_board_names_game_and_move_on_an_illegal_move():
    game = Game(headers={"Event": "Club", "Round": "2", "Black": "Ann", "White": "Bob"},
                moves=["11-15", "23-19", "8-11", "19-15"])
    with pytest.raises(ValueError, match=r"game Club, 2, Ann vs Bob: move 2\.\.\. 19-15 is illegal"):
        game.board()


def test_game_board_move_numbers_from_a_white_start():
    game = Game(fen="W:W21-32:B1-11,15", moves=["23-19", "9-14", "14-9"])
    with pytest.raises(ValueError, match=r"move 2\.\.\. 14-9"):
        game.board()


def test_game_from_board_keeps_start_and_result_override():
    board = Board("B:W14:B9")
    board.push_pdn("9x18")
    game = game_from_board(board, headers={"Event": "x"}, result="*")
    assert (game.fen, game.moves, game.result) == ("B:W14:B9", ["9x18"], "*")
    assert game_from_board(board).result == "1-0"


# --- round trips and pydraughts ---------------------------------------------


def test_round_trip_of_our_own_output():
    games = [game_from_board(board, headers={"Event": f"random {i}", "Round": str(i)})
             for i, board in enumerate(random_games(20))]
    text = "\n".join(write_game(game) for game in games)
    assert read_games(text) == games
    for game, board in zip(read_games(text), random_games(20)):
        assert game.board().fen() == board.fen()


def replay_with_pydraughts(game: Game) -> str:
    """Play the game's moves with pydraughts' move generator; return its final FEN.

    Each move must be one of pydraughts' legal moves (same start, end and captures).
    """
    oracle = draughts.Board(variant="english", fen=game.fen)
    for number, text in enumerate(game.moves):
        target = _move_key(text, Board(oracle.fen))
        choices = [m for m in oracle.legal_moves() if _oracle_key(m) == target]
        assert choices, f"ply {number + 1}: {text} not legal for pydraughts in {oracle.fen}"
        oracle.push(choices[0])
    return oracle.fen


def _move_key(text: str, board: Board) -> tuple:
    move = Move.from_pdn(text, board)
    return move.start, move.end, move.captured


def _oracle_key(move) -> tuple:
    return move.steps_move[0], move.steps_move[-1], frozenset(move.captures)


def test_games_we_write_replay_with_pydraughts():
    for board in random_games(12):
        (game,) = read_games(write_game(game_from_board(board)))
        final = replay_with_pydraughts(game)
        assert parse_fen(final) == parse_fen(board.fen())


def test_errors_in_a_file_name_the_file_and_line(tmp_path):
    path = tmp_path / "broken.pdn"
    path.write_text('[Event "a"]\n1. 11-15 23-19 *\n\n[Event "b"]\n1. 9-13 ) *\n')
    with pytest.raises(PdnError, match=r"broken\.pdn:5: unbalanced '\)'") as info:
        read_games(path)
    assert info.value.line == 5 and isinstance(info.value, ValueError)
    games = read_games(path.read_text().replace(")", ""))
    assert [g.line for g in games] == [1, 4]


@pytest.mark.parametrize("movetext", ["1. \u0661\u0661-15 *", "\u0661. 11-15 *", "1. 11-15 $\u0661 *"])
def test_numbers_written_with_other_digits_than_0_to_9_are_refused(movetext):
    with pytest.raises(PdnError, match="written with the digits 0-9"):
        read_games(f'[Event "x"]\n{movetext}\n')
