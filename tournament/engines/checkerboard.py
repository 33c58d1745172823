"""CheckerBoard engines: libraries exporting ``getmove`` and ``enginecommand`` (KingsRow, Cake, ...).

CheckerBoard's engine API (version 2, Martin Fierz and Ed Gilbert; ``source/cb_interface.h``
and ``cb_api_reference.htm`` of github.com/eygilbert/CheckerBoard)::

    int getmove(int board[8][8], int color, double maxtime, char str[1024],
                int *playnow, int info, int moreinfo, struct CBmove *move);
    int enginecommand(char command[256], char reply[1024]);

``board[x][y]`` holds FREE 0 or a colour (WHITE 1, BLACK 2) or'ed with MAN 4 or KING 8;
square 1 is (x=6, y=0), square 4 is (0, 0), square 5 is (7, 1): Black, who moves first,
starts on rows y = 0..2 and moves towards y = 7. ``getmove`` writes the position after its
move back into ``board``; the runner, like CheckerBoard for English checkers, finds the legal
move whose result that is (multi-jump paths need no decoding, ``CBmove`` is not read). It
returns its view of the game, WIN 1, LOSS 2, DRAW 0 or UNKNOWN 3.

The time reaches ``getmove`` as CheckerBoard sends it (:func:`time_arguments`): a per-move
control is ``maxtime`` with the ``info`` bit "exact time"; a clock (``60+0.5``, ``40/120``)
packs the remaining time and the increment into ``moreinfo`` with bits 2-3 of ``info`` giving
their unit, and ``maxtime`` is CheckerBoard's share for engines that only read ``maxtime``.
``info`` bit 0 ("reset moves") marks the engine's first move of a game, and
``enginecommand("set gamehist FEN MOVES")`` precedes every ``getmove`` (:func:`game_history`).
Options go through ``enginecommand("set NAME VALUE")``; the name comes from
``enginecommand("name")`` (else the old ``enginename`` export); a library whose
``get gametype`` is not 21 (English checkers) is refused when it is loaded.
docs/checkerboard.md gives the source of each of these facts.

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
import sys
from pathlib import Path
from typing import Any

from egtb.rules.board import Board, Move
from tournament.engines.base import Engine, EngineError, EngineSetupError, GameState, Limit, PlayResult

__all__ = ["CheckerBoardLibrary", "board_to_cb", "cb_square", "fen_from_cb", "game_history", "pack_incremental_time",
           "square_coords", "time_arguments", "told_move_time"]

logger = logging.getLogger(__name__)

CB_FREE, CB_WHITE, CB_BLACK, CB_MAN, CB_KING = 0, 1, 2, 4, 8
"""Board codes of CheckerBoard's API."""
CB_DRAW, CB_WIN, CB_LOSS, CB_UNKNOWN = 0, 1, 2, 3
"""getmove's return values: its view of the game."""
CB_RESET_MOVES = 1
"""``info`` bit 0: a new game starts (forget the game's moves)."""
CB_EXACT_TIME = 2
"""``info`` bit 1: return after ``maxtime``, never later (CheckerBoard's "exact" level)."""
CB_INCR_TIME_SHIFT = 2
"""``info`` bits 2-3: 0 no clock, else ``moreinfo`` holds remaining << 16 | increment in units ..."""
INCR_TIME_UNITS = (0.001, 0.01, 0.1)
"""... of these seconds (mode 1, 2, 3): the finest unit in which the larger time fits 16 bits."""
GT_ENGLISH = 21
"""``enginecommand("get gametype")`` of English checkers (an engine that does not answer plays it)."""
GAME_TYPES = {21: "English checkers", 22: "Italian draughts", 24: "Spanish draughts", 25: "Russian draughts",
              26: "Brazilian draughts", 29: "Czech draughts"}
COMMAND_SIZE, REPLY_SIZE = 256, 1024
"""enginecommand's buffer sizes (a longer command, as ``set gamehist`` can be, gets a longer buffer)."""
DEFAULT_MOVE_TIME = 1.0
"""Seconds given to getmove when the game has no time limit (a depth or node limit: CheckerBoard has none)."""
HANDOFF_RESERVE = 0.05
"""Seconds of a per-move limit kept back from what the engine is told, for the hand-off: the move
goes from the runner through the Hub pipe to the library's process and back. Measured on a 2-core
machine at load 13 (bench/bench_deadlines.py): median 8 ms, 90th percentile 17 ms, at most 34 ms
over 40 moves. At most a quarter of the limit is kept back (tc=0.1: the engine is told 0.075 s)."""
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


def pack_incremental_time(increment: float, remaining: float) -> tuple[int, int]:
    """The ``info`` bits and the ``moreinfo`` of a clock, packed as CheckerBoard packs them.

    ``moreinfo`` is remaining << 16 | increment, each truncated to whole units of the finest of
    1 ms, 10 ms, 100 ms in which the larger fits 16 bits; ``info`` bits 2-3 name that unit (1, 2, 3).
    The remaining time is at least 5 ms and both are capped at 6553.5 s (CheckerBoard's
    ``format_time_args``).

    >>> pack_incremental_time(0.5, 60.0)  # 60000 ms and 500 ms: unit 1 (ms)
    (4, 3932160500)
    >>> pack_incremental_time(0.0, 120.0)  # 12000 cs: unit 2
    (8, 786432000)
    """
    cap = 0xFFFF * INCR_TIME_UNITS[-1]
    remaining = max(remaining, 0.005)
    largest = max(increment, remaining)
    if largest > cap:
        largest, increment, remaining = cap, min(increment, cap), min(remaining, cap)
    for mode, unit in enumerate(INCR_TIME_UNITS, 1):
        if largest <= 0xFFFF * unit:
            # C's (uint16_t)(seconds / unit) truncates, so 0.7 s is 699 ms, as CheckerBoard sends it
            packed = min(int(remaining / unit), 0xFFFF) << 16 | min(int(increment / unit), 0xFFFF)
            return mode << CB_INCR_TIME_SHIFT, packed
    raise AssertionError(f"unreachable: {largest} s fits no unit")  # pragma: no cover - the cap fits the last unit


def incremental_share(remaining: float, increment: float, initial: float) -> float:
    """CheckerBoard's ``maxtime`` under a base+increment clock (for engines that read no ``moreinfo``).

    The increment plus a share of the clock that shrinks as the control gives more to the
    increment (``maxtime_for_incremental_tc``), never more than the clock: CheckerBoard lets a
    clock go negative, the runner does not.

    >>> incremental_share(60.0, 0.5, 60.0), incremental_share(60.0, 0.0, 60.0) == 60 / 11
    (6.5, True)
    """
    if remaining < 0.4 * increment:
        share = 0.4 * increment
    elif remaining <= increment:
        share = remaining
    else:
        ratio = initial / increment if increment else float("inf")
        divisor = (11 if not increment else 10 if ratio >= 50 else 9 if ratio >= 20 else 7 if ratio >= 10
                   else 5 if ratio >= 5 else 4)
        share = min(remaining, increment + remaining / divisor)
    return min(share, remaining)


def time_arguments(limit: Limit, *, initial: float | None = None) -> tuple[float, int, int]:
    """``maxtime``, the time bits of ``info`` and ``moreinfo`` of one ``getmove`` under ``limit``.

    - Per move (``tc=0.25``): ``maxtime`` is that time less the hand-off reserve
      (:func:`told_move_time`) with CB_EXACT_TIME, CheckerBoard's "exact" level: the runner's
      per-move limit is hard, so "think about this long on average" would forfeit games.
    - A clock (``60+0.5``; ``40/120`` alike, its increment 0, as CheckerBoard knows no periods):
      CheckerBoard's incremental mode, the clock's time left and the increment in ``moreinfo``;
      ``maxtime`` is CheckerBoard's share of the clock (:func:`incremental_share`; with periods
      the clock over the moves left to the refill). ``initial`` is the clock at the engine's
      first move of the game (CheckerBoard's initial time; default: the clock now).
    - No time (a depth or node limit, which CheckerBoard has not): DEFAULT_MOVE_TIME.

    The time left is the runner's clock: the time the engine may spend before it loses.
    CheckerBoard credits the increment before a move (its clocks start at base + increment),
    the runner after, so CheckerBoard would show the increment more; sending that would let
    an engine that plans to use its whole clock overrun ours.

    >>> time_arguments(Limit(time=0.25))
    (0.2, 2, 0)
    >>> time_arguments(Limit(clock=60.0, increment=0.5))
    (6.5, 4, 3932160500)
    >>> time_arguments(Limit(clock=120.0, moves=40))
    (3.0, 8, 786432000)
    """
    if limit.clock is not None:
        bits, moreinfo = pack_incremental_time(limit.increment, limit.clock)
        if limit.moves:
            maxtime = min(limit.clock, limit.increment + limit.clock / limit.moves)
        else:
            maxtime = incremental_share(limit.clock, limit.increment, limit.clock if initial is None else initial)
        return maxtime, bits, moreinfo
    if limit.time is not None:
        return told_move_time(limit.time), CB_EXACT_TIME, 0
    return DEFAULT_MOVE_TIME, 0, 0


def told_move_time(seconds: float) -> float:
    """What an engine is told of a per-move limit: the limit less the hand-off reserve
    (:data:`HANDOFF_RESERVE`, at most a quarter of the limit).

    >>> told_move_time(0.1), told_move_time(0.25), told_move_time(5.0)
    (0.075, 0.2, 4.95)
    """
    return round(seconds - min(HANDOFF_RESERVE, seconds / 4), 6)


def game_history(state: GameState) -> str:
    """``set gamehist``, sent before each ``getmove``: the position after the game's last
    irreversible move, then the reversible moves since (king moves that capture nothing).

    >>> game_history(GameState("B:WK30:BK3,9", ("3-7", "30-26", "9-13", "26-22", "7-10")))
    'set gamehist W:WK26:BK7,13 26-22 7-10'
    """
    board = Board(state.start_fen, rule=state.rule)
    anchor, reversible = fen_from_cb(board_to_cb(board), board.turn), []
    for text in state.moves:
        move = Move.from_pdn(text, board)
        king = (board.piece_at(move.start) or "").isupper()
        board.push(move)
        if king and not move.is_capture:
            reversible.append(f"{move.start}-{move.end}")
        else:
            anchor, reversible = fen_from_cb(board_to_cb(board), board.turn), []
    return " ".join(["set gamehist", anchor, *reversible])


class CheckerBoardLibrary(Engine):
    """A CheckerBoard engine library loaded in this process (use it through ``cb:PATH``, in its own process).

    ``options`` are sent as ``enginecommand("set NAME VALUE")``. A library that is not one, or
    that plays another game than English checkers, raises EngineSetupError.

    ``islegal``, which a library may export, is never called: CheckerBoard calls it only to
    check a human's move in a game other than English checkers (for English it uses its own
    move generator), and the runner has no human moves; it judges every engine move with its
    own generator, by the board ``getmove`` returns.
    """

    def __init__(self, path: str | Path, *, options: dict[str, Any] | None = None) -> None:
        try:
            self._lib = _load_library(str(path))
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
        self._check_game_type()
        self.name = self.command("name") or self._legacy_name() or Path(path).stem
        self.last_text = ""
        self.last_result: int | None = None
        self._new_game = True
        self._initial_clock: float | None = None
        for key, value in (options or {}).items():
            self.set_option(key, value)

    def command(self, text: str) -> str:
        """``enginecommand(text)``: the engine's reply ("" when it does not know the command)."""
        known, reply = self.call(text)
        return reply if known else ""

    def call(self, text: str) -> tuple[bool, str]:
        """``enginecommand(text)``: whether the engine took the command (its return value is not 0),
        and its reply (which may be empty either way)."""
        encoded = text.encode()
        command = ctypes.create_string_buffer(encoded, max(COMMAND_SIZE, len(encoded) + 1))
        reply = ctypes.create_string_buffer(REPLY_SIZE)
        known = self._command(command, reply)
        return bool(known), reply.value.decode(errors="replace")

    def set_option(self, name: str, value: Any) -> bool:
        """``enginecommand("set NAME VALUE")``: True when the engine took it (returned non-zero,
        whatever its reply, which is often empty); a refused option is logged and False."""
        accepted, reply = self.call(f"set {name} {value}")
        if not accepted:
            logger.warning("%s: the engine refused 'set %s %s'%s", self.name, name, value,
                           f" ({reply})" if reply else "")
        return accepted

    def _check_game_type(self) -> None:
        """Refuse a library whose ``get gametype`` is not English checkers (no answer: English)."""
        reply = self.command("get gametype").strip()
        digits = reply.split()[0] if reply else str(GT_ENGLISH)
        game = int(digits) if digits.isdigit() else None
        if game != GT_ENGLISH:
            what = GAME_TYPES.get(game, "a game unknown here") if game is not None else "not a game type"
            raise EngineSetupError(f"cb:{self.path}: the engine plays game type {reply!r} ({what}), "
                                   f"not English checkers ({GT_ENGLISH})")

    def _legacy_name(self) -> str:
        """The name from the ``enginename(char[255])`` export of older engines ("" without one)."""
        function = getattr(self._lib, "enginename", None)
        if function is None:
            return ""
        function.restype, function.argtypes = ctypes.c_int, [ctypes.c_char_p]
        name = ctypes.create_string_buffer(COMMAND_SIZE)
        function(name)
        return name.value.decode(errors="replace")

    def new_game(self) -> None:
        self._new_game = True

    def play(self, state: GameState, limit: Limit) -> PlayResult:
        """getmove on the position; the move whose result is the board it returns, and its view
        of the game as a score (WIN and LOSS as won and lost scores, DRAW 0, UNKNOWN none)."""
        board = state.board()
        cb = board_to_cb(board)
        text = ctypes.create_string_buffer(REPLY_SIZE)
        playnow = ctypes.c_int(0)
        info = CB_RESET_MOVES if self._new_game else 0
        if self._new_game:
            self._initial_clock = limit.clock
        self._new_game = False
        maxtime, time_bits, moreinfo = time_arguments(limit, initial=self._initial_clock)
        self.command(game_history(state))
        self.last_result = self._getmove(ctypes.byref(cb), CB_BLACK if board.turn == BLACK else CB_WHITE, maxtime,
                                         text, ctypes.byref(playnow), info | time_bits, _signed32(moreinfo),
                                         ctypes.byref(CBMove()))
        self.last_text = text.value.decode(errors="replace")
        score = {CB_WIN: WIN_SCORE, CB_LOSS: -WIN_SCORE, CB_DRAW: 0}.get(self.last_result)
        return PlayResult(_move_to(board, cb), score, {"text": self.last_text})


def _load_library(path: str) -> Any:
    """The library, with CheckerBoard's calling convention (__stdcall: WinDLL on Windows)."""
    if sys.platform == "win32":
        return ctypes.WinDLL(path)
    return ctypes.CDLL(path)


def _signed32(value: int) -> int:
    """An unsigned 32-bit value as the C int it is passed as (CheckerBoard's uint32_t moreinfo)."""
    return value - (1 << 32) if value >= 1 << 31 else value


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
