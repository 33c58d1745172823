"""Board geometry of English draughts: the 32 playable squares and their neighbours.

Squares are numbered 1-32 as in PDN. Black starts on 1-12 and moves toward
higher numbers; White starts on 21-32. In a bitboard (a 32-bit unsigned int),
square ``s`` is bit ``s - 1``.

Rows are numbered 0-7 from Black's side: row ``(s - 1) // 4``. On even rows the
four squares sit in columns 1, 3, 5, 7; on odd rows in columns 0, 2, 4, 6.

Directions are indexed 0-3: 0 and 1 go toward higher numbers (Black's forward),
2 and 3 toward lower numbers (White's forward). Kings use all four.

>>> int(NEIGHBOUR[0, 0]) + 1, int(NEIGHBOUR[0, 1]) + 1   # square 1 -> 5, 6
(5, 6)
>>> mirror_square(1)
32
"""

from __future__ import annotations

import numpy as np
from numba import njit

Square = int  # 1..32, PDN numbering

NUM_SQUARES = 32
BLACK = 0
WHITE = 1

#: (row delta, column delta) for the four diagonal directions.
DIRECTIONS = ((1, -1), (1, 1), (-1, -1), (-1, 1))

#: Every square: the 32-bit mask of a bitboard.
ALL_SQUARES = 0xFFFFFFFF
#: Black men crown on row 7 (squares 29-32), White men on row 0 (squares 1-4).
BLACK_CROWN_ROW = 0xF0000000
WHITE_CROWN_ROW = 0x0000000F
#: Squares a black man may stand on (1-28) and a white man (5-32): never its own crowning row.
BLACK_MEN_SQUARES = ALL_SQUARES & ~BLACK_CROWN_ROW
WHITE_MEN_SQUARES = ALL_SQUARES & ~WHITE_CROWN_ROW
#: At most 12 pieces of one colour stand on the board.
MAX_PER_SIDE = 12
#: The starting position: black men on 1-12, white men on 21-32.
START_BM = 0x00000FFF
START_WM = 0xFFF00000

#: Row masks for shifting whole sets: a step toward higher squares is a shift left
#: by 4, or by 5 from an even row off the right edge, or by 3 from an odd row off
#: the left edge (toward lower squares: right by 4, 3 or 5).
EVEN_ROWS = 0x0F0F0F0F  #: rows 0, 2, 4, 6 (squares in columns 1, 3, 5, 7)
ODD_ROWS = 0xF0F0F0F0  #: rows 1, 3, 5, 7 (squares in columns 0, 2, 4, 6)
EVEN_NOT_RIGHT = 0x07070707  #: even rows without the right edge: step +5 / -3
ODD_NOT_LEFT = 0xE0E0E0E0  #: odd rows without the left edge: step +3 / -5


def square_to_coords(square: Square) -> tuple[int, int]:
    """Row (0-7 from Black's side) and column (0-7) of a square 1-32."""
    index = square - 1
    row = index // 4
    column = 2 * (index % 4) + (1 if row % 2 == 0 else 0)
    return row, column


def coords_to_square(row: int, column: int) -> Square | None:
    """The square 1-32 at (row, column), or None off the board or on a light square."""
    if not (0 <= row < 8 and 0 <= column < 8) or (row + column) % 2 == 0:
        return None
    return row * 4 + column // 2 + 1


def mirror_square(square: Square) -> Square:
    """The square seen from the other side of the board (s -> 33 - s)."""
    return 33 - square


def _build_tables() -> tuple[np.ndarray, np.ndarray]:
    neighbour = np.full((NUM_SQUARES, 4), -1, dtype=np.int64)
    jump = np.full((NUM_SQUARES, 4), -1, dtype=np.int64)
    for square in range(1, NUM_SQUARES + 1):
        row, column = square_to_coords(square)
        for direction, (dr, dc) in enumerate(DIRECTIONS):
            step = coords_to_square(row + dr, column + dc)
            land = coords_to_square(row + 2 * dr, column + 2 * dc)
            if step is not None:
                neighbour[square - 1, direction] = step - 1
                if land is not None:
                    jump[square - 1, direction] = land - 1
    return neighbour, jump


#: NEIGHBOUR[i, d]: bit index of the square next to bit i in direction d, or -1.
#: JUMP[i, d]: bit index of the landing square of a jump from bit i in direction d
#: (over NEIGHBOUR[i, d]), or -1.
NEIGHBOUR, JUMP = _build_tables()


@njit(cache=True, inline="always")
def direction_range(king, turn):
    """(first, end) of the directions a piece moves in: a king all four, a man its forward two.

    >>> direction_range(False, WHITE)
    (2, 4)
    """
    if king:
        return 0, 4
    if turn == BLACK:
        return 0, 2
    return 2, 4


def squares_of(bitboard: int) -> list[Square]:
    """The squares (1-32, ascending) set in a bitboard."""
    return [i + 1 for i in range(NUM_SQUARES) if (bitboard >> i) & 1]


def bitboard_of(squares) -> int:
    """The bitboard with the given squares (1-32) set."""
    bits = 0
    for square in squares:
        bits |= 1 << (square - 1)
    return bits
