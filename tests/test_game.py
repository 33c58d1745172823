"""Tests of tournament.game: one game, its end by the rules and by engine faults."""

from __future__ import annotations

import threading
import time

import pytest

from egtb.rules.board import BLACK, WHITE, Board, Move
from egtb.rules.notation import START_FEN
from tournament import game
from tournament.engines.base import Engine, EngineError, GameState, Limit
from tournament.engines.random import RandomEngine
from tournament.adjudicate import MaxLengthAdjudicator
from tournament.config import GameSettings
from tournament.game import play_game
from tournament.result import GameResult, GameTermination


class IllegalEngine(Engine):
    """Plays a move that is never legal from the start (a man moving backwards)."""

    name = "illegal"

    def play(self, state: GameState, limit: Limit) -> str:
        return "22-26" if state.board().turn == WHITE else "11-7"


class IllegalMoveObjectEngine(Engine):
    name = "illegal-object"

    def play(self, state: GameState, limit: Limit) -> Move:
        return Move((1, 10), frozenset({6}))


class SleepyEngine(RandomEngine):
    """A random mover that sleeps ``delay`` seconds per move."""

    def __init__(self, seed: int | None = None, delay: float = 0.3) -> None:
        super().__init__(seed=seed, name="sleepy")
        self.delay = delay

    def play(self, state: GameState, limit: Limit) -> Move:
        time.sleep(self.delay)
        return super().play(state, limit)


class CrashEngine(Engine):
    name = "crash"

    def play(self, state: GameState, limit: Limit) -> Move:
        raise EngineError("engine process exited with code 139")


class BuggyEngine(Engine):
    name = "buggy"

    def play(self, state: GameState, limit: Limit) -> Move:
        return {}["no such key"]


class GarbageEngine(Engine):
    name = "garbage"

    def play(self, state: GameState, limit: Limit) -> str:
        return "banana"


class NoAnswerEngine(Engine):
    name = "silent"

    def play(self, state: GameState, limit: Limit) -> Move:
        raise TimeoutError("no answer within 0.1s")


def test_random_game_ends_by_the_rules_and_replays() -> None:
    result = play_game(RandomEngine(seed=1), RandomEngine(seed=2))
    assert result.termination is GameTermination.NORMAL
    board = Board(result.start_fen)
    for text in result.moves:
        board.push_pdn(text)
    assert board.outcome() is not None
    assert board.outcome().result() == result.result


def test_same_seeds_same_game() -> None:
    first = play_game(RandomEngine(seed=5), RandomEngine(seed=6))
    second = play_game(RandomEngine(seed=5), RandomEngine(seed=6))
    assert first.moves == second.moves and first.result == second.result


def test_opening_moves_are_played_first_and_recorded() -> None:
    result = play_game(RandomEngine(seed=1), RandomEngine(seed=2), opening_moves=("9-13", "21-17", "5-9"))
    assert result.moves[:3] == ("9-13", "21-17", "5-9")
    assert result.opening_plies == 3 and result.start_fen == START_FEN


def test_start_fen_and_no_pieces() -> None:
    result = play_game(RandomEngine(seed=1), RandomEngine(seed=2), start_fen="W:W18:B14")
    assert (result.result, result.reason, result.moves) == ("0-1", "Black has no pieces", ("18x9",))


@pytest.mark.parametrize("engine_class", [IllegalEngine, IllegalMoveObjectEngine])
@pytest.mark.parametrize("faulty", [BLACK, WHITE])
def test_illegal_move_loses(engine_class: type[Engine], faulty: int) -> None:
    engines = [RandomEngine(seed=1), RandomEngine(seed=2)]
    engines[faulty] = engine_class()
    result = play_game(*engines, names=("b", "w"))
    assert result.termination is GameTermination.ILLEGAL_MOVE
    assert result.winner == 1 - faulty
    assert "illegal move" in result.reason and ("Black (b)" if faulty == BLACK else "White (w)") in result.reason


def test_sleeping_past_the_move_time_forfeits() -> None:
    result = play_game(RandomEngine(seed=1), SleepyEngine(delay=0.3),
                       settings=GameSettings(limit=Limit(time=0.05), time_margin=0.05))
    assert result.termination is GameTermination.TIME_FORFEIT and result.winner == BLACK
    assert "lost on time" in result.reason and result.plies == 1
    assert result.time_used[WHITE] >= 0.3


def test_clock_runs_out() -> None:
    result = play_game(SleepyEngine(delay=0.03), RandomEngine(seed=2),
                       settings=GameSettings(limit=Limit(clock=0.2, increment=0.0), time_margin=0.0))
    assert result.termination is GameTermination.TIME_FORFEIT and result.winner == WHITE
    assert result.time_used[BLACK] >= 0.2  # the clock ran out: at least the whole clock was used


class HungEngine(Engine):
    """Blocks in ``play`` until ``release`` is set (a hung engine, released by the test)."""

    name = "hung"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.returned = threading.Event()

    def play(self, state: GameState, limit: Limit) -> Move:
        self.release.wait()
        self.returned.set()
        return state.board().legal_moves()[0]


def test_a_hung_engine_is_abandoned() -> None:
    hung = HungEngine()
    try:
        result = play_game(hung, RandomEngine(seed=2),
                           settings=GameSettings(limit=Limit(time=0.01), time_margin=0.0))
        assert not hung.returned.is_set()  # the game ended while the engine was still inside play()
    finally:
        hung.release.set()
    assert result.termination is GameTermination.TIME_FORFEIT and "did not answer in time" in result.reason
    assert hung.returned.wait(timeout=60)  # the abandoned thread ends once the engine answers


def test_within_the_margin_is_fine() -> None:
    result = play_game(SleepyEngine(delay=0.01), RandomEngine(seed=2),
                       settings=GameSettings(limit=Limit(time=0.005), time_margin=5.0),
                       start_fen="B:W18:BK1,K2")
    assert result.termination is not GameTermination.TIME_FORFEIT


@pytest.mark.parametrize("engine_class,text", [(CrashEngine, "crashed: EngineError: engine process exited"),
                                                (BuggyEngine, "crashed: KeyError"),
                                                (GarbageEngine, "answered garbage 'banana'")])
def test_crash_and_garbage_lose(engine_class: type[Engine], text: str) -> None:
    result = play_game(engine_class(), RandomEngine(seed=1))
    assert result.termination is GameTermination.CRASH and result.winner == WHITE
    assert text in result.reason


def test_no_answer_is_a_time_forfeit() -> None:
    result = play_game(RandomEngine(seed=1), NoAnswerEngine())
    assert result.termination is GameTermination.TIME_FORFEIT and result.winner == BLACK


def test_engines_are_told_the_state() -> None:
    seen: list[GameState] = []

    class Spy(RandomEngine):
        def play(self, state: GameState, limit: Limit) -> Move:
            seen.append(state)
            assert state.board().fen() == GameState(state.start_fen, state.moves, state.rule).board().fen()
            return super().play(state, limit)

    play_game(Spy(seed=1), Spy(seed=2), settings=GameSettings(rule="crowning", limit=Limit(depth=3)))
    assert seen[0].moves == () and len(seen[1].moves) == 1
    assert seen[1].board().move_stack == [Move.from_pdn(seen[1].moves[0], Board())]
    assert all(s.rule == "crowning" for s in seen)


def test_result_round_trip() -> None:
    result = play_game(RandomEngine(seed=1), CrashEngine())
    assert GameResult.from_dict(result.to_dict()) == result
    assert result.is_fault and result.result == "1-0"


def test_moves_per_period_refill_the_clock() -> None:
    # 10 moves of 0.05 s need 0.5 s: more than the 0.3 s clock unless it is refilled every 2 moves
    refilled = play_game(SleepyEngine(delay=0.05), RandomEngine(seed=2),
                         settings=GameSettings(limit=Limit(clock=0.3, moves=2), time_margin=0.05),
                         adjudicators=[MaxLengthAdjudicator(max_plies=20)])
    assert refilled.termination is GameTermination.MAX_LENGTH, refilled.reason
    single = play_game(SleepyEngine(delay=0.05), RandomEngine(seed=2),
                       settings=GameSettings(limit=Limit(clock=0.3), time_margin=0.05),
                       adjudicators=[MaxLengthAdjudicator(max_plies=20)])
    assert single.termination is GameTermination.TIME_FORFEIT and single.winner == WHITE


def test_each_move_records_its_time_clock_and_score() -> None:
    from tournament.engines.search import SearchEngine

    result = play_game(SearchEngine(depth=2), RandomEngine(seed=2),
                       settings=GameSettings(limit=Limit(clock=30.0, increment=0.5)),
                       opening_moves=("11-15",), adjudicators=[MaxLengthAdjudicator(max_plies=9)])
    engine_plies = result.plies - result.opening_plies
    assert len(result.move_times) == len(result.clocks) == len(result.scores) == engine_plies == 8
    black_clocks = result.clocks[1::2]  # White moved first after the opening: Black's are the odd ones
    for before, after, spent in zip(black_clocks, black_clocks[1:], result.move_times[3::2]):
        assert after == pytest.approx(before + 0.5 - spent, abs=2e-3)
    assert all(isinstance(s, int) for s in result.scores[1::2] if s is not None)
    assert result.scores[0::2] == (None,) * 4  # the random mover reports no score
    assert result.final_clocks == (result.clocks[-1], result.clocks[-2])


def test_a_time_forfeit_records_the_clock() -> None:
    result = play_game(SleepyEngine(delay=0.03), RandomEngine(seed=2),
                       settings=GameSettings(limit=Limit(clock=0.2, increment=0.0), time_margin=0.0))
    assert result.termination is GameTermination.TIME_FORFEIT
    assert result.final_clocks[BLACK] < 0 <= result.final_clocks[WHITE]


@pytest.mark.parametrize("remaining, recorded", [(-3e-5, -0.0001), (-0.12344, -0.1235), (0.12344, 0.1234), (0.0, 0.0)])
def test_a_clock_run_out_by_less_than_the_records_step_is_still_below_zero(remaining, recorded) -> None:
    # a flag that fell 30 us over was recorded as -0.0, and the test above failed under load
    assert game._rounded(remaining) == recorded
