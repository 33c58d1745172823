"""Table files as the prober sees them: one small protocol answered by master and compact tables.

A table (and each of its rule layers) answers index lookups only, as
python-chess's ``Table`` does for Syzygy files; the search over captures that
recovers what a compact file leaves out is the prober's
(:class:`egtb.probe.tablebase.Tablebase`), so is everything about positions.

- ``material``, ``path``, ``len(table)`` and ``nbytes`` (memory it takes);
- ``stores_captures``: whether a position whose side to move must capture
  holds its value (master files) or must be searched (compact files);
- ``value_at(index)``: the WDL (+1/0/-1) of a table, the category (+2..-2) of
  a rule layer; meaningless at a capture position when ``stores_captures``
  is False;
- ``distance_at(index)``: DTW of a table, DTZ of a layer, 0 for a draw;
  None when the file holds none;
- ``layer(rule)``: the rule layer of a preset (MissingRuleLayerError naming
  the file when it has none);
- ``kernel_layers()``: the layers the rule kernel reads from memory
  (:func:`egtb.probe.kernels.probe_rule_one`), by preset; ``kernel_arrays()``
  (tables that store captures): the arrays the batch kernels read.

:class:`MasterTable` is a master file's; :class:`egtb.formats.compact.CompactTable`
is a compact file's.

>>> table = MasterTable(Material.parse("1k-1k"), np.array([1, 2], dtype=np.uint8),
...                     np.array([0, 7], dtype=np.uint8), Path("1k-1k.h5"))
>>> table.value_at(1), table.distance_at(1), table.value_at(0), table.distance_at(0)
(1, 7, 0, 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol

import numpy as np

from egtb.errors import MissingRuleLayerError, TableError
from egtb.formats import master
from egtb.formats.values import INVALID_WDL, WDL_OF_CODE
from egtb.positions.material import Material

__all__ = ["MasterLayer", "MasterTable", "Table", "read_master"]

#: Python ints of WDL_OF_CODE (a tuple lookup is cheaper than numpy's on the hot path).
_WDL_OF_CODE = tuple(int(v) for v in WDL_OF_CODE)


class Table(Protocol):
    """What the prober asks of a table file or of one of its rule layers."""

    material: Material
    path: Path
    stores_captures: bool

    def __len__(self) -> int: ...

    @property
    def nbytes(self) -> int: ...

    def value_at(self, index: int) -> int: ...

    def distance_at(self, index: int) -> int | None: ...

    def layer(self, rule: str) -> "Table": ...

    def kernel_layers(self) -> dict[str, "Table"]: ...


@dataclass
class MasterLayer:
    """One loaded rule layer of a master file: category (int8) and DTZ (uint8 or uint16)."""

    material: Material
    path: Path
    category: np.ndarray
    dtz: np.ndarray
    stores_captures = True

    def __len__(self) -> int:
        return min(len(self.category), len(self.dtz))

    @property
    def nbytes(self) -> int:
        return int(self.category.nbytes + self.dtz.nbytes)

    def value_at(self, index: int) -> int:
        """The category at counter 0."""
        return int(self.category[index])

    def distance_at(self, index: int) -> int:
        """The DTZ (0 for a draw)."""
        return int(self.dtz[index]) if self.category[index] else 0

    def kernel_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(categories, DTZ) for the batch kernels."""
        return self.category, self.dtz

    def layer(self, rule: str) -> "MasterLayer":
        raise MissingRuleLayerError(f"{self.path}: a rule layer has no layer of its own ({rule!r})")

    def kernel_layers(self) -> dict[str, "MasterLayer"]:
        return {}


@dataclass
class MasterTable:
    """One loaded master table: value codes and DTW (None in a file without DTW) per position,
    and its rule layers."""

    material: Material
    wld: np.ndarray
    dtw: np.ndarray | None
    path: Path
    rules: dict[str, MasterLayer] = field(default_factory=dict)
    stores_captures = True

    def __len__(self) -> int:
        return len(self.wld) if self.dtw is None else min(len(self.wld), len(self.dtw))

    @property
    def nbytes(self) -> int:
        return int(self.wld.nbytes + (0 if self.dtw is None else self.dtw.nbytes)
                   + sum(layer.nbytes for layer in self.rules.values()))

    def value_at(self, index: int) -> int:
        """The WDL (TableError for an unsolved position, which a finished table never holds)."""
        value = _WDL_OF_CODE[self.wld[index]]
        if value == INVALID_WDL:
            raise TableError(f"{self.path}: position {index} is unsolved")
        return value

    def distance_at(self, index: int) -> int | None:
        """The DTW (0 for a draw); None when the file holds no DTW."""
        if self.dtw is None:
            return None
        return int(self.dtw[index]) if _WDL_OF_CODE[self.wld[index]] else 0

    def kernel_arrays(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(value codes, DTW or None) for the batch kernels."""
        return self.wld, self.dtw

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
        """Every loaded layer (the rule kernel reads them from memory)."""
        return self.rules


def read_master(path: Path, material: Material, *, rules: Iterable[str] | None = None) -> MasterTable:
    """Read a master file whole (checksums verified), keeping the layers of ``rules`` (None: all).

    TableError when the file holds another material.
    """
    data = master.open_table(path)
    if data.material != material:
        raise TableError(f"{path}: holds material {data.material.name}, not {material.name}")
    keep = None if rules is None else set(rules)
    layers = {name: MasterLayer(material, path, np.ascontiguousarray(layer.category, dtype=np.int8),
                                np.ascontiguousarray(layer.dtz, dtype=_narrow_type(layer.dtz)))
              for name, layer in getattr(data, "rules", {}).items() if keep is None or name in keep}
    dtw = None if data.dtw is None else np.ascontiguousarray(data.dtw, dtype=_narrow_type(data.dtw))
    return MasterTable(material, np.ascontiguousarray(data.wld, dtype=np.uint8), dtw, path, layers)


def _narrow_type(values: np.ndarray) -> type:
    """uint8 for a one-byte array, else uint16."""
    return np.uint8 if values.dtype.itemsize == 1 else np.uint16
