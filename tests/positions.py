"""Positions for property tests, shared by the test modules (not a test module itself)."""

from __future__ import annotations

import random

from egtb.rules.board import Board


def random_game_boards(count: int, *, seed: int, min_plies: int = 1, max_plies: int = 50,
                       start: tuple[Board, ...] = ()) -> list[Board]:
    """``start`` then boards reached by random play from the initial position, still going.

    >>> [b.fen() for b in random_game_boards(1, seed=1, max_plies=2)]
    ['W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15']
    """
    rng = random.Random(seed)
    boards = list(start)
    while len(boards) < count:
        board = Board()
        for _ in range(rng.randrange(min_plies, max_plies)):
            if board.is_game_over():
                break
            board.push(rng.choice(board.legal_moves()))
        if not board.is_game_over():
            boards.append(board)
    return boards


def pydraughts_perft(board, depth: int) -> int:
    """perft by pydraughts (a ``draughts.Board``), counting duplicate capture paths once."""
    if depth == 0:
        return 1
    distinct = {}
    for move in board.legal_moves():
        distinct.setdefault((move.steps_move[0], move.steps_move[-1], frozenset(move.captures)), move)
    if depth == 1:
        return len(distinct)
    total = 0
    for move in distinct.values():
        board.push(move)
        total += pydraughts_perft(board, depth - 1)
        board.pop()
    return total
