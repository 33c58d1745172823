"""Tests for egtb.rules.notation: FEN in and out, move text."""

from __future__ import annotations

import pytest

from egtb.rules.board import Board
from egtb.rules.notation import START_FEN, Placement, format_fen, parse_fen, parse_move_text
from egtb.rules.squares import BLACK, WHITE, bitboard_of


def test_start_fen_round_trips():
    assert format_fen(parse_fen(START_FEN)) == START_FEN
    assert Board().fen() == START_FEN


@pytest.mark.parametrize("fen", [
    "B:W21-32:B1-12",
    "B:B1-12:W21-32",  # either colour order
    "b:w21-24,25-32:b1-4,5-12",  # lower case
    "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12.",  # trailing full stop
    " B : W21-32 : B1-12 ",
])
def test_ranges_and_colour_order(fen):
    assert parse_fen(fen) == parse_fen(START_FEN)


def test_kings_on_input_and_output():
    placement = parse_fen("W:WK1-3,18:B12,K30,K31")
    assert placement == Placement(bitboard_of([12]), bitboard_of([30, 31]),
                                  bitboard_of([18]), bitboard_of([1, 2, 3]), WHITE)
    assert format_fen(placement) == "W:WK1,K2,K3,18:B12,K30,K31"


def test_output_sorts_squares_and_lists_white_first():
    assert format_fen(parse_fen("B:B16,12,K22:W27,18,K24")) == "B:W18,K24,27:B12,16,K22"


def test_empty_side_is_allowed():
    assert parse_fen("B:W10:B") == Placement(0, 0, bitboard_of([10]), 0, BLACK)
    assert format_fen(parse_fen("B:W10:B")) == "B:W10:B"


#: Malformed FENs and the words their errors must contain.
FEN_FAULTS = [
    ("B:W33:B1", "unknown square 33"),
    ("B:W0:B1", "unknown square 0"),
    ("B:W10:B10", "two pieces on square 10"),
    ("B:W10,K10:B1", "two pieces on square 10"),
    ("B:W5:B30", "black man on square 30"),
    ("B:W1:B5", "white man on square 1"),
    ("B:W20-32:B1", "more than 12"),
    ("B:W21-32:BK1-12,13", "more than 12"),
    ("X:W21-32:B1-12", "side to move"),
    ("BW:W21-32:B1-12", "side to move"),
    ("B:W21a:B1", "cannot read"),
    ("B:W21;22:B1", "cannot read"),
    ("hello", "field"),
    ("B:W21:B1:W22", "field"),
    ("B:X21:B1", "must start with 'B' or 'W'"),
    ("B:W21:W22", "listed twice"),
    ("B:W24-21:B1", "empty range"),
]
#: Malformed move texts and the words their errors must contain.
MOVE_FAULTS = [
    ("11-15-19", "two squares"),
    ("9x18-27", "mixes"),
    ("33-29", "unknown square"),
    ("e3-d4", "not PDN move notation"),
    ("", "not PDN move notation"),
]


@pytest.mark.parametrize("parse, text, fault", [(parse_fen, *case) for case in FEN_FAULTS]
                         + [(parse_move_text, *case) for case in MOVE_FAULTS])
def test_errors_name_the_fault(parse, text, fault):
    with pytest.raises(ValueError, match=fault):
        parse(text)


def test_board_rejects_bad_fen():
    with pytest.raises(ValueError, match="unknown square"):
        Board("B:W40:B1")


def test_kings_may_stand_on_any_row():
    assert parse_fen("B:WK1:BK32").white_kings == 1


@pytest.mark.parametrize("text, expected", [
    ("11-15", ((11, 15), False)),
    ("9x18x27", ((9, 18, 27), True)),
    ("9x27", ((9, 27), True)),
    (" 32-28 ", ((32, 28), False)),
])
def test_parse_move_text(text, expected):
    assert parse_move_text(text) == expected


@pytest.mark.parametrize("digits", ["\u0661\u0664", "\u06f1\u06f4", "\uff11\uff14", "1\u0664"])
def test_a_square_written_with_other_digits_than_0_to_9_is_refused(digits):
    from egtb.errors import InvalidFenError, InvalidMoveError
    fen = f"B:W{digits},23:B9"
    with pytest.raises(InvalidFenError, match=f"cannot read '{digits}'"):
        parse_fen(fen)
    with pytest.raises(InvalidMoveError, match=f"move '{digits}-10'"):
        parse_move_text(f"{digits}-10")
    with pytest.raises(InvalidMoveError):
        Board("B:W14,23:B9").push_pdn(f"9x{digits}")
