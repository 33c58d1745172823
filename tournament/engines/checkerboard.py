"""CheckerBoard engines: libraries exporting ``getmove`` and ``enginecommand`` (KingsRow, Cake, ...).

CheckerBoard's engine API (Martin Fierz)::

    int getmove(int board[8][8], int color, double maxtime, char str[1024],
                int *playnow, int info, int moreinfo, struct CBmove *move);
    int enginecommand(char command[256], char reply[1024]);

``board[x][y]`` holds FREE 0 or a colour (WHITE 1, BLACK 2) or'ed with MAN 4 or KING 8;
square 1 is (x=6, y=0), square 4 is (0, 0), square 5 is (7, 1): Black, who moves first,
starts on rows y = 0..2 and moves towards y = 7. ``getmove`` thinks for about ``maxtime``
seconds and writes the position after its move back into ``board`` (the runner finds the
move whose result that is, so multi-jump paths need no decoding); it returns its view of
the game, WIN 1, LOSS 2, DRAW 0 or UNKNOWN 3. ``info`` bit 0 tells it a new game starts.
Options go through ``enginecommand("set NAME VALUE")``; ``enginecommand("name")`` gives
its name.

A library may crash, so the runner never loads one in its own process: the spec
``cb:PATH`` starts ``tournament hub-engine cblib:PATH``, a process that loads the library
(:class:`CheckerBoardLibrary`) and serves it over Hub; a segfault there is a crash of that
engine only, and the process is kept between games like any external engine.

>>> from egtb import Board
>>> cb = board_to_cb(Board("B:W18,K27:B1"))
>>> cb[6][0], cb[square_coords(18)[0]][square_coords(18)[1]], cb[square_coords(27)[0]][square_coords(27)[1]]
(6, 5, 9)
>>> fen_from_cb(cb, BLACK)
'B:W18,K27:B1'
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path
from typing import Any

from egtb.rules.board import Board, Move
from tournament.engines.base import Engine, EngineError, EngineSetupError, GameState, Limit

__all__ = ["CheckerBoardLibrary", "board_to_cb", "cb_square", "fen_from_cb", "square_coords"]

logger = logging.getLogger(__name__)

CB_FREE, CB_WHITE, CB_BLACK, CB_MAN, CB_KING = 0, 1, 2, 4, 8
"""Board codes of CheckerBoard's API."""
CB_DRAW, CB_WIN, CB_LOSS, CB_UNKNOWN = 0, 1, 2, 3
"""getmove's return values: its view of the game."""
CB_RESET = 1
"""``info`` bit: a new game starts (clear what you learned)."""
DEFAULT_MOVE_TIME = 1.0
"""Seconds given to getmove when the game has no time limit."""
WIN_SCORE = 29000
"""The score reported for an engine that says WIN (LOSS: minus this), as our searcher scores a won game."""

BLACK, WHITE = 0, 1
_PIECE = {"b": CB_BLACK | CB_MAN, "B": CB_BLACK | CB_KING, "w": CB_WHITE | CB_MAN, "W": CB_WHITE | CB_KING}

Row = ctypes.c_int * 8
CBBoard = Row * 8


class _Coor(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int)]


class CBMove(ctypes.Structure):
    """CheckerBoard's ``struct CBmove`` (filled by some engines; the runner reads the board instead)."""

    _fields_ = [("jumps", ctypes.c_int), ("newpiece", ctypes.c_int), ("oldpiece", ctypes.c_int),
                ("from_", _Coor), ("to", _Coor), ("path", _Coor * 12), ("del_", _Coor * 12),
                ("delpiece", ctypes.c_int * 12)]


def square_coords(square: int) -> tuple[int, int]:
    """(x, y) of a square 1-32 on CheckerBoard's board.

    >>> square_coords(1), square_coords(4), square_coords(5), square_coords(32)
    ((6, 0), (0, 0), (7, 1), (1, 7))
    """
    y, k = divmod(square - 1, 4)
    return 2 * (3 - k) + (y & 1), y


def cb_square(x: int, y: int) -> int:
    """The square 1-32 at (x, y) (0 for a light square).

    >>> [cb_square(*square_coords(s)) for s in (1, 6, 27)], cb_square(0, 1)
    ([1, 6, 27], 0)
    """
    if (x + y) % 2:
        return 0
    return 4 * y + 3 - (x - (y & 1)) // 2 + 1


def board_to_cb(board: Board) -> Any:
    """A ctypes ``int[8][8]`` holding the board's pieces."""
    cb = CBBoard()
    for square in range(1, 33):
        piece = board.piece_at(square)
        if piece is not None:
            x, y = square_coords(square)
            cb[x][y] = _PIECE[piece]
    return cb


def fen_from_cb(cb: Any, turn: int) -> str:
    """The PDN FEN of a CheckerBoard board with ``turn`` (BLACK 0, WHITE 1) to move."""
    lists: dict[int, list[str]] = {CB_BLACK: [], CB_WHITE: []}
    for square in range(1, 33):
        x, y = square_coords(square)
        value = cb[x][y]
        if value:
            colour = value & (CB_BLACK | CB_WHITE)
            if colour not in lists or not value & (CB_MAN | CB_KING):
                raise ValueError(f"square {square}: {value} is not a CheckerBoard piece code")
            lists[colour].append(("K" if value & CB_KING else "") + str(square))
    return f"{'B' if turn == BLACK else 'W'}:W{','.join(lists[CB_WHITE])}:B{','.join(lists[CB_BLACK])}"


class CheckerBoardLibrary(Engine):
    """A CheckerBoard engine library loaded in this process (use it through ``cb:PATH``, in its own process).

    ``options`` are sent as ``enginecommand("set NAME VALUE")``.
    """

    def __init__(self, path: str | Path, *, options: dict[str, Any] | None = None) -> None:
        try:
            self._lib = ctypes.CDLL(str(path))
            self._getmove = self._lib.getmove
            self._command = self._lib.enginecommand
        except (OSError, AttributeError) as exc:
            raise EngineSetupError(f"cb:{path}: not a CheckerBoard engine library: {exc}") from None
        self._getmove.restype = ctypes.c_int
        self._getmove.argtypes = [ctypes.POINTER(CBBoard), ctypes.c_int, ctypes.c_double, ctypes.c_char_p,
                                  ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int, ctypes.POINTER(CBMove)]
        self._command.restype = ctypes.c_int
        self._command.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        self.path = str(path)
        self.name = self.command("name") or Path(path).stem
        self.last_text = ""
        self.last_result: int | None = None
        self._new_game = True
        for key, value in (options or {}).items():
            self.set_option(key, value)

    def command(self, text: str) -> str:
        """``enginecommand(text)``: the engine's reply ("" when it does not know the command)."""
        command = ctypes.create_string_buffer(text.encode()[:255], 256)
        reply = ctypes.create_string_buffer(1024)
        known = self._command(command, reply)
        return reply.value.decode(errors="replace") if known else ""

    def set_option(self, name: str, value: Any) -> None:
        """``enginecommand("set NAME VALUE")``; a refused option is logged."""
        if not self.command(f"set {name} {value}"):
            logger.warning("%s: the engine refused 'set %s %s'", self.name, name, value)

    def new_game(self) -> None:
        self._new_game = True

    def play(self, state: GameState, limit: Limit) -> Move | str:
        board = state.board()
        cb = board_to_cb(board)
        text = ctypes.create_string_buffer(1024)
        playnow = ctypes.c_int(0)
        info = CB_RESET if self._new_game else 0
        self._new_game = False
        budget = limit.move_time_budget()
        self.last_result = self._getmove(ctypes.byref(cb), CB_BLACK if board.turn == BLACK else CB_WHITE,
                                         budget if budget is not None else DEFAULT_MOVE_TIME, text,
                                         ctypes.byref(playnow), info, 0, ctypes.byref(CBMove()))
        self.last_text = text.value.decode(errors="replace")
        return _move_to(board, cb)

    def reported_score(self) -> int | None:
        """WIN and LOSS as won and lost scores, DRAW as 0, UNKNOWN as none."""
        return {CB_WIN: WIN_SCORE, CB_LOSS: -WIN_SCORE, CB_DRAW: 0}.get(self.last_result)


def _move_to(board: Board, cb: Any) -> Move | str:
    """The legal move whose result is the board the engine returned, else its from-to as text (judged illegal)."""
    try:
        after = Board(fen_from_cb(cb, 1 - board.turn)).key()
    except ValueError as exc:
        raise EngineError(f"the engine returned a board that is not a position: {exc}") from None
    for move in board.legal_moves():
        child = board.copy()
        child.push(move)
        if child.key() == after:
            return move
    return _claimed_move(board, cb)


def _claimed_move(board: Board, cb: Any) -> str:
    """'from-to' of the side to move's piece that left a square and the one that appeared (or 'none')."""
    before = {s: board.piece_at(s) for s in range(1, 33)}
    mover = "b" if board.turn == BLACK else "w"
    left = [s for s, p in before.items() if p and p.lower() == mover and not _same_colour(cb, s, board.turn)]
    came = [s for s in range(1, 33) if _same_colour(cb, s, board.turn) and not (before[s] or "").lower() == mover]
    if len(left) == 1 and len(came) == 1:
        return f"{left[0]}-{came[0]}"
    return "none"


def _same_colour(cb: Any, square: int, turn: int) -> bool:
    x, y = square_coords(square)
    return bool(cb[x][y] & (CB_BLACK if turn == BLACK else CB_WHITE))
