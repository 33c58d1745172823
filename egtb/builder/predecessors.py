"""Predecessor lists of a unit (CSR) for the bucket-queue propagation of :mod:`egtb.builder.solve`.

A unit's in-unit moves are king steps. A small unit keeps the successor lists
that :func:`egtb.builder.solve.collect_moves` writes and inverts them
(:func:`invert_edges`), in the CPU's caches; a big one's inversion would write at
random over hundreds of MB, so it generates each node's list from the node
itself (:func:`list_predecessors`): a king step is reversible.

>>> generates_predecessors(11_000), generates_predecessors(15_000_000)
(False, True)
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.positions.index import rank_kings
from egtb.positions.material import mirror_bb
from egtb.rules.bitboards import lowest_bit64
from egtb.rules.squares import NEIGHBOUR

#: The squares next to each square (a global array, which numba freezes into the kernels).
_NEIGHBOUR = NEIGHBOUR.copy()
#: Units of this many nodes (king placements of a half) or more generate their predecessor lists
#: (:func:`list_predecessors`) instead of inverting their successor lists, whose random writes
#: then miss the CPU's caches: 3k-1m3k (7 pieces, halves of 14.7 M nodes) inverted in 190 ns a
#: node and generates in 179, and writes no successor list (moves 228 -> 130 ns a node);
#: 1m2k-2m1k (6 pieces, halves of 11 K nodes) inverts in 10 ns and would generate in 47.
PREDECESSORS_GENERATED_FROM = 1 << 20


def generates_predecessors(unit: int) -> bool:
    """Whether units of `unit` nodes a half generate their predecessor lists
    (:class:`egtb.builder.solve.Scratch` holds the arrays of one way)."""
    return unit >= PREDECESSORS_GENERATED_FROM


@njit(cache=True, _nrt=False)
def list_predecessors(n, size, halves, counts, men, bk_arr, wk_arr, stepping, pred_start, pred):
    """Predecessor lists (CSR) of a unit's nodes, made from the nodes themselves.

    A king step is reversible: the nodes that step into node j (Black to move,
    kings ``bk``, ``wk``) are those of the other half whose white kings are
    ``mirror(bk)`` and whose black kings, before one of them stepped, were
    ``mirror(wk)`` with that king one square back. Such a node has the step
    unless it must capture, when it has no king step at all (no bit in
    `stepping`, :func:`egtb.builder.solve.collect_moves`). Each list is written in node order,
    so no successor list is kept and none is inverted.
    """
    e = 0
    for j in range(n):
        pred_start[j] = e
        h = j // size
        o = (1 - h) if halves == 2 else h
        white = np.int64(mirror_bb(bk_arr[j]))  # the predecessor's white kings
        moved = np.int64(mirror_bb(wk_arr[j]))  # its black kings after the step
        occupied = men[o, 0] | men[o, 1]
        taken = occupied | white | moved
        rest = moved
        while rest:
            to = rest & -rest
            rest ^= to
            s = lowest_bit64(to)
            for direction in range(4):
                frm = _NEIGHBOUR[s, direction]
                if frm < 0 or (taken >> frm) & 1:
                    continue
                p = o * size + rank_kings(moved ^ to | (np.int64(1) << frm), white, occupied,
                                          counts[o, 1], counts[o, 3])
                if stepping[p >> 3] >> (p & 7) & 1:
                    pred[e] = p
                    e += 1
    pred_start[n] = e


@njit(cache=True)
def invert_edges(n, succ_start, succ, pred_start, pred):
    """Predecessor lists (CSR) from successor lists."""
    pred_start[:n + 1] = 0
    for e in range(succ_start[n]):
        pred_start[succ[e] + 1] += 1
    for i in range(n):
        pred_start[i + 1] += pred_start[i]
    fill = pred_start[:n].copy()
    for i in range(n):
        for e in range(succ_start[i], succ_start[i + 1]):
            t = succ[e]
            pred[fill[t]] = i
            fill[t] += 1
