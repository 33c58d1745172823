"""PDN notation for positions (FEN) and moves.

A PDN FEN names the side to move, then the pieces of each colour in either
order; ``K`` marks a king and ranges such as ``1-12`` are accepted on input::

    B:W18,24,K27:B12,16,K22

>>> parse_fen("W:W21-32:B1-12").turn
1
>>> format_fen(parse_fen("B:W18,24,K27:B12,16,K22"))
'B:W18,24,K27:B12,16,K22'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from egtb.rules.squares import BLACK, WHITE, bitboard_of, squares_of
from egtb.errors import InvalidFenError, InvalidMoveError

MAX_PIECES_PER_SIDE = 12
BLACK_MAN_FORBIDDEN = range(29, 33)  # Black men crown on 29-32
WHITE_MAN_FORBIDDEN = range(1, 5)  # White men crown on 1-4
START_FEN = "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"

# [0-9], not \d: \d takes any script's digits ("١٤" would read as square 14)
_ITEM = re.compile(r"^(K?)([0-9]+)(?:-([0-9]+))?$")
_MOVE = re.compile(r"^[0-9]{1,2}(?:[-x][0-9]{1,2})+$")
_SQUARE = r"(?:3[0-2]|[12][0-9]|[1-9])"
#: A move written on squares 1-32: "a-b" or "axbx...", legal or not.
_MOVE_SHAPE = re.compile(rf"^{_SQUARE}(?:-{_SQUARE}|(?:x{_SQUARE})+)$")


@dataclass(frozen=True)
class Placement:
    """The pieces of a position and the side to move, as bitboards."""

    black_men: int
    """Bitboard of black men (square s is bit s - 1)."""
    black_kings: int
    """Bitboard of black kings."""
    white_men: int
    """Bitboard of white men."""
    white_kings: int
    """Bitboard of white kings."""
    turn: int
    """Side to move: 0 for Black, 1 for White."""


def parse_fen(fen: str) -> Placement:
    """Parse a PDN FEN, raising ValueError that names what is wrong.

    >>> p = parse_fen("B:W18,24,K27:B12,16,K22")
    >>> p.turn, bin(p.white_kings)
    (0, '0b100000000000000000000000000')
    """
    text = fen.strip()
    if text.endswith("."):
        text = text[:-1]
    fields = text.split(":")
    if len(fields) != 3:
        raise InvalidFenError(f"FEN {fen!r}: expected 'side:colour list:colour list', got {len(fields)} field(s)")
    side = fields[0].strip().upper()
    if side not in ("B", "W"):
        raise InvalidFenError(f"FEN {fen!r}: side to move must be 'B' or 'W', not {fields[0]!r}")
    lists: dict[str, tuple[int, int]] = {}
    occupied: dict[int, str] = {}
    for field in fields[1:]:
        field = field.strip()
        colour = field[:1].upper()
        if colour not in ("B", "W"):
            raise InvalidFenError(f"FEN {fen!r}: piece list {field!r} must start with 'B' or 'W'")
        if colour in lists:
            raise InvalidFenError(f"FEN {fen!r}: colour {colour} listed twice")
        lists[colour] = _parse_piece_list(fen, colour, field[1:], occupied)
    black_men, black_kings = lists["B"]
    white_men, white_kings = lists["W"]
    return Placement(black_men, black_kings, white_men, white_kings, BLACK if side == "B" else WHITE)


def _parse_piece_list(fen: str, colour: str, text: str, occupied: dict[int, str]) -> tuple[int, int]:
    """Men and kings bitboards of one colour's comma-separated list."""
    men: list[int] = []
    kings: list[int] = []
    items = [item.strip() for item in text.split(",")] if text.strip() else []
    for item in items:
        match = _ITEM.match(item.upper())
        if not match:
            raise InvalidFenError(f"FEN {fen!r}: cannot read {item!r} in the {colour} list")
        is_king, first, last = match.group(1) == "K", int(match.group(2)), match.group(3)
        for square in range(first, int(last) + 1 if last else first + 1):
            _check_square(fen, colour, square, is_king, occupied)
            (kings if is_king else men).append(square)
        if last and int(last) < first:
            raise InvalidFenError(f"FEN {fen!r}: empty range {item!r}")
    if len(men) + len(kings) > MAX_PIECES_PER_SIDE:
        raise InvalidFenError(f"FEN {fen!r}: {colour} has {len(men) + len(kings)} pieces, more than {MAX_PIECES_PER_SIDE}")
    return bitboard_of(men), bitboard_of(kings)


def _check_square(fen: str, colour: str, square: int, is_king: bool, occupied: dict[int, str]) -> None:
    if not 1 <= square <= 32:
        raise InvalidFenError(f"FEN {fen!r}: unknown square {square} (squares are 1-32)")
    if square in occupied:
        raise InvalidFenError(f"FEN {fen!r}: two pieces on square {square}")
    occupied[square] = colour
    forbidden = BLACK_MAN_FORBIDDEN if colour == "B" else WHITE_MAN_FORBIDDEN
    if not is_king and square in forbidden:
        raise InvalidFenError(f"FEN {fen!r}: a {'black' if colour == 'B' else 'white'} man on square {square}, its own crowning row")


def format_fen(placement: Placement) -> str:
    """The PDN FEN of a placement: side, then White's list, then Black's.

    >>> format_fen(Placement(1, 0, 0, 1 << 31, 1))
    'W:WK32:B1'
    """
    side = "B" if placement.turn == BLACK else "W"
    white = _format_piece_list(placement.white_men, placement.white_kings)
    black = _format_piece_list(placement.black_men, placement.black_kings)
    return f"{side}:W{white}:B{black}"


def _format_piece_list(men: int, kings: int) -> str:
    items = [(square, "") for square in squares_of(men)] + [(square, "K") for square in squares_of(kings)]
    return ",".join(f"{mark}{square}" for square, mark in sorted(items))


def is_move_text(text: str) -> bool:
    """Whether text is shaped like a PDN move on squares 1-32 (legal or not).

    >>> is_move_text("11-15"), is_move_text("9x18x27"), is_move_text("33-29"), is_move_text("9-13-17")
    (True, True, False, False)
    """
    return _MOVE_SHAPE.match(text) is not None


def parse_move_text(text: str) -> tuple[tuple[int, ...], bool]:
    """Squares of a PDN move and whether it is written as a capture.

    >>> parse_move_text("9x18x27")
    ((9, 18, 27), True)
    """
    cleaned = text.strip()
    if not _MOVE.match(cleaned):
        raise InvalidMoveError(f"move {text!r}: not PDN move notation like '11-15' or '9x18x27'")
    is_capture = "x" in cleaned
    if is_capture and "-" in cleaned:
        raise InvalidMoveError(f"move {text!r}: mixes '-' and 'x'")
    squares = tuple(int(part) for part in re.split(r"[-x]", cleaned))
    for square in squares:
        if not 1 <= square <= 32:
            raise InvalidMoveError(f"move {text!r}: unknown square {square} (squares are 1-32)")
    if not is_capture and len(squares) != 2:
        raise InvalidMoveError(f"move {text!r}: a simple move names two squares")
    return squares, is_capture
