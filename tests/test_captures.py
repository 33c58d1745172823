"""Tests for egtb.rules.captures, the one capture enumerator, against pydraughts.

pydraughts (test-only, an independent implementation) lists every capture path
of a position, so a king loop appears once per path; the enumerator lists each
(start, end, captured pieces) once, with one of those paths.
"""

from __future__ import annotations

import random

import pytest

from positions import mixed_fens, placed_fens
from egtb.rules.board import Board
from egtb.rules.notation import Placement, format_fen
from egtb.rules.captures import (C_CAPTURED, C_FROM, C_NJUMPS, C_PATH, C_TO, capture_moves, capture_paths,
                                 count_captures, has_capture, jumping_pieces, new_capture_buffer)
from egtb.rules.squares import ALL_SQUARES, coords_to_square, squares_of

draughts = pytest.importorskip("draughts")

CaptureKey = tuple[int, int, frozenset[int]]


def oracle_captures(fen: str) -> dict[CaptureKey, set[tuple[int, ...]]]:
    """pydraughts' captures of fen: (start, end, captured squares) -> every landing-square path."""
    board = draughts.Board(variant="english", fen=fen)
    steps, captured = board._legal_moves_board()
    found: dict[CaptureKey, set[tuple[int, ...]]] = {}
    for move, taken in zip(steps, captured):
        taken = frozenset(c for c in taken if c is not None)
        if taken:
            found.setdefault((move[0][0], move[-1][1], taken), set()).add(tuple(step[1] for step in move))
    return found


def side_relative(fen: str) -> tuple[int, int, int, int, int]:
    """(own men, own kings, opponent pieces, empty squares, turn) of fen's side to move."""
    bm, bk, wm, wk, turn = Board(fen).key()
    pm, pk, opp = (bm, bk, wm | wk) if turn == 0 else (wm, wk, bm | bk)
    return pm, pk, opp, ALL_SQUARES & ~(bm | bk | wm | wk), turn


def our_captures(fen: str) -> list[tuple[CaptureKey, tuple[int, ...]]]:
    """The enumerator's captures of fen as ((start, end, captured squares), path), in its order."""
    pm, pk, opp, empty, turn = side_relative(fen)
    buf = new_capture_buffer(paths=True)
    n = capture_paths(pm, pk, opp, empty, jumping_pieces(pm, pk, opp, empty, turn), turn, buf)
    rows = []
    for i in range(n):
        (start,), (end,) = squares_of(int(buf[i, C_FROM])), squares_of(int(buf[i, C_TO]))
        path = tuple(squares_of(int(buf[i, C_PATH + j]))[0] for j in range(buf[i, C_NJUMPS]))
        rows.append(((start, end, frozenset(squares_of(int(buf[i, C_CAPTURED])))), path))
    return rows


def loop_fens(count: int, *, seed: int) -> list[str]:
    """Positions where a king of the side to move can close a loop (two paths, one move), plus random pieces.

    The king stands on a corner of a diamond of four empty landing squares with
    an opponent's piece between each two, as in B:W14,15,22,23:BK10.
    """
    rng = random.Random(seed)
    fens = []
    while len(fens) < count:
        r, c = rng.randrange(4), rng.randrange(2, 6)
        if (r + c) % 2 == 0:
            continue
        turn = rng.randint(0, 1)
        flip = rng.random() < 0.5  # the diamond below the king, or (the board turned) above it

        def at(dr, dc):
            return coords_to_square(7 - r - dr, 7 - c - dc) if flip else coords_to_square(r + dr, c + dc)
        king = at(0, 0)
        landings = {at(2, -2), at(4, 0), at(2, 2)}
        between = [at(1, -1), at(3, -1), at(3, 1), at(1, 1)]
        bits = [0, 0, 0, 0]  # bm, bk, wm, wk
        own, opp = (0, 2) if turn == 0 else (2, 0)
        bits[own + 1] |= 1 << (king - 1)
        for square in between:
            bits[opp + rng.randint(0, 1)] |= 1 << (square - 1)
        free = [s for s in range(1, 33) if s not in landings and s != king and s not in between]
        for square in rng.sample(free, rng.randint(0, 8)):
            black = rng.random() < 0.5
            crown_row = square >= 29 if black else square <= 4
            bits[(0 if black else 2) + int(crown_row or rng.random() < 0.3)] |= 1 << (square - 1)
        fens.append(format_fen(Placement(*bits, turn)))
    return fens


@pytest.mark.parametrize("positions", [600, pytest.param(12_000, marks=pytest.mark.slow)])
def test_captures_and_paths_match_pydraughts(positions):
    fens = (mixed_fens(positions * 2 // 3, seed=30) + placed_fens(positions // 6, seed=31, max_per_side=4)
            + loop_fens(positions // 6, seed=33))
    seen = {"captures": 0, "multi-jumps": 0, "crownings": 0, "loops": 0}
    for fen in fens:
        ours = our_captures(fen)
        expected = oracle_captures(fen)
        keys = [key for key, _ in ours]
        assert len(set(keys)) == len(keys), f"a capture listed twice in {fen}"
        assert set(keys) == set(expected), f"{fen}: extra {set(keys) - set(expected)}, missing {set(expected) - set(keys)}"
        for key, path in ours:
            assert path in expected[key], f"{fen}: path {path} of {key} is not one of {expected[key]}"
        seen["captures"] += bool(ours)
        seen["multi-jumps"] += any(len(path) > 1 for _, path in ours)
        seen["loops"] += any(len(paths) > 1 for paths in expected.values())
        seen["crownings"] += any(_crowns(fen, start, end) for (start, end, _), _ in ours)
    assert all(count > positions // 100 for count in seen.values()), seen


def _crowns(fen: str, start: int, end: int) -> bool:
    piece = Board(fen).piece_at(start)
    return (piece == "b" and end >= 29) or (piece == "w" and end <= 4)


def test_a_man_crowned_mid_sequence_stops():
    # White's man on 11 jumps 7 and lands on 2, crowned: it may not go on over 6 to 9 as a king.
    assert our_captures("W:W11:B6,7") == [((11, 2, frozenset({7})), (2,))]
    assert our_captures("W:WK11:B6,7") == [((11, 9, frozenset({6, 7})), (2, 9))]


def test_men_capture_forward_only():
    # Black's man on 14 has White pieces on 9 and 10 behind it, empty squares beyond: no capture.
    pm, pk, opp, empty, turn = side_relative("B:W9,10:B14")
    assert jumping_pieces(pm, pk, opp, empty, turn) == 0
    assert our_captures("B:W9,10:BK14")  # a king on 14 may


def test_the_other_kernels_agree_with_the_listing():
    """capture_moves lists the same rows in the same order; count_captures and has_capture agree."""
    listing, plain = new_capture_buffer(paths=True), new_capture_buffer()
    for fen in mixed_fens(2000, seed=32):
        pm, pk, opp, empty, turn = side_relative(fen)
        jumpers = jumping_pieces(pm, pk, opp, empty, turn)
        n = capture_paths(pm, pk, opp, empty, jumpers, turn, listing)
        assert capture_moves(pm, pk, opp, empty, jumpers, turn, plain) == n, fen
        assert (plain[:n, :3] == listing[:n, :3]).all(), fen
        assert count_captures(pm, pk, opp, empty, turn, plain) == n, fen
        assert has_capture(*Board(fen).key()) == (jumpers != 0) == (n > 0), fen
