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

from egtb.errors import InvalidArgumentError, MissingRuleLayerError, MissingTableError, TableError
from egtb.formats import master
from egtb.formats.cache import TableCache, process_cache, release_evicted
from egtb.formats.values import WDL_DRAW, WDL_LOSS, WDL_WIN, Category, Wdl
from egtb.positions.index import NUM_CODES, code_of_material, material_of_code
from egtb.positions.material import Material, all_materials, count_positions
from egtb.probe.batch import MASTER_BYTES_A_POSITION, probe_batch, probe_batch_rule
from egtb.probe.compact_kernels import CompactBatches
from egtb.probe.compact_tables import open_compact
from egtb.probe.inputs import PositionLike, draw_rule, key_of, rule_and_counter
from egtb.probe.kernels import ROW_WIDTH, STATUS_OK, outcome_at, probe_rule_one
from egtb.probe.locate import has_moves
from egtb.probe.single import Key, probe_rule, probe_value
from egtb.probe.tables import Layer, MasterTable, PairedTable, Table
from egtb.formats import compact
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
        self.rules = tuple(draw_rule(name).name for name in rules) if rules is not None else None
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
        #: The lookup rows of the tables' values for :func:`probe_value_one`.
        self._value_rows = np.zeros((NUM_CODES, ROW_WIDTH), dtype=np.int64)
        self._value_rows_at = self._value_rows.ctypes.data
        #: The batch pools of compact files.
        self.batches = CompactBatches()
        self._listing: tuple[float, list[Material]] | None = None

    # --- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Drop every loaded table."""
        self._tables.clear()
        self.batches.clear()
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
        self.table(code_of_material(material)).warm(blocks)

    def table(self, code: int) -> Table:
        """The loaded table of a material code, loading (and evicting) as needed (MissingTableError
        when the directory has none)."""
        return self._tables.get(code, lambda: self._file_of(material_of_code(code)),  # only on a (re)check
                                lambda path: self._install(code, path))

    def table_for(self, code: int, key: Key) -> Table | None:
        """:meth:`table`, or None when it is missing and the position ``key`` has no move (lost
        whatever a table would hold)."""
        try:
            return self.table(code)
        except MissingTableError:
            if not has_moves(*key):
                return None
            raise

    def layer_for(self, code: int, rule: str) -> Layer:
        """The layer of ``rule`` of a material code's table, entered in the rule kernel's rows
        (a compact layer when first asked: the kernel reads it next time)."""
        layer = self.table(code).layer(rule)
        rows = self._rows[rule]
        if not rows[code].any():
            rows[code] = layer.kernel_row()
        return layer

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
                self._rows[name][code] = layer.kernel_row()
        self._value_rows[code] = table.kernel_row()  # a compact file's: where no capture is due
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
        coded = open_compact(path, cache=self._blocks_cache)
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
        return self._rows_at[draw_rule(rule).name]

    # --- single probes -----------------------------------------------------

    def probe_wdl(self, board: PositionLike) -> Wdl:
        """Wdl.WIN (+1), Wdl.DRAW (0) or Wdl.LOSS (-1) for the side to move.

        Raises MissingTableError when the material has no table.

        >>> Tablebase("/nonexistent").probe_wdl("B:W5,6,10:B1")   # no legal move
        <Wdl.LOSS: -1>
        """
        return _WDL_OF_VALUE[probe_value(self, key_of(board), distance=False)[0]]

    def probe_dtw(self, board: PositionLike) -> int:
        """Plies to the end under perfect play (0 for a draw or a finished game).

        >>> Tablebase("/nonexistent").probe_dtw("B:W5,6,10:B1")
        0
        """
        return probe_value(self, key_of(board))[1]

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
        key = key_of(board)
        wdl, dtw = probe_value(self, key)
        if rule_free:
            return ProbeResult(_WDL_OF[wdl + 2], dtw)
        draw_rule, count = rule_and_counter(board, rule, counter)
        outcome, category, dtz = probe_rule(self, key, draw_rule, count)
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
        draw_rule, count = rule_and_counter(board, rule, counter)
        return _WDL_OF[probe_rule(self, key_of(board), draw_rule, count, want_dtz=False)[0] + 2]

    def probe_category(self, board: PositionLike, *, rule: str | None = None) -> Category:
        """The position's category at counter 0 under the rule (the board's, or ``rule``).

        >>> str(Tablebase("/nonexistent").probe_category("W:W5:B1,2"))
        'loss'
        """
        draw_rule, _ = rule_and_counter(board, rule, 0)
        return _CATEGORY_OF[probe_rule(self, key_of(board), draw_rule, 0, want_dtz=False)[1] + 2]

    def probe_dtz(self, board: PositionLike, *, rule: str | None = None) -> int | None:
        """Plies to the next zeroing ply (or the end) under perfect play with the rule; 0 for a draw.

        None when a compact category file answered (it holds no DTZ).

        >>> Tablebase("/nonexistent").probe_dtz("B:W5,6,10:B1")
        0
        """
        draw_rule, _ = rule_and_counter(board, rule, 0)
        return probe_rule(self, key_of(board), draw_rule, 0)[2]

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

    def _probe_key(self, key: Key, *, distance: bool = True) -> tuple[int, int | None]:
        """(wdl, dtw) of a position as (bm, bk, wm, wk, turn) (:func:`egtb.probe.single.probe_value`)."""
        return probe_value(self, key, distance=distance)

    def _probe_rule_key(self, key: Key, rule: DrawRule, counter: int, *, unknown_ok: bool = False,
                        want_dtz: bool = True) -> tuple[int | None, int, int | None]:
        """(outcome, category, dtz) of a position under ``rule`` (:func:`egtb.probe.single.probe_rule`)."""
        return probe_rule(self, key, rule, counter, unknown_ok=unknown_ok, want_dtz=want_dtz)

    # --- the capture search ----------------------------------------------

    def search_captures(self, key: Key, *, top: int, leaf: Callable[[Key], int | None],
                        finish: Callable[[Key, int], int] | None = None) -> int:
        """Value of a position whose side to move must capture, from its captures' values.

        The best over the captures of minus the successor's value for the opponent: ``leaf(child)``,
        the value its table stores, or None where the child must capture too and its file leaves it
        out (searched the same way, depth-first on an explicit stack: no probe calls itself).
        A threat position a file leaves out is searched the same way, over all its moves;
        ``finish(position, best)`` turns each searched position's best into its value (a
        threat position's category: :func:`egtb.probe.single.searched_category`).
        ``top`` is the best value there is (WDL win 1, category win 2), at which a level stops.
        Captures shrink the material, so the search ends. Under "wcdf" this holds for categories
        too, as a capture resets the counter: the successors are at counter 0, where their
        categories are.

        >>> tb = Tablebase("/nonexistent")
        >>> tb.search_captures((1 << 9, 0, 1 << 13, 0, 1), top=1, leaf=lambda child: -1)   # every successor lost
        1
        """
        levels = [[_captures(key), -top, key]]  # each level: its children to come, the best so far, itself
        while True:
            level = levels[-1]
            child = next(level[0], None) if level[1] != top else None
            if child is None:
                _, value, searched = levels.pop()
                if finish is not None:
                    value = finish(searched, value)
                if not levels:
                    return value
                levels[-1][1] = max(levels[-1][1], -value)
                continue
            value = leaf(child)
            if value is None:
                levels.append([_captures(child), -top, child])
            else:
                level[1] = max(level[1], -value)

    # --- batches -----------------------------------------------------------

    def probe_batch(self, bm: np.ndarray, bk: np.ndarray, wm: np.ndarray, wk: np.ndarray,
                    turn: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
        """WDL (int8: +1, 0, -1) and DTW (uint16) of many positions given as bitboard arrays
        (:func:`egtb.probe.batch.probe_batch`).

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
        return probe_batch(self, bm, bk, wm, wk, turn)

    def probe_batch_rule(self, bm: np.ndarray, bk: np.ndarray, wm: np.ndarray, wk: np.ndarray,
                         turn: np.ndarray | int, counter: np.ndarray | int, *,
                         rule: str = DEFAULT_RULE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Outcome under ``rule`` from ``counter`` (int8: +1, 0, -1), category (int8) and DTZ (uint16)
        (:func:`egtb.probe.batch.probe_batch_rule`).

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
        return probe_batch_rule(self, bm, bk, wm, wk, turn, counter, rule=rule)


@lru_cache(maxsize=8)
def _complete_up_to(have: frozenset[Material]) -> int:
    """Largest n with every material of 2..n pieces in ``have`` (0 if none)."""
    n = 1
    while all(m in have for m in all_materials(n + 1, min_pieces=n + 1)):
        n += 1
    return n if n >= 2 else 0


def _captures(key: Key):
    """The positions after each move of ``key`` (captures, when it must capture), the opponent to move."""
    moves = np.empty((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    n = generate_moves(*(np.int64(v) for v in key[:4]), key[4], moves)
    turn = 1 - key[4]
    return ((bm, bk, wm, wk, turn) for bm, bk, wm, wk in moves[:n, M_BM:M_WK + 1].tolist())
