"""The one interface every engine meets: given the game so far and a limit, return a move.

Built-in engines, plug-ins (``package.module:Class`` or an entry point in the
group ``draughts_tournament.engines``) and external Hub programs are all
:class:`Engine` subclasses to the runner. ``play`` answers a :class:`PlayResult`:
the move and the score the engine gave it, together (python-chess's ``PlayResult``).

>>> from egtb import Board
>>> from tournament.engines.random import RandomEngine
>>> result = RandomEngine(seed=1).play(GameState.from_board(Board()), Limit(depth=1))
>>> result.move in Board().legal_moves(), result.score
(True, None)
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from egtb.errors import IllegalMoveError
from egtb.rules.draw_rules import DEFAULT_RULE

if TYPE_CHECKING:  # the board loads the move generator's numba kernels: GameState.board() imports it
    from egtb.rules.board import Board, Move


@dataclass(frozen=True)
class Limit:
    """How long an engine may think about one move; unset fields are no limit."""

    time: float | None = None
    """Seconds for this move."""
    clock: float | None = None
    """Seconds left on the engine's clock (base + increment control)."""
    increment: float = 0.0
    """Seconds added to the clock after each move."""
    depth: int | None = None
    """Search depth in plies."""
    nodes: int | None = None
    """Search nodes."""
    moves: int | None = None
    """Moves per period of a ``40/120`` control: the clock gets its base again after that many
    moves. In the Limit of one move: the moves left to make before the refill."""

    def move_time_budget(self) -> float | None:
        """Seconds an engine should aim to spend on this move (None: unbounded).

        >>> Limit(clock=60.0, moves=10).move_time_budget()
        6.0
        """
        if self.time is not None:
            return self.time
        if self.clock is not None:
            share = min(30, self.moves) if self.moves else 30
            return max(0.001, self.clock / share + self.increment * 0.8)
        return None

    def time_allowed(self) -> float | None:
        """Seconds this move may take before the engine is out of time (None: no time limit).

        >>> Limit(clock=60.0, increment=1.0).time_allowed(), Limit(time=0.5).time_allowed()
        (60.0, 0.5)
        """
        return self.clock if self.clock is not None else self.time


@dataclass(frozen=True)
class GameState:
    """Everything an engine is told about the game: start, moves, move-rule counter."""

    start_fen: str
    """FEN of the game's first position."""
    moves: tuple[str, ...] = ()
    """Moves played so far in PDN notation."""
    rule: str = DEFAULT_RULE
    """Draw-rule preset in force."""
    quiet_plies: int = 0
    """Plies since the last capture or man move (as the rule counts them), after the moves."""
    start_quiet_plies: int = 0
    """The counter at ``start_fen`` (a game set up part-way through a quiet phase)."""

    @classmethod
    def from_board(cls, board: Board) -> "GameState":
        """The state of a board that was played from its start_fen."""
        return cls(board.start_fen, tuple(str(m) for m in board.move_stack), board.rule.name,
                   board.quiet_plies, board.start_quiet_plies)

    def board(self) -> Board:
        """Replay the moves into a Board, from the counter the game started with.

        >>> state = GameState("B:WK29:BK1", ("1-6",), start_quiet_plies=7)
        >>> state.board().quiet_plies
        8
        """
        from egtb.rules.board import Board
        board = Board(self.start_fen, rule=self.rule, quiet_plies=self.start_quiet_plies)
        for text in self.moves:
            board.push_pdn(text)
        return board


@dataclass(frozen=True)
class PlayResult:
    """An engine's answer to one ``play``: its move and what it said about the position.

    >>> from egtb import Board
    >>> result = PlayResult(Board().legal_moves()[0], score=25)
    >>> str(result), result.score
    ('9-13', 25)
    >>> PlayResult.of("11-15")
    PlayResult(move='11-15', score=None, info={})
    """

    move: Move | str
    """The move: a Move, or the engine's text of one (the runner judges whether it is legal)."""
    score: int | None = None
    """Hundredths of a man for the side that moved (beyond +-29000 a win or a loss); None: none given."""
    info: Mapping[str, object] = field(default_factory=dict)
    """Anything else the engine reported with the move (depth, nodes, where the move came from)."""

    def __str__(self) -> str:
        return str(self.move)

    @classmethod
    def of(cls, answer: "PlayResult | Move | str") -> "PlayResult":
        """A PlayResult from what ``play`` returned: plug-ins written for the older interface may
        return a bare Move or PDN text, which is a move with no score."""
        return answer if isinstance(answer, PlayResult) else cls(answer)


class EngineError(RuntimeError):
    """An engine crashed, answered garbage or could not be started."""


class EngineSetupError(EngineError, ValueError):
    """An engine cannot be built from its spec or settings: found before the first game."""


class IllegalEngineMoveError(EngineError, IllegalMoveError):
    """An engine named a well-formed move that is not legal in the position.

    The rules core's IllegalMoveError (the one error for an illegal move, in the egtb error
    family) raised as an engine fault.

    >>> isinstance(IllegalEngineMoveError("22-26"), (IllegalMoveError, EngineError))
    True
    """


class EngineTimeoutError(EngineError, TimeoutError):
    """An engine did not answer within its time (plus the margin)."""


class Engine(abc.ABC):
    """An engine: start it, ask it for moves, close it.

    Subclasses implement :meth:`play`. ``name`` is what standings and PDN show.
    """

    name: str = "engine"
    persistent: bool = False
    """Whether the runner keeps it between games (external processes: costly to start)."""

    @property
    def reported_name(self) -> str:
        """The engine's own name, as the engine gives it (a program's ``id name``, a CheckerBoard
        library's ``name``), beside our label in the records; "" when it gives none."""
        return str(self.name)

    def new_game(self) -> None:
        """Called before each game (clear hash tables, restart a process...)."""

    @abc.abstractmethod
    def play(self, state: GameState, limit: Limit) -> PlayResult:
        """The move for the side to move in ``state`` with the engine's score of it.

        (The runner also takes a bare Move or PDN text, as a move without a score.)
        """

    def close(self) -> None:
        """Release processes and files."""

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
