"""Alpha-beta searcher for English draughts: a numba kernel and the SearchEngine.

The kernel (:func:`negamax`) is a negamax alpha-beta search with principal
variation windows, a transposition table of numpy arrays keyed by Zobrist
hashes (fixed-seed keys, so searches repeat), move ordering (table move,
captures, two killers per ply, history), a capture extension (a side that must
capture is never evaluated statically; captures are searched to their end),
draws by repetition along the path and by the move rule, and a node budget:
when ``stats[S_NODES]`` reaches ``stats[S_MAX_NODES]`` the search stops and
sets ``stats[S_ABORTED]``.

:class:`SearchEngine` wraps it in iterative deepening: between iterations it
reads the clock in Python and gives the next iteration a node budget that fits
the time left, so one deep iteration cannot overrun by much.

>>> from egtb import Board
>>> from tournament.engines.base import GameState, Limit
>>> engine = SearchEngine(depth=4)
>>> move = engine.play(GameState.from_board(Board()), Limit()).move
>>> move in Board().legal_moves()
True
>>> engine.last_info.depth
4
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from egtb.errors import MissingTableError
from egtb.probe.moves import best_moves, tablebase_for
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import Board, Move
from egtb.rules.movegen import (
    M_BK, M_BM, M_CAPTURED, M_CROWNS, M_FROM, M_MAN, M_TO, M_WK, M_WM, MAX_MOVES, MOVE_WIDTH,
    count_simple_moves, generate_moves, popcount,
)
from egtb.rules.squares import BLACK_CROWN_ROW, WHITE_CROWN_ROW
from egtb.positions.index import NUM_CODES
from egtb.probe.kernels import STATUS_NOT_LOADED, STATUS_OK, probe_rule_one
from tournament.engines.base import Engine, GameState, Limit, PlayResult
from tournament.engines.strengths import STRENGTHS

__all__ = ["SearchEngine", "SearchInfo", "STRENGTHS", "MATE", "search_position", "evaluate"]

# --- constants ----------------------------------------------------------------

MAX_PLY = 96  #: deepest ply the kernel reaches (capture extensions included)
MAX_DEPTH = 60  #: deepest nominal iteration
INF = 32000  #: bigger than any score
MATE = 30000  #: score of a win at the root; a win in n plies scores MATE - n
MATE_BOUND = MATE - 1000  #: scores beyond this are wins or losses
MIN_NPS_ESTIMATE = 1e5  #: floor of the speed estimate that turns seconds into node budgets
HISTORY_SIZE = 128  #: game positions (since the last irreversible move) seen by the kernel
PV_PLIES = 30  #: longest principal variation a search reports
PV_FILL_NODES = 200_000  #: nodes the searches of the rest of a line may take when the table lost moves of it
PV_FILL_SHARE = 10  #: ... and at most the search's own nodes over this, so that a fast game's clock is kept

MAN_VALUE = 100  #: material value of a man
KING_VALUE = 140  #: material value of a king
BACK_RANK_GUARD = 6  #: bonus per man still on its own back rank
BRIDGE_BONUS = 6  #: extra bonus for the two bridge squares (1 and 3; 30 and 32)
CENTRE_MAN = 4  #: bonus per man on the four centre squares
CENTRE_KING = 8  #: bonus per king on the central eight squares
MOBILITY = 2  #: bonus per simple move more than the opponent
TRADE_SCALE = 48  #: a material lead earns lead * (24 - pieces) / TRADE_SCALE more

# stats array slots
S_NODES = 0  #: nodes visited
S_MAX_NODES = 1  #: node budget of this search
S_ABORTED = 2  #: 1 when the budget ran out
S_BEST = 3  #: index of the best root move in the root move buffer
S_SELDEPTH = 4  #: deepest ply reached
S_TB_HITS = 5  #: nodes the endgame tables answered
S_TB_MISSES = 6  #: positions noted in the miss buffer (tables or blocks not in memory yet)
S_EPOCH = 7  #: the transposition table's epoch (in T_FLAG above the bound): bounds of an earlier one order moves, never settle a node
STATS_SIZE = 8

# endgame tables inside the search
TB_WIN = 20000  #: score of a table win at the root; a table win found at ply n scores TB_WIN - n
TABLES_MODES = ("search", "root")  #: where SearchEngine consults its tables
MISS_SLOTS = 64  #: table misses a search notes for Python to load before the next one
MISS_WIDTH = 7  #: a miss: bm, bk, wm, wk, turn, counter, material code

# transposition table columns and bound kinds
T_KEY, T_MOVE, T_SCORE, T_DEPTH, T_FLAG = 0, 1, 2, 3, 4
TT_COLUMNS = 5
FLAG_EXACT, FLAG_LOWER, FLAG_UPPER = 1, 2, 3
FLAG_BITS = 2  #: the T_FLAG column holds the bound kind in its low bits, the epoch above them
DEFAULT_TT_BITS = 20  #: 2**20 entries, 40 MB

NO_MOVE = -1

# squares as bit masks (square s is bit s - 1)
BLACK_BACK = WHITE_CROWN_ROW  #: squares 1-4, Black's back rank (where White crowns)
WHITE_BACK = BLACK_CROWN_ROW  #: squares 29-32
BLACK_BRIDGE = (1 << 0) | (1 << 2)  #: squares 1 and 3
WHITE_BRIDGE = (1 << 29) | (1 << 31)  #: squares 30 and 32
CENTRE4 = (1 << 13) | (1 << 14) | (1 << 17) | (1 << 18)  #: squares 14, 15, 18, 19
CENTRE8 = CENTRE4 | (1 << 9) | (1 << 10) | (1 << 21) | (1 << 22)  #: plus 10, 11, 22, 23

#: bonus of a man by how many rows it has advanced (row 7 is the crowning row)
ADVANCE = np.array([0, 0, 1, 2, 4, 7, 10, 0], dtype=np.int64)


def _zobrist_table(seed: int = 20240611) -> np.ndarray:
    """Fixed-seed random keys: rows bm, bk, wm, wk by square; [4, 0] is the side key."""
    rng = np.random.default_rng(seed)
    return rng.integers(-(2**63), 2**63 - 1, size=(5, 32), dtype=np.int64)


ZOBRIST = _zobrist_table()


# --- kernel -------------------------------------------------------------------

@njit(cache=True)
def zobrist_hash(bm, bk, wm, wk, turn, zob):
    """Zobrist key of a position (int64, xor of one key per piece and the side)."""
    h = np.int64(0)
    boards = (np.int64(bm), np.int64(bk), np.int64(wm), np.int64(wk))
    for kind in range(4):
        b = np.int64(boards[kind])
        while b:
            low = b & -b
            h ^= zob[kind, popcount(low - 1)]
            b ^= low
    if turn:
        h ^= zob[4, 0]
    return h


@njit(cache=True)
def _advancement(men, black):
    total = 0
    while men:
        low = men & -men
        row = popcount(low - 1) >> 2
        total += ADVANCE[row] if black else ADVANCE[7 - row]
        men ^= low
    return total


@njit(cache=True)
def evaluate(bm, bk, wm, wk, turn):
    """Static score for the side to move, in hundredths of a man.

    Material (men 100, kings 140), a bonus for trading down when ahead, men
    guarding their back rank (while the opponent still has men to crown),
    advancement, centre control and a cheap mobility count.
    """
    nbm, nbk, nwm, nwk = popcount(bm), popcount(bk), popcount(wm), popcount(wk)
    black = nbm * MAN_VALUE + nbk * KING_VALUE
    white = nwm * MAN_VALUE + nwk * KING_VALUE
    score = black - white
    pieces = nbm + nbk + nwm + nwk
    lead = abs(black - white) * (24 - pieces) // TRADE_SCALE  # rounded the same way for both colours
    score += lead if black > white else -lead
    if wm:
        score += BACK_RANK_GUARD * popcount(bm & BLACK_BACK) + BRIDGE_BONUS * popcount(bm & BLACK_BRIDGE)
    if bm:
        score -= BACK_RANK_GUARD * popcount(wm & WHITE_BACK) + BRIDGE_BONUS * popcount(wm & WHITE_BRIDGE)
    score += _advancement(bm, True) - _advancement(wm, False)
    score += CENTRE_MAN * (popcount(bm & CENTRE4) - popcount(wm & CENTRE4))
    score += CENTRE_KING * (popcount(bk & CENTRE8) - popcount(wk & CENTRE8))
    score += MOBILITY * (count_simple_moves(bm, bk, wm, wk, 0) - count_simple_moves(bm, bk, wm, wk, 1))
    return score if turn == 0 else -score


@njit(cache=True, inline="always")
def _move_key(moves, i):
    """A move as one integer: from, to and the captured pieces."""
    return moves[i, M_FROM] | (moves[i, M_TO] << 5) | (moves[i, M_CAPTURED] << 10)


@njit(cache=True)
def _order(moves, n, scores, tt_move, killers, history, ply):
    """Fill scores[:n] with the ordering priority of each move."""
    for i in range(n):
        key = _move_key(moves, i)
        if key == tt_move:
            s = np.int64(1) << 50
        elif moves[i, M_CAPTURED]:
            s = (np.int64(1) << 40) + popcount(moves[i, M_CAPTURED]) * 1000 + moves[i, M_CROWNS] * 100
        elif key == killers[ply, 0]:
            s = np.int64(1) << 39
        elif key == killers[ply, 1]:
            s = (np.int64(1) << 39) - 1
        else:
            s = history[moves[i, M_FROM], moves[i, M_TO]] + moves[i, M_CROWNS] * (np.int64(1) << 38)
        scores[i] = s


@njit(cache=True, inline="always")
def _pick(scores, n, start, order):
    """Index (into the move buffer) of the best not yet tried move."""
    best = start
    for j in range(start + 1, n):
        if scores[order[j]] > scores[order[best]]:
            best = j
    order[start], order[best] = order[best], order[start]
    return order[start]


@njit(cache=True)
def _is_repetition(path, pidx, h, rev):
    """Whether h occurred at an earlier ply of the game or search with the same side to move."""
    j = pidx - 4
    while j >= 0 and pidx - j <= rev:
        if path[j] == h:
            return True
        j -= 2
    return False


@njit(cache=True, inline="always")
def _count_node(stats, ply):
    """Count a node and note its ply; True when the node budget is spent (the search unwinds)."""
    stats[S_NODES] += 1
    if stats[S_NODES] >= stats[S_MAX_NODES]:
        stats[S_ABORTED] = 1
    if stats[S_ABORTED]:
        return True
    if ply > stats[S_SELDEPTH]:
        stats[S_SELDEPTH] = ply
    return False


@njit(cache=True, inline="always")
def _probe_tt(tt, slot, h, depth, alpha, beta, ply, epoch):
    """(table move, found, score): the stored move, and a score when the stored bound settles this node
    (a bound of an earlier ``epoch``, found before some endgame tables were read, never does)."""
    if tt[slot, T_KEY] != h:
        return NO_MOVE, False, 0
    tt_move = tt[slot, T_MOVE]
    word = tt[slot, T_FLAG]
    if ply == 0 or tt[slot, T_DEPTH] < depth or (word >> FLAG_BITS) != epoch:
        return tt_move, False, 0
    s = tt[slot, T_SCORE]
    if s > MATE_BOUND:
        s -= ply  # stored as distance from this node; scored from the root
    elif s < -MATE_BOUND:
        s += ply
    flag = word & ((1 << FLAG_BITS) - 1)
    settled = flag == FLAG_EXACT or (flag == FLAG_LOWER and s >= beta) or (flag == FLAG_UPPER and s <= alpha)
    return tt_move, settled, s


@njit(cache=True, inline="always")
def _store_tt(tt, slot, h, key, best, alpha0, beta, depth, ply, epoch):
    """Keep the node's result unless the slot holds a deeper bound of the same position and epoch."""
    stored = best
    if stored > MATE_BOUND:
        stored += ply
    elif stored < -MATE_BOUND:
        stored -= ply
    if best <= alpha0:
        flag = FLAG_UPPER
    elif best >= beta:
        flag = FLAG_LOWER
    else:
        flag = FLAG_EXACT
    if (tt[slot, T_KEY] != h or depth >= tt[slot, T_DEPTH] or flag == FLAG_EXACT
            or (tt[slot, T_FLAG] >> FLAG_BITS) != epoch):
        tt[slot, T_KEY] = h
        tt[slot, T_MOVE] = key
        tt[slot, T_SCORE] = stored
        tt[slot, T_DEPTH] = depth
        tt[slot, T_FLAG] = flag | (epoch << FLAG_BITS)


@njit(cache=True, inline="always")
def _child_counters(mv, i, quiet, rev, man_resets):
    """(move-rule counter, plies since an irreversible move) after move i."""
    captured = mv[i, M_CAPTURED]
    man = mv[i, M_MAN]
    new_rev = 0 if (captured or man) else rev + 1
    new_quiet = 0 if (captured or mv[i, M_CROWNS] or (man_resets and man)) else quiet + 1
    return new_quiet, new_rev


@njit(cache=True, inline="always")
def _remember_cutoff(mv, i, ply, depth, killers, history):
    """A quiet move that caused a beta cutoff becomes a killer of its ply and gains history."""
    if mv[i, M_CAPTURED]:
        return
    key = _move_key(mv, i)
    if killers[ply, 0] != key:
        killers[ply, 1] = killers[ply, 0]
        killers[ply, 0] = key
    history[mv[i, M_FROM], mv[i, M_TO]] += depth * depth


@njit(cache=True)
def _probe_node(bm, bk, wm, wk, turn, quiet, rule_limit, ply, tb_rows_at, tb_absent, tb_misses, stats):
    """(found, score) of a node from the endgame tables under the move rule from ``quiet``.

    A win scores TB_WIN - ply, a loss its negation, a draw 0. A position the tables hold
    but whose table or block is not in memory yet (and whose material is not known to be
    absent, ``tb_absent``) goes to ``tb_misses`` for Python to load; the search goes on.
    """
    status, outcome, _, _, code = probe_rule_one(bm, bk, wm, wk, turn, quiet, rule_limit, tb_rows_at)
    if status == STATUS_OK:
        stats[S_TB_HITS] += 1
        if outcome > 0:
            return True, TB_WIN - ply
        if outcome < 0:
            return True, ply - TB_WIN
        return True, 0
    if status == STATUS_NOT_LOADED and code >= 0 and tb_absent[code] == 0:
        k = stats[S_TB_MISSES]
        if k < tb_misses.shape[0]:
            row = tb_misses[k]
            row[0], row[1], row[2], row[3], row[4], row[5], row[6] = bm, bk, wm, wk, turn, quiet, code
            stats[S_TB_MISSES] = k + 1
    return False, 0


@njit(cache=True)
def negamax(bm, bk, wm, wk, turn, depth, alpha, beta, ply, quiet, rev, pidx,
            rule_limit, man_resets, moves, scores, orders, tt, killers, history, path, zob, stats,
            tb_pieces, tb_rows_at, tb_absent, tb_misses):
    """Score of a position for the side to move, searched ``depth`` plies (plus captures).

    ``quiet`` counts plies toward the move rule (``rule_limit``; ``man_resets``
    says whether a man move resets it), ``rev`` the plies since the last
    irreversible move; ``path[:pidx]`` holds the keys of earlier positions.
    At ply 0 the index of the best root move goes to ``stats[S_BEST]``.
    Below the root, a position of at most ``tb_pieces`` pieces is probed in the
    endgame tables whose lookup rows are at ``tb_rows_at`` (:func:`_probe_node`;
    ``tb_pieces`` 0: never).
    Steps: count the node, end by the rules, ask the endgame tables, evaluate a
    quiet leaf, probe the transposition table, search the ordered moves
    (principal variation windows), store.
    """
    if _count_node(stats, ply):
        return 0
    h = zobrist_hash(bm, bk, wm, wk, turn, zob)
    path[pidx] = h
    if ply > 0 and _is_repetition(path, pidx, h, rev):
        return 0
    mv = moves[ply]
    n = generate_moves(bm, bk, wm, wk, turn, mv)
    if n == 0:
        return -(MATE - ply)
    if ply > 0 and quiet >= rule_limit:
        return 0
    if ply > 0 and tb_pieces and popcount(bm | bk | wm | wk) <= tb_pieces:
        found, s = _probe_node(bm, bk, wm, wk, turn, quiet, rule_limit, ply, tb_rows_at, tb_absent, tb_misses,
                               stats)
        if found:
            return s
    if ply >= MAX_PLY - 1 or (depth <= 0 and mv[0, M_CAPTURED] == 0):
        return evaluate(bm, bk, wm, wk, turn)
    if depth < 0:
        depth = 0
    slot = h & (tt.shape[0] - 1)
    tt_move, settled, s = _probe_tt(tt, slot, h, depth, alpha, beta, ply, stats[S_EPOCH])
    if settled:
        return s
    sc, order = scores[ply], orders[ply]
    _order(mv, n, sc, tt_move, killers, history, ply)
    for i in range(n):
        order[i] = i
    alpha0, best, best_i = alpha, -INF, 0
    for k in range(n):
        i = _pick(sc, n, k, order)
        new_quiet, new_rev = _child_counters(mv, i, quiet, rev, man_resets)
        window = beta if k == 0 else alpha + 1  # full window for the first move, null window after
        s = -negamax(mv[i, M_BM], mv[i, M_BK], mv[i, M_WM], mv[i, M_WK], 1 - turn, depth - 1, -window, -alpha,
                     ply + 1, new_quiet, new_rev, pidx + 1, rule_limit, man_resets,
                     moves, scores, orders, tt, killers, history, path, zob, stats,
                     tb_pieces, tb_rows_at, tb_absent, tb_misses)
        if k > 0 and alpha < s < beta and not stats[S_ABORTED]:  # null window failed high: search again
            s = -negamax(mv[i, M_BM], mv[i, M_BK], mv[i, M_WM], mv[i, M_WK], 1 - turn, depth - 1, -beta, -alpha,
                         ply + 1, new_quiet, new_rev, pidx + 1, rule_limit, man_resets,
                         moves, scores, orders, tt, killers, history, path, zob, stats,
                         tb_pieces, tb_rows_at, tb_absent, tb_misses)
        if stats[S_ABORTED]:
            return 0
        if s > best:
            best, best_i = s, i
            if s > alpha:
                alpha = s
                if s >= beta:
                    _remember_cutoff(mv, i, ply, depth, killers, history)
                    break
    if ply == 0:
        stats[S_BEST] = best_i
    _store_tt(tt, slot, h, _move_key(mv, best_i), best, alpha0, beta, depth, ply, stats[S_EPOCH])
    return best


# --- Python side ----------------------------------------------------------------

class _Tables:
    """The kernel's scratch arrays and transposition table, reused between moves."""

    def __init__(self, tt_bits: int) -> None:
        self.moves = np.zeros((MAX_PLY, MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
        self.scores = np.zeros((MAX_PLY, MAX_MOVES), dtype=np.int64)
        self.orders = np.zeros((MAX_PLY, MAX_MOVES), dtype=np.int64)
        self.tt = np.zeros((1 << tt_bits, TT_COLUMNS), dtype=np.int64)
        self.killers = np.full((MAX_PLY, 2), NO_MOVE, dtype=np.int64)
        self.history = np.zeros((32, 32), dtype=np.int64)
        self.path = np.zeros(HISTORY_SIZE + MAX_PLY + 1, dtype=np.int64)
        self.stats = np.zeros(STATS_SIZE, dtype=np.int64)
        self.epoch = 0  #: bumped when endgame tables are read: the bounds found before stop settling nodes

    def clear(self) -> None:
        """Forget everything learned (a new game)."""
        self.tt[:] = 0
        self.epoch = 0
        self.killers[:] = NO_MOVE
        self.history[:] = 0


@dataclass(frozen=True)
class SearchInfo:
    """What the last search found."""

    depth: int
    """Deepest completed iteration."""
    score: int
    """Score for the side to move (hundredths of a man; beyond MATE - 1000 a win found by the search,
    from TB_WIN - MAX_PLY to TB_WIN a win the endgame tables gave a node of it)."""
    nodes: int
    """Nodes searched over all iterations."""
    seconds: float
    """Wall time of the search."""
    move: str
    """The chosen move."""
    source: str = "search"
    """"search", "tables" (endgame tables) or "forced" (one legal move)."""
    table_hits: int = 0
    """Nodes of the search the endgame tables answered (``tables="search"``)."""
    pv: tuple[str, ...] = ()
    """The principal variation, PDN moves from the searched position: the chosen move, then for each
    position that follows the endgame tables' best move where they hold it, else the transposition
    table's (:meth:`SearchEngine.principal_variation`); empty for a table or forced move."""

    @property
    def nps(self) -> float:
        """Nodes per second."""
        return self.nodes / self.seconds if self.seconds > 0 else 0.0


def _history_keys(board: Board) -> list[int]:
    """Zobrist keys of the game positions since the last irreversible move, oldest first."""
    keys: list[int] = []
    replay = board.copy()
    count = 0
    while replay.move_stack and count < HISTORY_SIZE - 1:
        move = replay.pop()
        if move.is_capture or replay.piece_at(move.start) in ("b", "w"):
            break
        keys.append(int(zobrist_hash(*replay.key(), ZOBRIST)))
        count += 1
    keys.reverse()
    return keys


def _python_move_key(move: Move) -> int:
    """The kernel's :func:`_move_key` of a Board move: from, to (bit indices) and the captured pieces."""
    captured = sum(1 << (square - 1) for square in move.captured)
    return (move.start - 1) | ((move.end - 1) << 5) | (captured << 10)


_local = threading.local()


def _default_tables() -> _Tables:
    """Scratch arrays for searches that bring none (one set per thread, reused)."""
    if not hasattr(_local, "tables"):
        _local.tables = _Tables(16)
    return _local.tables


class _TableProbe:
    """The endgame tables as the kernel probes them inside its search (SearchEngine's ``tables="search"``).

    The kernel reads the Tablebase's lookup rows (:meth:`Tablebase.kernel_rows_at`
    of the board's rule) for every node of at most ``pieces`` pieces; what it
    could not read (a table not open yet, a block not read) it notes as a miss,
    and :meth:`load_misses` probes those positions through the Tablebase after
    the search, which opens the tables and reads the blocks for the next one.
    A material with no table (or no layer of the rule) is marked absent and
    never noted again.
    """

    def __init__(self, tablebase: Tablebase, pieces: int) -> None:
        self.tablebase = tablebase
        self.pieces = pieces
        self.misses = np.zeros((MISS_SLOTS, MISS_WIDTH), dtype=np.int64)
        self._absent: dict[str, np.ndarray] = {}

    @classmethod
    def of(cls, tablebase: Tablebase | None) -> "_TableProbe | None":
        """The probe of a Tablebase, or None without one or without any table in it."""
        if tablebase is None:
            return None
        pieces = tablebase.largest_pieces
        return cls(tablebase, pieces) if pieces else None

    def kernel_args(self, rule: str) -> tuple[int, int, np.ndarray, np.ndarray]:
        """(pieces, rows address, absent materials, miss buffer) of the kernel under ``rule``."""
        absent = self._absent.get(rule)
        if absent is None:
            absent = self._absent[rule] = np.zeros(NUM_CODES, dtype=np.uint8)
        return self.pieces, int(self.tablebase.kernel_rows_at(rule)), absent, self.misses

    def load_misses(self, count: int, rule: str) -> bool:
        """Probe the ``count`` positions the last search missed, so that the next one finds them;
        whether any was found (a material without a table is marked absent instead)."""
        found = np.unique(self.misses[:count], axis=0)
        try:
            self._probe(found, rule)
            return True
        except (KeyError, LookupError, ValueError):  # some material has no table: find which, one at a time
            loaded = False
            for row in found:
                try:
                    self._probe(row[None, :], rule)
                    loaded = True
                except (KeyError, LookupError, ValueError):
                    self._absent[rule][int(row[6])] = 1
            return loaded

    def _probe(self, rows: np.ndarray, rule: str) -> None:
        columns = [np.ascontiguousarray(rows[:, j]) for j in range(6)]
        self.tablebase.probe_batch_rule(*columns[:5], columns[5], rule=rule)


_NO_PROBE = (0, 0, np.zeros(1, dtype=np.uint8), np.zeros((1, MISS_WIDTH), dtype=np.int64))


def search_position(board: Board, depth: int, *, tables: _Tables | None = None,
                    max_nodes: int = 2**62, alpha: int = -INF, beta: int = INF,
                    probe: _TableProbe | None = None) -> tuple[int, int, int, bool]:
    """One fixed-depth search: (score, best move index, nodes, aborted).

    The best move index refers to ``board.legal_moves()`` order (the kernel's order).
    With ``probe``, the endgame tables score the nodes below the root they hold
    (a win TB_WIN minus its ply); the nodes they answered are in ``tables.stats[S_TB_HITS]``.
    A search that met tables (or blocks) not in memory yet loads them and runs
    once more within what is left of ``max_nodes`` (the transposition table's
    earlier bounds order its moves, and settle no node), so that its answer sees them.

    >>> score, best, nodes, aborted = search_position(Board("B:W32:B1,K28"), 4)
    >>> score > 0, aborted
    (True, False)
    """
    tables = tables or _default_tables()
    history = _history_keys(board)
    score = _run_kernel(board, depth, tables, history, max_nodes, alpha, beta, probe)
    stats = tables.stats
    if probe is not None and stats[S_TB_MISSES] and not stats[S_ABORTED]:
        spent, hits = int(stats[S_NODES]), int(stats[S_TB_HITS])
        if probe.load_misses(int(stats[S_TB_MISSES]), board.rule.name):
            tables.epoch += 1  # the bounds found without those tables must not settle the nodes again
            if spent < max_nodes:
                score = _run_kernel(board, depth, tables, history, max_nodes - spent, alpha, beta, probe)
                stats[S_NODES] += spent
                stats[S_TB_HITS] += hits
    return int(score), int(stats[S_BEST]), int(stats[S_NODES]), bool(stats[S_ABORTED])


def _run_kernel(board: Board, depth: int, tables: _Tables, history: list[int], max_nodes: int,
                alpha: int, beta: int, probe: _TableProbe | None) -> int:
    """One call of :func:`negamax` on ``board`` (``tables.stats`` filled)."""
    tables.path[:len(history)] = history
    stats = tables.stats
    stats[:] = 0
    stats[S_MAX_NODES] = max_nodes
    stats[S_EPOCH] = tables.epoch
    tb_args = _NO_PROBE if probe is None else probe.kernel_args(board.rule.name)
    return negamax(board.black_men, board.black_kings, board.white_men, board.white_kings, board.turn,
                   depth, alpha, beta, 0, board.quiet_plies, len(history), len(history),
                   board.rule.limit_plies, board.rule.man_move_resets,
                   tables.moves, tables.scores, tables.orders, tables.tt, tables.killers,
                   tables.history, tables.path, ZOBRIST, stats, *tb_args)


class SearchEngine(Engine):
    """Iterative-deepening alpha-beta engine, optionally probing endgame tables.

    ``depth`` caps the iterations, ``time`` the seconds per move (the game's
    Limit can lower both, and adds a node cap); ``noise`` (centi-men) adds
    seeded random noise to the scores of root moves, which makes a weak,
    varied player; ``tables_dir`` (or a ready ``tablebase`` object) makes it
    play table moves in positions the tables cover, and with ``tables="search"``
    (the default) also score every node of its search that they cover by
    their value (``"root"``: only the positions played are looked up).

    >>> engine = SearchEngine(depth=2, noise=60, seed=3)
    >>> from egtb import Board
    >>> engine.play(GameState.from_board(Board()), Limit()).move in Board().legal_moves()
    True
    """

    def __init__(self, *, depth: int | None = None, time: float | None = None, noise: int = 0,
                 seed: int | None = None, tables_dir: str | Path | None = None,
                 tablebase: Tablebase | None = None, tt_bits: int = DEFAULT_TT_BITS, name: str | None = None,
                 tables: str = "search", pv_fill: int = 0) -> None:
        if tables not in TABLES_MODES:
            raise ValueError(f"tables={tables!r}: choose from {', '.join(TABLES_MODES)}")
        if depth is None and time is None:
            depth = STRENGTHS["medium"]["depth"]
        self.depth = depth
        self.time = time
        self.noise = noise
        self.seed = seed
        self.name = name or (f"search(depth={depth})" if time is None else f"search(time={time})")
        self._rng = random.Random(seed)
        self._tables = _Tables(tt_bits)
        self._tablebase: Tablebase | None = (tablebase if tablebase is not None
                                             else None if tables_dir is None else tablebase_for(tables_dir))
        self.tables = tables
        self.pv_fill = pv_fill
        """Nodes the searches that fill a principal variation's lost moves may take after each move
        (at most a tenth of the move's own; 0, the default: none, so that play is what it was
        without the line, and the transposition table is left as the search left it)."""
        self._probe = _TableProbe.of(self._tablebase) if tables == "search" else None
        self.last_info: SearchInfo | None = None
        search_position(Board("B:W32:B1"), 1, tables=self._tables)  # load the compiled kernel now

    def new_game(self) -> None:
        self._tables.clear()
        self._rng = random.Random(self.seed)

    def close(self) -> None:
        self._tablebase, self._probe = None, None  # the process's shared Tablebase (tablebase_for) stays open

    def play(self, state: GameState, limit: Limit) -> PlayResult:
        """The chosen move with the search's score (none for a table move or a forced move)."""
        move = self.choose(state.board(), limit)
        info = self.last_info
        assert info is not None
        score = int(info.score) if info.source == "search" else None
        details: dict[str, object] = {"depth": info.depth, "nodes": info.nodes, "source": info.source}
        if info.pv:
            details["pv"] = info.pv
        return PlayResult(move, score, details)

    def choose(self, board: Board, limit: Limit = Limit()) -> Move:
        """The move to play in ``board`` under ``limit``; fills ``last_info``."""
        started = time.perf_counter()
        legal = board.legal_moves()
        if not legal:
            raise ValueError(f"no legal move in {board.fen()}")
        table_move = self.probe_tables(board)
        if table_move is not None:
            self.last_info = SearchInfo(0, 0, 0, time.perf_counter() - started, str(table_move), "tables")
            return table_move
        if len(legal) == 1:
            self.last_info = SearchInfo(0, 0, 0, time.perf_counter() - started, str(legal[0]), "forced")
            return legal[0]
        if self.noise:
            return self._choose_noisy(board, legal, started)
        return self._iterate(board, limit, started)

    def _budget(self, limit: Limit) -> tuple[int, float | None, int | None]:
        """(max depth, seconds or None, nodes or None) from the engine's and the game's limits."""
        depth = min(d for d in (self.depth, limit.depth, MAX_DEPTH) if d is not None)
        times = [t for t in (self.time, limit.move_time_budget()) if t is not None]
        return depth, (min(times) if times else None), limit.nodes

    def _iterate(self, board: Board, limit: Limit, started: float) -> Move:
        """Iterative deepening under the depth, time and node limits."""
        max_depth, seconds, node_cap = self._budget(limit)
        deadline = None if seconds is None else started + seconds
        legal = board.legal_moves()
        best, score, done, total, hits = legal[0], 0, 0, 0, 0
        nps = 1e6  # until an iteration big enough to measure
        for depth in range(1, max_depth + 1):
            budget = 2**62 if node_cap is None else max(1, node_cap - total)
            if deadline is not None:
                left = deadline - time.perf_counter()
                if depth > 1 and left <= 0:
                    break
                budget = min(budget, max(1000, int(left * nps)))
            t0 = time.perf_counter()
            s, index, nodes, aborted = search_position(board, depth, tables=self._tables, max_nodes=budget,
                                                       probe=self._probe)
            total += nodes
            hits += int(self._tables.stats[S_TB_HITS])
            elapsed = time.perf_counter() - t0
            if nodes >= 5000 and elapsed > 0:
                nps = max(MIN_NPS_ESTIMATE, nodes / elapsed)
            if aborted:
                break
            best, score, done = legal[index], s, depth
            if abs(s) > MATE_BOUND and MATE - abs(s) <= depth:
                break  # a forced result inside the horizon: deeper search adds nothing
            if node_cap is not None and total >= node_cap:
                break
        pv = (tuple(map(str, self.principal_variation(board, best, depth=done, fill_nodes=min(total // PV_FILL_SHARE, self.pv_fill))))
              if done else ())
        self.last_info = SearchInfo(done, score, total, time.perf_counter() - started, str(best), table_hits=hits,
                                    pv=pv)
        return best

    def principal_variation(self, board: Board, first: Move, *, depth: int = 0, fill_nodes: int = PV_FILL_NODES,
                            max_plies: int = PV_PLIES) -> list[Move]:
        """The line the last search expects from ``board``: ``first`` (its chosen move), then at each
        position the endgame tables' best move where they hold it, else the move the transposition
        table holds; at most ``max_plies`` moves, ending at the end of the game, at a position
        met twice in the line, or where none of them knows a move.

        The transposition table keeps the last of the positions that share a slot, so a long search
        may have lost a move of its line: while the line is shorter than the ``depth`` searched, a
        small search of what is left finds the next move instead, all of them within ``fill_nodes``
        (at most PV_FILL_NODES; a move's search gives it a tenth of its own nodes, PV_FILL_SHARE).

        >>> engine = SearchEngine(depth=6)
        >>> board = Board("B:W32:B1,K28")
        >>> line = engine.principal_variation(board, engine.choose(board))
        >>> [str(m) for m in line][:2] == list(engine.last_info.pv[:2])
        True
        """
        line: list[Move] = []
        replay = board.copy()
        seen = {replay.key()}
        move: Move | None = first
        budget = [min(fill_nodes, PV_FILL_NODES)]
        while move is not None and len(line) < max_plies:
            replay.push(move)
            line.append(move)
            if replay.is_game_over() or replay.key() in seen:
                break
            seen.add(replay.key())
            move = self.probe_tables(replay)  # exact where they reach; the search's bounds elsewhere
            if move is None:
                move = self._table_move(replay)
            if move is None and len(line) < depth:
                move = self._fill_move(replay, depth - len(line), budget)
        return line

    def _fill_move(self, board: Board, depth: int, budget: list[int]) -> Move | None:
        """The best move of the deepest search of ``board``, to 1, 2, ... up to ``depth`` plies, that
        ends within the nodes left in ``budget[0]`` (spent from it), or None when not even one does:
        a shallower search's move rather than none, so that a line is not cut short where the
        budget (a tenth of the move's own nodes) cannot pay for the full depth, as on a loaded
        machine."""
        found = None
        for plies in range(1, depth + 1):
            if budget[0] <= 0:
                break
            _, index, nodes, aborted = search_position(board, plies, tables=self._tables, max_nodes=budget[0],
                                                       probe=self._probe)
            budget[0] -= nodes
            if aborted:
                break
            found = board.legal_moves()[index]
        return found

    def _table_move(self, board: Board) -> Move | None:
        """The legal move the transposition table holds for ``board``, or None."""
        tt = self._tables.tt
        h = zobrist_hash(*board.key(), ZOBRIST)
        slot = int(h) & (tt.shape[0] - 1)
        if tt[slot, T_KEY] != h:
            return None
        stored = int(tt[slot, T_MOVE])
        for move in board.legal_moves():
            if _python_move_key(move) == stored:
                return move
        return None

    def _choose_noisy(self, board: Board, legal: list[Move], started: float) -> Move:
        """Score every root move with a full window, add seeded noise, take the best."""
        depth = max(1, self.depth or 1)
        best, best_value, total = legal[0], -float("inf"), 0
        for move in legal:
            board.push(move)
            s, _, nodes, _ = search_position(board, depth - 1, tables=self._tables, probe=self._probe)
            board.pop()
            total += nodes
            value = -s + self._rng.gauss(0, self.noise)
            if value > best_value:
                best, best_value = move, value
        self.last_info = SearchInfo(depth, int(best_value), total, time.perf_counter() - started, str(best))
        return best

    def probe_tables(self, board: Board) -> Move | None:
        """The best table move of ``board`` (:func:`egtb.probe.moves.best_moves`), or None without
        tables or outside them."""
        tb = self._tablebase
        if tb is None or board.piece_count() > tb.largest_pieces:  # a piece count built in part counts
            return None
        try:
            ranking = best_moves(tb, board)
        except MissingTableError:
            return None
        return ranking.moves[0].move if ranking.moves else None
