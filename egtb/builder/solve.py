"""Retrograde solver kernels (numba) for one material pair {M, mirror(M)}.

Values are stored for Black to move. A material pair is cut into units, one per
men configuration ``c`` of M together with ``mirror(c)`` in mirror(M): king
moves stay inside a unit, man moves go to a unit whose potential
:func:`egtb.builder.units.config_potential` is one higher (solved earlier, since units run in
decreasing potential), captures and crownings leave the pair (solved earlier,
in other materials).

All tables a kernel needs live in two flat arrays (``wdl``: value codes, ``dtw``:
plies to the end) with a per-material offset table indexed by
:func:`egtb.positions.index.material_code`; the pair being solved is part of them and is filled in
place.

Rule layers (one per move-rule preset, see :mod:`egtb.builder.rule_layer`) ride on
the same move generation: every node's moves are generated once, its in-unit
king steps (always quiet) become the unit's graph, and each exit is folded into
one node table per layer: the rule-free value, and per preset the value the exit
has under that preset (a zeroing exit by the target's category at counter 0, a
quiet man move by the target's own DTZ plus one). Then the same bucket-queue
propagation runs once per layer. A layer is kept in the flat arrays ``rcat``
(:class:`egtb.formats.values.Category` codes, :data:`UNSOLVED_CATEGORY` until
solved) and ``rdtz`` (the layer's DTZ); the propagation writes value codes,
which :func:`finish_layer` turns into categories.

Value codes (win/loss/draw for the side to move):

>>> UNKNOWN, DRAW, WIN, LOSS
(0, 1, 2, 3)
>>> int(material_code(1, 0, 0, 1))
4097
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.builder.predecessors import (INVERTED, TOLD, invert_edges, list_predecessors, new_sources,
                                       predecessor_way, predecessors_from)
from egtb.builder.units import locate_unit
from egtb.formats.packed import packed_category
from egtb.positions.index import (BINOM, material_code, popcount, position_index, rank_kings, rank_men,
                               rank_subset, unit_size, unrank_unit)
from egtb.positions.material import mirror_bb
from egtb.formats.values import (CAT_CURSED_WIN, CAT_WIN, DRAW, DTZ_SATURATED, LOSS, UNKNOWN,
                                 UNSOLVED_CATEGORY, WIN)
from egtb.rules.bitboards import lowest_bit64
from egtb.rules.captures import C_CAPTURED, C_FROM, C_TO, CAPTURE_ROWS, MAX_JUMPS, capture_moves, jumping_pieces
from egtb.rules.movegen import M_BK, M_BM, M_CAPTURED, M_MAN, M_WK, M_WM, MAX_MOVES, MOVE_WIDTH
from egtb.rules.squares import ALL_SQUARES, EVEN_NOT_RIGHT, ODD_NOT_LEFT, WHITE_CROWN_ROW


#: Offset of a material not loaded in the flat arrays.
NOT_LOADED = -1
#: Deepest DTW the bucket queue handles (far beyond any table up to 8 pieces).
MAX_DEPTH = 4096
#: Type of the per-node tables: every column (moves, remaining moves, distances up to
#: MAX_DEPTH + 1) fits in 16 bits, half the memory of the biggest unit's tables.
NODE_DTYPE = np.int16
#: "No win found through an exit" marker (above any distance the solver accepts).
NO_WIN = np.int16(np.iinfo(NODE_DTYPE).max)

#: Progress counters a kernel keeps up to date (see :func:`solve_units`).
P_POSITIONS = 0  #: positions solved, counting the unit being solved in part
P_UNITS = 1  #: units finished
PROGRESS_SIZE = 2
#: Nodes between two progress writes inside a unit (a power of two).
PROGRESS_STEP = 1 << 15

#: Kernel status codes.
OK = 0
ERR_MISSING_TABLE = 1  #: a successor's material is not loaded
ERR_UNSOLVED_SUCCESSOR = 2  #: a successor outside the unit is still UNKNOWN
ERR_TOO_DEEP = 3  #: a DTW above MAX_DEPTH
ERR_RULE_MISMATCH = 4  #: a rule layer disagrees with the rule-free value
#: What each failing status means, for error messages.
STATUS_NAMES = {
    ERR_MISSING_TABLE: "a successor's material is not loaded",
    ERR_UNSOLVED_SUCCESSOR: "a successor outside the unit is still unsolved",
    ERR_TOO_DEEP: f"a distance above the solver's limit of {MAX_DEPTH} plies",
    ERR_RULE_MISMATCH: "a rule layer's win/draw/loss differs from the rule-free value",
}


@njit(cache=True, inline="always")
def flat_index(bm, bk, wm, wk, offsets):
    """Index in the flat arrays of a Black-to-move position, or -1 when not loaded."""
    code = material_code(popcount(bm), popcount(bk), popcount(wm), popcount(wk))
    base = offsets[code]
    if base < 0:
        return np.int64(-1)
    return base + position_index(bm, bk, wm, wk)



#: Successor "index" of a position whose side to move has no pieces (lost in 0).
NO_PIECES = np.int64(-2)


@njit(cache=True, inline="always")
def rule_free_tables(wdl):
    """1 when the rule-free table (values and DTW) is solved, else 0.

    A build without it (only rule layers, the default from 7 pieces on)
    passes empty ``wdl`` and ``dtw`` arrays: node table 0 is then the first
    rule layer, and whether a position is solved is read from that layer.
    """
    return 1 if wdl.shape[0] > 0 else 0


@njit(cache=True, inline="always")
def successor_index(bm, bk, wm, wk, offsets, wdl, rcat):
    """(flat index, status) of the position after Black's move (White to move).

    The successor is mirrored to Black to move first; a side left without
    pieces gives :data:`NO_PIECES` (it has lost in 0).
    """
    nbm = np.int64(mirror_bb(wm))
    nbk = np.int64(mirror_bb(wk))
    nwm = np.int64(mirror_bb(bm))
    nwk = np.int64(mirror_bb(bk))
    if nbm == 0 and nbk == 0:
        return NO_PIECES, OK
    i = flat_index(nbm, nbk, nwm, nwk, offsets)
    return i, index_status(i, wdl, rcat)


@njit(cache=True, inline="always")
def index_status(i, wdl, rcat):
    """OK for a successor's flat index, ERR_MISSING_TABLE when its table is not loaded
    (i < 0), ERR_UNSOLVED_SUCCESSOR when its value is not known yet (in the
    rule-free table, or without it in the first rule layer)."""
    if i < 0:
        return ERR_MISSING_TABLE
    if wdl.shape[0] > 0:
        if wdl[i] == UNKNOWN:
            return ERR_UNSOLVED_SUCCESSOR
    elif i < rcat.shape[1] and rcat[0, i] == UNSOLVED_CATEGORY:  # a dependency is finished
        return ERR_UNSOLVED_SUCCESSOR
    return OK


@njit(cache=True, inline="always")
def category_at(rcat, rdep, layer, i):
    """A rule layer's category of flat index i: the pair's own (``rcat``, its positions come
    first) or a finished dependency's, packed (``rdep``, :mod:`egtb.formats.packed`)."""
    own = rcat.shape[1]
    if i < own:
        return rcat[layer, i]
    return packed_category(rdep[layer], i - own)


@njit(cache=True, inline="always")
def is_king_step(moves, m):
    """Move m of a generated list is a king's move without capture (it stays in the unit)."""
    return moves[m, M_CAPTURED] == 0 and moves[m, M_MAN] == 0


@njit(cache=True, inline="always")
def move_successor(moves, m, offsets, wdl, rcat):
    """:func:`successor_index` of the position after move m of a generated list."""
    return successor_index(moves[m, M_BM], moves[m, M_BK], moves[m, M_WM], moves[m, M_WK],
                           offsets, wdl, rcat)


class Scratch:
    """Work arrays for one pair, sized for its largest unit (allocated once).

    ``halves`` is 1 when every unit is a single men configuration (a symmetric
    material without men); ``kings`` are the black and white king counts of M,
    which bound the king steps (4 per king) of the two halves; ``tables`` is the
    number of tables solved (one node table each: the rule-free one and one per
    rule layer).

    The arrays follow the unit's :func:`~egtb.builder.predecessors.predecessor_way`: the
    successor lists (``succ_start``, ``succ``) of a unit that inverts them, else a bit a node
    (``stepping``: it has a king step); the predecessor lists (``pred_start``, ``pred``) of a unit
    solved for several tables. The arrays of the other ways are left empty.
    """

    def __init__(self, unit: int, *, halves: int, kings: tuple[int, int],
                 tables: int = 1) -> None:
        n = halves * unit
        edges = 4 * unit * (kings[0] + (kings[1] if halves == 2 else 0))
        way = predecessor_way(unit, tables=tables)
        inverted, listed = way == INVERTED, way != TOLD
        self.bk = np.zeros(n, dtype=np.int64)
        self.wk = np.zeros(n, dtype=np.int64)
        self.succ_start = np.zeros(n + 1 if inverted else 1, dtype=np.int64)
        self.succ = np.zeros(edges if inverted else 0, dtype=np.int32)
        self.stepping = np.zeros(0 if inverted else (n + 7) // 8, dtype=np.uint8)
        self.pred_start = np.zeros(n + 1 if listed else 1, dtype=np.int64)
        self.pred = np.zeros(edges if listed else 0, dtype=np.int32)
        self.node = np.zeros((tables, n, 5), dtype=NODE_DTYPE)
        self.entries = np.zeros((ENTRIES_PER_NODE * n + 1, 2), dtype=np.int32)

    def arrays(self) -> tuple:
        """The arrays in the order :func:`solve_units` takes them."""
        return (self.bk, self.wk, self.succ_start, self.succ, self.stepping, self.pred_start, self.pred,
                self.node, self.entries)


#: Bucket entries per node: an exit seed, one in-unit win and one loss at most.
ENTRIES_PER_NODE = 3


def edge_lists_fit(nodes: int) -> bool:
    """Whether a unit of `nodes` nodes fits the edge-list kernel's int32 bucket entries (a node's
    id and kind, the next entry) and lists; the regenerating kernel solves a bigger one.

    >>> edge_lists_fit(235_620_480), edge_lists_fit(736_281_000)  # 3k-4k's one unit, 4k-4k's
    (True, False)
    """
    return ENTRIES_PER_NODE * nodes + 1 <= np.iinfo(np.int32).max


# Columns of the per-node table.
N_REMAINING = 0  #: in-unit successors not yet known to win for the opponent
N_EXIT_WIN = 1  #: shortest win through an exit (NO_WIN when none)
N_EXIT_DRAW = 2  #: 1 when an exit is a draw
N_LOSS_DEPTH = 3  #: longest loss over the successors known so far
N_MOVES = 4  #: number of legal moves

# Columns of a bucket-queue entry: node * 2 + (1 for a loss), next entry.
E_NODE_KIND = 0
E_NEXT = 1


@njit(cache=True, nogil=True)  # a Dask worker keeps heartbeating while a pair is solved
def solve_units(counts, configs, offsets, wdl, dtw, rcat, rdtz, rdep, quiet_dtz, limits, man_resets,
                bk_arr, wk_arr, succ_start, succ, stepping, pred_start, pred, node, entries, progress):
    """Solve the units of a material pair, in the order of `configs`; return a status.

    counts: int64 (2, 4): material M and mirror(M) (equal rows when symmetric).
    configs: men-configuration indices of M (see :func:`egtb.builder.units.order_units`).
    rcat: (layers, positions of the pair) the rule layers' categories, filled
    like wdl; rdtz: (layers, positions of the pair) their DTZ (the pair comes
    first in the flat arrays: a zeroing exit, the only kind that leaves the
    pair, never reads a DTZ); rdep: (layers, bytes) the categories of the
    dependencies, the flat indices after the pair's, packed three to a byte
    (:func:`category_at`); quiet_dtz: what a quiet exit reads of rdtz (:func:`quiet_dtz_of`);
    wdl and dtw are empty when the
    rule-free table is not solved (:func:`rule_free_tables`); limits: each
    layer's move-rule limit in plies;
    man_resets: whether a plain man move resets the layer's counter.
    bk_arr .. entries: the :class:`Scratch` arrays (``stepping`` empty: the
    successor lists are kept and inverted; ``pred`` empty with one table: no predecessor
    list, :func:`told`).
    progress: int64 counters (:data:`P_POSITIONS`, :data:`P_UNITS`), only ever
    raised: each finished unit adds its positions and 1, and a unit being solved
    is counted in part as it goes (move generation half of its positions, the
    predecessor lists an eighth, the propagations the rest), so that another process
    reading them (shared memory) sees even a single big unit advance.
    """
    size = unit_size(counts[0, 0], counts[0, 1], counts[0, 2], counts[0, 3])
    layers = limits.shape[0]
    first = rule_free_tables(wdl)  # node table of the first rule layer
    _, men, base = unit_buffers()
    step_base = np.empty((2, STEP_SHIFTS, 32), dtype=np.int64)
    captures = new_capture_buffer()
    sources = new_sources()
    heads = np.full(MAX_DEPTH + 2, -1, dtype=np.int64)
    for u in range(configs.shape[0]):
        start = progress[P_POSITIONS]
        halves = locate_unit(configs[u], counts, offsets, size, men, base)
        n = halves * size
        for h in range(halves):
            unrank_unit(counts[h, 1], counts[h, 3], men[h, 0], men[h, 1],
                        bk_arr[h * size:(h + 1) * size], wk_arr[h * size:(h + 1) * size])
        status, edges = collect_moves(counts, halves, size, men, bk_arr, wk_arr, offsets, wdl, dtw,
                                      rcat, quiet_dtz, rdep, limits, man_resets, captures, step_base,
                                      succ_start, succ, stepping, node, progress)
        if status != OK:
            return status
        if edges == 0:  # no move stays in the unit (men only): the exits decide
            status = resolve_exits(n, node, size, base, wdl, dtw, rcat, rdtz, limits)
        else:
            progress[P_POSITIONS] = start + n // 2
            steps = (told(node, stepping), halves, size, counts, men, bk_arr, wk_arr, stepping, sources)
            if steps[0]:
                pass  # each resolved node's predecessors are found as the queue tells them
            elif stepping.shape[0]:
                list_predecessors(n, size, halves, counts, men, bk_arr, wk_arr, stepping, pred_start, pred,
                                  sources)
            else:
                invert_edges(n, succ_start, succ, pred_start, pred)
            progress[P_POSITIONS] = start + n // 2 + n // 8
            share = 8 * (layers + first)  # each propagation counts 3/share of a position per node
            if first:
                status = propagate(n, pred_start, pred, steps, node[0], entries, heads, size, base, wdl,
                                   dtw, progress, share)
            for layer in range(layers):
                if status != OK:
                    return status
                status = propagate(n, pred_start, pred, steps, node[first + layer], entries, heads,
                                   size, base, rcat[layer], rdtz[layer], progress, share,
                                   limits[layer])
        if status != OK:
            return status
        status = finish_unit(n, size, base, wdl, rcat, progress, start)
        if status != OK:
            return status
    return OK


@njit(cache=True, inline="always")
def told(node, stepping):
    """Whether a unit's propagation finds each node's predecessors as it resolves it
    (:data:`egtb.builder.predecessors.TOLD`: one table, the king steps as bits)."""
    return node.shape[0] == 1 and stepping.shape[0] > 0


@njit(cache=True)
def resolve_exits(n, node, size, base, wdl, dtw, rcat, rdtz, limits):
    """Values of a unit without in-unit moves, from its node tables alone; a status.

    What :func:`propagate` finds for such a unit (its queue holds only the
    seeds, see :func:`seed_queue`, and no node has a predecessor), without
    building predecessor lists or a queue: no move loses in 0, a winning exit
    wins in its distance, else a drawing exit draws, else every move loses
    and the node loses in the longest. ERR_TOO_DEEP from a distance of
    :data:`MAX_DEPTH` on, like the queue.
    """
    first = rule_free_tables(wdl)
    for t in range(node.shape[0]):
        for h in range(n // size):
            for k in range(size):
                i = h * size + k
                if node[t, i, N_MOVES] == 0:
                    kind, d = LOSS, 0
                elif node[t, i, N_EXIT_WIN] != NO_WIN:
                    kind, d = WIN, np.int64(node[t, i, N_EXIT_WIN])
                elif node[t, i, N_EXIT_DRAW] == 0:
                    kind, d = LOSS, np.int64(node[t, i, N_LOSS_DEPTH])
                else:
                    kind, d = DRAW, 0
                if d >= MAX_DEPTH:
                    return ERR_TOO_DEEP
                g = base[h] + k
                if t < first:
                    wdl[g] = kind
                    dtw[g] = d
                else:
                    sign = 1 if kind == WIN else (-1 if kind == LOSS else 0)
                    layer = t - first
                    rcat[layer, g] = sign * (CAT_WIN if d <= limits[layer] else CAT_CURSED_WIN)
                    rdtz[layer, g] = stored_dtz(d, rdtz.itemsize)
    return OK


@njit(cache=True)
def finish_unit(n, size, base, wdl, rcat, progress, start):
    """Check a solved unit's rule layers against its values, count it in `progress`; a status."""
    if wdl.shape[0] > 0 and not same_wdl(n, size, base, wdl, rcat):
        return ERR_RULE_MISMATCH
    progress[P_POSITIONS] = start + n
    progress[P_UNITS] += 1
    return OK


@njit(cache=True)
def unit_buffers():
    """Buffers a kernel reuses over a pair's units: one node's moves, the men of the unit's
    two halves (see :func:`egtb.builder.units.locate_unit`) and where the halves start in the flat arrays."""
    return (np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64), np.zeros((2, 2), dtype=np.int64),
            np.zeros(2, dtype=np.int64))


@njit(cache=True)
def same_wdl(n, size, base, wdl, rcat):
    """Every rule layer of the unit's nodes has the rule-free win/draw/loss as its sign."""
    for h in range(n // size):
        for g in range(base[h], base[h] + size):
            want = 1 if wdl[g] == WIN else (-1 if wdl[g] == LOSS else 0)
            for layer in range(rcat.shape[0]):
                if (rcat[layer, g] > 0) - (rcat[layer, g] < 0) != want:
                    return False
    return True


@njit(cache=True, _nrt=False)
def collect_moves(counts, halves, size, men, bk_arr, wk_arr, offsets, wdl, dtw, rcat, quiet_dtz, rdep,
                  limits, man_resets, captures, step_base, succ_start, succ, stepping, node, progress):
    """Generate every node's moves once: exits summarised in `node`, king steps (in-unit edges)
    listed in `succ` or, when `stepping` is not empty, only counted; return (status, edges).

    ``node[0]`` gets the rule-free exit values, ``node[1 + layer]`` those under
    each rule layer (:func:`record_rule_exit`). Counts half a position in
    `progress` per node (every :data:`PROGRESS_STEP` nodes).

    Moves are generated set-wise on the node mirrored once, so that every
    successor comes out as the Black-to-move position it is looked up as:
    captures (:func:`fold_captures`), else simple moves (:func:`fold_steps`).
    `captures`: the capture buffer (:func:`new_capture_buffer`); `step_base`:
    int64 (2, :data:`STEP_SHIFTS`, 32) for :func:`index_man_steps`; `stepping`
    gets a bit for each node with a king step (:mod:`egtb.builder.predecessors`).

    Compiled without numba's reference counting (``_nrt=False``): every
    helper it inlines that takes an array would otherwise update the array's
    count atomically on entry and exit, which took half its time.
    """
    edges = 0
    n = halves * size
    start = progress[P_POSITIONS]
    listed = stepping.shape[0] == 0
    stepping[:] = 0
    for h in range(halves):
        index_man_steps(counts, h, size, men, offsets, step_base[h])
    for i in range(n):
        if i & (PROGRESS_STEP - 1) == 0:
            progress[P_POSITIONS] = start + i // 2
        h = i // size
        other = (1 - h) if halves == 2 else h
        # the node mirrored: the mover's pieces (pm, pk) step toward lower squares
        pm, om = men[1 - h, 1], men[1 - h, 0]
        pk = np.int64(mirror_bb(bk_arr[i]))
        ok = np.int64(mirror_bb(wk_arr[i]))
        empty = ALL_SQUARES & ~(pm | om | pk | ok)
        steps = 0
        for t in range(node.shape[0]):
            node[t, i, N_EXIT_WIN] = NO_WIN
            node[t, i, N_EXIT_DRAW] = 0
            node[t, i, N_LOSS_DEPTH] = 0
        nmoves, status = fold_captures(pm, pk, om, ok, empty, offsets, wdl, dtw, rcat, quiet_dtz, rdep,
                                       limits, man_resets, captures, node, i)
        if nmoves == 0 and status == OK:
            nmoves, steps, status = fold_steps(counts, h, pm, pk, om, ok, empty, step_base, offsets,
                                               wdl, dtw, rcat, quiet_dtz, rdep, limits, man_resets, node, i)
        if status != OK:
            return status, edges
        if listed:
            succ_start[i] = edges
            list_steps(counts, other, size, men, pk, ok, empty, succ, edges)
        elif steps:
            stepping[i >> 3] |= np.uint8(1 << (i & 7))
        edges += steps
        for t in range(node.shape[0]):
            node[t, i, N_MOVES] = nmoves
            node[t, i, N_REMAINING] = steps
    if listed:
        succ_start[n] = edges
    return OK, edges


#: The three shifts of a step on the 32-square board (the edge masks of
#: :func:`step_targets` tell which squares have that neighbour).
STEP_SHIFTS = 3


@njit(cache=True, inline="always")
def step_targets(pieces, shift, empty, down):
    """Squares of `empty` that a piece of `pieces` reaches by one step of `shift`
    (0: 4 squares, 1: the 3-or-5 diagonal, 2: the 5-or-3 one), toward lower
    squares when `down` is False, else toward higher ones."""
    if down:
        if shift == 0:
            return (pieces << 4) & empty
        if shift == 1:
            return ((pieces & ODD_NOT_LEFT) << 3) & empty
        return ((pieces & EVEN_NOT_RIGHT) << 5) & empty
    if shift == 0:
        return (pieces >> 4) & empty
    if shift == 1:
        return ((pieces & EVEN_NOT_RIGHT) >> 3) & empty
    return ((pieces & ODD_NOT_LEFT) >> 5) & empty


@njit(cache=True, inline="always")
def step_source(target, shift, down):
    """The square a step of `shift` to `target` came from (see :func:`step_targets`)."""
    amount = 4 if shift == 0 else (3 if shift == 1 else 5)
    return target >> amount if down else target << amount


@njit(cache=True)
def index_man_steps(counts, h, size, men, offsets, out):
    """Flat index of the men part of every non-crowning man step of half h, for all its nodes.

    Seen mirrored (the mover's men ``men[1 - h, 1]`` step toward lower squares),
    a step to square bit t by shift s leads to a position of the other half's
    material whose men configuration does not depend on the kings: ``out[s, t]``
    is its first flat index (then add the kings' rank), -1 where no step lands.
    """
    pm, om = men[1 - h, 1], men[1 - h, 0]
    code = material_code(counts[1 - h, 0], counts[1 - h, 1], counts[1 - h, 2], counts[1 - h, 3])
    out[:, :] = -1
    for shift in range(STEP_SHIFTS):
        dest = step_targets(pm, shift, ALL_SQUARES & ~(pm | om) & ~WHITE_CROWN_ROW, False)
        while dest:
            t = dest & -dest
            dest ^= t
            moved = pm ^ t ^ step_source(t, shift, False)
            out[shift, lowest_bit64(t)] = offsets[code] + size * rank_men(
                om, moved, counts[1 - h, 0], counts[1 - h, 2])


@njit(cache=True, inline="always")
def fold_steps(counts, h, pm, pk, om, ok, empty, man_base, offsets, wdl, dtw, rcat, quiet_dtz, rdep, limits,
               man_resets, node, i):
    """Fold the simple moves of node i (no capture) into its node tables; (moves, king steps, status).

    The node comes mirrored (the mover's pieces ``pm``, ``pk`` step toward
    lower squares; `empty` its free squares), so every successor comes out as
    the Black-to-move position it is looked up as. Man steps are exits (:func:`index_man_steps` gives the
    men part of their index, a crowning is indexed in full); king steps stay in
    the unit and are only counted here (:func:`list_steps`, :mod:`egtb.builder.predecessors`).
    """
    nmoves = 0
    for shift in range(STEP_SHIFTS):
        dest = step_targets(pm, shift, empty, False)
        while dest:
            t = dest & -dest
            dest ^= t
            f = step_source(t, shift, False)
            nmoves += 1
            if t & WHITE_CROWN_ROW:
                target = flat_index(om, ok, pm ^ f, pk | t, offsets)
                crowns = True
            else:
                moved = pm ^ f ^ t
                target = man_base[h, shift, lowest_bit64(t)] + rank_kings(
                    ok, pk, om | moved, counts[1 - h, 1], counts[1 - h, 3])
                crowns = False
            status = index_status(target, wdl, rcat)
            if status == OK:
                status = fold_exit(node, i, target, crowns, wdl, dtw, rcat, quiet_dtz, rdep, limits,
                                   man_resets)
            if status != OK:
                return nmoves, 0, status
    if pk == 0:
        return nmoves, 0, OK
    steps = 0
    for down in (False, True):
        for shift in range(STEP_SHIFTS):
            steps += popcount(step_targets(pk, shift, empty, down))
    return nmoves + steps, steps, OK


@njit(cache=True, inline="always")
def list_steps(counts, other, size, men, pk, ok, empty, succ, e):
    """Write the in-unit successors of a mirrored node's king steps (see :func:`fold_steps`) to
    `succ` from `e`: each is in the other half, with black kings `ok` (unmoved)."""
    if pk == 0:
        return
    free = ALL_SQUARES & ~(men[other, 0] | men[other, 1])
    rest = free & ~ok
    first = other * size + rank_subset(ok, free) * BINOM[popcount(rest), counts[other, 3]]
    for down in (False, True):
        for shift in range(STEP_SHIFTS):
            dest = step_targets(pk, shift, empty, down)
            while dest:
                t = dest & -dest
                dest ^= t
                succ[e] = first + rank_subset(pk ^ t ^ step_source(t, shift, down), rest)
                e += 1


@njit(cache=True)
def new_capture_buffer():
    """The buffer :func:`fold_captures` hands to the capture enumerator (captures, then its stack)."""
    return np.zeros((CAPTURE_ROWS + MAX_JUMPS + 1, 4), dtype=np.int64)


@njit(cache=True, inline="always")
def fold_captures(pm, pk, om, ok, empty, offsets, wdl, dtw, rcat, quiet_dtz, rdep, limits, man_resets,
                  captures, node, i):
    """Fold the captures of node i into its node tables; (number of captures, status).

    Through the set-wise capture enumerator (egtb.rules.captures) on the
    mirrored node (the mover's pieces ``pm``, ``pk`` going toward lower
    squares); 0 captures when the node has none (then it has simple moves,
    :func:`fold_steps`).
    """
    jumpers = jumping_pieces(pm, pk, om | ok, empty, 1)
    if jumpers == 0:
        return 0, OK
    n = capture_moves(pm, pk, om | ok, empty, jumpers, 1, captures)
    for c in range(n):
        nbm, nbk, npm, npk = after_capture(pm, pk, om, ok, captures, c)
        if nbm == 0 and nbk == 0:
            target, status = NO_PIECES, OK
        else:
            target = flat_index(nbm, nbk, npm, npk, offsets)
            status = index_status(target, wdl, rcat)
        if status == OK:
            status = fold_exit(node, i, target, True, wdl, dtw, rcat, quiet_dtz, rdep, limits, man_resets)
        if status != OK:
            return n, status
    return n, OK


@njit(cache=True, inline="always")
def after_capture(pm, pk, om, ok, captures, c):
    """The position after capture c of a mirrored node's list (the mover's ``pm``, ``pk`` jumping
    toward lower squares, a man crowning on ``WHITE_CROWN_ROW``), Black to move: (bm, bk, wm, wk)."""
    f, t, taken = captures[c, C_FROM], captures[c, C_TO], captures[c, C_CAPTURED]
    if pk & f:
        npm, npk = pm, pk ^ f ^ t
    else:
        crowned = t & WHITE_CROWN_ROW
        npm, npk = pm ^ f ^ (t ^ crowned), pk | crowned
    return om & ~taken, ok & ~taken, npm, npk


@njit(cache=True, inline="always")
def fold_exit(node, i, target, capture_or_crowning, wdl, dtw, rcat, quiet_dtz, rdep, limits, man_resets):
    """Fold the exit to flat index `target` (or :data:`NO_PIECES`) into node i's tables; a status.

    Under a rule layer a capture or a crowning zeroes the counter, and so does
    any man move where the layer's man moves reset it; only a quiet exit (a man
    move inside the pair) reads its target's DTZ.
    """
    if target == NO_PIECES:
        for t in range(node.shape[0]):
            record_exit(node, t, i, LOSS, 0)
        return OK
    first = rule_free_tables(wdl)
    if first:
        record_exit(node, 0, i, wdl[target], np.int64(dtw[target]))
    for layer in range(limits.shape[0]):
        category = category_at(rcat, rdep, layer, target)
        if category == UNSOLVED_CATEGORY:
            return ERR_UNSOLVED_SUCCESSOR
        zeroing = capture_or_crowning or man_resets[layer]
        dtz = np.int64(0) if zeroing else np.int64(quiet_dtz[layer, target])
        record_rule_exit(node, first + layer, i, category, dtz, limits[layer], zeroing)
    return OK


@njit(cache=True, inline="always")
def record_exit(node, t, i, v, d):
    """Fold the value of one exit (for the opponent, to move there) into node i of table t.

    (Indexed in full rather than through a view ``node[t]``: a view per exit
    costs two atomic reference count updates, which were half the time of
    :func:`collect_moves`.)
    """
    if v == LOSS:
        node[t, i, N_EXIT_WIN] = min(node[t, i, N_EXIT_WIN], d + 1)
    elif v == WIN:
        node[t, i, N_LOSS_DEPTH] = max(node[t, i, N_LOSS_DEPTH], d + 1)
    else:
        node[t, i, N_EXIT_DRAW] = 1


@njit(cache=True, inline="always")
def record_rule_exit(node, t, i, category, dtz, limit, zeroing):
    """Fold one exit into node i of table t (a rule layer), from the target's category and DTZ.

    A quiet exit (a man move that does not reset the counter) continues the
    count: the target's DTZ plus one. A zeroing exit ends it: a target decisive
    under the rule (DTZ within the limit) is a win or loss in 1; a cursed or
    blessed one counts ``limit + 1``, beyond any win under the rule but still
    ordered (Syzygy's cursed-win convention), so the layer's DTZ of a cursed win
    or blessed loss exceeds the limit and stays ply-exact.
    """
    v, d = rule_exit_value(category, dtz, limit, zeroing)
    record_exit(node, t, i, v, d)


@njit(cache=True, inline="always")
def rule_exit_value(category, dtz, limit, zeroing):
    """(value code, distance) an exit to a rule-layer target counts as (see :func:`record_rule_exit`)."""
    v = LOSS if category < 0 else (WIN if category > 0 else DRAW)
    if zeroing and v != DRAW:
        dtz = 0 if (category == CAT_WIN or category == -CAT_WIN) else limit
    return v, dtz


@njit(cache=True, inline="always")
def _push(entries, heads, count, node_id, kind, depth):
    entries[count, E_NODE_KIND] = node_id * 2 + (1 if kind == LOSS else 0)
    entries[count, E_NEXT] = heads[depth]
    heads[depth] = count
    return count + 1


@njit(cache=True, inline="always")
def _loss_ready(node, i):
    """All moves of node i known to lose (every successor wins for the opponent)."""
    return (node[i, N_REMAINING] == 0 and node[i, N_EXIT_WIN] == NO_WIN
            and node[i, N_EXIT_DRAW] == 0)


@njit(cache=True, _nrt=False)
def seed_queue(n, node, entries, heads):
    """Push what the exits alone decide; return (entries used, deepest bucket, status).

    No move: lost in 0; a winning exit: won in its distance; every move an exit
    that loses: lost in the longest of them. `heads` comes empty (all -1): a
    queue run empties every bucket it uses (:func:`run_queue`), so a unit does
    not pay for clearing all :data:`MAX_DEPTH` of them.
    """
    count = 0
    top = 0
    status = OK
    for i in range(n):
        if node[i, N_MOVES] == 0:
            count = _push(entries, heads, count, i, LOSS, 0)
        elif node[i, N_EXIT_WIN] != NO_WIN:
            count, top, status = _enqueue(entries, heads, count, top, i, WIN, node[i, N_EXIT_WIN])
        else:
            count, top, status = _enqueue_if_lost(node, entries, heads, count, top, i)
        if status != OK:
            return count, top, status
    return count, top, OK


@njit(cache=True, inline="always")
def _enqueue(entries, heads, count, top, node_id, kind, d):
    """Push a node found `kind` in d plies; return (count, top, status), ERR_TOO_DEEP beyond MAX_DEPTH."""
    if d > MAX_DEPTH:
        return count, top, ERR_TOO_DEEP
    return _push(entries, heads, count, node_id, kind, d), max(top, np.int64(d)), OK


@njit(cache=True, inline="always")
def _enqueue_if_lost(node, entries, heads, count, top, i):
    """Push node i as lost in its longest loss once every move is known to lose; else nothing."""
    if _loss_ready(node, i):
        return _enqueue(entries, heads, count, top, i, LOSS, node[i, N_LOSS_DEPTH])
    return count, top, OK


@njit(cache=True, inline="always")
def settle(i, kind, d, resolved, depth):
    """Fix node i's value from a bucket entry; False when the entry is stale.

    A win may still shorten (an exit seed deeper than an in-unit win found
    later); any other entry disagreeing with what is known is stale.
    """
    if resolved[i] == 0 or (kind == WIN and resolved[i] == WIN and d < depth[i]):
        resolved[i] = kind
        depth[i] = d
        return True
    return resolved[i] == kind and depth[i] == d


@njit(cache=True, inline="always")
def tell_predecessors(i, kind, d, pred_start, pred, steps, node, entries, heads, count, top,
                      resolved, depth):
    """Node i resolved as `kind` in d plies: update its predecessors; return (count, top, status).

    The predecessors come from the lists (`pred_start`, `pred`), or with ``steps[0]`` from node
    i itself (:func:`egtb.builder.predecessors.predecessors_from`): when the unit solves one
    table, each node is resolved once, and a list costs more to make than the reads it saves.
    """
    generated, halves, size, counts, men, bk_arr, wk_arr, stepping, sources = steps
    if generated:
        listed = predecessors_from(i, halves, size, counts, men, bk_arr, wk_arr, stepping, sources)
        first = 0
    else:
        listed, first = pred_start[i + 1] - pred_start[i], pred_start[i]
    status = OK
    for e in range(listed):
        p = sources[e] if generated else pred[first + e]
        count, top, status = tell_predecessor(p, kind, d, node, entries, heads, count, top, resolved, depth)
        if status != OK:
            return count, top, status
    return count, top, OK


@njit(cache=True, inline="always")
def tell_predecessor(p, kind, d, node, entries, heads, count, top, resolved, depth):
    """Node p has a move to a node resolved as `kind` in d plies; return (count, top, status).

    A predecessor of a loss wins in d + 1 (the first loss found is the nearest);
    a predecessor of a win loses one more move, and is lost once all are.
    """
    if resolved[p] != 0:
        return count, top, OK
    if kind == LOSS:
        resolved[p] = WIN
        depth[p] = d + 1
        return _enqueue(entries, heads, count, top, p, WIN, d + 1)
    node[p, N_REMAINING] -= 1
    node[p, N_LOSS_DEPTH] = max(node[p, N_LOSS_DEPTH], d + 1)
    return _enqueue_if_lost(node, entries, heads, count, top, p)


@njit(cache=True)
def write_values(n, resolved, depth, size, base, wdl, dtw):
    """Store the unit's values and distances; what was never resolved is a draw."""
    for h in range(n // size):
        for k in range(size):
            i = h * size + k
            g = base[h] + k
            if resolved[i] == 0:
                wdl[g] = DRAW
                dtw[g] = 0
            else:
                wdl[g] = resolved[i]
                dtw[g] = depth[i]


def quiet_dtz_of(rdtz: np.ndarray) -> np.ndarray:
    """What the move generation reads of a pair's rule-layer DTZ (the kernels' `quiet_dtz`): `rdtz`
    itself when it has two bytes, else an empty uint16 array. A one-byte DTZ is that of layers whose
    counter any man move zeroes (:func:`egtb.formats.scratch.dtz_type`), where no exit reads one. So
    the move generation, the biggest kernel, is compiled once for both (8 CPU s a fresh compile).

    >>> quiet_dtz_of(np.zeros((1, 5), dtype=np.uint8)).shape
    (1, 0)
    """
    return rdtz if rdtz.dtype == np.uint16 else np.zeros((rdtz.shape[0], 0), dtype=np.uint16)


@njit(cache=True, inline="always")
def stored_dtz(d, itemsize):
    """`d` as a DTZ array of `itemsize` bytes stores it: saturated at DTZ_SATURATED in one byte."""
    return min(d, DTZ_SATURATED) if itemsize == 1 else d


@njit(cache=True)
def write_categories(n, resolved, depth, size, base, rcat, rdtz, limit):
    """Store a rule layer's categories and DTZ: decisive within `limit`, else cursed/blessed."""
    for h in range(n // size):
        for k in range(size):
            i = h * size + k
            g = base[h] + k
            d = depth[i]
            sign = 1 if resolved[i] == WIN else (-1 if resolved[i] == LOSS else 0)
            rcat[g] = sign * (CAT_WIN if d <= limit else CAT_CURSED_WIN)
            rdtz[g] = stored_dtz(d, rdtz.itemsize) if sign != 0 else 0


@njit(cache=True, _nrt=False)
def run_queue(n, pred_start, pred, steps, node, entries, heads, resolved, processed, depth, progress,
              share):
    """The bucket queue of :func:`propagate`: fill `resolved` (value codes) and `depth`; a status.

    Compiled without reference counting, like :func:`collect_moves` (its
    inlined steps take arrays, per node resolved).
    """
    count, top, status = seed_queue(n, node, entries, heads)
    if status != OK:
        return status
    start = progress[P_POSITIONS]
    done = 0
    d = 0
    while d <= top:
        x = heads[d]
        heads[d] = -1
        while x >= 0:
            i = entries[x, E_NODE_KIND] >> 1
            kind = LOSS if entries[x, E_NODE_KIND] & 1 else WIN
            x = entries[x, E_NEXT]
            if processed[i] or not settle(i, kind, d, resolved, depth):
                continue
            processed[i] = True
            done += 1
            if done & (PROGRESS_STEP - 1) == 0:
                progress[P_POSITIONS] = start + done * 3 // share
            if d + 1 > MAX_DEPTH:
                return ERR_TOO_DEEP
            count, top, status = tell_predecessors(i, kind, d, pred_start, pred, steps, node, entries,
                                                   heads, count, top, resolved, depth)
            if status != OK:
                return status
        d += 1
    return OK


@njit(cache=True)
def propagate(n, pred_start, pred, steps, node, entries, heads, size, base, wdl, dtw, progress,
              share=8, limit=-1):
    """Bucket-queue retrograde over one unit; writes values and distances to the tables.

    Depth d resolves wins in d plies (the shortest) and losses in d plies (the
    longest), in increasing d; what is never reached is a draw. Writes
    WIN/LOSS/DRAW codes, or with a move-rule `limit` (a rule layer) categories
    (:func:`write_categories`). Counts 3/share of a position in `progress` per
    node resolved (every :data:`PROGRESS_STEP`). The predecessors come from the lists
    `pred_start`, `pred`, or when ``steps[0]`` (:func:`told`) from the nodes themselves:
    `steps` is (that flag, halves, unit size, counts, men, bk_arr, wk_arr, stepping, the
    sources buffer), as :func:`solve_units` has them.
    """
    resolved = np.zeros(n, dtype=np.int8)  # value code, set when known (a win may shorten)
    processed = np.zeros(n, dtype=np.bool_)  # predecessors already told
    depth = np.zeros(n, dtype=np.int32)
    status = run_queue(n, pred_start, pred, steps, node, entries, heads, resolved, processed, depth,
                       progress, share)
    if status != OK:
        return status
    if limit < 0:
        write_values(n, resolved, depth, size, base, wdl, dtw)
    else:
        write_categories(n, resolved, depth, size, base, wdl, dtw, limit)
    return OK
