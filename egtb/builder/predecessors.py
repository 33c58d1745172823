"""Predecessor lists of a unit (CSR) for the bucket-queue propagation of :mod:`egtb.builder.solve`.

A unit's in-unit moves are king steps, and a king step is reversible: the nodes
with a step into a node are found from that node alone (:func:`king_step_sources`).
A unit solved for one table (the compact-native and 7-piece builds: the ``wcdf``
layer alone) keeps no list: the propagation finds a node's predecessors when it
resolves the node (:data:`TOLD`), once, and never for a draw. A unit solved for
several tables keeps predecessor lists that each table's propagation reads: a
small unit keeps the successor lists that :func:`egtb.builder.solve.collect_moves`
writes and inverts them (:func:`invert_edges`, :data:`INVERTED`), in the CPU's
caches; a big one's inversion would write at random over hundreds of MB, so it
generates each node's list from the node itself (:func:`list_predecessors`,
:data:`GENERATED`).

>>> predecessor_way(11_000, tables=2), predecessor_way(15_000_000, tables=2), predecessor_way(11_000, tables=1)
('inverted', 'generated', 'told')
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
#: Units of this many nodes (king placements of a half) or more solved for several tables generate
#: their predecessor lists (:func:`list_predecessors`) instead of inverting their successor lists,
#: whose random writes then miss the CPU's caches: 3k-1m3k (7 pieces, halves of 14.7 M nodes)
#: inverted in 190 ns a node and generates in 179, and writes no successor list (moves 228 -> 130
#: ns a node); 1m2k-2m1k (6 pieces, halves of 11 K nodes) inverts in 10 ns and would generate in 47.
PREDECESSORS_GENERATED_FROM = 1 << 20
#: The ways a unit's propagation finds a node's predecessors (:func:`predecessor_way`).
INVERTED, GENERATED, TOLD = "inverted", "generated", "told"


def predecessor_way(unit: int, *, tables: int) -> str:
    """How a unit of `unit` nodes a half, solved for `tables` tables, finds its nodes' predecessors
    (:class:`egtb.builder.solve.Scratch` holds the arrays of that way): :data:`TOLD` for one table,
    else :data:`GENERATED` from :data:`PREDECESSORS_GENERATED_FROM` nodes, else :data:`INVERTED`."""
    if tables == 1:
        return TOLD
    return GENERATED if unit >= PREDECESSORS_GENERATED_FROM else INVERTED


#: Room for a node's king-step predecessors (:func:`king_step_sources`): four squares back for
#: each of a side's pieces at most.
MAX_SOURCES = 4 * 12


@njit(cache=True)
def new_sources():
    """The buffer :func:`king_step_sources` writes a node's predecessors to."""
    return np.empty(MAX_SOURCES, dtype=np.int64)


@njit(cache=True, inline="always")
def king_step_sources(o, size, counts, men, bk, wk, sources):
    """The nodes of half `o` whose king steps lead to a node with kings `bk`, `wk` (Black to move):
    their indices written to `sources` (:func:`new_sources`); return how many.

    A king step is reversible: those nodes' white kings are ``mirror(bk)``, and their black
    kings, before one of them stepped, were ``mirror(wk)`` with that king one square back.
    Some of them may have to capture, and then have no king step: the caller tells.
    """
    white = np.int64(mirror_bb(bk))  # the predecessor's white kings
    moved = np.int64(mirror_bb(wk))  # its black kings after the step
    occupied = men[o, 0] | men[o, 1]
    taken = occupied | white | moved
    count = 0
    rest = moved
    while rest:
        to = rest & -rest
        rest ^= to
        s = lowest_bit64(to)
        for direction in range(4):
            frm = _NEIGHBOUR[s, direction]
            if frm < 0 or (taken >> frm) & 1:
                continue
            sources[count] = o * size + rank_kings(moved ^ to | (np.int64(1) << frm), white, occupied,
                                                   counts[o, 1], counts[o, 3])
            count += 1
    return count


@njit(cache=True, inline="always")
def predecessors_from(j, halves, size, counts, men, bk_arr, wk_arr, stepping, sources):
    """The nodes of a unit with a king step into node j, written to `sources` (its buffer,
    :func:`new_sources`); return how many.

    Those :func:`king_step_sources` finds, less those that must capture: such a node has no
    king step at all (no bit in `stepping`, :func:`egtb.builder.solve.collect_moves`).
    """
    h = j // size
    o = (1 - h) if halves == 2 else h
    kept = 0
    for k in range(king_step_sources(o, size, counts, men, bk_arr[j], wk_arr[j], sources)):
        p = sources[k]
        if stepping[p >> 3] >> (p & 7) & 1:
            sources[kept] = p
            kept += 1
    return kept


@njit(cache=True, _nrt=False)
def list_predecessors(n, size, halves, counts, men, bk_arr, wk_arr, stepping, pred_start, pred, sources):
    """Predecessor lists (CSR) of a unit's nodes, made from the nodes themselves
    (:func:`predecessors_from`; `sources`: its buffer). Each list is written in node order, so
    no successor list is kept and none is inverted.
    """
    e = 0
    for j in range(n):
        pred_start[j] = e
        for k in range(predecessors_from(j, halves, size, counts, men, bk_arr, wk_arr, stepping, sources)):
            pred[e] = sources[k]
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
