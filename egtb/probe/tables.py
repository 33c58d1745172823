"""Table files as the prober sees them: one kind of table per file, each answering its own reads.

A table (and each of its rule layers) answers index lookups only, as
python-chess's ``WdlTable``/``DtzTable`` do for Syzygy files; the search over
captures that recovers what a compact file leaves out is the prober's
(:meth:`egtb.probe.tablebase.Tablebase.search_captures`), so is everything about
positions. The kinds:

- :class:`MasterTable`: a master file's values and DTW, read a block of
  :data:`~egtb.formats.master.BLOCK_POSITIONS` positions at a time (an HDF5 chunk
  of each dataset) on first use and kept in a :class:`~egtb.formats.cache.TableCache`
  within its byte budget; :class:`MasterLayer`: one of its rule layers
  (categories and DTZ);
- the compact files (:mod:`egtb.probe.compact_tables`): WDL, categories (with
  their DTZ file) and DTZ, capture positions left out;
- :class:`PairedTable`: a material that has both, its values and counter-0
  categories from the compact files (about 60 positions a byte, so the tables of
  7 pieces fit in memory), its distances (DTW, and DTZ where no ``.dtz`` file is
  there) from the master file, read only when asked; :class:`PairedLayer`, its
  rule layer.

Each answers what :class:`Layer` (and for a table :class:`Table`) declares: its
value and distance at an index, its value where a probe stands
(``stored_value``: None where its file leaves the position out), the DTZ of a
category (``dtz_at``), and its own kernel descriptor rows (``kernel_row()`` for
the single-probe and gathering kernels, ``batch_row()`` for the compact batch
kernel, built by :mod:`egtb.probe.descriptors`).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Iterable, Protocol

import numpy as np

from egtb.errors import MissingRuleLayerError, TableError
from egtb.formats import master
from egtb.formats.cache import TableCache
from egtb.formats.values import CAT_DRAW, CAT_LOSS, CAT_WIN, INVALID_WDL, WDL_OF_CODE
from egtb.positions.material import Material
from egtb.probe.compact_kernels import KIND_MASTER, KIND_MASTER_CATEGORY
from egtb.probe.descriptors import blocks_row, coded_row, master_batch_row
from egtb.probe.kernels import BLOCK_MASK, BLOCK_SHIFT

__all__ = ["BLOCK_MASK", "BLOCK_SHIFT", "BlockMap", "Layer", "MasterLayer", "MasterTable", "PairedLayer",
           "PairedTable", "Table"]

#: Serial numbers of block maps (their blocks' keys in a cache shared by many tables).
_SERIALS = itertools.count(1)

#: Python ints of WDL_OF_CODE (a tuple lookup is cheaper than numpy's on the hot path).
_WDL_OF_CODE = tuple(int(v) for v in WDL_OF_CODE)


class Layer(Protocol):
    """What the prober asks of a table file or of one of its rule layers."""

    material: Material
    path: Path
    stores_captures: bool
    """Whether a position whose side to move must capture holds its value (master files), or must
    be searched (compact files): which batch kernel reads it."""
    threats: bool
    """Whether its file leaves threat positions out too (a WLD file, and the category file coded
    as exceptions to it: :mod:`egtb.rules.threats`), searched one move deep."""
    holds_distances: bool
    """Whether :meth:`distance_at` answers (no read needed to know)."""
    full: "Table | Layer | None"
    """The master table (or layer) that holds every position, when there is one."""
    max_dtz: int | None
    """(Layers) the largest DTZ of a win or loss when known without reading it."""
    dtz_file: "Layer | None"
    """(Layers) the compact DTZ file the DTZ of a win or loss is read from, if any."""
    dtz_derived: bool
    """(Layers) whether the DTZ of a win or loss is derived from its moves instead, one ply into
    its mirror material's DTZ file (:mod:`egtb.probe.derived_dtz`)."""

    def __len__(self) -> int: ...

    @property
    def nbytes(self) -> int: ...

    def value_at(self, index: int) -> int:
        """WDL (+1/0/-1) of a table, category (+2..-2) of a layer; meaningless at a capture
        position of a file that leaves them out."""

    def distance_at(self, index: int) -> int | None:
        """DTW of a table, DTZ of a layer; None when the file holds none."""

    def stored_value(self, index: int, capture: bool) -> int | None:
        """:meth:`value_at`, or None where the side to move must capture (``capture``) and the
        file leaves such positions out (the caller searches the captures)."""

    def dtz_at(self, index: int, category: int, capture: bool) -> int | None:
        """(Layers) the DTZ of a position of ``category`` (0 for a draw), None when no file holds it."""

    def fits(self, counter: int, limit: int) -> bool:
        """(Layers) whether every win or loss still is one from ``counter``, without a DTZ read."""

    def kernel_row(self) -> np.ndarray:
        """Its lookup row (:mod:`egtb.probe.descriptors`) for the single-probe kernels."""

    def batch_row(self, kind, *, distances: bool) -> np.ndarray:
        """Its row for the compact batch kernel (TableError when a compact file is not of ``kind``)."""

    def batch_source(self, *, distances: bool):
        """What the batch kernel's missed blocks are loaded from (``load_block``, ``load_blocks``)."""

    def distances_beside(self) -> "Table | Layer | None":
        """The master table (layer) a batch over compact files reads its distances from, if any."""

    def load_block(self, block: int) -> None: ...

    def close(self) -> None: ...


class Table(Layer, Protocol):
    """What the prober asks of a table file: a :class:`Layer` with rule layers."""

    def layer(self, rule: str) -> Layer:
        """The layer of a preset (MissingRuleLayerError naming the file when it has none)."""

    def kernel_layers(self) -> dict[str, Layer]:
        """The layers the rule kernel reads from memory, by preset (filled in when loaded)."""

    def warm(self, blocks: int | None) -> None:
        """Read the first ``blocks`` blocks of values now (None: every block)."""


class _Block:
    """One cache entry: a block of values (and their distances) of one block map."""

    __slots__ = ("values", "distances", "owner", "block", "nbytes")

    def __init__(self, values: np.ndarray, distances: np.ndarray | None, owner: "BlockMap", block: int) -> None:
        self.values, self.distances, self.owner, self.block = values, distances, owner, block
        self.nbytes = int(values.nbytes + (0 if distances is None else distances.nbytes))

    def release(self) -> None:
        """Dropped from the cache: the map forgets it (the kernels see it absent)."""
        self.owner.forget(self.block)


class BlockMap:
    """The blocks of one kind of data of a master file read so far: the value codes and DTW of
    the table, or the categories and DTZ of one rule layer.

    ``values_at[b]`` and ``distances_at[b]`` are the addresses of block b's arrays
    (0 while it is not in memory) for the kernels; :meth:`block` gives it to
    Python, reading it first when absent.
    """

    def __init__(self, table: "MasterTable", values: str, distances: str | None, value_type: type | None) -> None:
        self.table = table
        self.names = (values, distances)
        f = table.file()
        self.value_type = value_type if value_type is not None else _narrow_type(f[values].dtype)
        self.distance_type = None if distances is None else _narrow_type(f[distances].dtype)
        n_blocks = -(-table.positions // master.BLOCK_POSITIONS)
        self.values_at = np.zeros(max(n_blocks, 1), dtype=np.int64)
        self.distances_at = np.zeros(max(n_blocks, 1), dtype=np.int64)
        self.wide = self.distance_type is np.uint16
        self.loaded: list[_Block | None] = [None] * n_blocks
        self.serial = next(_SERIALS)

    def block(self, block: int) -> _Block:
        """Block ``block`` (read on first use; used: dropped last)."""
        found = self.loaded[block]
        if found is None:
            return self.read(block)
        self.table.cache.touch((self.serial, block))
        return found

    def read(self, block: int) -> _Block:
        """Read a block into memory and the cache (TableError naming the file and the block)."""
        table = self.table
        try:
            f = table.file()
            values = np.ascontiguousarray(master.read_block(f, self.names[0], block, table.positions),
                                          dtype=self.value_type)
            distances = None if self.names[1] is None else np.ascontiguousarray(
                master.read_block(f, self.names[1], block, table.positions), dtype=self.distance_type)
        except (OSError, KeyError, ValueError, RuntimeError) as exc:
            raise TableError(f"{table.path}: unreadable block {block} of {self.names[0]} ({exc})") from exc
        entry = _Block(values, distances, self, block)
        self.loaded[block] = entry
        self.values_at[block] = values.ctypes.data
        self.distances_at[block] = 0 if distances is None else distances.ctypes.data
        table.cache.put((self.serial, block), table.path, entry)
        return entry

    def load_block(self, block: int) -> None:
        """Read a block the kernels missed (as :meth:`block`)."""
        self.block(block)

    def load_blocks(self, indices: np.ndarray) -> None:
        """Nothing ahead of a batch: a master block is read when the kernel stops at it."""

    @property
    def path(self) -> Path:
        """The master file of the blocks."""
        return self.table.path

    def forget(self, block: int) -> None:
        """The block left memory."""
        self.loaded[block] = None
        self.values_at[block] = self.distances_at[block] = 0

    def drop(self) -> None:
        """Drop every block of the map from the cache."""
        for block, entry in enumerate(self.loaded):
            if entry is not None:
                self.table.cache.discard((self.serial, block))

    @property
    def holds_distances(self) -> bool:
        """Whether the blocks carry distances (no DTW in a file of format version 3)."""
        return self.names[1] is not None

    @property
    def nbytes(self) -> int:
        """Bytes of the blocks in memory."""
        return sum(entry.nbytes for entry in self.loaded if entry is not None)


class _NoLayers:
    """A layer has no layers of its own."""

    path: Path

    def layer(self, rule: str) -> Layer:
        raise MissingRuleLayerError(f"{self.path}: a rule layer has no layer of its own ({rule!r})")

    def kernel_layers(self) -> dict[str, Layer]:
        return {}


class KnownMaxDtz:
    """A layer that may know its largest DTZ of a win or loss (``max_dtz``) without a DTZ read."""

    max_dtz: int | None

    def fits(self, counter: int, limit: int) -> bool:
        """Whether every win or loss still is one from ``counter`` (its largest DTZ, when known,
        fits within the ``limit``)."""
        return self.max_dtz is not None and counter + self.max_dtz <= limit


class _InBlocks:
    """What a master table and a master layer share: every position in blocks (:class:`BlockMap`),
    values and distances read together by the kernels (each gives ``value_at`` and
    ``kernel_arrays``)."""

    stores_captures = True
    threats = False
    max_dtz = None  # its distances are in the blocks the kernels read anyway
    dtz_file = None  # no compact DTZ file: its DTZ is in its blocks
    dtz_derived = False
    batch_kind: int
    """What the batch kernel reads its blocks as (KIND_MASTER, KIND_MASTER_CATEGORY)."""

    def stored_value(self, index: int, capture: bool) -> int:
        """The value: a master file holds every position."""
        return self.value_at(index)

    def batch_row(self, kind, *, distances: bool) -> np.ndarray:
        """The batch kernel's row: its values (and distances with ``distances``)."""
        return master_batch_row(len(self), self.kernel_arrays(distances=distances), self.batch_kind)

    def batch_source(self, *, distances: bool) -> BlockMap:
        return self.kernel_arrays(distances=distances)

    def distances_beside(self) -> None:
        """None: the kernels read its distances with its values."""
        return None

    def load_block(self, block: int) -> None:
        """Read a block the kernels missed."""
        self.kernel_arrays().block(block)


class MasterLayer(_InBlocks, _NoLayers):
    """One rule layer of a master file: category (int8) and DTZ per position, read by blocks."""

    holds_distances = True
    batch_kind = KIND_MASTER_CATEGORY

    def __init__(self, table: "MasterTable", preset: str) -> None:
        self.material, self.path, self.preset = table.material, table.path, preset
        group = f"{master.RULES_GROUP}/{preset}"
        self.blocks = BlockMap(table, f"{group}/category", f"{group}/dtz", np.int8)
        self.categories = BlockMap(table, f"{group}/category", None, np.int8)
        """The categories alone (the capture searches of a batch need no DTZ)."""

    def __len__(self) -> int:
        return self.blocks.table.positions

    @property
    def full(self) -> "MasterLayer":
        """Itself: a master layer holds every position."""
        return self

    @property
    def nbytes(self) -> int:
        return self.blocks.nbytes + self.categories.nbytes

    def value_at(self, index: int) -> int:
        """The category at counter 0."""
        return int(self.blocks.block(index >> BLOCK_SHIFT).values[index & BLOCK_MASK])

    def distance_at(self, index: int) -> int:
        """The DTZ (0 for a draw)."""
        block = self.blocks.block(index >> BLOCK_SHIFT)
        place = index & BLOCK_MASK
        return int(block.distances[place]) if block.values[place] else 0

    def dtz_at(self, index: int, category: int, capture: bool) -> int:
        """The DTZ of any category (0 for a draw), from its blocks."""
        return self.distance_at(index)

    def fits(self, counter: int, limit: int) -> bool:
        """False: its DTZ is read with its categories anyway."""
        return False

    def kernel_arrays(self, *, distances: bool = True) -> BlockMap:
        """The block map of the categories and DTZ (without ``distances``: the categories alone)."""
        return self.blocks if distances else self.categories

    def kernel_row(self) -> np.ndarray:
        """The rule kernel's row: its block maps of categories and DTZ."""
        return blocks_row(len(self), self.blocks)


class MasterTable(_InBlocks):
    """One master file, read a block at a time: value codes and DTW (none in a file without DTW,
    format version 3) per position, and its rule layers (those of ``rules``, None: all).

    The file stays open (reopened in a forked child); blocks go to ``cache``.
    TableError names a file that is not a table of ``material``.
    """

    batch_kind = KIND_MASTER

    def __init__(self, path: Path, material: Material, *, cache: TableCache,
                 rules: Iterable[str] | None = None) -> None:
        self.path, self.material, self.cache = Path(path), material, cache
        self._file, self.attrs = master.open_blocks(self.path)
        self._pid = os.getpid()
        try:
            stored = Material.parse(str(self.attrs["material"]))
            if stored != material:
                raise TableError(f"{path}: holds material {stored.name}, not {material.name}")
            self.positions = int(self.attrs["positions"])
            f = self._file
            dtw = "dtw" if "dtw" in f else None
            self.values = BlockMap(self, "wld", dtw, np.uint8)
            self.codes = BlockMap(self, "wld", None, np.uint8) if dtw else self.values
            """The value codes alone (the capture searches of a batch need no DTW)."""
            presets = sorted(f[master.RULES_GROUP]) if master.RULES_GROUP in f else []
            keep = None if rules is None else set(rules)
            self.rules = {preset: MasterLayer(self, preset) for preset in presets if keep is None or preset in keep}
        except (KeyError, ValueError) as exc:
            self._file.close()
            raise TableError(f"{path}: unreadable table file ({exc})") from exc
        except BaseException:
            self._file.close()
            raise

    def file(self):
        """The open file (opened again in a process forked since, or after :meth:`close`: a
        batch pool may still hold the table)."""
        if self._pid != os.getpid() or not self._file.id.valid:
            self._file, _ = master.open_blocks(self.path)
            self._pid = os.getpid()
        return self._file

    def close(self) -> None:
        """Drop the blocks from the cache and close the file."""
        for blocks in {self.values, self.codes, *(layer.blocks for layer in self.rules.values()),
                       *(layer.categories for layer in self.rules.values())}:
            blocks.drop()
        if self._pid == os.getpid() and self._file.id.valid:
            self._file.close()

    def __len__(self) -> int:
        return self.positions

    @property
    def full(self) -> "MasterTable":
        """Itself: a master file holds every position."""
        return self

    @property
    def nbytes(self) -> int:
        """Bytes of its blocks in memory (the cache counts them; a table itself is small)."""
        return (self.values.nbytes + (self.codes.nbytes if self.codes is not self.values else 0)
                + sum(layer.nbytes for layer in self.rules.values()))

    def value_at(self, index: int) -> int:
        """The WDL (TableError for an unsolved position, which a finished table never holds)."""
        value = _WDL_OF_CODE[self.values.block(index >> BLOCK_SHIFT).values[index & BLOCK_MASK]]
        if value == INVALID_WDL:
            raise TableError(f"{self.path}: position {index} is unsolved")
        return value

    @property
    def holds_distances(self) -> bool:
        """Whether the file holds DTW (not in format version 3)."""
        return self.values.holds_distances

    def distance_at(self, index: int) -> int | None:
        """The DTW (0 for a draw); None when the file holds no DTW (no block read)."""
        if not self.values.holds_distances:
            return None
        block = self.values.block(index >> BLOCK_SHIFT)
        place = index & BLOCK_MASK
        return int(block.distances[place]) if _WDL_OF_CODE[block.values[place]] else 0

    def kernel_arrays(self, *, distances: bool = True) -> BlockMap:
        """The block map of the value codes and DTW (without ``distances``: the codes alone)."""
        return self.values if distances else self.codes

    def kernel_row(self) -> np.ndarray:
        """The value kernel's (and the gathering kernel's) row: its block maps of codes and DTW."""
        return blocks_row(len(self), self.values)

    def warm(self, blocks: int | None) -> None:
        """Read the first ``blocks`` blocks of values (None: every block, of the layers too)."""
        maps = [self.values] if blocks is not None else [self.values, *(l.blocks for l in self.rules.values())]
        for blocks_map in maps:
            for block in range(len(blocks_map.loaded) if blocks is None else min(blocks, len(blocks_map.loaded))):
                blocks_map.block(block)

    def layer(self, rule: str) -> MasterLayer:
        """The layer of a preset (MissingRuleLayerError naming the file and the preset)."""
        found = self.rules.get(rule)
        if found is None:
            have = ", ".join(sorted(self.rules)) or "none"
            raise MissingRuleLayerError(f"{self.path}: no rule layer for preset {rule!r} "
                                        f"(layers in the file: {have}); rebuild it with that rule, "
                                        f"or probe with rule_free=True")
        return found

    def kernel_layers(self) -> dict[str, MasterLayer]:
        """Every layer kept (the rule kernel reads their block maps)."""
        return self.rules


class _Paired:
    """What a paired table and a paired layer share: a compact file answers the values (capture
    positions left out), a master file beside it the distances."""

    stores_captures = False
    dtz_derived = False  # the master file beside it holds every DTZ
    coded: Layer

    def __len__(self) -> int:
        return len(self.coded)

    def value_at(self, index: int) -> int:
        """The compact file's value (meaningless where the side to move must capture)."""
        return self.coded.value_at(index)

    def stored_value(self, index: int, capture: bool) -> int | None:
        """The compact file's value, None where the side to move must capture (searched)."""
        return None if capture else self.coded.value_at(index)

    @property
    def threats(self) -> bool:
        """Whether the compact file leaves threat positions out."""
        return self.coded.threats

    def batch_row(self, kind, *, distances: bool) -> np.ndarray:
        """The compact file's batch row (the batch kernel's capture search, and the master's
        distances read after it)."""
        return self.coded.batch_row(kind, distances=distances)

    def batch_source(self, *, distances: bool):
        return self.coded


class PairedLayer(_Paired, KnownMaxDtz, _NoLayers):
    """A rule layer of a material with both files: the categories of the compact category
    file (capture positions left out), the DTZ of the master file's layer.

    The DTZ is read alone (its own block map: one or two bytes a position, not
    the categories the compact file gives), when asked for.
    """

    holds_distances = True

    def __init__(self, coded, master_layer: MasterLayer) -> None:
        self.coded, self.master = coded, master_layer
        self.material, self.path = coded.material, coded.path
        self.full = master_layer
        self.dtz = BlockMap(master_layer.blocks.table, master_layer.blocks.names[1], None, None)
        """The blocks of the master layer's DTZ read so far."""
        attrs = master_layer.blocks.table.file()[f"{master.RULES_GROUP}/{master_layer.preset}"].attrs
        self.max_dtz = int(attrs["max_dtz"]) if "max_dtz" in attrs else None
        """The largest DTZ of a win or loss (not cursed or blessed) in the layer, when the file
        says: from a counter of at most limit - max_dtz every win or loss still is one, so
        its DTZ need not be read."""

    @property
    def nbytes(self) -> int:
        return self.coded.nbytes + self.master.nbytes

    @property
    def dtz_file(self):
        """The compact DTZ file beside the category file, when there is one: the DTZ of a win or
        loss is read from it, not from the master."""
        return self.coded.dtz_file

    def distance_at(self, index: int) -> int:
        """The DTZ stored in the master file (capture positions too; the caller knows the
        category is not a draw, whose stored DTZ is meaningless)."""
        return int(self.dtz.block(index >> BLOCK_SHIFT).values[index & BLOCK_MASK])

    def dtz_at(self, index: int, category: int, capture: bool) -> int:
        """0 for a draw; a win's or loss's from the compact DTZ file when there is one (1 where
        the side to move must capture: its move zeroes the counter), else the master's, as a
        cursed win's or blessed loss's."""
        if category == CAT_DRAW:
            return 0
        if category in (CAT_WIN, CAT_LOSS) and capture:
            return 1
        if category in (CAT_WIN, CAT_LOSS) and self.dtz_file is not None:
            return self.dtz_file.value_at(index)
        return self.distance_at(index)

    def kernel_row(self) -> np.ndarray:
        """The rule kernel's row: the compact category file, its largest DTZ, and its DTZ file or
        else the master's DTZ block map."""
        return coded_row(len(self), self.coded, max_dtz=self.max_dtz, dtz_file=self.dtz_file,
                         distances=self.dtz if self.dtz_file is None else None)

    def distances_beside(self) -> "PairedLayer | None":
        """Itself (its DTZ block map, read alone) when no compact DTZ file gives the DTZ."""
        return self if self.dtz_file is None else None

    def load_block(self, block: int) -> None:
        """Read a DTZ block the kernels missed."""
        self.dtz.block(block)

    def kernel_arrays(self) -> BlockMap:
        """The block map of the master layer's DTZ (its values), for the kernels."""
        return self.dtz

    def close(self) -> None:
        """Drop its DTZ blocks from the cache."""
        self.dtz.drop()


class PairedTable(_Paired):
    """A material with a compact file and a master file: values and categories from the
    compact files, DTW and DTZ from the master, read only when asked for.

    Rule layers: the compact category file of a preset with the master's DTZ
    (:class:`PairedLayer`); a preset without a compact category file is the
    master's layer (read by the rule kernel).
    """

    max_dtz = None
    dtz_file = None

    def __init__(self, coded, master_table: MasterTable) -> None:
        if coded.material != master_table.material or len(coded) != len(master_table):
            raise TableError(f"{coded.path} and {master_table.path} hold different tables")
        self.coded, self.master = coded, master_table
        self.material, self.path = coded.material, coded.path
        self.full = master_table
        self._layers: dict[str, Layer] = {}
        self._paired: list[PairedLayer] = []
        self._kernel_layers: dict[str, MasterLayer] | None = None

    @property
    def nbytes(self) -> int:
        return self.coded.nbytes + self.master.nbytes

    @property
    def holds_distances(self) -> bool:
        """Whether the master holds DTW."""
        return self.master.holds_distances

    def distance_at(self, index: int) -> int | None:
        """The DTW from the master (0 for a draw); None when it holds none."""
        return self.master.distance_at(index)

    def kernel_row(self) -> np.ndarray:
        """The value kernel's row: the compact file (its DTW is read through the protocol)."""
        return self.coded.kernel_row()

    def distances_beside(self) -> MasterTable | None:
        """The master, when it holds DTW."""
        return self.master if self.master.holds_distances else None

    def load_block(self, block: int) -> None:
        """Read a DTW block of the master the kernels missed."""
        self.master.load_block(block)

    def layer(self, rule: str) -> Layer:
        """The layer of a preset: compact categories (with their DTZ file) and the master's DTZ,
        else the master's layer, else the compact category file alone (MissingRuleLayerError
        when neither has one)."""
        found = self._layers.get(rule)
        if found is None:
            found = self._layers[rule] = self._pair_layer(rule)
        return found

    def _pair_layer(self, rule: str) -> Layer:
        try:
            categories = self.coded.layer(rule)
        except MissingRuleLayerError:
            return self.master.layer(rule)
        if rule not in self.master.rules:
            return categories
        paired = PairedLayer(categories, self.master.layer(rule))
        self._paired.append(paired)
        return paired

    def kernel_layers(self) -> dict[str, MasterLayer]:
        """The master's layers of the presets without a compact category file (the rule kernel
        reads them); those with one are read through :meth:`layer`."""
        if self._kernel_layers is None:
            self._kernel_layers = {name: layer for name, layer in self.master.kernel_layers().items()
                                   if self.layer(name) is layer}
        return self._kernel_layers

    def warm(self, blocks: int | None) -> None:
        """Decode the first ``blocks`` blocks of the compact file (None: all); the master's
        blocks are read when a distance is asked for."""
        self.coded.warm(blocks)

    def close(self) -> None:
        """Drop its blocks (compact and master) from the cache and close the master file."""
        for layer in self._paired:
            layer.close()
        self.coded.close()
        self.master.close()


def _narrow_type(dtype: np.dtype) -> type:
    """uint8 for a one-byte distance, else uint16."""
    return np.uint8 if np.dtype(dtype).itemsize == 1 else np.uint16
