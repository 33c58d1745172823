"""The DTZ of a material whose pair holds its DTZ file on one side alone, derived from its moves.

A win's or loss's DTZ is the fastest win over its moves (the slowest loss when
every move loses), each move counting one ply more than the DTZ after it, a
zeroing move (a man's move, a crowning) 1 ply. A quiet move of material A
(Black to move, no capture) leads to its mirror's table: the same pieces, White
to move. So when the mirror's ``.dtz`` is there, A's own DTZ file is redundant:
a position's DTZ is one ply of search into the mirror's (Syzygy's chess tables
store their DTZ for one side to move in the same way). Positions whose side
to move must capture have DTZ 1 and are never derived; cursed wins and blessed
losses have no stored DTZ on either side.

:func:`derive` takes the positions as a batch: their moves (:func:`quiet_children`),
probed through the caller's batch prober (their categories at counter 0, and
the DTZ of the decisive ones a quiet king move reaches, stored in the mirror's
file), folded over each position's moves (:func:`fold_moves`,
:func:`rule_outcome`: the same rule the verifier checks stored DTZ against).

>>> rule_outcome(NO_WIN, 9, 0, 80), rule_outcome(5, 9, 1, 80)
((-2, 9), (2, 5))
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from egtb.errors import TableError
from egtb.formats.values import CAT_BLESSED_LOSS, CAT_CURSED_WIN, CAT_DRAW, CAT_LOSS, CAT_WIN
from egtb.rules.captures import has_capture
from egtb.rules.movegen import M_BK, M_BM, M_CROWNS, M_MAN, M_WK, M_WM, MAX_MOVES, MOVE_WIDTH, generate_moves

__all__ = ["NO_WIN", "add_move", "derive", "fold_moves", "move_plies", "quiet_children", "rule_outcome"]

#: What a fastest win is over no winning move.
NO_WIN = 1 << 30


@njit(cache=True, inline="always")
def rule_outcome(fastest_win, longest_loss, draws, limit):
    """(category, DTZ) of a position under a move rule from its moves: the fastest win in plies
    (NO_WIN: no move wins), else a draw when a move draws, else the slowest loss; a win or loss of
    more than ``limit`` plies is cursed or blessed.

    >>> rule_outcome(NO_WIN, 90, 0, 80), rule_outcome(7, 0, 1, 80)
    ((-1, 90), (2, 7))
    """
    if fastest_win != NO_WIN:
        return (CAT_WIN if fastest_win <= limit else CAT_CURSED_WIN), fastest_win
    if draws:
        return CAT_DRAW, 0
    return (CAT_LOSS if longest_loss <= limit else CAT_BLESSED_LOSS), longest_loss


@njit(cache=True, inline="always")
def move_plies(category, dtz, zeroing, limit):
    """Plies to the next zeroing move through a move into a position of ``category`` (at counter
    0, for its side to move) and ``dtz``: 1 through a zeroing move, else one more than its DTZ; a
    cursed win or blessed loss after it counts past the limit."""
    decisive = category == CAT_WIN or category == CAT_LOSS
    if zeroing:
        return 1 if decisive else limit + 1
    return dtz + 1 if decisive else limit + 2


@njit(cache=True, inline="always")
def add_move(fastest_win, longest_loss, draws, category, dtz, zeroing, limit):
    """(fastest win, slowest loss, draws) over a position's moves so far (from NO_WIN, 0, 0) with
    one more move, into a position of ``category`` and ``dtz`` for its side to move
    (:func:`move_plies`); :func:`rule_outcome` then gives the position's category and DTZ."""
    if category == CAT_DRAW:
        return fastest_win, longest_loss, draws + 1
    plies = move_plies(category, dtz, zeroing, limit)
    if category < 0:
        return min(fastest_win, plies), longest_loss, draws
    return fastest_win, max(longest_loss, plies), draws


@njit(cache=True)
def quiet_children(bm, bk, wm, wk, turn, man_resets, first, out, parent, zeroing, capture):
    """The positions after every move of positions ``first``.. into ``out`` (rows bm, bk, wm, wk,
    turn), ``parent`` the position each is a move of, ``zeroing`` whether the move zeroes the
    counter (a crowning, and with ``man_resets`` any man move), until the next position's moves
    might not fit; a position whose side must capture has none (``capture[i]`` set: its DTZ is 1).
    Returns (the next position, the rows filled)."""
    moves = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    k = 0
    i = first
    while i < bm.shape[0] and k + MAX_MOVES <= out.shape[0]:
        capture[i] = has_capture(bm[i], bk[i], wm[i], wk[i], turn[i])
        if capture[i]:
            i += 1
            continue
        n = generate_moves(bm[i], bk[i], wm[i], wk[i], turn[i], moves)
        for m in range(n):
            out[k, 0], out[k, 1], out[k, 2], out[k, 3] = moves[m, M_BM], moves[m, M_BK], moves[m, M_WM], moves[m, M_WK]
            out[k, 4] = 1 - turn[i]
            parent[k] = i
            zeroing[k] = moves[m, M_CROWNS] != 0 or (man_resets and moves[m, M_MAN] != 0)
            k += 1
        i += 1
    return i, k


@njit(cache=True)
def fold_moves(parent, category, dtz, zeroing, limit, out_category, out_dtz):
    """Each position's category and DTZ over its moves (``parent``: the position of each move,
    ascending; ``category`` and ``dtz`` of the position after it, for its side to move); a
    position without moves loses at once (DTZ 0)."""
    k = 0
    for i in range(out_category.shape[0]):
        fastest_win, longest_loss, draws = NO_WIN, 0, 0
        while k < parent.shape[0] and parent[k] == i:
            fastest_win, longest_loss, draws = add_move(fastest_win, longest_loss, draws, category[k], dtz[k],
                                                        zeroing[k], limit)
            k += 1
        out_category[i], out_dtz[i] = rule_outcome(fastest_win, longest_loss, draws, limit)


def derive(arrays: tuple[np.ndarray, ...], category: np.ndarray, *, limit: int, man_resets: bool,
           probe: Callable[[tuple[np.ndarray, ...], int], tuple[np.ndarray, np.ndarray]], where: str) -> np.ndarray:
    """The DTZ (uint16) of wins and losses (``category``: each one's, at counter 0), given as
    (bm, bk, wm, wk, turn) int64 ``arrays``, from their moves (1 where the side to move must
    capture).

    ``probe(children, counter)`` gives the (category, DTZ) of positions under the same rule from
    a counter: 0 for those a zeroing move reaches (only their categories count), ``limit`` for the
    others (their DTZ is read: stored in the mirror's file). TableError, naming ``where``, when the
    categories the moves give are not the ones stored.

    >>> derive(tuple(np.zeros(0, dtype=np.int64) for _ in range(5)), np.zeros(0, dtype=np.int8),
    ...        limit=80, man_resets=True, probe=None, where="t").tolist()
    []
    """
    n = len(category)
    capture = np.zeros(n, dtype=np.bool_)
    rows, parent, zeroing = _children(arrays, man_resets, capture)
    count = len(rows)
    child_category, child_dtz = np.zeros(count, dtype=np.int64), np.zeros(count, dtype=np.int64)
    for counter, chosen in ((0, np.flatnonzero(zeroing)), (limit, np.flatnonzero(~zeroing))):
        if len(chosen):
            found_category, found_dtz = probe(tuple(np.ascontiguousarray(rows[chosen, c]) for c in range(5)), counter)
            child_category[chosen], child_dtz[chosen] = found_category, found_dtz
    out_category, out_dtz = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    fold_moves(parent, child_category, child_dtz, zeroing, limit, out_category, out_dtz)
    out_dtz[capture] = 1
    wrong = np.flatnonzero((out_category != category) & ~capture)
    if len(wrong):
        i = int(wrong[0])
        raise TableError(f"{where}: the category {int(category[i])} of position "
                         f"{tuple(int(a[i]) for a in arrays)} is not the {int(out_category[i])} its moves give")
    return out_dtz.astype(np.uint16)


#: Moves a position is given room for at first (a king has at most 4, a man 2).
MOVES_A_POSITION = 16


def _children(arrays: tuple[np.ndarray, ...], man_resets: bool,
              capture: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows of the positions after each move, the position each is a move of, whether it zeroes
    the counter) of positions (:func:`quiet_children`, part by part); ``capture`` set where the
    side to move must capture (no rows)."""
    n = len(arrays[0])
    parts, first = [], 0
    while first < n or not parts:
        size = MOVES_A_POSITION * (n - first) + MAX_MOVES
        rows, parent, zeroing = (np.empty((size, 5), dtype=np.int64), np.empty(size, dtype=np.int64),
                                 np.empty(size, dtype=np.bool_))
        first, filled = quiet_children(*arrays, man_resets, first, rows, parent, zeroing, capture)
        parts.append((rows[:filled], parent[:filled], zeroing[:filled]))
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate(column) for column in zip(*parts))
