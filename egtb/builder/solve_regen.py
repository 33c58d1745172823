"""Retrograde kernel for units too big for edge lists (7 pieces, mostly kings).

:func:`egtb.builder.solve.solve_units` keeps, per node of a unit, its kings,
successor and predecessor lists (up to 4 edges per king) and a node table per
layer: about 300 bytes a node, 70 GB for the one unit of ``3k-4k``. This kernel
keeps a few bytes per node and regenerates the in-unit predecessors on the fly:

- a king step is reversible, so the predecessors of node ``i`` (Black to move,
  kings ``bk``, ``wk``) are the nodes of the other half whose white kings are
  ``mirror(bk)`` and whose black kings, after one of them stepped, are
  ``mirror(wk)``: un-step each of those kings to an empty neighbour square;
- such a node really has that move unless it must capture, which is when it has
  no king step at all: its count of in-unit moves (``quiet``, kept for every
  node) is then 0;
- the bucket queue becomes a pending depth per node and one scan of the unit per
  depth that has pending nodes (only between the lowest and highest node index
  pending there).

Per node: ``quiet`` (uint8) and, per table solved in the same pass (the
rule-free one and one per rule layer), remaining in-unit moves (uint8), shortest
exit win and longest loss (uint16), a flag byte; plus a value byte and a depth
(uint16) for the propagation. :func:`pass_tables` picks how many tables share
one move generation pass for a byte budget (down to one table per pass, then
7 bytes per node: 1.65 GB for ``3k-4k``).

The values are those of :func:`egtb.builder.solve.solve_units` (win in the
fewest plies, loss in the most, the rest drawn), so the files are identical.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.rules.movegen import M_CAPTURED, M_CROWNS, generate_moves
from egtb.positions.index import unit_size, unrank_kings
from egtb.builder.solve import (ERR_TOO_DEEP, ERR_UNSOLVED_SUCCESSOR, MAX_DEPTH,
                               NO_PIECES, OK, P_POSITIONS, PROGRESS_STEP,
                               UNSOLVED_CATEGORY, category_at, finish_unit, is_king_step,
                               move_successor, rule_exit_value, rule_free_tables, unit_buffers,
                               write_categories, write_values)
from egtb.builder.predecessors import king_step_sources, new_sources
from egtb.builder.units import locate_unit
from egtb.formats.values import LOSS, WIN


#: "No exit win" in the uint16 exit-win column.
NO_EXIT_WIN = np.uint16(0xFFFF)

# Flag bits of a node per table.
F_EXIT_DRAW = 1  #: an exit is a draw (the node cannot lose)
# Value byte of the propagation: the value code (WIN or LOSS) pending or fixed, plus
V_KIND = 3  #: mask of the value code
V_DONE = 4  #: predecessors told (the value is final)

#: Bytes per node: shared, per table of a pass, and of the propagation.
BYTES_SHARED = 1
BYTES_PER_TABLE = 6
BYTES_PROPAGATION = 3


def node_bytes(tables: int) -> int:
    """Bytes per node of the kernel when `tables` tables share a pass.

    >>> node_bytes(1), node_bytes(4)
    (10, 28)
    """
    return BYTES_SHARED + BYTES_PER_TABLE * tables + BYTES_PROPAGATION


def pass_tables(nodes: int, tables: int, budget: int) -> int:
    """How many of `tables` tables to solve per move-generation pass within `budget` bytes.

    0 when even one table per pass does not fit.

    >>> pass_tables(1000, 4, 30_000), pass_tables(1000, 4, 9_000)
    (4, 0)
    """
    for per_pass in range(tables, 0, -1):
        if nodes * node_bytes(per_pass) <= budget:
            return per_pass
    return 0


class CompactScratch:
    """Work arrays of :func:`solve_units_compact` for `nodes` nodes and `per_pass` tables."""

    def __init__(self, nodes: int, per_pass: int) -> None:
        self.quiet = np.zeros(nodes, dtype=np.uint8)
        self.remaining = np.zeros((per_pass, nodes), dtype=np.uint8)
        self.exit_win = np.zeros((per_pass, nodes), dtype=np.uint16)
        self.loss_depth = np.zeros((per_pass, nodes), dtype=np.uint16)
        self.flags = np.zeros((per_pass, nodes), dtype=np.uint8)
        self.value = np.zeros(nodes, dtype=np.uint8)
        self.depth = np.zeros(nodes, dtype=np.uint16)

    def arrays(self) -> tuple:
        """The arrays in the order :func:`solve_units_compact` takes them."""
        return (self.quiet, self.remaining, self.exit_win, self.loss_depth, self.flags,
                self.value, self.depth)


@njit(cache=True, nogil=True)
def solve_units_compact(counts, configs, offsets, wdl, dtw, rcat, rdtz, rdep, quiet_dtz, limits, man_resets,
                        quiet, remaining, exit_win, loss_depth, flags, value, depth, progress):
    """Solve the units of a pair like :func:`egtb.builder.solve.solve_units`; return a status.

    Same arguments up to `man_resets`, then the :class:`CompactScratch` arrays.
    Table 0 is the rule-free one (when solved: :func:`egtb.builder.solve.rule_free_tables`),
    then one table per rule layer; the ``remaining.shape[0]`` tables of a pass
    share one move generation.
    """
    size = unit_size(counts[0, 0], counts[0, 1], counts[0, 2], counts[0, 3])
    tables = limits.shape[0] + rule_free_tables(wdl)
    per_pass = remaining.shape[0]
    passes = (tables + per_pass - 1) // per_pass
    moves, men, base = unit_buffers()
    for u in range(configs.shape[0]):
        start = progress[P_POSITIONS]
        halves = locate_unit(configs[u], counts, offsets, size, men, base)
        n = halves * size
        for first in range(0, tables, per_pass):
            last = min(tables, first + per_pass)
            status = collect_exits(counts, halves, size, men, offsets, wdl, dtw, rcat, quiet_dtz, rdep,
                                   limits, man_resets, first, last, moves, quiet, remaining,
                                   exit_win, loss_depth, flags, progress, start,
                                   (first // per_pass) * n // passes, n // passes)
            if status != OK:
                return status
            for t in range(first, last):
                status = propagate_table(counts, halves, size, men, quiet, remaining[t - first],
                                         exit_win[t - first], loss_depth[t - first],
                                         flags[t - first], value, depth)
                if status != OK:
                    return status
                finish_table(n, size, base, value, depth, t, wdl, dtw, rcat, rdtz, limits)
        status = finish_unit(n, size, base, wdl, rcat, progress, start)
        if status != OK:
            return status
    return OK


@njit(cache=True)
def unit_kings(i, size, counts, men):
    """(half, black kings, white kings) of node i of a unit."""
    h = i // size
    bk, wk = unrank_kings(i - h * size, men[h, 0] | men[h, 1], counts[h, 1], counts[h, 3])
    return h, np.int64(bk), np.int64(wk)


@njit(cache=True)  # with reference counts: generate_moves allocates a stack for captures
def collect_exits(counts, halves, size, men, offsets, wdl, dtw, rcat, quiet_dtz, rdep, limits, man_resets,
                  first, last, moves, quiet, remaining, exit_win, loss_depth, flags, progress,
                  start, done_before, share):
    """Generate every node's moves: count its king steps, fold its exits into tables first..last-1.

    Raises `progress` from ``start + done_before`` by up to `share` positions.
    """
    n = halves * size
    rule_free = rule_free_tables(wdl)
    for i in range(n):
        if i & (PROGRESS_STEP - 1) == 0:
            progress[P_POSITIONS] = start + done_before + share * i // max(n, 1)
        h, bk, wk = unit_kings(i, size, counts, men)
        nmoves = generate_moves(men[h, 0], bk, men[h, 1], wk, 0, moves)
        steps = 0
        for t in range(last - first):
            exit_win[t, i] = NO_EXIT_WIN
            loss_depth[t, i] = 0
            flags[t, i] = 0
        for m in range(nmoves):
            if is_king_step(moves, m):
                steps += 1
                continue
            target, status = move_successor(moves, m, offsets, wdl, rcat)
            if status != OK:
                return status
            for t in range(first, last):
                if target == NO_PIECES:
                    v, d = LOSS, np.int64(0)
                elif t < rule_free:
                    v, d = wdl[target], np.int64(dtw[target])
                else:
                    layer = t - rule_free
                    category = category_at(rcat, rdep, layer, target)
                    if category == UNSOLVED_CATEGORY:
                        return ERR_UNSOLVED_SUCCESSOR
                    zeroing = moves[m, M_CAPTURED] != 0 or moves[m, M_CROWNS] != 0 \
                        or man_resets[layer]
                    dtz = np.int64(0) if zeroing else np.int64(quiet_dtz[layer, target])
                    v, d = rule_exit_value(category, dtz, limits[layer], zeroing)
                if not fold_exit(t - first, i, v, d, exit_win, loss_depth, flags):
                    return ERR_TOO_DEEP
        quiet[i] = steps
        for t in range(last - first):
            remaining[t, i] = steps
    return OK


@njit(cache=True, inline="always")
def fold_exit(t, i, v, d, exit_win, loss_depth, flags):
    """Fold one exit (value v for the opponent, in d plies) into node i; False when too deep."""
    if d + 1 > MAX_DEPTH:
        return False
    if v == LOSS:
        exit_win[t, i] = min(np.int64(exit_win[t, i]), d + 1)
    elif v == WIN:
        loss_depth[t, i] = max(np.int64(loss_depth[t, i]), d + 1)
    else:
        flags[t, i] |= F_EXIT_DRAW
    return True


@njit(cache=True, inline="always")
def _can_lose(i, remaining, exit_win, flags):
    """Every move of node i is known to lose."""
    return remaining[i] == 0 and exit_win[i] == NO_EXIT_WIN and (flags[i] & F_EXIT_DRAW) == 0


@njit(cache=True, inline="always")
def _mark(i, kind, d, value, depth, pending, low, high):
    value[i] = kind
    depth[i] = d
    pending[d] += 1
    low[d] = min(low[d], i)
    high[d] = max(high[d], i)


@njit(cache=True)
def propagate_table(counts, halves, size, men, quiet, remaining, exit_win, loss_depth, flags,
                    value, depth):
    """Retrograde over one unit for one table; leaves value codes and depths in value/depth.

    Depth d fixes the wins in d plies (the shortest) and the losses in d plies
    (the longest), in increasing d; a node never reached is a draw (value 0).
    """
    n = halves * size
    pending = np.zeros(MAX_DEPTH + 2, dtype=np.int64)
    low = np.full(MAX_DEPTH + 2, n, dtype=np.int64)
    high = np.full(MAX_DEPTH + 2, -1, dtype=np.int64)
    sources = new_sources()
    top = 0
    for i in range(n):
        value[i] = 0
        depth[i] = 0
        if exit_win[i] != NO_EXIT_WIN:
            _mark(i, WIN, exit_win[i], value, depth, pending, low, high)
            top = max(top, np.int64(exit_win[i]))
        elif _can_lose(i, remaining, exit_win, flags):
            _mark(i, LOSS, loss_depth[i], value, depth, pending, low, high)
            top = max(top, np.int64(loss_depth[i]))
    d = 0
    while d <= top:
        if pending[d] > 0:
            for i in range(low[d], high[d] + 1):
                if value[i] & V_DONE or value[i] == 0 or depth[i] != d:
                    continue
                value[i] |= V_DONE
                if d + 1 > MAX_DEPTH:
                    return ERR_TOO_DEEP
                top = max(top, tell_predecessors(i, value[i] & V_KIND, d, counts, halves, size,
                                                 men, quiet, remaining, loss_depth, exit_win,
                                                 flags, value, depth, pending, low, high, sources))
        d += 1
    for i in range(n):
        value[i] &= V_KIND
    return OK


@njit(cache=True, _nrt=False)  # no reference counts: see solve.collect_moves
def tell_predecessors(i, kind, d, counts, halves, size, men, quiet, remaining, loss_depth,
                      exit_win, flags, value, depth, pending, low, high, sources):
    """Node i is fixed as `kind` in d plies: update its predecessors
    (:func:`egtb.builder.predecessors.king_step_sources`; `sources`: its buffer); return the
    deepest mark.

    A predecessor of a loss wins in d + 1 (unless it already wins sooner); a
    predecessor of a win has one move fewer left, and is lost once none is.
    """
    h, bk, wk = unit_kings(i, size, counts, men)
    o = (1 - h) if halves == 2 else h
    top = 0
    for k in range(king_step_sources(o, size, counts, men, bk, wk, sources)):
        p = sources[k]
        if quiet[p] == 0 or value[p] & V_DONE:
            continue  # p must capture (no king step), or is fixed already
        if kind == LOSS:
            if value[p] != WIN or depth[p] > d + 1:
                _mark(p, WIN, d + 1, value, depth, pending, low, high)
                top = max(top, d + 1)
        elif value[p] == 0:
            remaining[p] -= 1
            loss_depth[p] = max(np.int64(loss_depth[p]), d + 1)
            if _can_lose(p, remaining, exit_win, flags):
                _mark(p, LOSS, loss_depth[p], value, depth, pending, low, high)
                top = max(top, np.int64(loss_depth[p]))
    return top


@njit(cache=True)
def finish_table(n, size, base, value, depth, t, wdl, dtw, rcat, rdtz, limits):
    """Write table t of the unit: values and DTW (t = 0, when solved) or a rule layer's
    categories and DTZ."""
    rule_free = rule_free_tables(wdl)
    if t < rule_free:
        write_values(n, value, depth, size, base, wdl, dtw)
    else:
        layer = t - rule_free
        write_categories(n, value, depth, size, base, rcat[layer], rdtz[layer], limits[layer])
