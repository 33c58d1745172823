"""Probe endgame tables: value, DTW and, under a move rule, the exact result at any counter.

A :class:`Tablebase` opens a directory of table files written by the builder
(one ``<material>.h5`` per material, see :mod:`egtb.formats.master`, and the
compact ``<material>.wld``/``.wcdf`` files, :mod:`egtb.formats.compact`), loads
tables lazily and keeps a bounded LRU cache of them (:mod:`egtb.formats.cache`, as
the builder and the verifier do). Where a material has both, the values and the
categories at counter 0 come from the compact files (small enough to keep in
memory) and the master file is read only for what they lack: the DTW, and the
DTZ of a win or loss probed from a counter above 0 (or asked for). A position is colour-normalised
(mirrored when White is to move), its material picks the table and
:mod:`egtb.positions.index` gives its place in it.

Values are for the side to move. Without the move rule (``wdl``, ``dtw``):
``+1`` win, ``0`` draw, ``-1`` loss, and DTW, the plies to the end of the game
under perfect play (the winner shortest, the loser longest). Under a move-rule
preset (``wcdf``, ``crowning``, ``forty-plies``; see
:data:`egtb.rules.board.DRAW_RULES`) each table file carries a rule layer: the
:class:`~egtb.formats.values.Category` at counter 0 and DTZ, the plies up to and
including the next zeroing ply (or the end) that the winner needs. From
counter ``c`` the side to move wins iff the category is WIN and
``dtz + c <= limit``, loses iff it is LOSS and ``dtz + c <= limit``, and the
game is drawn otherwise (a position with no legal move is lost even at the
limit, its DTZ being 0). That is the ``outcome`` of :meth:`Tablebase.probe`.

The rule and counter come from the :class:`~egtb.rules.board.Board` (its
``rule`` and ``quiet_plies``; a FEN string means "wcdf" at counter 0) or from
the ``rule=``/``counter=`` keywords. A table file without the asked preset's
layer raises :class:`~egtb.errors.MissingRuleLayerError` naming the file and
the preset; ``rule_free=True`` asks for the rule-free answer only, which any
table file gives.

>>> with Tablebase("data/egtb") as tb:                     # doctest: +SKIP
...     tb.probe(Board("W:WK10,K14:BK1", quiet_plies=70))
ProbeResult(value=<Wdl.WIN: 1>, dtw=..., outcome=<Wdl.DRAW: 0>, category=..., dtz=..., rule='wcdf', counter=70)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import numpy as np

from egtb.errors import (InvalidArgumentError, InvalidPositionError, MissingRuleLayerError,
                         MissingTableError, TableError)
from egtb.formats import compact
from egtb.formats import master
from egtb.formats.cache import TableCache, process_cache, release_evicted
from egtb.formats.values import (CAT_DRAW, CAT_LOSS, CAT_WIN, INVALID_WDL, WDL_DRAW, WDL_LOSS, WDL_OF_CODE, WDL_WIN, Category,
                                 Wdl)
from egtb.positions.index import NUM_CODES, code_of_material, material_of_code
from egtb.positions.material import Material, all_materials, count_positions
from egtb.probe.compact_kernels import CompactBatches, probe_batch as probe_compact_batch, probe_dtz_batch
from egtb.probe.kernels import (BLOCK_SHIFT, COL_CATEGORY_AT, COL_CODED_AT, COL_DTZ_AT, COL_DTZ_CODED_AT,
                                COL_DTZ_WIDE, COL_MAX_DTZ, COL_SIZE, NO_DTW, ROW_WIDTH, STATUS_INVALID,
                                STATUS_NOT_LOADED, STATUS_OK, fill_terminal, fill_terminal_rule, gather,
                                gather_distance, gather_rule, outcome_at, probe_rule_one, probe_value_one)
from egtb.probe.locate import CODE_NO_OPPONENT, CODE_NO_PIECES, has_moves, locate_batch, locate_capture
from egtb.probe.tables import BlockMap, MasterLayer, MasterTable, PairedTable, Table
from egtb.rules.board import DEFAULT_RULE, DRAW_RULES, Board, DrawRule
from egtb.rules.movegen import M_BM, M_WK, MAX_MOVES, MOVE_WIDTH, generate_moves

__all__ = [
    "Category", "MissingRuleLayerError", "MissingTableError", "ProbeResult", "Tablebase",
    "TableError", "Wdl", "WDL_DRAW", "WDL_LOSS", "WDL_WIN", "outcome_at",
]

_WDL_OF_VALUE = {int(w): w for w in Wdl}  #: a dict lookup is 10 times cheaper than calling Wdl

#: Tables kept in memory by default.
DEFAULT_MAX_OPEN = 512
#: A loaded table's file is checked for a rebuild (new mtime or size) at most this often, in seconds.
RECHECK_SECONDS = 1.0
#: Bytes a position of a master table takes in the block cache at most (value, DTW or DTZ): a
#: batch over tables larger than the budget is gathered in the order of its blocks.
MASTER_BYTES_A_POSITION = 3
#: A material with a master and a compact file answers its values and counter-0 categories
#: from the compact file when it has more positions than this: than the largest table of 5
#: pieces (9,256,800), so every table of 7 pieces and 57 of the 70 of 6 answer from their
#: compact files, and every table of 5 pieces or fewer from its master file, whose blocks the
#: numba kernels read directly (and a batch over masters alone runs the faster gathering
#: kernel). It was 2**24: a master block holds 2**18 positions (up to 768 KB with its DTW)
#: where a compact block's marks take about 2 KB, and the capture searches of random 7-piece
#: probes into the 6-piece masters of 9.3 M..2**24 positions overflowed the 2 GiB budget.
COMPACT_ABOVE = max(count_positions(m) for m in all_materials(5))

#: Python values of kernel codes, indexed by code + 2 (no enum call on the hot path).
_WDL_OF = (None, Wdl.LOSS, Wdl.DRAW, Wdl.WIN, None)
_CATEGORY_OF = tuple(Category(v) for v in range(-2, 3))


@dataclass(frozen=True)
class ProbeResult:
    """Perfect-play value of a position for the side to move, without and under the move rule.

    The rule fields are None for a rule-free probe (``rule_free=True``).
    """

    value: Wdl
    """Win, draw or loss for the side to move, without the move rule (``str()``: 'win', ...)."""
    dtw: int | None
    """Plies to the end of the game under perfect play without the rule (0 for a draw);
    None when a compact (WDL-only) file answered."""
    outcome: Wdl | None = None
    """Win, draw or loss under ``rule`` from ``counter`` (perfect play by both sides)."""
    category: Category | None = None
    """Category at counter 0 under ``rule``: win, cursed-win, draw, blessed-loss, loss."""
    dtz: int | None = None
    """Plies up to and including the next zeroing ply (or the end) under perfect play
    with the rule; 0 for a draw or a finished game; None when a compact category
    file (``.wcdf``, categories at counter 0 only) answered without a master file
    beside it."""
    rule: str | None = None
    """The move-rule preset of the answer."""
    counter: int | None = None
    """Quiet plies already counted by the rule when the position is reached."""

    @property
    def wdl(self) -> Wdl:
        """Wdl.WIN (+1), Wdl.DRAW (0) or Wdl.LOSS (-1): the ``value``."""
        return self.value


PositionLike = Board | str


class Tablebase:
    """A directory of endgame tables, probed lazily through a bounded LRU cache.

    ``directory`` defaults to $EGTB_DIR or data/egtb. At most ``max_open``
    tables stay open. A material's compact files, where it has them, give its
    values and counter-0 categories (their decoded blocks go to the same cache
    as the master blocks); its master file, the distances. Where it has both,
    that holds for materials of more than ``compact_above`` positions
    (:data:`COMPACT_ABOVE`); a smaller one answers from its master file. A master file is read a block at a time
    (:data:`~egtb.formats.master.BLOCK_POSITIONS` positions of its values, DTW
    or a rule layer: one HDF5 chunk) when a probe first needs it; the blocks
    go to one cache of the process (:func:`~egtb.formats.cache.process_cache`,
    its budget $EGTB_CACHE_BYTES, shared by every Tablebase), which drops the
    least recently used ones beyond its budget. With ``memory_limit_bytes``
    this Tablebase keeps its blocks in a cache of its own with that budget
    instead (the block being read always stays). ``rules`` names the
    move-rule presets whose layers are probed (default: every layer a file
    has).

    >>> with Tablebase("data/egtb") as tb:                    # doctest: +SKIP
    ...     tb.probe_wdl("B:WK10:BK1"), tb.probe_dtw("B:WK10:BK1")
    (0, 0)
    >>> Tablebase("/nonexistent", rules=("fifty-moves",))
    Traceback (most recent call last):
    ...
    egtb.errors.InvalidArgumentError: unknown draw rule 'fifty-moves'; choose from wcdf, crowning, forty-plies
    """

    def __init__(self, directory: os.PathLike | str | None = None, *,
                 max_open: int = DEFAULT_MAX_OPEN,
                 memory_limit_bytes: int | None = None,
                 rules: Iterable[str] | None = None,
                 compact_above: int = COMPACT_ABOVE) -> None:
        if max_open < 1:
            raise InvalidArgumentError(f"max_open must be at least 1, not {max_open}")
        self.compact_above = compact_above
        """A material with both files and more positions than this answers from its compact files."""
        self.rules = tuple(_draw_rule(name).name for name in rules) if rules is not None else None
        """Presets whose layers are kept (None: all)."""
        self.directory = master.resolve_dir(directory)
        self.max_open = max_open
        self.memory_limit_bytes = memory_limit_bytes
        #: The blocks of the master files read so far and the compact files' decoded blocks (the
        #: process's cache, or one of its own).
        self._blocks_cache = (process_cache() if memory_limit_bytes is None
                              else TableCache(max_bytes=memory_limit_bytes, on_evict=release_evicted))
        #: Open tables by material code (a file rebuilt since is read again, checked at most once a second).
        self._tables = TableCache(max_entries=max_open, recheck_seconds=RECHECK_SECONDS,
                                  on_evict=self._forget_table)
        #: Per preset, the lookup rows of the loaded layers for :func:`probe_rule_one`.
        self._rows = {name: np.zeros((NUM_CODES, ROW_WIDTH), dtype=np.int64) for name in DRAW_RULES}
        self._rows_at = {name: rows.ctypes.data for name, rows in self._rows.items()}
        #: The lookup rows of the tables' values for :func:`probe_value_one` (master tables only).
        self._value_rows = np.zeros((NUM_CODES, ROW_WIDTH), dtype=np.int64)
        self._value_rows_at = self._value_rows.ctypes.data
        #: The batch pools of compact files.
        self._batches = CompactBatches()
        self._listing: tuple[float, list[Material]] | None = None

    # --- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Drop every loaded table."""
        self._tables.clear()
        self._batches.clear()
        for rows in (*self._rows.values(), self._value_rows):
            rows[:] = 0

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
        return sorted(set(master.stored_materials(self.directory))
                      | set(master.stored_materials(self.directory, suffix=compact.SUFFIX)),
                      key=lambda m: (m.pieces, m.name))

    @property
    def max_pieces(self) -> int:
        """Largest n such that every material of 2..n pieces has a table (0 if none).

        >>> Tablebase("/nonexistent").max_pieces
        0
        """
        return _complete_up_to(frozenset(self.materials()))

    @property
    def largest_pieces(self) -> int:
        """The most pieces of any table held (0 if none): a piece count held in part counts, so that
        an adjudicator or engine tries the positions up to it (a missing material raises
        MissingTableError), where :attr:`max_pieces` counts only the complete piece counts.

        >>> Tablebase("/nonexistent").largest_pieces
        0
        """
        return max((m.pieces for m in self.materials()), default=0)

    @property
    def loaded_bytes(self) -> int:
        """Memory taken by the loaded tables' arrays."""
        return sum(table.nbytes for table in self._tables.values())

    @property
    def loaded_materials(self) -> list[Material]:
        """Materials loaded now, least recently used first."""
        return [t.material for t in self._tables.values() if t.nbytes]

    def load(self, material: Material | str, *, blocks: int | None = 1) -> None:
        """Open a material's table now and read its first block (MissingTableError when absent).

        ``blocks`` reads that many of its value blocks (None: every block of
        its values and layers, the budget permitting), e.g. to warm the cache
        before timing probes.

        >>> Tablebase("/nonexistent").load("1k-1k")
        Traceback (most recent call last):
        ...
        egtb.errors.MissingTableError: no table for material 1k-1k in /nonexistent (1k-1k.h5 is missing)
        """
        if isinstance(material, str):
            material = Material.parse(material)
        self._table(code_of_material(material)).warm(blocks)

    def _table(self, code: int) -> Table:
        """The loaded table of a material code, loading (and evicting) as needed."""
        return self._tables.get(code, lambda: self._file_of(material_of_code(code)),  # only on a (re)check
                                lambda path: self._install(code, path))

    def _file_of(self, material: Material) -> Path:
        """The file that gives a material's values (MissingTableError when it has none): its
        compact file when it has one and either no master file or more than ``compact_above``
        positions (a master file beside it then gives the distances, see :meth:`_read`), else
        its master file."""
        path = master.table_path(self.directory, material)
        coded = compact.compact_path(self.directory, material)
        if coded.exists() and (count_positions(material) > self.compact_above or not path.exists()):
            return coded
        if path.exists():
            return path
        raise MissingTableError(f"no table for material {material.name} in {self.directory} "
                                f"({path.name} is missing)")

    def _install(self, code: int, path: Path) -> Table:
        """Read a material's table file and enter its rule layers in the kernels' lookup rows."""
        table = self._read(material_of_code(code), path)
        for name, layer in table.kernel_layers().items():
            if name in self._rows:
                self._rows[name][code] = _layer_row(layer)
        if table.stores_captures:  # every position is in its blocks: the value kernel reads it
            self._value_rows[code] = _layer_row(table)
        else:  # the kernel reads its compact file where no capture is due
            self._value_rows[code] = _coded_row(table, distances=None)
        return table

    def _forget_table(self, code: int, table: Table) -> None:
        """Clear the lookup rows of a table leaving the cache, and close it (its blocks go)."""
        for rows in (*self._rows.values(), self._value_rows):
            rows[code] = 0
        table.close()

    def _read(self, material: Material, path: Path) -> Table:
        """Read one table file (checksum verified), master or compact."""
        if path.suffix != compact.SUFFIX:
            return MasterTable(path, material, cache=self._blocks_cache, rules=self.rules)
        coded = compact.open_compact(path, cache=self._blocks_cache)
        beside = master.table_path(self.directory, material)
        if not beside.exists():
            return coded
        return PairedTable(coded, MasterTable(beside, material, cache=self._blocks_cache, rules=self.rules))

    def kernel_rows_at(self, rule: str = DEFAULT_RULE) -> int:
        """Address of the lookup rows that :func:`~egtb.probe.kernels.probe_rule_one` reads for
        ``rule``, for a numba caller that probes inside its own kernel (a search).

        A row is filled when its table is loaded and a block is found once read: a kernel whose
        probe answers STATUS_NOT_LOADED asks this Tablebase (any probe of that position, e.g.
        :meth:`probe_batch_rule`) and finds it next time. The address stays valid while this
        Tablebase is open; call it from one thread at a time.

        >>> Tablebase("/nonexistent").kernel_rows_at("wcdf") > 0
        True
        """
        return self._rows_at[_draw_rule(rule).name]

    # --- single probes -----------------------------------------------------

    def probe_wdl(self, board: PositionLike) -> Wdl:
        """Wdl.WIN (+1), Wdl.DRAW (0) or Wdl.LOSS (-1) for the side to move.

        Raises MissingTableError when the material has no table.

        >>> Tablebase("/nonexistent").probe_wdl("B:W5,6,10:B1")   # no legal move
        <Wdl.LOSS: -1>
        """
        return _WDL_OF_VALUE[self._probe_key(_key_of(board), distance=False)[0]]

    def probe_dtw(self, board: PositionLike) -> int:
        """Plies to the end under perfect play (0 for a draw or a finished game).

        >>> Tablebase("/nonexistent").probe_dtw("B:W5,6,10:B1")
        0
        """
        return self._probe_key(_key_of(board))[1]

    def probe(self, board: PositionLike, *, rule: str | None = None, counter: int | None = None,
              rule_free: bool = False) -> ProbeResult:
        """Everything the tables say about a position, for the side to move.

        The rule-free ``value`` and ``dtw``, and under the move rule (the
        board's preset and counter, or ``rule``/``counter``; a FEN string means
        "wcdf" at counter 0) the exact ``outcome`` from that counter, the
        ``category`` and the ``dtz``. With ``rule_free`` only the rule-free
        fields are filled and no rule layer is needed.

        Raises MissingTableError when the material has no table,
        MissingRuleLayerError when its file has no layer for the preset, and
        ValueError for a counter outside 0..limit.

        >>> Tablebase("/nonexistent").probe("W:W5:B1,2", counter=80)   # no move: lost at the limit
        ProbeResult(value=<Wdl.LOSS: -1>, dtw=0, outcome=<Wdl.LOSS: -1>, category=<Category.LOSS: -2>, dtz=0, rule='wcdf', counter=80)
        >>> Tablebase("/nonexistent").probe("W:W5:B1,2", rule_free=True)
        ProbeResult(value=<Wdl.LOSS: -1>, dtw=0, outcome=None, category=None, dtz=None, rule=None, counter=None)
        """
        key = _key_of(board)
        wdl, dtw = self._probe_key(key)
        if rule_free:
            return ProbeResult(_WDL_OF[wdl + 2], dtw)
        draw_rule, count = _rule_and_counter(board, rule, counter)
        outcome, category, dtz = self._probe_rule_key(key, draw_rule, count)
        return ProbeResult(_WDL_OF[wdl + 2], dtw, _WDL_OF[outcome + 2], _CATEGORY_OF[category + 2],
                           dtz, draw_rule.name, count)

    def probe_outcome(self, board: PositionLike, *, rule: str | None = None,
                      counter: int | None = None) -> Wdl:
        """Win, draw or loss for the side to move under the move rule from the counter.

        The fast single probe with the rule (one kernel call for a Board probed as it is).

        >>> Tablebase("/nonexistent").probe_outcome(Board("W:W5:B1,2", rule="forty-plies", quiet_plies=40))
        <Wdl.LOSS: -1>
        """
        if rule is None and counter is None and type(board) is Board:  # the hot path: a Board as it is
            draw_rule, count = board.rule, board.quiet_plies
            if 0 <= count <= draw_rule.limit_plies:
                status, outcome, _, _, code = probe_rule_one(
                    board.black_men, board.black_kings, board.white_men, board.white_kings, board.turn,
                    count, draw_rule.limit_plies, self._rows_at[draw_rule.name])
                if status == STATUS_OK:
                    if code >= 0:
                        self._tables.touch(code)
                    return _WDL_OF[outcome + 2]
        draw_rule, count = _rule_and_counter(board, rule, counter)
        return _WDL_OF[self._probe_rule_key(_key_of(board), draw_rule, count, want_dtz=False)[0] + 2]

    def probe_category(self, board: PositionLike, *, rule: str | None = None) -> Category:
        """The position's category at counter 0 under the rule (the board's, or ``rule``).

        >>> str(Tablebase("/nonexistent").probe_category("W:W5:B1,2"))
        'loss'
        """
        draw_rule, _ = _rule_and_counter(board, rule, 0)
        return _CATEGORY_OF[self._probe_rule_key(_key_of(board), draw_rule, 0, want_dtz=False)[1] + 2]

    def probe_dtz(self, board: PositionLike, *, rule: str | None = None) -> int | None:
        """Plies to the next zeroing ply (or the end) under perfect play with the rule; 0 for a draw.

        None when a compact category file answered (it holds no DTZ).

        >>> Tablebase("/nonexistent").probe_dtz("B:W5,6,10:B1")
        0
        """
        draw_rule, _ = _rule_and_counter(board, rule, 0)
        return self._probe_rule_key(_key_of(board), draw_rule, 0)[2]

    def get_outcome(self, board: PositionLike, default: int | None = None, *, rule: str | None = None,
                    counter: int | None = None) -> Wdl | int | None:
        """Like :meth:`probe_outcome`, but ``default`` when the table or its rule layer is missing.

        >>> Tablebase("/nonexistent").get_outcome("B:WK10:BK1", default=9)
        9
        """
        try:
            return self.probe_outcome(board, rule=rule, counter=counter)
        except MissingTableError:
            return default

    def get_wdl(self, board: PositionLike, default: int | None = None) -> Wdl | int | None:
        """Like :meth:`probe_wdl`, but ``default`` when the table is missing.

        >>> Tablebase("/nonexistent").get_wdl("B:WK10:BK1", default=9)
        9
        """
        try:
            return self.probe_wdl(board)
        except MissingTableError:
            return default

    def get_dtw(self, board: PositionLike, default: int | None = None) -> int | None:
        """Like :meth:`probe_dtw`, but ``default`` when the table is missing."""
        try:
            return self.probe_dtw(board)
        except MissingTableError:
            return default

    def _probe_key(self, key: tuple[int, int, int, int, int], *,
                   distance: bool = True) -> tuple[int, int | None]:
        """(wdl, dtw) of a position given as (bm, bk, wm, wk, turn); dtw None when no file holds
        it, or (``distance`` False) when a compact file answered and the DTW was not asked for."""
        status, value, dtw, code = probe_value_one(*key, self._value_rows_at)
        if status == STATUS_OK:
            if code >= 0:
                read = self._tables.peek(code)
                if self._table(code) is not read:  # its file changed (checked once a second): ask again
                    return self._probe_key(key, distance=distance)
                if value == INVALID_WDL:
                    raise TableError(f"{self._tables.peek(code).path}: a position is unsolved")
            if dtw < 0 and distance and code >= 0 and read.holds_distances:  # the DTW of the master beside
                return self._probe_key_slowly(key, distance=distance)
            return value, None if dtw < 0 else dtw
        if status == STATUS_INVALID:
            raise InvalidPositionError(f"invalid position {key}")
        return self._probe_key_slowly(key, distance=distance)

    def _probe_key_slowly(self, key: tuple[int, int, int, int, int], *,
                          distance: bool) -> tuple[int, int | None]:
        """:meth:`_probe_key` through the table protocol: loading the table (and the block), a
        compact table's capture search, the DTW of a master file beside a compact one."""
        code, index, capture = locate_capture(*key)
        if code >= 0:
            try:
                table = self._table(code)
            except MissingTableError:
                if not has_moves(*key):
                    return WDL_LOSS, 0
                raise
            if capture and not table.stores_captures:
                value = self._search_captures(key, WDL_WIN, lambda k: self._probe_key(k, distance=False)[0])
            else:
                value = table.value_at(index)
            if not (distance and table.holds_distances):
                return value, None
            return value, table.distance_at(index)
        return _terminal_value(code, key)

    def _search_captures(self, key: tuple[int, int, int, int, int], top: int,
                         value_of: Callable[[tuple[int, int, int, int, int]], int]) -> int:
        """Value of a position whose side to move must capture, from its captures' values.

        The best over the captures of minus the successor's value (``value_of``,
        for the opponent); ``top`` is the best value there is (WDL win 1,
        category win 2), at which the search stops. Captures shrink the
        material, so the recursion ends. Under "wcdf" this holds for
        categories too, as a capture resets the counter: the successors are at
        counter 0, where their categories are.
        """
        moves = np.empty((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
        n = generate_moves(*(np.int64(v) for v in key[:4]), key[4], moves)
        turn = 1 - key[4]
        best = -top
        for bm, bk, wm, wk in moves[:n, M_BM:M_WK + 1].tolist():
            best = max(best, -value_of((bm, bk, wm, wk, turn)))
            if best == top:
                break
        return best

    def _probe_rule_key(self, key: tuple[int, int, int, int, int], rule: DrawRule,
                        counter: int, *, unknown_ok: bool = False,
                        want_dtz: bool = True) -> tuple[int | None, int, int | None]:
        """(outcome, category, dtz) of a position under ``rule`` from a checked ``counter``.

        Where a compact category file answered, the DTZ is None (with a master
        file beside it: read from there when ``want_dtz`` asks for it, or when the
        outcome needs it); so is the outcome with ``unknown_ok`` when it needs
        a DTZ no file holds (else MissingRuleLayerError, see :meth:`_probe_layer_key`).
        """
        status, outcome, category, dtz, code = probe_rule_one(*key, counter, rule.limit_plies,
                                                              self._rows_at[rule.name])
        if status == STATUS_OK:
            if code >= 0:
                self._tables.touch(code)
            if dtz >= 0 or not want_dtz:
                return outcome, category, None if dtz < 0 else dtz
        if status in (STATUS_OK, STATUS_NOT_LOADED):  # (a compact layer's DTZ, when wanted)
            if self.rules is not None and rule.name not in self.rules:
                raise MissingRuleLayerError(f"preset {rule.name!r} is not loaded by this Tablebase "
                                            f"(rules={self.rules}); open it with that preset")
            try:
                table = self._table(code)
                layer = table.layer(rule.name)
                if rule.name not in table.kernel_layers():  # not in memory for the kernel: ask the file
                    rows = self._rows[rule.name]
                    if not layer.stores_captures and not rows[code, COL_CODED_AT]:  # the kernel reads it next time
                        rows[code] = _coded_row(layer, distances=layer.kernel_arrays()
                                                if layer.holds_distances and layer.dtz_file is None else None)
                    return self._probe_layer_key(layer, key, rule, counter, unknown_ok=unknown_ok,
                                                 want_dtz=want_dtz)
                _, index, _ = locate_capture(*key)
                if index < len(layer):
                    layer.load_block(index >> BLOCK_SHIFT)  # the kernel finds it now
            except MissingTableError:
                if not has_moves(*key):
                    return WDL_LOSS, CAT_LOSS, 0  # no move: lost whatever the table holds
                raise
            return self._probe_rule_key(key, rule, counter, unknown_ok=unknown_ok, want_dtz=want_dtz)
        if status == STATUS_INVALID:
            raise InvalidPositionError(f"invalid position {key}")
        raise TableError(f"{self._tables.peek(code).path}: position outside the {rule.name} layer")

    def _probe_layer_key(self, layer: Table, key: tuple[int, int, int, int, int], rule: DrawRule,
                         counter: int, *, unknown_ok: bool = False,
                         want_dtz: bool = True) -> tuple[int | None, int, int | None]:
        """(outcome, category, dtz) from a rule layer read through the table protocol.

        The DTZ is read (a master file's block) only when ``want_dtz`` asks for it
        or the outcome needs it: a win or loss category from a counter above 0.
        A layer without DTZ (a compact category file alone) is exact at
        counter 0, and at any counter for a category that draws there; for a
        win or loss under the rule at a later counter (whether it still fits
        needs the DTZ of the master file) the outcome is None with
        ``unknown_ok``, else MissingRuleLayerError.
        """
        _, index, capture = locate_capture(*key)
        if capture and not layer.stores_captures:
            category = self._search_captures(key, CAT_WIN,
                                             lambda k: self._probe_rule_key(k, rule, 0, want_dtz=False)[1])
        else:
            category = layer.value_at(index)
        decisive = category in (CAT_WIN, CAT_LOSS)
        late = counter and decisive and not _fits(layer, counter, rule)  # the outcome needs the DTZ
        distance = _layer_distance(layer, index, category, capture) if want_dtz or late else None
        if distance is not None:
            return outcome_at(category, distance, counter, rule.limit_plies), category, distance
        if not decisive:
            return WDL_DRAW, category, None
        if late and unknown_ok:
            return None, category, None
        if late:
            raise MissingRuleLayerError(
                f"{layer.path}: a compact category file holds no DTZ, so the {rule.name} outcome of "
                f"a {_CATEGORY_OF[category + 2]} from counter {counter} needs the master file "
                f"(it is exact at counter 0)")
        return (WDL_WIN if category == CAT_WIN else WDL_LOSS), category, None

    # --- batches -----------------------------------------------------------

    def probe_batch(self, bm: np.ndarray, bk: np.ndarray, wm: np.ndarray, wk: np.ndarray,
                    turn: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """WDL (int8: +1, 0, -1) and DTW (uint16) of many positions given as bitboard arrays.

        ``turn`` is an array or one side for every position. Raises ValueError
        when a position is invalid and MissingTableError when a needed table
        is absent (positions without pieces on one side need none). A WDL of
        -2 would mark an unsolved entry, which a finished table never holds.

        >>> tb = Tablebase("/nonexistent")
        >>> wdl, dtw = tb.probe_batch(np.array([1]), np.array([0]), np.array([0]),
        ...                           np.array([0]), 1)   # White has no pieces
        >>> wdl.tolist(), dtw.tolist()
        ([-1], [0])
        """
        arrays = _batch_arrays(bm, bk, wm, wk, turn)
        n = len(arrays[0])
        codes, indices, tables = self._locate_batch(arrays)
        if not all(t.stores_captures for t in tables):  # the compact kernel's capture search
            out_wdl, out_dtw = probe_compact_batch(arrays, self._table, batches=self._batches,
                                                   located=(codes, indices))
            beside = [t.full for t in tables if not t.stores_captures and t.holds_distances]
            if beside:  # the DTW of master files beside compact ones
                maps, scratch = _kernel_tables(beside), np.zeros(n, dtype=np.int8)
                _fill_distances(codes, indices, np.ones(n, dtype=np.bool_), beside,
                                lambda c, i, first, out: gather(c, i, first, *maps, WDL_OF_CODE, scratch, out),
                                out=out_dtw)
            return out_wdl, out_dtw
        out_wdl = np.zeros(n, dtype=np.int8)
        out_dtw = np.zeros(n, dtype=np.uint16)
        maps = _kernel_tables(tables)
        order = self._block_order(codes, indices, tables)
        (c, i), (wdl, dtw) = _in_order(order, (codes, indices), (out_wdl, out_dtw))
        _run_to_end(lambda first: gather(c, i, first, *maps, WDL_OF_CODE, wdl, dtw),
                    n, lambda stop: _table_of(tables, c[stop]).load_block(int(i[stop]) >> BLOCK_SHIFT),
                    f"an index fell outside its table in {self.directory}")
        if order is not None:
            out_wdl[order], out_dtw[order] = wdl, dtw
        fill_terminal(*arrays, codes, out_wdl, out_dtw)
        return out_wdl, out_dtw

    def _block_order(self, codes: np.ndarray, indices: np.ndarray, tables: list[Table]) -> np.ndarray | None:
        """The order of a batch's positions by table and block when the blocks of its master
        tables do not fit in the cache's budget (each block is then read once), else None
        (the order given: every block read stays)."""
        budget = self._blocks_cache.max_bytes
        if budget is None or sum(len(t) for t in tables) * MASTER_BYTES_A_POSITION <= budget:
            return None
        return np.argsort((codes.astype(np.int64) << 40) | indices)

    def _locate_batch(self, arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, list]:
        """(material codes, indices, the tables they need) of a batch.

        Raises ValueError naming the first invalid position.
        """
        n = len(arrays[0])
        codes = np.empty(n, dtype=np.int32)
        indices = np.empty(n, dtype=np.int64)
        present = np.zeros(NUM_CODES, dtype=np.bool_)
        first = locate_batch(*arrays, codes, indices, present)
        if first >= 0:
            raise InvalidPositionError(f"invalid position at {first}: "
                             f"{tuple(int(a[first]) for a in arrays)}")
        return codes, indices, [self._table(code) for code in np.flatnonzero(present).tolist()]

    def probe_batch_rule(self, bm: np.ndarray, bk: np.ndarray, wm: np.ndarray, wk: np.ndarray,
                         turn: np.ndarray | int, counter: np.ndarray | int, *,
                         rule: str = DEFAULT_RULE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Outcome under ``rule`` from ``counter`` (int8: +1, 0, -1), category (int8) and DTZ (uint16).

        Positions as for :meth:`probe_batch`; ``counter`` is an array or one
        count for every position, each within 0..limit (ValueError otherwise).
        Raises MissingRuleLayerError when a needed table has no layer for ``rule``.
        Where a compact category file (``.wcdf``) answered, the DTZ is 65535
        (none) and a win or loss under the rule is known at counter 0 only
        (MissingRuleLayerError for such a position at a later counter).

        >>> tb = Tablebase("/nonexistent")
        >>> outcome, category, dtz = tb.probe_batch_rule(np.array([0, 1]), np.array([0, 0]),
        ...     np.array([1 << 20, 0]), np.array([0, 0]), 0, np.array([80, 79]))
        >>> outcome.tolist(), category.tolist(), dtz.tolist()   # no pieces; then no opponent
        ([-1, 1], [-2, 2], [0, 1])
        """
        draw_rule = _draw_rule(rule)
        arrays = _batch_arrays(bm, bk, wm, wk, turn)
        n = len(arrays[0])
        counters = np.ascontiguousarray(np.broadcast_to(np.asarray(counter, dtype=np.int64), (n,)))
        if n and (counters.min() < 0 or counters.max() > draw_rule.limit_plies):
            raise InvalidArgumentError(f"counters must lie in 0..{draw_rule.limit_plies} under {draw_rule.name}, "
                             f"got {int(counters.min())}..{int(counters.max())}")
        codes, indices, tables = self._locate_batch(arrays)
        layers = [table.layer(draw_rule.name) for table in tables]
        if not all(layer.stores_captures for layer in layers):
            return self._probe_batch_rule_compact(arrays, (codes, indices), counters, draw_rule, layers)
        rows = _layer_rows(layers)
        out_outcome = np.zeros(n, dtype=np.int8)
        out_category = np.zeros(n, dtype=np.int8)
        out_dtz = np.zeros(n, dtype=np.uint16)
        limit = draw_rule.limit_plies
        order = self._block_order(codes, indices, layers)
        (c, i, k), outs = _in_order(order, (codes, indices, counters), (out_outcome, out_category, out_dtz))
        _run_to_end(lambda first: gather_rule(c, i, first, rows, k, limit, *outs),
                    n, lambda stop: _table_of(layers, c[stop]).load_block(int(i[stop]) >> BLOCK_SHIFT),
                    f"an index fell outside its {draw_rule.name} layer in {self.directory}")
        if order is not None:
            out_outcome[order], out_category[order], out_dtz[order] = outs
        fill_terminal_rule(*arrays, codes, counters, limit, out_outcome, out_category, out_dtz)
        return out_outcome, out_category, out_dtz


    def _probe_batch_rule_compact(self, arrays: tuple[np.ndarray, ...],
                                  located: tuple[np.ndarray, np.ndarray], counters: np.ndarray,
                                  rule: DrawRule, layers: list[Table]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`probe_batch_rule` through compact category files (and master layers); the DTZ
        of a master file beside a compact one is read where the outcome needs it (a win or a
        loss from a counter above 0), and only there."""
        category, dtz = probe_compact_batch(arrays, self._table, batches=self._batches, rule=rule.name,
                                            located=located)
        longest = np.full(NUM_CODES, rule.limit_plies + 1, dtype=np.int64)  # max DTZ by code, when known
        for layer in layers:
            if layer.max_dtz is not None:
                longest[code_of_material(layer.material)] = layer.max_dtz
        codes = located[0]
        late = ((np.abs(category) == CAT_WIN) & (counters > 0)  # the outcomes that need the DTZ
                & (counters + longest[np.maximum(codes, 0)] > rule.limit_plies))
        files = {code_of_material(layer.material): layer.dtz_file for layer in layers if layer.dtz_file is not None}
        if files:  # the DTZ of wins and losses from compact DTZ files
            with_file = np.zeros(NUM_CODES, dtype=np.bool_)
            with_file[list(files)] = True
            chosen = np.flatnonzero(late & (dtz == NO_DTW) & (codes >= 0) & with_file[np.maximum(codes, 0)])
            if len(chosen):
                dtz[chosen] = probe_dtz_batch(tuple(a[chosen] for a in arrays), (codes[chosen], located[1][chosen]),
                                              files, batches=self._batches, rule=rule.name)
        beside = [layer for layer in layers
                  if not layer.stores_captures and layer.holds_distances and layer.dtz_file is None]
        if beside:  # the DTZ of master files beside compact ones, alone
            rows = np.zeros((NUM_CODES, ROW_WIDTH), dtype=np.int64)
            for layer in beside:
                rows[code_of_material(layer.material), [COL_SIZE, COL_DTZ_AT, COL_DTZ_WIDE]] = (
                    len(layer), layer.dtz.values_at.ctypes.data, layer.dtz.value_type is np.uint16)
            _fill_distances(*located, late & (dtz == NO_DTW), beside,
                            lambda c, i, first, out: gather_distance(c, i, first, rows, out), out=dtz)
        unknown = dtz == NO_DTW
        late = np.flatnonzero(unknown & late)
        if len(late):
            i = int(late[0])
            raise MissingRuleLayerError(
                f"position {i} {tuple(int(a[i]) for a in arrays)}: a compact category file holds "
                f"no DTZ, so its {rule.name} outcome from counter {int(counters[i])} needs the master file")
        fits = np.where(unknown, 0, dtz) + counters <= rule.limit_plies
        outcome = np.where(fits & (category == CAT_WIN), WDL_WIN,
                           np.where(fits & (category == CAT_LOSS), WDL_LOSS, WDL_DRAW)).astype(np.int8)
        return outcome, category, dtz


def _layer_distance(layer: Table, index: int, category: int, capture: bool) -> int | None:
    """The DTZ of a position of a layer (at ``index``, of ``category``; ``capture``: its side to
    move must capture), or None when no file holds it: a draw's is 0, a win's or loss's comes from
    the compact DTZ file when there is one (1 where the side to move must capture: its move zeroes
    the counter), else from the layer's file, as a cursed win's or blessed loss's does."""
    if not layer.holds_distances:
        return None
    if category == CAT_DRAW:
        return 0
    decisive = category in (CAT_WIN, CAT_LOSS)
    if decisive and capture and not layer.stores_captures:
        return 1
    if decisive and layer.dtz_file is not None:
        return layer.dtz_file.value_at(index)
    return layer.distance_at(index) if decisive or layer.cursed_distances else None


def _fits(layer: Table, counter: int, rule: DrawRule) -> bool:
    """Whether every win or loss of a layer still is one from ``counter`` (its largest DTZ,
    when known, fits within the limit)."""
    return layer.max_dtz is not None and counter + layer.max_dtz <= rule.limit_plies


def _fill_distances(codes: np.ndarray, indices: np.ndarray, wanted: np.ndarray, fulls: list[Table],
                    gather_into: Callable[[np.ndarray, np.ndarray, int, np.ndarray], tuple[int, int]], *,
                    out: np.ndarray) -> np.ndarray:
    """Distances (DTW or DTZ) from master tables or layers ``fulls`` of the ``wanted`` positions
    in their materials, written into ``out`` (uint16); ``gather_into(codes, indices, first, out)``
    runs a gathering kernel over those positions, reading the blocks it stops at.

    The positions go in the order of their blocks, so that each block is read once.
    """
    mine = np.zeros(NUM_CODES, dtype=np.bool_)
    mine[[code_of_material(full.material) for full in fulls]] = True
    chosen = np.flatnonzero(wanted & mine[np.maximum(codes, 0)] & (codes >= 0))
    if len(chosen):
        chosen = chosen[np.argsort((codes[chosen].astype(np.int64) << 40) | indices[chosen])]
        sub_codes = np.ascontiguousarray(codes[chosen])
        sub_indices = np.ascontiguousarray(indices[chosen])
        got = np.zeros(len(chosen), dtype=np.uint16)
        _run_to_end(lambda first: gather_into(sub_codes, sub_indices, first, got), len(chosen),
                    lambda stop: _table_of(fulls, sub_codes[stop]).load_block(int(sub_indices[stop]) >> BLOCK_SHIFT),
                    "an index fell outside its master table")
        out[chosen] = got
    return out


def _in_order(order: np.ndarray | None, inputs: tuple[np.ndarray, ...],
              outputs: tuple[np.ndarray, ...]) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """The inputs taken in ``order`` and fresh outputs for them; as they are when ``order`` is None."""
    if order is None:
        return inputs, outputs
    return tuple(a[order] for a in inputs), tuple(np.zeros_like(a) for a in outputs)


def _layer_rows(layers: list[Table]) -> np.ndarray:
    """Lookup rows (COL_* columns) by material code of master layers, for :func:`gather_rule`."""
    rows = np.zeros((NUM_CODES, ROW_WIDTH), dtype=np.int64)
    for layer in layers:
        rows[code_of_material(layer.material)] = _layer_row(layer)
    return rows


def _kernel_tables(tables: list[Table]) -> tuple[np.ndarray, ...]:
    """(sizes, wdl_at, dtw_at, dtw_wide) by material code for :func:`gather`: the addresses of
    the tables' block maps (dtw_at 0: no DTW)."""
    sizes = np.zeros(NUM_CODES, dtype=np.int64)
    wdl_at = np.zeros(NUM_CODES, dtype=np.int64)
    dtw_at = np.zeros(NUM_CODES, dtype=np.int64)
    dtw_wide = np.zeros(NUM_CODES, dtype=np.bool_)
    for table in tables:
        code = code_of_material(table.material)
        blocks = table.kernel_arrays()
        sizes[code] = len(table)
        wdl_at[code] = blocks.values_at.ctypes.data
        if blocks.holds_distances:
            dtw_at[code] = blocks.distances_at.ctypes.data
            dtw_wide[code] = blocks.wide
    return sizes, wdl_at, dtw_at, dtw_wide


def _table_of(tables: list[Table], code: int) -> Table:
    """The table (or layer) of a material code among those of a batch."""
    material = material_of_code(int(code))
    return next(table for table in tables if table.material == material)


def _run_to_end(run: Callable[[int], tuple[int, int]], n: int, load: Callable[[int], None],
                outside: str) -> None:
    """Call a gathering kernel from position 0 until it reaches ``n``, reading the block it
    stops at each time (``load(stop)``); TableError ``outside`` when an index fell outside."""
    first = 0
    while True:
        stop, bad = run(first)
        if bad:
            raise TableError(outside)
        if stop >= n:
            return
        load(stop)
        first = stop


def _batch_arrays(bm, bk, wm, wk, turn) -> tuple[np.ndarray, ...]:
    """The five inputs of probe_batch as writable int64 arrays of one length (a read-only array,
    such as a memory map or a broadcast turn, would compile the kernels a second time)."""
    arrays = [np.require(a, dtype=np.int64, requirements=("C", "W")) for a in (bm, bk, wm, wk)]
    n = len(arrays[0])
    if any(a.ndim != 1 or len(a) != n for a in arrays):
        raise InvalidArgumentError("bm, bk, wm, wk must be 1-D arrays of the same length")
    turns = np.broadcast_to(np.asarray(turn, dtype=np.int64), (n,))
    return (*arrays, np.require(turns, requirements=("C", "W")))


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
    """(wdl, dtw) of a position that needs no table."""
    if code == CODE_NO_PIECES:
        return WDL_LOSS, 0
    if code == CODE_NO_OPPONENT:
        return (WDL_WIN, 1) if has_moves(*key) else (WDL_LOSS, 0)
    raise InvalidPositionError(f"invalid position {key}")


def _draw_rule(name: str) -> DrawRule:
    """The preset called ``name`` (ValueError naming the choices)."""
    try:
        return DRAW_RULES[name]
    except KeyError:
        raise InvalidArgumentError(f"unknown draw rule {name!r}; choose from {', '.join(DRAW_RULES)}") from None


def _rule_and_counter(board: PositionLike, rule: str | None, counter: int | None) -> tuple[DrawRule, int]:
    """The preset and counter of a probe: the keywords, else the Board's, else wcdf at 0."""
    is_board = isinstance(board, Board)
    draw_rule = _draw_rule(rule) if rule is not None else board.rule if is_board else DRAW_RULES[DEFAULT_RULE]
    count = counter if counter is not None else board.quiet_plies if is_board else 0
    if not 0 <= count <= draw_rule.limit_plies:
        raise InvalidArgumentError(f"counter {count} is outside 0..{draw_rule.limit_plies} "
                         f"(the {draw_rule.name} limit)")
    return draw_rule, count


def _coded_row(table: Table, *, distances: BlockMap | None) -> np.ndarray:
    """The lookup row (COL_* columns) of a table or layer that leaves capture positions out: its
    compact file's lookup descriptor, its largest DTZ when known, and the block map of the
    ``distances`` (a master layer's DTZ) beside it."""
    row = np.zeros(ROW_WIDTH, dtype=np.int64)
    row[COL_SIZE], row[COL_CODED_AT] = len(table), table.coded.lookup.ctypes.data
    row[COL_MAX_DTZ] = -1 if getattr(table, "max_dtz", None) is None else table.max_dtz
    dtz_file = getattr(table, "dtz_file", None)
    row[COL_DTZ_CODED_AT] = 0 if dtz_file is None else dtz_file.lookup.ctypes.data
    if distances is not None:
        row[COL_DTZ_AT], row[COL_DTZ_WIDE] = distances.values_at.ctypes.data, distances.value_type is np.uint16
    return row


def _layer_row(layer: MasterLayer | MasterTable) -> np.ndarray:
    """The lookup row (COL_* columns) of a layer (or of a table's values): its length and the
    addresses of its block maps (0 for distances it does not hold)."""
    blocks = layer.kernel_arrays()
    row = np.zeros(ROW_WIDTH, dtype=np.int64)
    row[[COL_SIZE, COL_CATEGORY_AT, COL_DTZ_AT, COL_DTZ_WIDE]] = (
        len(layer), blocks.values_at.ctypes.data, blocks.distances_at.ctypes.data if blocks.holds_distances else 0,
        blocks.wide)
    return row
