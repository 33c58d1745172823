"""Positions, moves and game outcomes of English draughts (python-chess style).

>>> board = Board()
>>> len(board.legal_moves())
7
>>> board.push(Move.from_pdn("11-15", board))
>>> board.fen()
'W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15'
>>> board.pop()
Move.from_pdn('11-15')
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from egtb.rules.movegen import (
    M_BK, M_BM, M_CAPTURED, M_CROWNS, M_FROM, M_MAN, M_NJUMPS, M_PATH, M_TO, M_WK, M_WM,
    generate_moves, new_move_buffer,
)
from egtb.rules.draw_rules import DEFAULT_RULE, DRAW_RULES, DrawRule
from egtb.rules.notation import START_FEN, Placement, format_fen, parse_fen, parse_move_text
from egtb.rules.squares import BLACK, WHITE, Square, coords_to_square, square_to_coords
from egtb.errors import AmbiguousMoveError, IllegalMoveError, InvalidArgumentError, InvalidMoveError

Color = int  # BLACK (0) or WHITE (1)

__all__ = [
    "BLACK", "DEFAULT_RULE", "WHITE", "Board", "Color", "DrawRule", "DRAW_RULES", "Move", "Outcome",
    "Termination",
]


class Termination(enum.Enum):
    """Why a game ended by the rules."""

    NO_PIECES = "no pieces"
    NO_MOVES = "no legal move"
    MOVE_RULE = "move rule"
    REPETITION = "threefold repetition"


@dataclass(frozen=True)
class Outcome:
    """How a game ended: the reason and the winner (None for a draw)."""

    termination: Termination
    """The rule that ended the game."""
    winner: Color | None
    """BLACK, WHITE, or None for a draw."""

    def result(self) -> str:
        """PDN result: "1-0" when Black (who moved first) won, "0-1", "1/2-1/2"."""
        if self.winner is None:
            return "1/2-1/2"
        return "1-0" if self.winner == BLACK else "0-1"


class Move:
    """A legal move: start, end, captured squares; ``path`` is kept for notation.

    Two capture paths with the same start, end and captured pieces are one move,
    so equality and hashing ignore the path. Moves are immutable values.

    >>> Move((9, 18, 27), captured=frozenset({14, 23}))
    Move.from_pdn('9x18x27')
    """

    __slots__ = ("path", "captured", "start", "end")
    path: tuple[Square, ...]  # start square, then every landing square
    captured: frozenset[Square]  # squares of the captured pieces
    start: Square  # square the piece leaves
    end: Square  # square the piece stops on

    def __init__(self, path: tuple[Square, ...], captured: frozenset[Square] = frozenset()) -> None:
        path = tuple(path)
        if len(path) < 2:
            raise InvalidMoveError(f"a move needs at least two squares, got {path}")
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "captured", frozenset(captured))
        object.__setattr__(self, "start", path[0])
        object.__setattr__(self, "end", path[-1])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Move is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Move):
            return NotImplemented
        return self.start == other.start and self.end == other.end and self.captured == other.captured

    def __hash__(self) -> int:
        return hash((self.start, self.end, self.captured))

    @property
    def is_capture(self) -> bool:
        """Whether the move takes pieces."""
        return bool(self.captured)

    def __str__(self) -> str:
        return ("x" if self.captured else "-").join(str(s) for s in self.path)

    def __repr__(self) -> str:
        return f"Move.from_pdn({str(self)!r})"

    @classmethod
    def from_pdn(cls, text: str, board: "Board") -> "Move":
        """The legal move of ``board`` written as ``text`` ("11-15", "9x18x27", "9x27").

        Raises ValueError when the text is malformed, names no legal move, or
        (short capture form) fits more than one.

        >>> Move.from_pdn("9x27", Board("B:W14,23:B9"))
        Move.from_pdn('9x18x27')
        """
        squares, is_capture = parse_move_text(text)
        legal = board.legal_moves()
        if is_capture and len(squares) > 2:
            captured = _captured_along(squares, text)
            matches = [m for m in legal if m.start == squares[0] and m.end == squares[-1] and m.captured == captured]
        else:
            matches = [m for m in legal if m.start == squares[0] and m.end == squares[-1] and m.is_capture == is_capture]
        if not matches:
            raise IllegalMoveError(f"move {text!r} is not legal in {board.fen()}")
        if len(matches) > 1:
            options = ", ".join(str(m) for m in matches)
            raise AmbiguousMoveError(f"move {text!r} is ambiguous in {board.fen()}: {options}")
        return matches[0]


def _captured_along(squares: tuple[Square, ...], text: str) -> frozenset[Square]:
    """Squares jumped over along a full capture path, checking each jump's shape."""
    captured = set()
    for a, b in zip(squares, squares[1:]):
        (ra, ca), (rb, cb) = square_to_coords(a), square_to_coords(b)
        if abs(ra - rb) != 2 or abs(ca - cb) != 2:
            raise InvalidMoveError(f"move {text!r}: {a}x{b} is not a jump")
        captured.add(coords_to_square((ra + rb) // 2, (ca + cb) // 2))
    return frozenset(captured)


@dataclass
class _Undo:
    """What push changed, so that pop can restore it."""

    move: Move
    placement: tuple[int, int, int, int, int]
    quiet_plies: int


class Board:
    """A position with its history, the move rule and repetition tracking.

    ``fen`` defaults to the standard start; ``rule`` is a key of DRAW_RULES.

    >>> Board("W:W9:B1").outcome() is None
    True
    >>> Board("B:W5,6,10:B1").outcome().termination
    <Termination.NO_MOVES: 'no legal move'>
    """

    def __init__(self, fen: str | None = None, *, rule: str = DEFAULT_RULE, quiet_plies: int = 0) -> None:
        if rule not in DRAW_RULES:
            raise InvalidArgumentError(f"unknown draw rule {rule!r}; choose from {', '.join(DRAW_RULES)}")
        placement = parse_fen(fen if fen is not None else START_FEN)
        self.rule: DrawRule = DRAW_RULES[rule]
        self.black_men = placement.black_men
        self.black_kings = placement.black_kings
        self.white_men = placement.white_men
        self.white_kings = placement.white_kings
        self.turn: Color = placement.turn
        self.quiet_plies = quiet_plies
        self.move_stack: list[Move] = []
        self._undo: list[_Undo] = []
        self._seen: dict[tuple[int, int, int, int, int], int] = {self.key(): 1}
        self._buffer = new_move_buffer()
        self._cache_key: tuple | None = None
        self._cache_moves: list[Move] = []
        self._cache_rows: np.ndarray | None = None
        self._start_fen = self.fen()

    # --- state -----------------------------------------------------------

    def key(self) -> tuple[int, int, int, int, int]:
        """The position as (black men, black kings, white men, white kings, turn)."""
        return (self.black_men, self.black_kings, self.white_men, self.white_kings, self.turn)

    def fen(self) -> str:
        """The PDN FEN of the current position."""
        return format_fen(Placement(*self.key()))

    @property
    def start_fen(self) -> str:
        """FEN of the position the board was created with."""
        return self._start_fen

    def copy(self) -> "Board":
        """An independent copy, history included."""
        other = Board.__new__(Board)
        other.__dict__.update(self.__dict__)
        other.move_stack = list(self.move_stack)
        other._undo = list(self._undo)
        other._seen = dict(self._seen)
        other._buffer = new_move_buffer()
        return other

    def piece_count(self) -> int:
        """Number of pieces on the board."""
        return bin(self.black_men | self.black_kings | self.white_men | self.white_kings).count("1")

    def piece_at(self, square: Square) -> str | None:
        """'b', 'B' (king), 'w', 'W' or None for the piece on a square."""
        bit = 1 << (square - 1)
        for bitboard, symbol in ((self.black_men, "b"), (self.black_kings, "B"),
                                 (self.white_men, "w"), (self.white_kings, "W")):
            if bitboard & bit:
                return symbol
        return None

    # --- moves -----------------------------------------------------------

    def _rows(self) -> np.ndarray:
        """Rows of the move kernel for the current position (cached)."""
        key = self.key()
        if self._cache_key != key:
            n = generate_moves(*key, self._buffer)
            self._cache_rows = self._buffer[:n].copy()
            self._cache_moves = [_move_from_row(row) for row in self._cache_rows.tolist()]
            self._cache_key = key
        return self._cache_rows

    def legal_moves(self) -> list[Move]:
        """Every legal move (captures only, when one exists)."""
        self._rows()
        return list(self._cache_moves)

    def is_legal(self, move: Move) -> bool:
        """Whether move is legal here."""
        return move in self.legal_moves()

    def push(self, move: Move) -> None:
        """Play a legal move (ValueError for an illegal one)."""
        rows = self._rows()
        try:
            index = self._cache_moves.index(move)
        except ValueError:
            raise IllegalMoveError(f"illegal move {move} in {self.fen()}") from None
        row = rows[index]
        self._undo.append(_Undo(move, self.key(), self.quiet_plies))
        self.move_stack.append(self._cache_moves[index])
        resets = bool(row[M_CAPTURED]) or bool(row[M_CROWNS]) or (self.rule.man_move_resets and bool(row[M_MAN]))
        self.quiet_plies = 0 if resets else self.quiet_plies + 1
        self.black_men, self.black_kings = int(row[M_BM]), int(row[M_BK])
        self.white_men, self.white_kings = int(row[M_WM]), int(row[M_WK])
        self.turn = 1 - self.turn
        key = self.key()
        self._seen[key] = self._seen.get(key, 0) + 1

    @property
    def start_quiet_plies(self) -> int:
        """The move-rule counter of the position the moves were played from.

        >>> board = Board("B:WK29:BK1", quiet_plies=7)
        >>> _ = board.push_pdn("1-6")
        >>> board.quiet_plies, board.start_quiet_plies
        (8, 7)
        """
        return self._undo[0].quiet_plies if self._undo else self.quiet_plies

    def push_pdn(self, text: str) -> Move:
        """Parse a PDN move, play it and return it."""
        move = Move.from_pdn(text, self)
        self.push(move)
        return move

    def pop(self) -> Move:
        """Take back the last move and return it (IndexError when none was played)."""
        if not self._undo:
            raise IndexError(f"pop from a board with no moves played ({self.fen()})")
        key = self.key()
        self._seen[key] -= 1
        if not self._seen[key]:
            del self._seen[key]
        undo = self._undo.pop()
        self.move_stack.pop()
        (self.black_men, self.black_kings, self.white_men, self.white_kings, self.turn) = undo.placement
        self.quiet_plies = undo.quiet_plies
        return undo.move

    # --- game end --------------------------------------------------------

    def repetition_count(self) -> int:
        """How many times the current position (with side to move) has occurred."""
        return self._seen.get(self.key(), 0)

    def outcome(self) -> Outcome | None:
        """How the game has ended, or None while it goes on.

        No legal move loses, even on the ply that would reach the move rule.
        """
        own = (self.black_men | self.black_kings) if self.turn == BLACK else (self.white_men | self.white_kings)
        if not own:
            return Outcome(Termination.NO_PIECES, 1 - self.turn)
        if not len(self._rows()):
            return Outcome(Termination.NO_MOVES, 1 - self.turn)
        if self.quiet_plies >= self.rule.limit_plies:
            return Outcome(Termination.MOVE_RULE, None)
        if self.repetition_count() >= 3:
            return Outcome(Termination.REPETITION, None)
        return None

    def is_game_over(self) -> bool:
        """Whether outcome() is not None."""
        return self.outcome() is not None

    def __str__(self) -> str:
        lines = []
        for row in range(8):
            cells = []
            for column in range(8):
                square = coords_to_square(row, column)
                cells.append("." if square is None else (self.piece_at(square) or "-"))
            lines.append(" ".join(cells))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Board({self.fen()!r})"


def _move_from_row(row: list[int]) -> Move:
    """A Move from one row of the move kernel's output."""
    njumps = row[M_NJUMPS]
    if njumps:
        path = (row[M_FROM] + 1,) + tuple(row[M_PATH + j] + 1 for j in range(njumps))
    else:
        path = (row[M_FROM] + 1, row[M_TO] + 1)
    captured = []
    bits = row[M_CAPTURED]
    while bits:
        low = bits & -bits
        captured.append(low.bit_length())
        bits ^= low
    return Move(path, frozenset(captured))
