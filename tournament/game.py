"""Play one game between two engines and say how it ended.

A game ends by the rules (no piece, no move, the move rule, repetition), by an
adjudicator (tables first, then the optional heuristics and the length cap) or
by an engine fault: an illegal move, a time forfeit, a crash or a garbage
answer. Every end is a :class:`GameResult` with a winner, a
:class:`GameTermination` kind and a human-readable reason.

>>> from tournament.engines.random import RandomEngine
>>> result = play_game(RandomEngine(seed=1), RandomEngine(seed=2))
>>> result.termination.value, result.result in ("1-0", "0-1", "1/2-1/2")
('normal', True)
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from egtb.rules.board import Board, Color, Move
from egtb.rules.notation import is_move_text
from tournament.adjudicate import Adjudicator
from tournament.config import GameSettings
from tournament.engines.base import Engine, GameState, IllegalEngineMoveError, Limit, PlayResult
from tournament.result import GameResult, GameTermination, color_name

__all__ = ["play_game"]

logger = logging.getLogger(__name__)

_HUNG_GRACE = 1.0
"""Extra seconds the runner waits for an in-process engine before abandoning it."""


@dataclass(frozen=True)
class _LiveState(GameState):
    """A GameState that hands out copies of a snapshot of the game's board instead of replaying it."""

    live_board: Board | None = field(default=None, compare=False, repr=False)
    """Snapshot of the game's board when the state was made (never given out itself)."""

    def board(self) -> Board:
        return self.live_board.copy() if self.live_board is not None else super().board()


class _EngineFault(Exception):
    """An engine fault: the side at fault loses with this termination and reason."""

    def __init__(self, termination: GameTermination, reason: str) -> None:
        super().__init__(reason)
        self.termination = termination
        self.reason = reason


@dataclass
class _Clock:
    """One side's thinking time: a per-move limit, a base+increment clock (``moves`` per period) or neither."""

    limit: Limit
    margin: float
    remaining: float | None = None
    used: float = 0.0
    moves_made: int = 0

    def __post_init__(self) -> None:
        self.remaining = self.limit.clock

    def move_limit(self) -> Limit:
        """The Limit to give the engine for its next move."""
        if self.remaining is None:
            return self.limit
        moves_left = None if not self.limit.moves else self.limit.moves - self.moves_made % self.limit.moves
        return Limit(clock=max(self.remaining, 0.0), increment=self.limit.increment,
                     depth=self.limit.depth, nodes=self.limit.nodes, moves=moves_left)

    def allowance(self) -> float | None:
        """Seconds the next move may take before the engine forfeits (None: no limit)."""
        if self.remaining is not None:
            return self.remaining + self.margin
        if self.limit.time is not None:
            return self.limit.time + self.margin
        return None

    def charge(self, elapsed: float) -> None:
        """Account for a move that took ``elapsed`` seconds (a new period refills the clock)."""
        self.used += elapsed
        self.moves_made += 1
        if self.remaining is not None:
            self.remaining += self.limit.increment - elapsed
            if self.limit.moves and self.moves_made % self.limit.moves == 0 and self.limit.clock is not None:
                self.remaining += self.limit.clock


def play_game(
    black: Engine,
    white: Engine,
    *,
    settings: GameSettings | None = None,
    start_fen: str | None = None,
    opening_moves: Sequence[str] = (),
    limits: tuple[Limit, Limit] | None = None,
    adjudicators: Sequence[Adjudicator] = (),
    names: tuple[str, str] | None = None,
) -> GameResult:
    """Play one game, ``black`` moving first, and return how it ended.

    Args:
        black, white: the engines (``new_game`` is called on both first).
        settings: the run's game settings (:class:`~tournament.config.GameSettings`): the
            draw rule, each move's Limit (``time`` per move, or a ``clock``/``increment``),
            the seconds an engine may overrun before it forfeits (``time_margin``).
        start_fen: first position (default: the standard start).
        opening_moves: moves played from ``start_fen`` before the engines take over.
        limits: Black's and White's own Limits, where their engines have their own time controls
            (default: the settings' limit for both).
        adjudicators: trackers asked in order after every ply (tables first).
        names: labels of Black and White in reasons (default: the engines' ``name``).

    Engine faults never raise: they end the game with the faulty side losing.

    >>> from tournament.engines.random import RandomEngine
    >>> r = play_game(RandomEngine(seed=3), RandomEngine(seed=4), start_fen="B:W6:BK1")
    >>> r.result, r.reason
    ('1-0', 'White has no pieces')
    """
    settings = settings or GameSettings()
    rule = settings.rule
    board = Board(start_fen, rule=rule)
    texts = [str(board.push_pdn(text)) for text in opening_moves]
    limits = limits or (settings.limit, settings.limit)
    clocks = (_Clock(limits[0], settings.time_margin), _Clock(limits[1], settings.time_margin))
    engines = (black, white)
    labels = names or (_name_of(black), _name_of(white))
    for adjudicator in adjudicators:
        adjudicator.reset()
    log = _MoveLog()
    ended = _new_games(engines, labels)
    while ended is None:
        ended = _end_by_rules_or_adjudication(board, adjudicators)
        if ended is None:
            ended = _play_one_ply(board, texts, engines, clocks, labels, log, adjudicators)
    winner, termination, reason = ended
    return GameResult(
        winner=winner, termination=termination, reason=reason,
        moves=tuple(texts), start_fen=board.start_fen,
        opening_plies=len(opening_moves), time_used=(clocks[0].used, clocks[1].used), rule=rule,
        move_times=tuple(log.times), clocks=tuple(log.clocks), scores=tuple(log.scores),
        final_clocks=(_rounded(clocks[0].remaining), _rounded(clocks[1].remaining)),
    )


@dataclass
class _MoveLog:
    """What each engine move cost and what the engine said about it."""

    times: list[float] = field(default_factory=list)
    clocks: list[float | None] = field(default_factory=list)
    scores: list[int | None] = field(default_factory=list)

    def add(self, elapsed: float, clock: "_Clock", answer: PlayResult) -> None:
        self.times.append(round(elapsed, 4))
        self.clocks.append(_rounded(clock.remaining))
        self.scores.append(_score_of(answer))


def _rounded(seconds: float | None) -> float | None:
    """Seconds to 0.1 ms for the records (None stays None). A clock run out stays below zero: a flag that
    fell 30 µs over showed -0.0, which reads as a clock with time left."""
    if seconds is None:
        return None
    return math.floor(seconds * 1e4) / 1e4 if seconds < 0 else round(seconds, 4)


def _score_of(answer: PlayResult) -> int | None:
    """The score the engine gave with its move; one that is not a number counts as none."""
    try:
        return None if answer.score is None else int(answer.score)
    except (TypeError, ValueError, OverflowError):  # a score is a courtesy, never a fault
        return None


_Ending = tuple[Color | None, GameTermination, str]


def _new_games(engines: tuple[Engine, Engine], labels: tuple[str, str]) -> _Ending | None:
    """Tell both engines a game starts; a crash there loses the game."""
    for color, engine in enumerate(engines):
        try:
            engine.new_game()
        except Exception as exc:  # noqa: BLE001 - any failure of a plug-in is a crash
            return 1 - color, GameTermination.CRASH, f"{_who(labels, color)} crashed at game start: {_describe(exc)}"
    return None


def _end_by_rules_or_adjudication(board: Board, adjudicators: Sequence[Adjudicator]) -> _Ending | None:
    """The end of the game in this position, by the rules first, then the adjudicators."""
    outcome = board.outcome()
    if outcome is not None:
        return outcome.winner, GameTermination.NORMAL, _rules_reason(board, outcome)
    for adjudicator in adjudicators:
        adjudicator.update(board)
    for adjudicator in adjudicators:
        verdict = adjudicator.adjudicatable()
        if verdict is not None:
            return verdict.winner, verdict.termination, verdict.reason
    return None


def _rules_reason(board: Board, outcome: Any) -> str:
    """Reason text for an end by the rules."""
    from egtb.rules.board import Termination

    loser = color_name(board.turn)
    if outcome.termination == Termination.NO_PIECES:
        return f"{loser} has no pieces"
    if outcome.termination == Termination.NO_MOVES:
        return f"{loser} has no legal move"
    if outcome.termination == Termination.MOVE_RULE:
        return f"draw by the move rule ({board.rule.name}: {board.rule.limit_plies} quiet plies)"
    return "draw by threefold repetition"


def _play_one_ply(board: Board, texts: list[str], engines: tuple[Engine, Engine], clocks: tuple[_Clock, _Clock],
                  labels: tuple[str, str], log: _MoveLog, adjudicators: Sequence[Adjudicator] = ()) -> _Ending | None:
    """Ask the engine to move for one move and play it (its text added to ``texts``); a fault ends the game."""
    color = board.turn
    engine, clock, who = engines[color], clocks[color], _who(labels, color)
    state = _LiveState(board.start_fen, tuple(texts), board.rule.name, board.quiet_plies, live_board=board.copy())
    used_before = clock.used
    try:
        answer = _timed_answer(engine, state, clock, who)
        move = _legal_move(answer.move, board, who)
    except _EngineFault as fault:
        logger.info("%s", fault.reason)
        return 1 - color, fault.termination, fault.reason
    log.add(clock.used - used_before, clock, answer)
    for adjudicator in adjudicators:
        record = getattr(adjudicator, "record_score", None)
        if record is not None:
            record(color, log.scores[-1])
    board.push(move)
    texts.append(str(board.move_stack[-1]))
    return None


def _timed_answer(engine: Engine, state: GameState, clock: _Clock, who: str) -> PlayResult:
    """The engine's answer, charged to its clock; faults raise _EngineFault."""
    allowance = clock.allowance()
    move_limit = clock.move_limit()
    started = time.perf_counter()
    try:
        answer = PlayResult.of(_call_with_deadline(lambda: engine.play(state, move_limit), allowance))
    except TimeoutError as exc:
        clock.charge(time.perf_counter() - started)
        raise _EngineFault(GameTermination.TIME_FORFEIT, f"{who} did not answer in time: "
                                                         f"{_describe(exc)}") from None
    except IllegalEngineMoveError as exc:
        raise _EngineFault(GameTermination.ILLEGAL_MOVE, f"{who} played an illegal move: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - plug-ins may raise anything
        raise _EngineFault(GameTermination.CRASH, f"{who} crashed: {_describe(exc)}") from None
    elapsed = time.perf_counter() - started
    clock.charge(elapsed)
    if allowance is not None and elapsed > allowance:
        raise _EngineFault(GameTermination.TIME_FORFEIT,
                           f"{who} lost on time: {elapsed:.3f}s for a move, {allowance:.3f}s allowed")
    return answer


class _Hung(TimeoutError):
    """An in-process engine did not return before its deadline."""


def _call_with_deadline(call: Callable[[], Any], allowance: float | None) -> Any:
    """call() directly when there is no time limit, else in a daemon thread abandoned on overrun."""
    if allowance is None:
        return call()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True, name="engine-move")
    thread.start()
    thread.join(allowance + _HUNG_GRACE)
    if thread.is_alive():
        raise _Hung(f"no answer after {allowance + _HUNG_GRACE:.3f}s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _legal_move(answer: Any, board: Board, who: str) -> Move:
    """The legal move the engine's answer names; an illegal or garbled answer raises _EngineFault."""
    if isinstance(answer, Move):
        if board.is_legal(answer):
            return answer
        raise _EngineFault(GameTermination.ILLEGAL_MOVE, f"{who} played an illegal move {answer} in {board.fen()}")
    if not isinstance(answer, str) or not _looks_like_move(answer):
        raise _EngineFault(GameTermination.CRASH, f"{who} answered garbage {_short(answer)} in {board.fen()}")
    try:
        return Move.from_pdn(answer.strip(), board)
    except ValueError:
        raise _EngineFault(GameTermination.ILLEGAL_MOVE,
                           f"{who} played an illegal move {answer.strip()} in {board.fen()}") from None


def _looks_like_move(text: str) -> bool:
    """Whether text is shaped like PDN move notation ("11-15", "9x18x27")."""
    return is_move_text(text.strip())


def _name_of(engine: Engine) -> str:
    """The engine's display name."""
    return str(getattr(engine, "name", None) or type(engine).__name__)


def _who(labels: tuple[str, str], color: Color) -> str:
    """'Black (name)' for reasons."""
    return f"{color_name(color)} ({labels[color]})"


def _describe(exc: BaseException) -> str:
    """'ExceptionType: message' in one line."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _short(value: Any, width: int = 40) -> str:
    """repr(value) cut to ``width`` characters."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."

