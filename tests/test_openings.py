"""Tests for tournament.openings: ballot counts, notation, legality (pydraughts oracle), file reader."""

import re

import pytest

from egtb.rules.pdn import PdnError
from tournament.openings import (
    order_openings,
    Opening,
    is_valid_fen,
    is_valid_move,
    load_ballots,
    load_openings_file,
)

MOVE_RE = re.compile(r"^(3[0-2]|[12][0-9]|[1-9])([-x](3[0-2]|[12][0-9]|[1-9]))+$")

# ACF numbers of the barred three-move openings (as CheckerBoard and milhouse list them).
BARRED_3 = {3, 13, 26, 35, 44, 45, 48, 52, 77, 88, 94, 109, 114, 137, 145, 156, 168, 171}
BARRED_2 = {"9-14 21-17", "9-14 23-18", "10-14 21-17", "10-14 23-18", "11-16 23-19", "12-16 23-19"}


@pytest.mark.parametrize(
    "kind, deck, total, plies", [("3-move", 156, 174, 3), ("2-move", 43, 49, 2)]
)
def test_counts_and_shape(kind, deck, total, plies):
    playable = load_ballots(kind)
    everything = load_ballots(kind, include_barred=True)
    assert len(playable) == deck
    assert len(everything) == total
    assert sum(o.barred for o in everything) == total - deck
    assert not any(o.barred for o in playable)
    assert all(len(o.moves) == plies for o in everything)
    assert len({o.moves for o in everything}) == total
    assert len({o.fen for o in everything}) == total
    assert len({o.number for o in everything}) == total
    numbers = [o.number for o in everything]
    assert numbers == sorted(numbers) == list(range(1, total + 1))


def test_barred_sets():
    barred3 = {o.number for o in load_ballots("3-move", include_barred=True) if o.barred}
    assert barred3 == BARRED_3
    barred2 = {" ".join(o.moves) for o in load_ballots("2-move", include_barred=True) if o.barred}
    assert barred2 == BARRED_2


def test_known_entries():
    deck = {o.number: o for o in load_ballots("3-move", include_barred=True)}
    assert deck[1].moves == ("9-13", "21-17", "5-9")
    assert deck[153].moves == ("11-16", "23-19", "16x23")
    assert "Black Widow" in deck[153].name
    assert deck[174].moves == ("12-16", "24-20", "10-15")
    assert deck[5].name == "ACF 005 Dreaded Edinburgh"


@pytest.mark.parametrize("kind", ["3-move", "2-move"])
def test_move_strings_well_formed(kind):
    for opening in load_ballots(kind, include_barred=True):
        assert isinstance(opening, Opening)
        for move in opening.moves:
            assert MOVE_RE.match(move), (opening, move)
            assert is_valid_move(move)
        assert is_valid_fen(opening.fen)


def _fen_squares(fen: str) -> tuple[str, frozenset[str], frozenset[str]]:
    side, *parts = fen.split(":")
    by_colour = {p[0]: frozenset(filter(None, p[1:].split(","))) for p in parts}
    return side, by_colour["W"], by_colour["B"]


@pytest.mark.parametrize("kind", [pytest.param("3-move", marks=pytest.mark.slow), "2-move"])  # 3-move: 3.5 s
def test_ballots_legal_in_pydraughts(kind):
    draughts = pytest.importorskip("draughts")
    for opening in load_ballots(kind, include_barred=True):
        board = draughts.Board(variant="english")
        for move in opening.moves:
            legal = {m.pdn_move: m for m in board.legal_moves()}
            assert move in legal, (opening, move, sorted(legal))
            board.push(legal[move])
        assert _fen_squares(board.fen) == _fen_squares(opening.fen), opening


def test_unknown_kind():
    with pytest.raises(ValueError, match="unknown ballot kind"):
        load_ballots("4-move")


def test_move_and_fen_validators():
    assert is_valid_move("9x18x27") and is_valid_move("32-28")
    assert not is_valid_move("0-4") and not is_valid_move("9-") and not is_valid_move("9-13-17")
    assert is_valid_fen("B:W21-32:B1-12")
    assert is_valid_fen("W:WK3,21:B12,K30")
    assert not is_valid_fen("B:W21-32:B1-21")  # 21 twice
    assert not is_valid_fen("X:W21:B1")
    assert not is_valid_fen("B:W33:B1")


def test_user_file_of_fens_and_moves(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text(
        "# my openings\n"
        "B:W18,24,K27:B12,16,K22\n"
        "\n"
        "1. 9-14 22-17 2. 11-15\n"
        '[FEN "W:W21-32:B1-12"]\n'
    )
    openings = load_openings_file(path)
    assert [o.fen for o in openings] == ["B:W18,24,K27:B12,16,K22", None, "W:W21-32:B1-12"]
    assert openings[1].moves == ("9-14", "22-17", "11-15")
    assert openings[1].name == "mine.txt:4"


def test_user_pdn_games(tmp_path):
    path = tmp_path / "games.pdn"
    path.write_text(
        '[Event "first"]\n'
        '[GameType "21"]\n'
        "1. 11-15 23-19 {a comment} 2. 8-11\n"
        "22-17 1/2-1/2\n"
        "\n"
        '[Event "second"]\n'
        '[FEN "B:W18,24,K27:B12,16,K22"]\n'
        "1. 22-26 *\n"
    )
    first, second = load_openings_file(path)
    assert first == Opening("first", ("11-15", "23-19", "8-11", "22-17"), None)
    assert second.fen == "B:W18,24,K27:B12,16,K22" and second.moves == ("22-26",)


@pytest.mark.parametrize(
    "text, lineno",
    [
        ("9-14 22-17\n9-14 22-77\n", 2),
        ("B:W18,24:B12\nB:W40:B1\n", 2),
        ("# c\n\n11-15 hello\n", 3),
        ('[Event "x"]\n1. 11-15 23-19\n2. 8-11 zz\n', 3),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, text, lineno):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"bad\.txt:{lineno}:"):
        load_openings_file(path)


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="nothere"):
        load_openings_file(tmp_path / "nothere.txt")


def test_pdn_file_errors_and_names_come_from_the_pdn_reader(tmp_path):
    path = tmp_path / "games.pdn"
    path.write_text('[Event "a"]\n1. 11-15 *\n\n[GameType "21"]\n1. 9-13 *\n\n[Event "bad"]\n[FEN "B:W40:B1"]\n*\n')
    with pytest.raises(PdnError, match=r"games\.pdn:7: bad FEN tag"):
        load_openings_file(path)
    path.write_text('[Event "a"]\n1. 11-15 *\n\n[GameType "21"]\n1. 9-13 *\n')
    assert [o.name for o in load_openings_file(path)] == ["a", "games.pdn:4"]


def test_order_and_start_as_testers_use_them():
    deck = load_ballots("3-move")
    assert order_openings(deck, start=5)[0] == deck[4] and order_openings(deck, start=5)[-1] == deck[3]
    shuffled = order_openings(deck, order="random", seed=7)
    assert sorted(o.name for o in shuffled) == sorted(o.name for o in deck) and shuffled != deck
    assert order_openings(deck, order="random", seed=7) == shuffled != order_openings(deck, order="random", seed=8)
    assert order_openings(deck, order="random", seed=7, start=3)[0] == shuffled[2]
    with pytest.raises(ValueError, match="openings 1 to 156"):
        order_openings(deck, start=157)
    with pytest.raises(ValueError, match="opening order"):
        order_openings(deck, order="backwards")
