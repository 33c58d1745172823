"""Tests for egtb.rules.movegen: perft against published numbers, legal moves against pydraughts.

pydraughts (a test-only dependency, an independent implementation) is the
oracle: its English board uses the same square numbers and FEN as we do, lists
a capture as its steps plus the captured squares, and lists every capture path
(so two paths removing the same pieces appear twice; we compare sets).
"""

from __future__ import annotations

import pytest

from positions import mixed_fens, pydraughts_perft
from egtb.rules.board import Board
from egtb.rules.movegen import START_BM, START_WM, count_moves, generate_moves, new_move_buffer
from egtb.rules.perft import perft

draughts = pytest.importorskip("draughts")

#: Published perft from the start, depths 1-10 (DESIGN.md).
PUBLISHED_PERFT = [7, 49, 302, 1469, 7361, 36768, 179740, 845931, 3963680, 18391564]
ORACLE_POSITIONS = 20_000  # the floor; pydraughts needs about 2 ms a position

MoveKey = tuple[int, int, frozenset[int]]


# --- oracle -----------------------------------------------------------------


def oracle_moves(fen: str) -> set[MoveKey]:
    """pydraughts' legal moves of fen as (start, end, captured squares)."""
    board = draughts.Board(variant="english", fen=fen)
    steps, captures = board._legal_moves_board()
    return {(move[0][0], move[-1][1], frozenset(c for c in captured if c is not None))
            for move, captured in zip(steps, captures)}


def our_moves(fen: str) -> list[MoveKey]:
    return [(m.start, m.end, m.captured) for m in Board(fen).legal_moves()]


# --- positions --------------------------------------------------------------


def compare_with_oracle(fens: list[str]) -> dict[str, int]:
    """Assert our moves equal pydraughts' on every FEN; return what the positions covered."""
    seen = {"captures": 0, "multi-jumps": 0, "crownings": 0, "king moves": 0, "no move": 0}
    for fen in fens:
        ours = our_moves(fen)
        assert len(set(ours)) == len(ours), f"duplicate moves in {fen}"
        expected = oracle_moves(fen)
        assert set(ours) == expected, f"{fen}: extra {set(ours) - expected}, missing {expected - set(ours)}"
        _tally(seen, Board(fen), ours)
    return seen


def _tally(seen: dict[str, int], board: Board, moves: list[MoveKey]) -> None:
    seen["no move"] += not moves
    seen["captures"] += any(captured for _, _, captured in moves)
    seen["multi-jumps"] += any(len(captured) > 1 for _, _, captured in moves)
    crown = {"b": range(29, 33), "w": range(1, 5)}
    seen["crownings"] += any(board.piece_at(s) in crown and e in crown[board.piece_at(s)] for s, e, _ in moves)
    seen["king moves"] += any(board.piece_at(s) in ("B", "W") for s, _, _ in moves)


# --- perft ------------------------------------------------------------------


@pytest.mark.parametrize("depth, expected", list(enumerate(PUBLISHED_PERFT[:8], start=1)))
def test_perft_from_start_matches_published(depth, expected):
    assert perft(START_BM, 0, START_WM, 0, 0, depth) == expected


@pytest.mark.slow
@pytest.mark.parametrize("depth", [9, 10])
def test_perft_from_start_deep(depth):
    assert perft(START_BM, 0, START_WM, 0, 0, depth) == PUBLISHED_PERFT[depth - 1]


def test_perft_depth_zero_is_one():
    assert perft(START_BM, 0, START_WM, 0, 0, 0) == 1


def test_perft_divide_from_start_matches_pydraughts():
    board = Board()
    oracle = draughts.Board(variant="english")
    by_move = {move.steps_move[0] * 100 + move.steps_move[-1]: move for move in oracle.legal_moves()}
    total = 0
    for move in board.legal_moves():
        board.push(move)
        count = perft(*board.key(), 3)
        board.pop()
        oracle.push(by_move[move.start * 100 + move.end])
        assert count == pydraughts_perft(oracle, 3), str(move)
        oracle.pop()
        total += count
    assert total == PUBLISHED_PERFT[3]


@pytest.mark.parametrize("fen, depth", [
    ("B:W14,15,22,23:BK10", 3),  # the king loop: one move, two paths
    ("W:WK1,K3,18,19:B14,K22,K27", 3),
    ("B:W18,19,25,26,K31:B10,11,14,K23", 3),
])
def test_perft_of_positions_matches_pydraughts(fen, depth):
    board = Board(fen)
    assert perft(*board.key(), depth) == pydraughts_perft(draughts.Board(variant="english", fen=fen), depth)


# --- legal moves against pydraughts ----------------------------------------


@pytest.mark.parametrize("positions", [500, pytest.param(ORACLE_POSITIONS, marks=pytest.mark.slow)])
def test_legal_moves_match_pydraughts(positions):  # the 20,000: make test-slow (CI)
    seen = compare_with_oracle(mixed_fens(positions, seed=7))
    assert all(seen[kind] > positions // 100 for kind in ("captures", "multi-jumps", "crownings", "king moves")), seen


def test_resulting_positions_match_pydraughts():
    """The position after each move (crowning included) equals pydraughts'."""
    for fen in mixed_fens(200, seed=99):
        board = Board(fen)
        oracle = draughts.Board(variant="english", fen=fen)
        by_key = {(m.steps_move[0], m.steps_move[-1], frozenset(m.captures)): m for m in oracle.legal_moves()}
        for move in board.legal_moves():
            board.push(move)
            oracle.push(by_key[(move.start, move.end, move.captured)])
            assert Board(oracle.fen).key() == board.key(), f"{fen} {move}"
            oracle.pop()
            board.pop()


# --- kernels ----------------------------------------------------------------


def test_count_moves_equals_generated_moves():
    scratch, out = new_move_buffer(), new_move_buffer()
    for fen in mixed_fens(500, seed=5):
        key = Board(fen).key()
        assert count_moves(*key, scratch) == generate_moves(*key, out)
