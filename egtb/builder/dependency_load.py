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

import numpy as np

from egtb.builder import budget, native, solve
from egtb.builder.contents import LEAN_RULES, Contents, contents_for
from egtb.builder.dependency_captures import LoadedTables
from egtb.builder.plan import beside_materials
from egtb.errors import TableError
from egtb.formats import master, scratch
from egtb.formats.cache import process_cache
from egtb.formats.packed import pack_into
from egtb.positions.index import NUM_CODES, code_of_material
from egtb.positions.material import Material, count_positions


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


def load_dependencies(directory: Path, solved: list[Material],
                      fresh: tuple[Material, ...], contents: Contents, *,
                      arrays: list[np.ndarray] | None = None, fill: bool = True) -> FlatTables:
    """Flat arrays with room for the `fresh` tables (the pair, first) and the `solved` ones
    (read from disk).

    `contents`: the tables to load and solve (:class:`~egtb.builder.contents.Contents`).
    `arrays`: the (wdl, dtw, rcat, rdtz, rdep) arrays to use (memory maps of a pair
    on disk, :func:`egtb.formats.scratch.map_arrays`) instead of new ones; with
    `fill` False the solved tables are taken as already in them (a resumed pair).
    A table bigger than the table cache holds, or any into mapped arrays, is
    copied in slice by slice.
    """
    materials = list(fresh) + list(solved)
    total = sum(count_positions(m) for m in materials)
    own = sum(count_positions(m) for m in fresh)
    if arrays is None:
        arrays = scratch.new_arrays(total, own, contents=contents)
    offsets = np.full(NUM_CODES, solve.NOT_LOADED, dtype=np.int64)
    start = 0
    for material in materials:
        offsets[code_of_material(material)] = start
        start += count_positions(material)
    tables = FlatTables(offsets, *arrays[:2], contents, *arrays[2:5])
    if not fill:
        return tables
    natives = {m for m in solved
               if not master.table_path(directory, m).exists() and native.has_native(directory, m)}
    loaded = capture_tables(directory, solved, tables) if natives and contents.presets else None
    # fewer pieces first: the captures of a compact-native one read the tables loaded before it
    for material in sorted(solved, key=lambda m: m.pieces):
        part = tables.slice_of(material)
        if material in natives:
            load_native(directory, material, tables, part, loaded=loaded, needed_by=fresh[0].name)
        elif isinstance(tables.rdep.base, np.memmap) or budget.values_bytes(
                count_positions(material), contents) > process_cache().max_bytes:
            scratch.copy_table(directory, material, part.start, arrays, contents.names)
        else:
            _put_cached(directory, material, contents, tables, part)
        for array in (tables.wdl, tables.dtw, tables.rdep):  # a pair on disk: what was written stays
            scratch.release(array)                          # in the page cache, not resident
    return tables


def _put_cached(directory: Path, material: Material, contents: Contents, tables: FlatTables,
                part: slice) -> None:
    """Put a dependency into the flat arrays from the process's table cache (read into it first)."""
    packed, dtw, categories = load_table_cached(directory, material, contents)
    if contents.dtw:
        master.unpack_into(packed, tables.wdl[part])
        tables.dtw[part] = dtw
    for row in range(len(categories)):
        tables.put_categories(row, part.start, categories[row])


def capture_tables(directory: Path, solved: list[Material], tables: FlatTables) -> LoadedTables:
    """Where the captures of the compact-native ones of a pair's dependencies `solved` are looked up
    (:mod:`egtb.builder.dependency_captures`): the pair's flat arrays `tables`, and the masters
    their captures reach outside them, loaded beside them (their ``wcdf`` categories,
    :func:`egtb.builder.plan.beside_materials`). A compact-native table they reach outside them is
    left to the prober's capture search.
    """
    beside = beside_materials(directory, solved)
    lean = contents_for(max(m.pieces for m in solved), rules=LEAN_RULES, dtw=False, native=False)
    below = load_dependencies(directory, beside, (), lean)
    return LoadedTables(tables.offsets, tables.rdep[0], tables.rcat.shape[1], below.offsets, below.rdep[0])


def load_native(directory: Path, material: Material, tables: FlatTables, part: slice, *,
                loaded: LoadedTables | None = None, needed_by: str) -> None:
    """Put a compact-native dependency's ``wcdf`` categories into the flat arrays
    (:func:`egtb.builder.native.read_categories`, its capture positions answered from the tables
    `loaded`, kept in the process's table cache when they fit).

    MissingTableError when the pair `needed_by` needs more of it than its compact files hold (DTW,
    another layer; :func:`egtb.builder.native.refuse_unheld`).
    """
    native.refuse_unheld(directory, material, tables.contents, needed_by=needed_by)
    if isinstance(tables.rdep.base, np.memmap) or count_positions(material) > process_cache().max_bytes:
        for start, categories in native.category_chunks(directory, material, loaded=loaded):
            tables.put_categories(0, part.start + start, categories)
            scratch.release(tables.rdep)  # on disk: a 9 G-position dependency packs into 3 GB
        return

    def read(_) -> np.ndarray:
        out = np.empty(count_positions(material), dtype=np.int8)
        native.read_categories(directory, material, out, loaded=loaded)
        return out
    tables.put_categories(0, part.start, process_cache().get(
        native_key(directory, material), native.categories_path(directory, material), read))


def native_key(directory: Path, material: Material) -> tuple:
    """The key of a compact-native dependency's categories in the process's table cache."""
    return ("build-native", str(directory), material)


def cache_key(directory: Path, material: Material, contents: Contents) -> tuple:
    """The key of a dependency table in the process's table cache (beside the prober's blocks)."""
    return ("build", str(directory), material, contents)
