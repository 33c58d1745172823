"""A pair's dependencies, the finished tables its exits read, in its flat arrays.

:func:`load_dependencies` makes the flat arrays (:class:`FlatTables`: the pair's own positions
first, then each dependency's) and puts the dependencies in: a master's values from the process's
table cache (:func:`load_table_cached`, :func:`egtb.formats.cache.process_cache`) or slice by
slice from its file, a compact-native table's ``wcdf`` categories through the prober
(:func:`load_native`, its capture positions answered from the tables loaded before it,
:func:`capture_tables`).

>>> from egtb.builder.contents import contents_for
>>> tables = load_dependencies(Path("."), [], (Material.parse("1k-1k"),), contents_for(2))
>>> tables.slice_of(Material.parse("1k-1k"))
slice(0, 992, None)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from egtb.builder import budget, native, solve
from egtb.builder.contents import LEAN_RULES, Contents, contents_for
from egtb.builder.dependency_captures import LoadedTables
from egtb.builder.plan import beside_materials, captured_natives
from egtb.errors import InvalidArgumentError, SolverError, TableError
from egtb.formats import master, scratch
from egtb.formats.cache import process_cache
from egtb.formats.packed import pack_into
from egtb.positions.index import NUM_CODES, code_of_material
from egtb.positions.material import Material, count_positions

if TYPE_CHECKING:
    from egtb.builder import spilling


def load_table_cached(directory: Path, material: Material, contents: Contents
                      ) -> tuple[np.ndarray | None, np.ndarray | None, tuple]:
    """(wdl packed four a byte, dtw, rule categories) of a finished table, kept in the
    process's table cache: what a pair's exits read of it.

    The values and DTW only with ``contents.dtw`` (else None), a category array
    per rule layer of `contents`; never the layers' DTZ (an exit that leaves a
    pair always zeroes the counter). The values stay packed as stored (a
    quarter of the memory, so the cache holds more tables);
    :func:`load_dependencies` unpacks them straight into the flat arrays. A file
    rewritten since it was cached is read again.
    """
    def read(_) -> tuple[np.ndarray | None, np.ndarray | None, tuple]:
        data = master.open_material(directory, material, rules=contents.names, packed=True)
        if contents.dtw and data.dtw is None:
            raise TableError(f"{master.table_path(directory, material)} stores no DTW, "
                             "which this build needs (built without --dtw)")
        return (data.wdl if contents.dtw else None, data.dtw if contents.dtw else None,
                tuple(data.rules[name].category for name in contents.names))
    return process_cache().get(cache_key(directory, material, contents),
                               master.table_path(directory, material), read)


@dataclass
class FlatTables:
    """Tables concatenated for the kernels: offsets by material code, values, DTW, rule layers.

    The pair being solved comes first, then the tables its exits reach. A
    position costs 3 bytes of values and DTW (none without ``contents.dtw``); a
    position of the pair 1 byte per rule layer for its category and 1 or 2 for
    its DTZ, a dependency's a third of a byte per layer (its categories packed,
    :mod:`egtb.formats.packed`).
    """

    offsets: np.ndarray
    """Where each material starts (by :func:`egtb.positions.index.code_of_material`), or -1."""
    wdl: np.ndarray
    """Value codes (empty without DTW: the values are then the first layer's signs)."""
    dtw: np.ndarray
    """Rule-free distances (empty without DTW)."""
    contents: Contents
    """What is solved: DTW and the rule layers (:mod:`egtb.builder.contents`)."""
    rcat: np.ndarray
    """Category per layer (row) and position of the pair (UNSOLVED_CATEGORY until solved)."""
    rdtz: np.ndarray
    """DTZ per layer (row) and position of the pair (the first positions)."""
    rdep: np.ndarray
    """The dependencies' categories per layer (row), packed three to a byte
    (:mod:`egtb.formats.packed`): flat index ``own + k`` is digit k of its row."""
    spiller: spilling.DtzSpiller | None = None
    """Where the finished DTZ went when it is spilled (:mod:`egtb.builder.spilling`), else None."""
    dependencies: tuple[Material, ...] = ()
    """The finished tables in the flat arrays: the pair's dependencies, and the compact-native
    tables their captures reach (:func:`egtb.builder.plan.captured_natives`)."""
    pieces: int = 0
    """The pair's piece count (0: no pair). A dependency of as many pieces is reached by a
    crowning alone (every other exit captures), so only those of its positions are needed."""

    @property
    def presets(self) -> tuple:
        """The rule layers solved (:class:`egtb.rules.board.DrawRule`)."""
        return self.contents.presets

    def slice_of(self, material: Material) -> slice:
        """The positions of a loaded material in the flat arrays."""
        start = int(self.offsets[code_of_material(material)])
        return slice(start, start + count_positions(material))

    def arrays(self) -> list[np.ndarray]:
        """The flat arrays in the order the scratch files hold them (wdl, dtw, rcat, rdtz, rdep)."""
        return [self.wdl, self.dtw, self.rcat, self.rdtz, self.rdep]

    def put_categories(self, row: int, start: int, categories: np.ndarray) -> None:
        """Write a dependency's categories of layer `row` from flat index `start` on (packed)."""
        pack_into(self.rdep[row], start - self.rcat.shape[1], categories)


#: Positions of a compact-native dependency that one part puts in (a multiple of 3, so that a part
#: starts on a byte of the packed categories): 201 M, about half a minute at the 8-piece rate.
PART_POSITIONS = 3 << 26


@dataclass(frozen=True)
class Part:
    """Positions ``first:last`` of a dependency: what one step puts into a pair's flat arrays."""

    material: Material
    first: int
    last: int

    @property
    def name(self) -> str:
        """The part's name (its mark in a pair's scratch directory, its task's key).

        >>> Part(Material.parse("2k-1k"), 0, 10).name
        '2k-1k.0-10'
        """
        return f"{self.material.name}.{self.first}-{self.last}"

    def covered_by(self, names: set[str]) -> bool:
        """Whether the parts named `names` (of any size: a pair resumed with parts of another
        size) hold every position of this one.

        >>> Part(Material.parse("2k-1k"), 0, 10).covered_by({"2k-1k.0-6", "2k-1k.6-12", "1k-1k.0-10"})
        True
        >>> Part(Material.parse("2k-1k"), 0, 10).covered_by({"2k-1k.0-6", "2k-1k.7-12"})
        False
        """
        reach = self.first
        for first, last in sorted(_range_of(name) for name in names
                                  if name.rpartition(".")[0] == self.material.name):
            if first > reach:
                break
            reach = max(reach, last)
        return reach >= self.last


def _range_of(name: str) -> tuple[int, int]:
    """(first, last) of a part's name (:attr:`Part.name`)."""
    first, _, last = name.rpartition(".")[2].partition("-")
    return int(first), int(last)


def load_dependencies(directory: Path, solved: list[Material],
                      fresh: tuple[Material, ...], contents: Contents, *,
                      arrays: list[np.ndarray] | None = None, fill: bool = True) -> FlatTables:
    """Flat arrays with room for the `fresh` tables (the pair, first), the `solved` ones and the
    compact-native tables their captures reach (:func:`egtb.builder.plan.captured_natives`), the
    last two read from disk (:func:`load_parts`).

    `contents`: the tables to load and solve (:class:`~egtb.builder.contents.Contents`).
    `arrays`: the (wdl, dtw, rcat, rdtz, rdep) arrays to use (memory maps of a pair
    on disk, :func:`egtb.formats.scratch.map_arrays`) instead of new ones; with
    `fill` False the solved tables are left to the caller (a pair on disk loads them in parts).
    """
    solved = list(solved) + captured_natives(directory, solved)
    counts = [count_positions(m) for m in fresh], [count_positions(m) for m in solved]
    starts, total = scratch.flat_starts(*counts)
    if arrays is None:
        arrays = scratch.new_arrays(total, sum(counts[0]), contents=contents)
    offsets = np.full(NUM_CODES, solve.NOT_LOADED, dtype=np.int64)
    for material, start in zip(list(fresh) + list(solved), starts):
        offsets[code_of_material(material)] = start
    tables = FlatTables(offsets, *arrays[:2], contents, *arrays[2:5], dependencies=tuple(solved),
                        pieces=fresh[0].pieces if fresh else 0)
    if fill:
        parts = [part for wave in dependency_parts(directory, solved, positions=None) for part in wave]
        load_parts(directory, tables, parts, needed_by=fresh[0].name if fresh else "the build")
    return tables


def native_materials(directory: Path, materials) -> set[Material]:
    """Those of `materials` whose tables in `directory` are compact files alone (no master)."""
    return {m for m in materials if native.is_native_only(directory, m)}


def dependency_parts(directory: Path, solved: list[Material], *,
                     positions: int | None = PART_POSITIONS) -> list[list[Part]]:
    """A pair's dependencies `solved` in parts, wave by wave, fewest pieces first (the captures of
    a compact-native table read the tables of fewer pieces, put in by the waves before): a
    master whole, a compact-native table `positions` at a time (None: whole). The parts of a
    wave may be put in at once, by any processes (each dependency starts on a byte of its own,
    :func:`egtb.formats.scratch.flat_starts`).

    >>> [[part.name for part in wave] for wave in dependency_parts(Path("/nonexistent"),
    ...                                                           [Material.parse(n) for n in ("1k-1k", "2k-1k")])]
    [['1k-1k.0-992'], ['2k-1k.0-14880']]
    """
    if positions is not None and positions % 3:
        raise InvalidArgumentError(f"parts of {positions} positions would share bytes of the packed categories")
    natives = native_materials(directory, solved)
    waves: dict[int, list[Part]] = {}
    for material in solved:
        count = count_positions(material)
        step = positions if positions and material in natives else max(count, 1)
        waves.setdefault(material.pieces, []).extend(
            Part(material, first, min(first + step, count)) for first in range(0, count, step))
    return [waves[pieces] for pieces in sorted(waves)]


def load_parts(directory: Path, tables: FlatTables, parts: list[Part], *,
               needed_by: str, marks: Path | None = None) -> int:
    """Put these `parts` of the tables a pair's flat arrays hold into them (in wave order,
    :func:`dependency_parts`); return how many were put in.

    A master's part (a whole table) is copied from the process's table cache, or slice by slice
    into mapped arrays or when the cache cannot hold it; a compact-native one's through the
    prober (:func:`load_native`). With `marks` (a pair's scratch directory) a part marked there
    as done is skipped, and each part put in is flushed, then marked
    (:func:`egtb.formats.scratch.mark_loaded`): a killed load resumes at the parts it had not done.
    A compact-native part whose captures would read a table of fewer pieces not marked as put in
    raises SolverError (parts out of wave order would be wrong, and marked as done).
    """
    done = scratch.loaded_marks(marks) if marks is not None else set()
    todo = [part for part in parts if not part.covered_by(done)]
    natives = native_materials(directory, {part.material for part in todo})
    loaded = capture_tables(directory, tables) if natives and tables.contents.presets else None
    mapped = isinstance(tables.rdep.base, np.memmap)
    for part in todo:
        start = tables.slice_of(part.material).start
        if part.material in natives:
            if marks is not None:
                _require_fewer_pieces(part, tables, done, needed_by=needed_by)
            load_native(directory, part, tables, start, loaded=loaded, needed_by=needed_by)
        elif mapped or budget.values_bytes(count_positions(part.material), tables.contents) > process_cache().max_bytes:
            scratch.copy_table(directory, part.material, start, tables.arrays(), tables.contents.names)
        else:
            _put_cached(directory, part.material, tables.contents, tables, tables.slice_of(part.material))
        if marks is not None:
            scratch.flush(tables.arrays())
            scratch.mark_loaded(marks, part.name)
            done.add(part.name)
        for array in (tables.wdl, tables.dtw, tables.rdep):  # a pair on disk: what was written stays
            scratch.release(array)                          # in the page cache, not resident
    return len(todo)


def _require_fewer_pieces(part: Part, tables: FlatTables, done: set[str], *, needed_by: str) -> None:
    """SolverError unless every table of fewer pieces than `part`'s in the flat arrays is marked
    as put in (`done`): the captures of a compact-native part read them."""
    missing = [m.name for m in tables.dependencies if m.pieces < part.material.pieces
               and not Part(m, 0, count_positions(m)).covered_by(done)]
    if missing:
        raise SolverError(f"{needed_by}: {part.name} is put in before {', '.join(missing)}, "
                          "which its captures read")


def _put_cached(directory: Path, material: Material, contents: Contents, tables: FlatTables,
                part: slice) -> None:
    """Put a dependency into the flat arrays from the process's table cache (read into it first)."""
    packed, dtw, categories = load_table_cached(directory, material, contents)
    if contents.dtw:
        master.unpack_into(packed, tables.wdl[part])
        tables.dtw[part] = dtw
    for row in range(len(categories)):
        tables.put_categories(row, part.start, categories[row])


def capture_tables(directory: Path, tables: FlatTables) -> LoadedTables:
    """Where the captures of the compact-native tables in a pair's flat arrays `tables` are looked
    up (:mod:`egtb.builder.dependency_captures`): those flat arrays, and the masters their captures
    reach outside them, loaded beside them (their ``wcdf`` categories,
    :func:`egtb.builder.plan.beside_materials`).
    """
    beside = beside_materials(directory, list(tables.dependencies))
    lean = contents_for(max(m.pieces for m in tables.dependencies), rules=LEAN_RULES, dtw=False, native=False)
    below = load_dependencies(directory, beside, (), lean)
    return LoadedTables(tables.offsets, tables.rdep[0], tables.rcat.shape[1], below.offsets, below.rdep[0])


def load_native(directory: Path, part: Part, tables: FlatTables, start: int, *,
                loaded: LoadedTables | None = None, needed_by: str) -> None:
    """Put a part of a compact-native dependency's ``wcdf`` categories into the flat arrays, its
    material starting at flat index `start` (:func:`egtb.builder.native.category_chunks`, its
    capture positions answered from the tables `loaded`: only those a crowning reaches when it
    has the pair's piece count); a whole table into arrays in memory from the process's table
    cache when it fits there.

    MissingTableError when the pair `needed_by` needs more of it than its compact files hold (DTW,
    another layer; :func:`egtb.builder.native.refuse_unheld`).
    """
    material = part.material
    native.refuse_unheld(directory, material, tables.contents, needed_by=needed_by)
    crowned_only = material.pieces == tables.pieces
    whole = part.first == 0 and part.last == count_positions(material)
    if not whole or isinstance(tables.rdep.base, np.memmap) or count_positions(material) > process_cache().max_bytes:
        for first, categories in native.category_chunks(directory, material, loaded=loaded, first=part.first,
                                                        last=part.last, crowned_only=crowned_only):
            tables.put_categories(0, start + first, categories)
            scratch.release(tables.rdep)  # on disk: a 9 G-position dependency packs into 3 GB
        return

    if native_key(directory, material) in process_cache():
        crowned_only = False  # every position's category, cached: a superset serves

    def read(_) -> np.ndarray:
        out = np.empty(count_positions(material), dtype=np.int8)
        native.read_categories(directory, material, out, loaded=loaded, crowned_only=crowned_only)
        return out
    tables.put_categories(0, start, process_cache().get(
        native_key(directory, material, crowned_only=crowned_only), native.categories_path(directory, material),
        read))


def native_key(directory: Path, material: Material, *, crowned_only: bool = False) -> tuple:
    """The key of a compact-native dependency's categories in the process's table cache (with
    `crowned_only`, those with only the capture positions a crowning reaches answered)."""
    return ("build-native", str(directory), material) + (("crowned only",) if crowned_only else ())


def cache_key(directory: Path, material: Material, contents: Contents) -> tuple:
    """The key of a dependency table in the process's table cache (beside the prober's blocks)."""
    return ("build", str(directory), material, contents)
