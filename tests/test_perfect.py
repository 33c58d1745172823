"""Tests of tournament.engines.perfect.PerfectEngine against random defenders."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from egtb.rules.board import Board, Move
from egtb.tables.build import build
from egtb.tables.index import global_unrank
from egtb.tables.material import Material, count_positions
from egtb.rules.notation import Placement, format_fen
from egtb.probe import Tablebase
from tournament.engines.base import Engine, GameState, Limit
from tournament.engines.random import RandomEngine
from tournament.engines.perfect import PerfectEngine


@pytest.fixture(scope="session")
def tables_dir(tmp_path_factory) -> Path:
    """Every table up to 3 pieces."""
    directory = tmp_path_factory.mktemp("perfect_tables")
    build(3, directory=directory, jobs=2, progress=False)
    return directory


def play_out(board: Board, players: dict[int, Engine], *, max_plies: int) -> int:
    """Play until the game ends or max_plies; return the plies played."""
    plies = 0
    while board.outcome() is None and plies < max_plies:
        move = players[board.turn].play(GameState.from_board(board), Limit())
        board.push(move if isinstance(move, Move) else Move.from_pdn(move, board))
        plies += 1
    return plies


def winning_kings_positions(tb: Tablebase, count: int) -> list[str]:
    """Positions of 2 kings (Black, to move) against 1 king that the tables call won."""
    material, rng, fens = Material(0, 2, 0, 1), random.Random(5), []
    while len(fens) < count:
        fen = format_fen(Placement(*global_unrank(material, rng.randrange(count_positions(material))), 0))
        if tb.probe(fen).value == "win" and tb.probe_dtw(fen) > 5:
            fens.append(fen)
    return fens


@pytest.mark.parametrize("seed", range(6))
def test_wins_two_kings_against_one_within_dtw(tables_dir, seed):
    engine = PerfectEngine(tables_dir)
    fen = winning_kings_positions(engine.tablebase, 6)[seed]
    board = Board(fen)
    dtw = engine.tablebase.probe_dtw(board)
    plies = play_out(board, {0: engine, 1: RandomEngine(seed=seed)}, max_plies=dtw)
    outcome = board.outcome()
    assert outcome is not None and outcome.winner == 0, fen
    assert plies <= dtw
    assert engine.last_source == "tables"


def test_longest_loss_and_shortest_win(tables_dir):
    engine = PerfectEngine(tables_dir)
    board = Board("W:W18:B5")
    assert str(engine.play(GameState.from_board(board), Limit())) == "18-14"
    losing = Board("B:WK10,K14:BK1")
    ranked = engine.tablebase.best_moves(losing)
    move = engine.play(GameState.from_board(losing), Limit())
    assert move == ranked[0].move
    assert ranked[0].dtw == max(m.dtw for m in ranked)


def test_keeps_the_draw(tables_dir):
    engine = PerfectEngine(tables_dir)
    board = Board("B:WK10:BK1")  # 1-5 draws, 1-6 loses at once
    assert str(engine.play(GameState.from_board(board), Limit())) == "1-5"
    rng = random.Random(3)
    for _ in range(20):  # drawn king-against-king games stay drawn against a random mover
        board = Board("B:WK26:BK8")
        play_out(board, {0: engine, 1: RandomEngine(seed=rng.randrange(99))}, max_plies=40)
        outcome = board.outcome()
        assert outcome is None or outcome.winner != 1


def test_fallback_outside_the_tables(tables_dir):
    class Scripted(Engine):
        def play(self, state, limit):
            return state.board().legal_moves()[-1]

    engine = PerfectEngine(tables_dir, fallback=Scripted())
    board = Board()
    assert engine.play(GameState.from_board(board), Limit()) == board.legal_moves()[-1]
    assert engine.last_source == "fallback"
    alone = PerfectEngine(tables_dir)
    assert alone.play(GameState.from_board(board), Limit()) in board.legal_moves()
    assert alone.last_source == "search"
