"""Tests for tournament.review and `tournament review`: games checked against real 3-piece tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from egtb.probe.tablebase import Tablebase
from egtb.rules.board import Board
from egtb.rules.pdn import Game, read_games, write_game
from tournament.cli import main
from tournament.review import format_review, review_file, review_game

TABLE_PIECES = 3
#: White to move wins with 14-9; 10-6 lets the black king jump both white kings (1x10x17).
WON = "W:WK10,K14:BK1"
#: Black to move draws with 1-5; 1-6 steps next to the white king, which jumps it (10x1).
DRAWN = "B:WK10:BK1"
#: Quiet king moves from WON, no position three times. Under forty-plies (40 quiet plies) White's
#: 17th ply 23-19 leaves DTZ 26 at counter 17 (43 > 40: the win is gone) and Black's 20th ply
#: 6-10 walks into a capture after which White wins within the limit; under wcdf (80) neither is.
SHUFFLE = ["10-7", "1-6", "7-2", "6-1", "2-7", "1-6", "14-18", "6-9", "7-3", "9-6", "18-15", "6-2",
           "15-18", "2-6", "18-23", "6-2", "23-19", "2-6", "19-23", "6-10", "3-7", "10x3"]


@pytest.fixture(scope="module")
def tables(built_tables) -> Path:
    return built_tables(TABLE_PIECES)


@pytest.fixture()
def tb(tables: Path):
    with Tablebase(tables) as tablebase:
        yield tablebase


def mistakes_of(game: Game, tb: Tablebase, rule: str = "wcdf") -> list[tuple]:
    return [(m.ply, m.move, m.mover, m.before, m.after, m.best)
            for m in review_game(game, tb, rule=rule).mistakes]


def test_a_win_thrown_into_a_loss_names_the_best_move(tb: Tablebase) -> None:
    review = review_game(Game(fen=WON, moves=["10-6", "1x10x17"]), tb)
    assert (review.entered, review.entered_value, review.entered_side) == (0, "win", "White")
    assert mistakes_of(Game(fen=WON, moves=["10-6", "1x10x17"]), tb) == [(1, "10-6", "White", "win", "loss", "14-9")]


def test_a_thrown_draw_and_a_good_move(tb: Tablebase) -> None:
    assert mistakes_of(Game(fen=DRAWN, moves=["1-6", "10x1"]), tb) == [(1, "1-6", "Black", "draw", "loss", "1-5")]
    assert mistakes_of(Game(fen=DRAWN, moves=["1-5"]), tb) == []
    assert mistakes_of(Game(fen=WON, moves=["14-9"]), tb) == []


def test_the_move_rule_counter_decides(tb: Tablebase) -> None:
    game = Game(fen=WON, moves=SHUFFLE)
    assert mistakes_of(game, tb, "forty-plies") == [(17, "23-19", "White", "win", "draw", "3-7"),
                                                    (20, "6-10", "Black", "draw", "loss", "6-1")]
    assert mistakes_of(game, tb, "wcdf") == []
    # the best move keeps the win the played one lost, at the counter the game had then
    board = Board(WON, rule="forty-plies")
    for text in SHUFFLE[:16]:
        board.push_pdn(text)
    assert board.quiet_plies == 16 and int(tb.probe(board).outcome) == 1
    board.push_pdn("3-7")
    assert int(tb.probe(board).outcome) == -1


def test_the_ply_where_a_game_enters_the_tables(tb: Tablebase) -> None:
    # 4 pieces until White's capture 22x15: then 3, which the tables hold
    review = review_game(Game(fen="W:W22,30:B18,K1", moves=["22x15", "1-6"]), tb)
    assert (review.entered, review.entered_fen, review.entered_side) == (1, "B:W15,30:BK1", "Black")
    assert review_game(Game(moves=["11-15", "23-19"]), tb).entered is None
    # a game that ends with more pieces than the tables hold never entered them: its last position
    # (no black piece left) is valued without a table, but the game is over there
    review = review_game(Game(fen="W:W22,23,24,31:B18", moves=["22x15"]), tb)
    assert review.entered is None and review.plies == 1


def test_the_review_stops_at_a_threefold_repetition(tb: Tablebase) -> None:
    cycle = ["14-18", "1-5", "18-14", "5-1"]
    assert mistakes_of(Game(fen=WON, moves=cycle + ["10-6"]), tb)[0][:2] == (5, "10-6")
    # twice round the cycle: the start position's third time ends the game, so 10-6 is not judged
    review = review_game(Game(fen=WON, moves=cycle * 2 + ["10-6"]), tb)
    assert review.plies == 9 and review.mistakes == ()


def test_the_shuffle_replays_with_pydraughts() -> None:
    pytest.importorskip("draughts")
    from test_pdn import replay_with_pydraughts
    final = replay_with_pydraughts(Game(fen=WON, moves=SHUFFLE))
    assert Board(final).piece_count() == 2


def test_format_names_entry_and_mistakes(tb: Tablebase) -> None:
    text = format_review(review_game(Game(headers={"Event": "x"}, fen=WON, moves=["10-6"]), tb))
    assert text.splitlines() == [
        "game x (*): entered the tables at ply 0 (3 pieces, White to move: White wins)",
        "  ply 1, 1... 10-6 (White) threw away a win: win -> loss; best 14-9"]


def write_pdn(path: Path, *games: Game) -> Path:
    path.write_text("\n".join(write_game(game) for game in games), encoding="utf-8")
    return path


def test_cli_text_and_json(tmp_path: Path, tables: Path, capsys: pytest.CaptureFixture) -> None:
    pdn = write_pdn(tmp_path / "games.pdn", Game(headers={"Event": "a"}, fen=DRAWN, moves=["1-6", "10x1"]),
                    Game(headers={"Event": "b"}, moves=["11-15"]))
    assert main(["review", str(pdn), "--tables", str(tables)]) == 0
    out = capsys.readouterr().out
    assert "ply 1, 1. 1-6 (Black) threw away a draw: draw -> loss; best 1-5" in out
    assert "game b (*): never entered the tables (1 ply)" in out
    assert main(["review", str(pdn), "--tables", str(tables), "--json"]) == 0
    reviews = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in reviews] == ["game a", "game b"]
    assert reviews[0]["mistakes"][0]["kind"] == "threw away a draw"


@pytest.mark.parametrize("text, named", [
    (None, "no such PDN file"),
    ('[Event "x"\n1. 11-15 *\n', "cannot read"),
    ('[Event "x"]\n1. 11-15 11-16 *\n', "move 1... 11-16 is illegal"),
    ("", "no games"),
])
def test_cli_bad_input_exits_2_naming_it(tmp_path: Path, tables: Path, capsys: pytest.CaptureFixture,
                                         text: str | None, named: str) -> None:
    pdn = tmp_path / "in.pdn"
    if text is not None:
        pdn.write_text(text, encoding="utf-8")
    assert main(["review", str(pdn), "--tables", str(tables)]) == 2
    err = capsys.readouterr().err
    assert named in err and str(pdn) in err


def test_cli_missing_tables_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pdn = write_pdn(tmp_path / "games.pdn", Game(moves=["11-15"]))
    assert main(["review", str(pdn), "--tables", str(tmp_path / "none")]) == 2
    assert f"table directory {tmp_path / 'none'} does not exist" in capsys.readouterr().err


def test_review_file_reads_a_tournament_pdn(tmp_path: Path, tb: Tablebase) -> None:
    pdn = write_pdn(tmp_path / "games.pdn", Game(headers={"Round": "1.1"}, fen=WON, moves=["14-9"]))
    (review,) = review_file(pdn, tb)
    assert review.name == "game 1.1" and review.mistakes == () and len(read_games(pdn)) == 1
