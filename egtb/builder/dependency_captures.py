"""The ``wcdf`` categories of a compact-native dependency's capture positions, looked up in the
tables a pair has loaded.

A ``.wcdf`` file leaves out the positions whose side to move must capture
(their codes are chosen for compression, :mod:`egtb.formats.compact`). When a
pair loads such a dependency (:func:`egtb.builder.dependency_load.load_dependencies`)
those positions need their categories back, and every capture leads to fewer
pieces: to tables the pair has loaded already (its arrays hold the dependencies
in ascending piece count), or to the masters loaded beside them for this
(:func:`egtb.builder.dependency_load.capture_tables`). :func:`fill_captures` folds the
captures over those flat arrays, as the solver folds a node's captures
(:func:`egtb.builder.solve.fold_captures`); the prober's capture search, which
answered them all before at 280-410 ns a position (a third to a half of a 7-piece
dependency's positions must capture), answers only what neither holds.

At counter 0 every capture zeroes the counter, so a capture position's
category is the best over its captures of minus the category after it, as
the prober's search takes it (:func:`egtb.probe.compact_kernels._search_captures`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from egtb.builder.solve import after_capture, flat_index, new_capture_buffer
from egtb.formats.packed import packed_category
from egtb.formats.values import CAT_LOSS, CAT_WIN
from egtb.positions.material import mirror_bb
from egtb.rules.captures import capture_moves, jumping_pieces
from egtb.rules.squares import ALL_SQUARES

__all__ = ["LoadedTables", "fill_captures"]


@dataclass
class LoadedTables:
    """Where the captures of a dependency's positions are looked up: the pair's flat arrays
    (``offsets``, the ``wcdf`` row of ``rdep`` packed from flat index ``own`` on) and the tables
    loaded beside them (``below_offsets``, ``below_rdep`` packed from 0); an offset below 0 is a
    table not loaded."""

    offsets: np.ndarray
    rdep: np.ndarray
    own: int
    below_offsets: np.ndarray
    below_rdep: np.ndarray

    def fill(self, at: np.ndarray, boards: tuple[np.ndarray, ...], categories: np.ndarray,
             first: int) -> np.ndarray:
        """Write the categories of the capture positions ``at`` (``boards``: their bm, bk, wm, wk)
        into ``categories`` (position ``first`` at 0); return the indices into ``at`` of those no
        loaded table answers (:func:`fill_captures`)."""
        unanswered = np.empty(len(at), dtype=np.int64)
        count = fill_captures(*boards, at, categories, first, self.offsets, self.rdep, self.own,
                              self.below_offsets, self.below_rdep, new_capture_buffer(), unanswered)
        return unanswered[:count]


@njit(cache=True, inline="always")
def _category(bm, bk, wm, wk, offsets, rdep, own, below_offsets, below_rdep):
    """Category of a Black-to-move position after a capture, from the pair's flat arrays
    (``offsets``, ``rdep`` packed from flat index ``own`` on) or else the tables below; 3
    (no category can be) when neither holds its table."""
    i = flat_index(bm, bk, wm, wk, offsets)
    if i >= own:
        return packed_category(rdep, i - own)
    i = flat_index(bm, bk, wm, wk, below_offsets)
    if i >= 0:
        return packed_category(below_rdep, i)
    return np.int8(3)


@njit(cache=True)
def fill_captures(bm, bk, wm, wk, at, categories, first, offsets, rdep, own, below_offsets, below_rdep,
                  captures, unanswered):
    """Write the category of each capture position ``at[j]`` (Black to move: ``bm[j]``..``wk[j]``)
    into ``categories[at[j] - first]``; return how many positions no loaded table answers, their
    ``j`` in ``unanswered[:count]`` (their categories untouched).

    ``offsets`` and ``rdep`` (a row, packed three to a byte from flat index ``own`` on) are the
    pair's flat arrays, ``below_offsets`` and ``below_rdep`` (packed from 0) the tables loaded
    beside them; an offset below 0 is a table not loaded. ``captures``: the buffer of
    :func:`new_capture_buffer`.
    """
    count = 0
    for j in range(at.shape[0]):
        # mirrored, the mover's pieces (pm, pk) jump toward lower squares and every successor
        # comes out Black to move (:func:`egtb.builder.solve.after_capture`), as in the solver
        pm, pk = np.int64(mirror_bb(bm[j])), np.int64(mirror_bb(bk[j]))
        om, ok = np.int64(mirror_bb(wm[j])), np.int64(mirror_bb(wk[j]))
        empty = ALL_SQUARES & ~(pm | pk | om | ok)
        n = capture_moves(pm, pk, om | ok, empty, jumping_pieces(pm, pk, om | ok, empty, 1), 1, captures)
        best = CAT_LOSS
        for c in range(n):
            nbm, nbk, npm, npk = after_capture(pm, pk, om, ok, captures, c)
            if nbm == 0 and nbk == 0:
                best = CAT_WIN  # the opponent is left without pieces
                break
            after = _category(nbm, nbk, npm, npk, offsets, rdep, own, below_offsets, below_rdep)
            if after == 3:
                best = 3
                break
            best = max(best, -after)
            if best == CAT_WIN:
                break
        if best == 3:
            unanswered[count] = j
            count += 1
        else:
            categories[at[j] - first] = best
    return count
