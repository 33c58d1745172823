"""Positions for property tests, shared by the test modules (not a test module itself)."""

from __future__ import annotations

import random

from egtb.rules.board import Board
from egtb.rules.notation import Placement, format_fen


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


def played_fens(count: int, *, seed: int, max_plies: int = 200) -> list[str]:
    """FENs met in random games from the start (men, captures, then kings), a new game after max_plies.

    >>> played_fens(2, seed=1)[0]
    'B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12'
    """
    rng = random.Random(seed)
    fens: list[str] = []
    board = Board()
    while len(fens) < count:
        if board.is_game_over() or len(board.move_stack) >= max_plies:
            board = Board()
        fens.append(board.fen())
        board.push(rng.choice(board.legal_moves()))
    return fens


def placed_fens(count: int, *, seed: int, max_per_side: int = 12) -> list[str]:
    """FENs of random placements: 1..max_per_side pieces a side, any share of kings, either side to move."""
    rng = random.Random(seed)
    return [_random_placement(rng, max_per_side) for _ in range(count)]


def _random_placement(rng: random.Random, max_per_side: int) -> str:
    squares = rng.sample(range(1, 33), 32)
    n_black, n_white = rng.randint(1, max_per_side), rng.randint(1, max_per_side)
    king_share = rng.random()
    bits = [0, 0, 0, 0]  # bm, bk, wm, wk
    for i, square in enumerate(squares[:n_black + n_white]):
        black = i < n_black
        on_crown_row = square >= 29 if black else square <= 4
        king = on_crown_row or rng.random() < king_share
        bits[(0 if black else 2) + int(king)] |= 1 << (square - 1)
    return format_fen(Placement(*bits, rng.randint(0, 1)))


def mixed_fens(count: int, *, seed: int, max_per_side: int = 12) -> list[str]:
    """Half :func:`played_fens`, half :func:`placed_fens` (kings, multi-jumps, crownings, king loops)."""
    half = count // 2
    return played_fens(half, seed=seed) + placed_fens(count - half, seed=seed + 1, max_per_side=max_per_side)


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


def pydraughts_replay(fen: str, line: list[str]):
    """A ``draughts.Board`` after ``line`` (PDN moves with full paths) played from ``fen`` by pydraughts,
    an oracle independent of our rules: AssertionError at the first move it does not find legal.

    >>> pydraughts_replay("B:W14,23:B9", ["9x18x27"]).is_over()
    True
    """
    import re

    import draughts

    board = draughts.Board(variant="english", fen=fen)
    for number, text in enumerate(line, start=1):
        path = [int(square) for square in re.split("[-x]", text)]
        found = [m for m in board.legal_moves() if list(m.steps_move) == path]
        assert found, f"move {number} ({text}) is not legal for pydraughts in {board.fen}"
        board.push(found[0])
    return board
