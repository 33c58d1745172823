"""Probe endgame tables: value and DTW of a position, best moves, batches.

A :class:`Tablebase` opens a directory of table files written by the builder
(one ``<material>.h5`` per material, see :mod:`egtb.tables.storage`), loads tables
lazily and keeps a bounded LRU cache of them. A position is colour-normalised
(mirrored when White is to move), its material picks the table and
:mod:`egtb.tables.index` gives its place in it.

Values are for the side to move: ``+1`` win, ``0`` draw, ``-1`` loss. DTW is
the number of plies to the end of the game under perfect play (the winner
shortest, the loser longest), without the move rule.

>>> with Tablebase("data/egtb") as tb:                     # doctest: +SKIP
...     tb.probe("W:WK10,K14:BK1")
ProbeResult(value='win', dtw=...)
"""

from __future__ import annotations

import os
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from egtb.tables import compact, storage
from egtb.rules.board import Board, Move
from egtb.tables.index import NUM_CODES, code_of_material, material_code, material_of_code, popcount, position_index
from egtb.tables.material import Material, all_materials, mirror_bb
from egtb.rules.movegen import count_simple_moves, has_capture
from egtb.errors import MissingTableError, TableError
from egtb.tables.values import WDL_OF_CODE, Wdl

__all__ = [
    "MissingTableError", "MoveValue", "ProbeResult", "Tablebase", "TableError", "Wdl",
    "WDL_DRAW", "WDL_LOSS", "WDL_WIN",
]

WDL_WIN = int(Wdl.WIN)  #: the side to move wins (for kernels)
WDL_DRAW = int(Wdl.DRAW)  #: neither side can force a win
WDL_LOSS = int(Wdl.LOSS)  #: the side to move loses
#: What the batch kernel writes for an unsolved position (UNKNOWN is never stored).
INVALID_WDL = int(WDL_OF_CODE[0])
_WDL_OF_CODE = tuple(int(v) for v in WDL_OF_CODE)

#: Special codes of :func:`locate` for positions no table holds.
CODE_INVALID = -1  #: overlapping pieces, men on their crowning row, > 12 a side, bad turn
CODE_NO_PIECES = -2  #: the side to move has no pieces: lost, DTW 0
CODE_NO_OPPONENT = -3  #: only the side to move has pieces (the opponent already lost)
#: Squares black men may stand on (1-28) and white men (5-32).
_BLACK_MEN_OK = 0x0FFFFFFF
_WHITE_MEN_OK = 0xFFFFFFF0
_MAX_PER_SIDE = 12
_MASK32 = 0xFFFFFFFF
#: Tables kept in memory by default.
DEFAULT_MAX_OPEN = 512


@dataclass(frozen=True)
class ProbeResult:
    """Perfect-play value and distance of a position for the side to move."""

    value: str
    """'win', 'draw' or 'loss' for the side to move."""
    dtw: int | None
    """Plies to the end of the game under perfect play (0 for a draw); None
    when a compact (WDL-only) file answered."""

    @property
    def wdl(self) -> Wdl:
        """Wdl.WIN (+1), Wdl.DRAW (0) or Wdl.LOSS (-1)."""
        return Wdl.parse(self.value)

    @property
    def wld(self) -> Wdl:
        """Deprecated spelling of :attr:`wdl` (kept for one release)."""
        warnings.warn("ProbeResult.wld is deprecated; use wdl", DeprecationWarning, stacklevel=2)
        return self.wdl


@dataclass(frozen=True)
class MoveValue:
    """A legal move and what it leads to, seen by the player making it."""

    move: Move
    """The move."""
    value: str
    """'win', 'draw' or 'loss' for the mover after playing it."""
    dtw: int | None
    """Plies to the end of the game when this move is played, then perfect play
    (the DTW of the position it leads to, plus one); 0 for a draw. The best
    move's ``dtw`` equals the position's own DTW. None from a compact file."""


# ------------------------------------------------------------------ kernels

@njit(cache=True)
def locate(bm, bk, wm, wk, turn):
    """(material code, index) of a position after colour normalisation.

    The code is CODE_INVALID, CODE_NO_PIECES or CODE_NO_OPPONENT (index 0)
    for positions no table holds.
    """
    bm, bk, wm, wk = np.int64(bm), np.int64(bk), np.int64(wm), np.int64(wk)
    if not _valid(bm, bk, wm, wk, turn):
        return CODE_INVALID, np.int64(0)
    if turn == 1:
        bm, bk, wm, wk = (np.int64(mirror_bb(wm)), np.int64(mirror_bb(wk)),
                          np.int64(mirror_bb(bm)), np.int64(mirror_bb(bk)))
    n_bm, n_bk, n_wm, n_wk = popcount(bm), popcount(bk), popcount(wm), popcount(wk)
    if n_bm + n_bk == 0:
        return CODE_NO_PIECES, np.int64(0)
    if n_wm + n_wk == 0:
        return CODE_NO_OPPONENT, np.int64(0)
    return material_code(n_bm, n_bk, n_wm, n_wk), position_index(bm, bk, wm, wk)


@njit(cache=True, inline="always")
def _valid(bm, bk, wm, wk, turn):
    """Whether the bitboards form a position some table could hold."""
    if (bm | bk | wm | wk) & ~np.int64(_MASK32) or (turn != 0 and turn != 1):
        return False
    if bm & bk or bm & wm or bm & wk or bk & wm or bk & wk or wm & wk:
        return False
    if bm & ~np.int64(_BLACK_MEN_OK) or wm & ~np.int64(_WHITE_MEN_OK):
        return False
    return popcount(bm | bk) <= _MAX_PER_SIDE and popcount(wm | wk) <= _MAX_PER_SIDE


@njit(cache=True)
def has_moves(bm, bk, wm, wk, turn):
    """Whether the side to move has a legal move."""
    return count_simple_moves(bm, bk, wm, wk, turn) > 0 or has_capture(bm, bk, wm, wk, turn)


@njit(cache=True)
def locate_batch(bm, bk, wm, wk, turn, codes, indices, present):
    """Fill codes[i], indices[i] by :func:`locate` and mark present[code] of tabled ones.

    Returns the first invalid position, or -1 when all are valid.
    """
    for i in range(bm.shape[0]):
        code, index = locate(bm[i], bk[i], wm[i], wk[i], turn[i])
        if code == CODE_INVALID:
            return i
        codes[i] = code
        indices[i] = index
        if code >= 0:
            present[code] = True
    return -1


@intrinsic
def _uint8_ptr(typingctx, address):
    """The int64 ``address`` as a uint8 pointer (the array must outlive its use)."""
    sig = types.CPointer(types.uint8)(types.int64)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))
    return sig, codegen


@intrinsic
def _uint16_ptr(typingctx, address):
    """The int64 ``address`` as a uint16 pointer (the array must outlive its use)."""
    sig = types.CPointer(types.uint16)(types.int64)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))
    return sig, codegen


@njit(cache=True)
def gather(codes, indices, sizes, wld_at, dtw_at, dtw_wide, wdl_of_code, out_wld, out_dtw):
    """Values of located positions (codes, indices); return how many fell outside their table.

    For a material code c, ``sizes[c]`` is its table's length, ``wld_at[c]``
    the address of its value codes (uint8) and ``dtw_at[c]`` that of its DTW
    (uint16 when ``dtw_wide[c]``, else uint8); the caller keeps the arrays
    alive. Draws get DTW 0. A tight loop apart from :func:`locate_batch`, so that many random
    table reads are in flight at once.
    """
    bad = 0
    for i in range(codes.shape[0]):
        code = codes[i]
        if code < 0:
            continue
        index = indices[i]
        if index >= sizes[code]:
            out_wld[i] = INVALID_WDL
            bad += 1
            continue
        value = wdl_of_code[_uint8_ptr(wld_at[code])[index]]
        out_wld[i] = value
        if value == WDL_DRAW:
            out_dtw[i] = 0
        elif dtw_wide[code]:
            out_dtw[i] = _uint16_ptr(dtw_at[code])[index]
        else:
            out_dtw[i] = _uint8_ptr(dtw_at[code])[index]
    return bad


@njit(cache=True)
def fill_terminal(bm, bk, wm, wk, turn, codes, out_wld, out_dtw):
    """Values of the positions that need no table (one side without pieces)."""
    for i in range(codes.shape[0]):
        if codes[i] == CODE_NO_PIECES:
            out_wld[i], out_dtw[i] = WDL_LOSS, 0
        elif codes[i] == CODE_NO_OPPONENT:
            if has_moves(bm[i], bk[i], wm[i], wk[i], turn[i]):
                out_wld[i], out_dtw[i] = WDL_WIN, 1
            else:
                out_wld[i], out_dtw[i] = WDL_LOSS, 0


# ------------------------------------------------------------------ tables

@dataclass
class _Table:
    """One loaded table: value codes and DTW per position of a material."""

    material: Material
    wld: np.ndarray
    dtw: np.ndarray
    path: Path

    @property
    def nbytes(self) -> int:
        return int(self.wld.nbytes + self.dtw.nbytes)


PositionLike = Board | str


class Tablebase:
    """A directory of endgame tables, probed lazily through a bounded LRU cache.

    ``directory`` defaults to $EGTB_DIR or data/egtb. At most ``max_open``
    tables stay loaded; with ``memory_limit_bytes`` the least recently used
    tables are dropped while the loaded ones take more than that (the table
    being probed always stays).

    >>> with Tablebase("data/egtb") as tb:                    # doctest: +SKIP
    ...     tb.probe_wdl("B:WK10:BK1"), tb.probe_dtw("B:WK10:BK1")
    (0, 0)
    """

    def __init__(self, directory: os.PathLike | str | None = None, *,
                 max_open: int = DEFAULT_MAX_OPEN,
                 memory_limit_bytes: int | None = None) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, not {max_open}")
        self.directory = Path(directory) if directory is not None else storage.default_dir()
        self.max_open = max_open
        self.memory_limit_bytes = memory_limit_bytes
        self._tables: OrderedDict[int, _Table] = OrderedDict()
        self._loaded_bytes = 0
        self._listing: tuple[float, list[Material]] | None = None

    # --- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Drop every loaded table."""
        self._tables.clear()
        self._loaded_bytes = 0

    def __enter__(self) -> "Tablebase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Tablebase({str(self.directory)!r}, loaded={len(self._tables)})"

    # --- what is there -----------------------------------------------------

    def materials(self) -> list[Material]:
        """Materials with a table file in the directory, sorted by pieces then name.

        >>> Tablebase("/nonexistent").materials()
        []
        """
        stamp = self.directory.stat().st_mtime if self.directory.is_dir() else -1.0
        if self._listing is None or self._listing[0] != stamp:
            self._listing = (stamp, self._scan())
        return list(self._listing[1])

    def _scan(self) -> list[Material]:
        """Materials of the table files in the directory (read from their names)."""
        found = []
        for suffix in (storage.SUFFIX, compact.SUFFIX):
            for path in self.directory.glob(f"*{suffix}"):
                try:
                    found.append(Material.parse(path.name[:-len(suffix)]))
                except ValueError:
                    continue
        return sorted(set(found), key=lambda m: (m.pieces, m.name))

    @property
    def max_pieces(self) -> int:
        """Largest n such that every material of 2..n pieces has a table (0 if none).

        >>> Tablebase("/nonexistent").max_pieces
        0
        """
        return _complete_up_to(frozenset(self.materials()))

    @property
    def loaded_bytes(self) -> int:
        """Memory taken by the loaded tables' arrays."""
        return self._loaded_bytes

    @property
    def loaded_materials(self) -> list[Material]:
        """Materials loaded now, least recently used first."""
        return [t.material for t in self._tables.values()]

    def load(self, material: Material | str) -> None:
        """Load a material's table now (MissingTableError when absent).

        >>> Tablebase("/nonexistent").load("1k-1k")
        Traceback (most recent call last):
        ...
        egtb.errors.MissingTableError: no table for material 1k-1k in /nonexistent (1k-1k.h5 is missing)
        """
        if isinstance(material, str):
            material = Material.parse(material)
        self._table(code_of_material(material))

    def _table(self, code: int) -> _Table:
        """The loaded table of a material code, loading (and evicting) as needed."""
        table = self._tables.get(code)
        if table is not None:
            self._tables.move_to_end(code)
            return table
        table = self._read(material_of_code(code))
        self._tables[code] = table
        self._loaded_bytes += table.nbytes
        self._evict()
        return table

    def _read(self, material: Material) -> _Table | compact.CompactTable:
        """Read one table file (checksum verified); a compact file when there is no master."""
        path = storage.table_path(self.directory, material)
        if not path.exists() and compact.compact_path(self.directory, material).exists():
            return compact.open_compact(compact.compact_path(self.directory, material), owner=self)
        if not path.exists():
            raise MissingTableError(f"no table for material {material.name} in {self.directory} "
                                    f"({path.name} is missing)")
        data = storage.open_table(path)
        if data.material != material:
            raise TableError(f"{path}: holds material {data.material.name}, not {material.name}")
        dtw_type = np.uint8 if data.dtw.dtype.itemsize == 1 else np.uint16
        return _Table(material, np.ascontiguousarray(data.wld, dtype=np.uint8),
                      np.ascontiguousarray(data.dtw, dtype=dtw_type), path)

    def _evict(self) -> None:
        """Drop least recently used tables beyond max_open or the memory limit."""
        limit = self.memory_limit_bytes
        while len(self._tables) > 1 and (
                len(self._tables) > self.max_open
                or (limit is not None and self._loaded_bytes > limit)):
            _, old = self._tables.popitem(last=False)
            self._loaded_bytes -= old.nbytes

    # --- single probes -----------------------------------------------------

    def probe_wdl(self, board: PositionLike) -> Wdl:
        """Wdl.WIN (+1), Wdl.DRAW (0) or Wdl.LOSS (-1) for the side to move.

        Raises MissingTableError when the material has no table.

        >>> Tablebase("/nonexistent").probe_wdl("B:W5,6,10:B1")   # no legal move
        <Wdl.LOSS: -1>
        """
        return Wdl(self._probe_key(_key_of(board))[0])

    def probe_wld(self, board: PositionLike) -> int:
        """Deprecated spelling of :meth:`probe_wdl` (kept for one release)."""
        warnings.warn("probe_wld is deprecated; use probe_wdl", DeprecationWarning, stacklevel=2)
        return self.probe_wdl(board)

    def probe_dtw(self, board: PositionLike) -> int:
        """Plies to the end under perfect play (0 for a draw or a finished game).

        >>> Tablebase("/nonexistent").probe_dtw("B:W5,6,10:B1")
        0
        """
        return self._probe_key(_key_of(board))[1]

    def probe(self, board: PositionLike) -> ProbeResult:
        """Value name and DTW for the side to move.

        >>> Tablebase("/nonexistent").probe("W:W5:B1,2")
        ProbeResult(value='loss', dtw=0)
        """
        wdl, dtw = self._probe_key(_key_of(board))
        return ProbeResult(str(Wdl(wdl)), dtw)

    def get_wdl(self, board: PositionLike, default: int | None = None) -> Wdl | int | None:
        """Like :meth:`probe_wdl`, but ``default`` when the table is missing.

        >>> Tablebase("/nonexistent").get_wdl("B:WK10:BK1", default=9)
        9
        """
        try:
            return self.probe_wdl(board)
        except MissingTableError:
            return default

    def get_wld(self, board: PositionLike, default: int | None = None) -> Wdl | int | None:
        """Deprecated spelling of :meth:`get_wdl` (kept for one release)."""
        warnings.warn("get_wld is deprecated; use get_wdl", DeprecationWarning, stacklevel=2)
        return self.get_wdl(board, default)

    def get_dtw(self, board: PositionLike, default: int | None = None) -> int | None:
        """Like :meth:`probe_dtw`, but ``default`` when the table is missing."""
        try:
            return self.probe_dtw(board)
        except MissingTableError:
            return default

    def _probe_key(self, key: tuple[int, int, int, int, int]) -> tuple[int, int]:
        """(wld, dtw) of a position given as (bm, bk, wm, wk, turn)."""
        code, index = locate(*key)
        if code >= 0:
            try:
                table = self._table(code)
            except MissingTableError:
                if not has_moves(*key):
                    return WDL_LOSS, 0
                raise
            if isinstance(table, compact.CompactTable):
                return compact.probe_position(table, key, index, self._probe_key)
            wld = _WDL_OF_CODE[table.wld[index]]
            if wld == INVALID_WDL:
                raise TableError(f"{table.path}: position {index} is unsolved")
            return wld, int(table.dtw[index]) if wld else 0
        return _terminal_value(code, key)

    # --- moves -------------------------------------------------------------

    def best_moves(self, board: PositionLike) -> list[MoveValue]:
        """Every legal move with its value for the mover, best first.

        Wins come first, shortest DTW first; then draws; then losses, longest
        DTW first. A move's ``dtw`` counts the plies from the current position,
        this move included, so the best move's equals ``probe(board).dtw``.

        >>> Tablebase("/nonexistent").best_moves("B:W5,6,10:B1")
        []
        """
        board = board if isinstance(board, Board) else Board(board)
        rows = [self._move_value(board, move) for move in board.legal_moves()]
        return sorted(rows, key=_move_order)

    def _move_value(self, board: Board, move: Move) -> MoveValue:
        """Value of one move for the mover."""
        board.push(move)
        try:
            wld, dtw = self._probe_key(board.key())
        finally:
            board.pop()
        return MoveValue(move, str(Wdl(-wld)), dtw if dtw is None else 0 if wld == 0 else dtw + 1)

    # --- batches -----------------------------------------------------------

    def probe_batch(self, bm: np.ndarray, bk: np.ndarray, wm: np.ndarray, wk: np.ndarray,
                    turn: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """WDL (int8: +1, 0, -1) and DTW (uint16) of many positions given as bitboard arrays.

        ``turn`` is an array or one side for every position. Raises ValueError
        when a position is invalid and MissingTableError when a needed table
        is absent (positions without pieces on one side need none). A WDL of
        -2 would mark an unsolved entry, which a finished table never holds.

        >>> tb = Tablebase("/nonexistent")
        >>> wld, dtw = tb.probe_batch(np.array([1]), np.array([0]), np.array([0]),
        ...                           np.array([0]), 1)   # White has no pieces
        >>> wld.tolist(), dtw.tolist()
        ([-1], [0])
        """
        arrays = _batch_arrays(bm, bk, wm, wk, turn)
        n = len(arrays[0])
        codes = np.empty(n, dtype=np.int32)
        indices = np.empty(n, dtype=np.int64)
        present = np.zeros(NUM_CODES, dtype=np.bool_)
        first = locate_batch(*arrays, codes, indices, present)
        if first >= 0:
            raise ValueError(f"invalid position at {first}: "
                             f"{tuple(int(a[first]) for a in arrays)}")
        tables = [self._table(code) for code in np.flatnonzero(present).tolist()]
        if any(isinstance(t, compact.CompactTable) for t in tables):
            return compact.probe_batch(arrays, self._table, owner=self)
        out_wld = np.zeros(n, dtype=np.int8)
        out_dtw = np.zeros(n, dtype=np.uint16)
        if gather(codes, indices, *_kernel_tables(tables), WDL_OF_CODE, out_wld, out_dtw):
            raise TableError(f"an index fell outside its table in {self.directory}")
        fill_terminal(*arrays, codes, out_wld, out_dtw)
        return out_wld, out_dtw


def _kernel_tables(tables: list[_Table]) -> tuple[np.ndarray, ...]:
    """(sizes, wld_at, dtw_at, dtw_wide) by material code for :func:`gather`."""
    sizes = np.zeros(NUM_CODES, dtype=np.int64)
    wld_at = np.zeros(NUM_CODES, dtype=np.int64)
    dtw_at = np.zeros(NUM_CODES, dtype=np.int64)
    dtw_wide = np.zeros(NUM_CODES, dtype=np.bool_)
    for table in tables:
        code = code_of_material(table.material)
        sizes[code] = min(len(table.wld), len(table.dtw))
        wld_at[code] = table.wld.ctypes.data
        dtw_at[code] = table.dtw.ctypes.data
        dtw_wide[code] = table.dtw.dtype == np.uint16
    return sizes, wld_at, dtw_at, dtw_wide


def _batch_arrays(bm, bk, wm, wk, turn) -> tuple[np.ndarray, ...]:
    """The five inputs of probe_batch as int64 arrays of one length."""
    arrays = [np.ascontiguousarray(a, dtype=np.int64) for a in (bm, bk, wm, wk)]
    n = len(arrays[0])
    if any(a.ndim != 1 or len(a) != n for a in arrays):
        raise ValueError("bm, bk, wm, wk must be 1-D arrays of the same length")
    turns = np.broadcast_to(np.asarray(turn, dtype=np.int64), (n,))
    return (*arrays, np.ascontiguousarray(turns))


@lru_cache(maxsize=8)
def _complete_up_to(have: frozenset[Material]) -> int:
    """Largest n with every material of 2..n pieces in ``have`` (0 if none)."""
    n = 1
    while all(m in have for m in all_materials(n + 1, min_pieces=n + 1)):
        n += 1
    return n if n >= 2 else 0


def _key_of(board: PositionLike) -> tuple[int, int, int, int, int]:
    """(bm, bk, wm, wk, turn) of a Board or FEN (ValueError for a bad FEN)."""
    if isinstance(board, Board):
        return board.black_men, board.black_kings, board.white_men, board.white_kings, board.turn
    if isinstance(board, str):
        return Board(board).key()
    raise TypeError(f"expected a Board or a FEN string, not {type(board).__name__}")


def _terminal_value(code: int, key: tuple[int, int, int, int, int]) -> tuple[int, int]:
    """(wld, dtw) of a position that needs no table."""
    if code == CODE_NO_PIECES:
        return WDL_LOSS, 0
    if code == CODE_NO_OPPONENT:
        return (WDL_WIN, 1) if has_moves(*key) else (WDL_LOSS, 0)
    raise ValueError(f"invalid position {key}")


def _move_order(mv: MoveValue) -> tuple[int, int, str]:
    """Sort key: wins by shortest DTW, draws, losses by longest DTW; then notation."""
    dtw = mv.dtw or 0
    if mv.value == "win":
        return 0, dtw, str(mv.move)
    if mv.value == "draw":
        return 1, 0, str(mv.move)
    return 2, -dtw, str(mv.move)
