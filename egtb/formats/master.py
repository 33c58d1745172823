"""HDF5 table files: one file per material, written once, read with checks.

A file ``<material name>.h5`` holds two datasets over the material's positions
(Black to move, in index order, see :mod:`egtb.positions.index`):

- ``wld``: value codes (:data:`egtb.formats.values.DRAW`, ``WIN``, ``LOSS``) packed four
  per byte, position ``i`` in bits ``2 * (i % 4)`` of byte ``i // 4``;
- ``dtw``: plies to the end under perfect play, ``uint8`` or ``uint16``.

Attributes carry the format version, material, counts, max DTW with a FEN
reaching it, a CRC32 checksum of the raw dataset bytes (``wld`` then ``dtw``),
build time and builder version.

Format version 2 adds one rule layer per move-rule preset (group
``rules/<preset>``, see :mod:`egtb.builder.rule_layer`):

- ``rules/<preset>/category``: ``int8`` :class:`egtb.formats.values.Category` code
  at counter 0 (-2 loss, -1 blessed loss, 0 draw, 1 cursed win, 2 win);
- ``rules/<preset>/dtz``: ``uint8`` or ``uint16``, ply-exact: the side to move
  wins (loses) from counter ``c`` iff the category is WIN (LOSS) and
  ``dtz + c <= limit``; a cursed win or blessed loss has ``dtz > limit``; a draw 0;

with group attributes ``limit``, ``zeroing``, per-category counts, ``max_dtz``
and ``checksum_crc32`` (CRC32 of the category bytes then the dtz bytes). Files of
version 1 (no layers) still open, with no rule layers.

Format version 3 is version 2 without the ``dtw`` dataset (the rule-free
distance is not stored: the default from 7 pieces on, where a file holds the
values and the ``wcdf`` layer); the checksum is then that of ``wld`` alone and
:attr:`TableData.dtw` is None. A file with ``dtw`` is still written as version 2.

The reading interface: :func:`open_table` returns a :class:`TableData` whose
``rules`` maps a preset name to a :class:`RuleLayer` (``category``, ``dtz``,
``attrs``), arrays indexed like ``wld`` and ``dtw``. Files are written to ``<name>.h5.<pid>.tmp`` and renamed when
complete, so a reader never sees a partial file. docs/table-format.md has the
details.

>>> table_path("data/egtb", Material.parse("1k-1k")).name
'1k-1k.h5'
"""

from __future__ import annotations

import json
import os
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np
from numba import njit

from egtb.errors import InvalidArgumentError, InvalidDataError, TableError
from egtb.formats.cache import file_stamp
from egtb.formats.directory import DEFAULT_DIR, ENV_DIR, default_dir, resolve_dir
from egtb.positions.material import Material

FORMAT_VERSION = 2
#: Format version of a file without the ``dtw`` dataset.
FORMAT_VERSION_NO_DTW = 3
#: Format versions this reader opens (version 1 has no rule layers, version 3 no DTW).
READABLE_VERSIONS = (1, 2, 3)
BUILDER_VERSION = "egtb-build 2"
#: HDF5 group holding one subgroup of rule-layer datasets per preset.
RULES_GROUP = "rules"
#: Distance rule of the stored DTW (no move rule counted).
DTW_RULES = "none"
SUFFIX = ".h5"
#: Temporary files are ``<name>.h5.<pid>.tmp`` (one per writing process).
TMP_GLOB = "*.h5.*.tmp"
#: HDF5 compression filter and chunk size (elements) of both datasets.
COMPRESSION = "gzip"
COMPRESSION_LEVEL = 4
CHUNK = 1 << 18
#: Positions per packed byte.
PER_BYTE = 4


@dataclass
class RuleLayer:
    """Values of one material under one move-rule preset, at counter 0."""

    category: np.ndarray
    """Category code per position (int8, :class:`egtb.formats.values.Category`)."""
    dtz: np.ndarray
    """Plies to the next zeroing ply or the end, ply-exact (uint8 or uint16)."""
    attrs: dict = field(default_factory=dict)
    """Layer attributes (limit, zeroing, counts per category, max_dtz, checksum)."""


@dataclass
class TableData:
    """The contents of one table file."""

    material: Material
    """Material of the table (Black to move)."""
    wdl: np.ndarray
    """Value code per position (uint8, unpacked; as stored, four a byte, when read ``packed``)."""
    dtw: np.ndarray | None
    """Plies to the end per position (uint8 or uint16); None when the file stores none."""
    attrs: dict = field(default_factory=dict)
    """File attributes (counts, max DTW, checksum, build time...)."""
    rules: dict[str, RuleLayer] = field(default_factory=dict)
    """Rule layers by preset name (empty for a file of format version 1)."""


def table_path(directory: os.PathLike | str, material: Material) -> Path:
    """The file of a material in a table directory."""
    return Path(directory) / f"{material.name}{SUFFIX}"


def pack_wdl(wdl: np.ndarray) -> np.ndarray:
    """Pack value codes (0-3) four per byte.

    >>> pack_wdl(np.array([1, 2, 3, 1, 2], dtype=np.uint8)).tolist()
    [121, 2]
    """
    out = np.empty(-(-len(wdl) // PER_BYTE), dtype=np.uint8)
    _pack_into(np.asarray(wdl), out)
    return out


@njit(cache=True)
def _pack_into(wdl, out):
    """:func:`pack_wdl` in one pass (the last byte padded with zeros)."""
    count = wdl.shape[0]
    whole = count // PER_BYTE
    for j in range(whole):
        i = PER_BYTE * j
        out[j] = wdl[i] | (wdl[i + 1] << 2) | (wdl[i + 2] << 4) | (wdl[i + 3] << 6)
    if whole < out.shape[0]:
        byte = 0
        for i in range(PER_BYTE * whole, count):
            byte |= wdl[i] << (2 * (i % PER_BYTE))
        out[whole] = byte


def unpack_wdl(packed: np.ndarray, count: int) -> np.ndarray:
    """Inverse of :func:`pack_wdl`.

    >>> unpack_wdl(np.array([121, 2], dtype=np.uint8), 5).tolist()
    [1, 2, 3, 1, 2]
    """
    out = np.empty(count, dtype=np.uint8)
    unpack_into(packed, out)
    return out


@njit(cache=True)
def unpack_into(packed, out):
    """Unpack the first ``len(out)`` values packed four per byte (:func:`pack_wdl`) into `out`.

    One pass straight into the destination (the builder's flat arrays), no
    temporary.

    >>> out = np.zeros(3, dtype=np.uint8)
    >>> unpack_into(np.array([121], dtype=np.uint8), out)
    >>> out.tolist()
    [1, 2, 3]
    """
    count = out.shape[0]
    whole = count // PER_BYTE
    for j in range(whole):
        byte = packed[j]
        out[PER_BYTE * j] = byte & 3
        out[PER_BYTE * j + 1] = (byte >> 2) & 3
        out[PER_BYTE * j + 2] = (byte >> 4) & 3
        out[PER_BYTE * j + 3] = byte >> 6
    for i in range(PER_BYTE * whole, count):
        out[i] = (packed[i // PER_BYTE] >> (2 * (i % PER_BYTE))) & 3


def checksum(packed: np.ndarray, dtw: np.ndarray | None) -> int:
    """CRC32 of the raw bytes of the packed values followed by the DTW array (when stored)."""
    crc = zlib.crc32(np.ascontiguousarray(packed).view(np.uint8))
    if dtw is None:
        return crc
    return zlib.crc32(np.ascontiguousarray(dtw).view(np.uint8), crc)


def layer_checksum(category: np.ndarray, dtz: np.ndarray) -> int:
    """CRC32 of the raw bytes of a rule layer's categories followed by its DTZ array."""
    crc = zlib.crc32(np.ascontiguousarray(category).view(np.uint8))
    return zlib.crc32(np.ascontiguousarray(dtz).view(np.uint8), crc)


def write_table(path: os.PathLike | str, material: Material, wdl: np.ndarray,
                dtw: np.ndarray | None, *, attrs: dict | None = None,
                rules: dict[str, RuleLayer] | None = None) -> Path:
    """Write a table atomically (temporary name, then rename); return its path.

    ``attrs`` adds attributes (counts, ...); computed ones (checksum, material,
    positions, format) take precedence. ``rules`` adds one rule layer per preset
    (its ``attrs`` become the group's attributes, with a computed checksum).
    ``dtw`` None writes no DTW (format version 3).
    The arrays may be memory maps: they are packed, narrowed and written in
    slices of :data:`SLICE` positions, never copied whole.
    """
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    count = len(wdl)
    with h5py.File(tmp, "w") as f:
        crc = _write_dataset(f, "wld", wdl, np.uint8, packed=True)
        if dtw is not None:
            crc = _write_dataset(f, "dtw", dtw, narrow_type(dtw), crc=crc)
        f.attrs.update(attrs or {})
        f.attrs.update(_base_attrs(material, count, crc, dtw=dtw is not None))  # computed win
        for preset, layer in sorted((rules or {}).items()):
            _write_layer(f, preset, layer, count)
        f.flush()
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


#: Positions packed, narrowed and written at a time: a multiple of ``PER_BYTE * CHUNK``, so
#: that a slice of packed values, too, fills whole chunks.
SLICE = 16 * CHUNK


def narrow_type(dtw: np.ndarray) -> np.dtype:
    """The stored type of a distance array: uint8 when it fits, else uint16 (little-endian)."""
    if dtw.dtype == np.uint8:  # (a spilled DTZ row, egtb.formats.spill, has no max())
        return np.dtype(np.uint8)
    return np.dtype(np.uint8 if len(dtw) == 0 or int(dtw.max()) < 256 else "<u2")


def _write_layer(f: h5py.File, preset: str, layer: RuleLayer, count: int) -> None:
    if len(layer.category) != count or len(layer.dtz) != count:
        raise InvalidDataError(f"rule layer {preset!r} has {len(layer.category)} values for {count} "
                         "positions")
    group = f.require_group(RULES_GROUP).create_group(preset)
    crc = _write_dataset(group, "category", layer.category, np.int8)
    crc = _write_dataset(group, "dtz", layer.dtz, narrow_type(layer.dtz), crc=crc)
    group.attrs.update(layer.attrs)
    group.attrs["checksum_crc32"] = crc


def _write_dataset(f: h5py.Group, name: str, data: np.ndarray, dtype, *, packed: bool = False,
                   crc: int = 0) -> int:
    """Write `data` as `dtype` (values packed four per byte when `packed`) slice by slice.

    A chunked, shuffled (multi-byte items) and gzip-compressed dataset. Returns
    the CRC-32 of the stored bytes, continuing `crc`. The chunks of a dataset of
    several chunks are compressed here, in threads (zlib releases the GIL), and
    their bytes handed to HDF5 as they are (``write_direct_chunk``): the bytes
    HDF5's own shuffle and deflate filters write, in the same order, so the file
    is byte for byte the one a plain ``create_dataset(data=...)`` gives
    (tests/test_master.py compares them).
    """
    dtype = np.dtype(dtype)
    stored = -(-len(data) // PER_BYTE) if packed else len(data)
    if stored == 0:
        f.create_dataset(name, data=np.zeros(0, dtype=dtype))
        return crc
    dataset = f.create_dataset(name, shape=(stored,), dtype=dtype, chunks=(min(CHUNK, stored),),
                               compression=COMPRESSION, compression_opts=COMPRESSION_LEVEL,
                               shuffle=dtype.itemsize > 1)
    direct = DIRECT_CHUNKS and stored > CHUNK
    for start in range(0, len(data), SLICE):
        part = np.asarray(data[start:start + SLICE])
        out = pack_wdl(part) if packed else part.astype(dtype, copy=False)
        at = start // PER_BYTE if packed else start
        if direct:
            _write_chunks(dataset, out, at)
        else:
            dataset[at:at + len(out)] = out
        crc = zlib.crc32(np.ascontiguousarray(out).view(np.uint8), crc)
    return crc


def _write_chunks(dataset: h5py.Dataset, items: np.ndarray, at: int) -> None:
    """Compress `items` (a whole number of chunks, or the dataset's tail) and store them at `at`."""
    starts = range(0, len(items), CHUNK)
    blobs = _pool().map(lambda s: compress_chunk(items[s:s + CHUNK]), starts)
    for start, blob in zip(starts, blobs):
        dataset.id.write_direct_chunk((at + start,), blob)


#: Compress chunks in this process (False: leave it to HDF5's filters, one chunk at a time).
DIRECT_CHUNKS = True
#: (process id, thread pool) of the pool compressing chunks.
_POOL: dict = {}


def _pool():
    """This process's thread pool compressing chunks (created on first use).

    Keyed by process id: a worker forked from a process that had a pool gets
    its own (the parent's threads do not exist in the child).
    """
    pid = os.getpid()
    if pid not in _POOL:
        from concurrent.futures import ThreadPoolExecutor
        _POOL.clear()
        _POOL[pid] = ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                                        thread_name_prefix="egtb-compress")
    return _POOL[pid]


def compress_chunk(items: np.ndarray) -> bytes:
    """The stored bytes of one chunk of a dataset of several chunks: as HDF5's filters make them.

    A partial last chunk is padded with zeros to :data:`CHUNK` items (HDF5
    stores whole chunks); multi-byte items are shuffled (all first bytes, then
    all second bytes...), then deflated at :data:`COMPRESSION_LEVEL`.

    >>> import zlib
    >>> zlib.decompress(compress_chunk(np.arange(3, dtype="<u2")))[:3] == bytes([0, 1, 2])
    True
    """
    if len(items) < CHUNK:
        items = np.concatenate([items, np.zeros(CHUNK - len(items), dtype=items.dtype)])
    raw = np.ascontiguousarray(items).view(np.uint8)
    if items.itemsize > 1:
        raw = raw.reshape(-1, items.itemsize).T
    return zlib.compress(np.ascontiguousarray(raw).tobytes(), COMPRESSION_LEVEL)


def _base_attrs(material: Material, count: int, crc: int, *, dtw: bool = True) -> dict:
    return {
        "format": "egtb-draughts-english",
        "format_version": FORMAT_VERSION if dtw else FORMAT_VERSION_NO_DTW,
        "builder_version": BUILDER_VERSION,
        "material": material.name,
        "material_counts": np.array([material.black_men, material.black_kings,
                                     material.white_men, material.white_kings], dtype=np.int64),
        "positions": count,
        "dtw_rules": DTW_RULES,
        "checksum_crc32": crc,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def open_table(path: os.PathLike | str, *, check: bool = True,
               rules: bool | tuple[str, ...] = True, packed: bool = False) -> TableData:
    """Read a table file, verifying its format and (with ``check``) its checksums.

    ``rules``: True reads every rule layer, False none, a tuple of preset names
    just those (a name the file lacks raises :class:`TableError`). With
    ``packed`` the ``wdl`` array is left as stored, four values per byte
    (:func:`unpack_into` unpacks it where it is needed). Raises
    :class:`TableError` naming the file when it is missing, truncated, foreign or
    corrupted.
    """
    path = Path(path)
    with _opened(path) as (f, attrs):
        stored = f["wld"][...]
        dtw = f["dtw"][...] if _has_dtw(f, attrs) else None
        layers = _read_layers(path, f, rules)
    count = int(attrs["positions"])
    if len(stored) != -(-count // PER_BYTE) or (dtw is not None and len(dtw) != count):
        raise TableError(f"{path}: dataset sizes do not match {count} positions")
    if check and checksum(stored, dtw) != int(attrs["checksum_crc32"]):
        raise TableError(f"{path}: checksum mismatch (file corrupted)")
    for preset, layer in layers.items():
        if len(layer.category) != count or len(layer.dtz) != count:
            raise TableError(f"{path}: rule layer {preset} sizes do not match {count} positions")
        if check and layer_checksum(layer.category, layer.dtz) != int(
                layer.attrs["checksum_crc32"]):
            raise TableError(f"{path}: rule layer {preset} checksum mismatch (file corrupted)")
    material = Material.parse(str(attrs["material"]))
    return TableData(material, stored if packed else unpack_wdl(stored, count), dtw, attrs, layers)


def read_categories(path: os.PathLike | str, preset: str) -> np.ndarray:
    """The categories (int8) of one rule layer of a table file, its checksum checked; its DTZ is
    read a slice at a time for the checksum only (the compact writer needs no more)."""
    path = Path(path)
    with _layer_file(path, preset) as (attrs, group):
        category = group["category"][...]
        if len(category) != int(attrs["positions"]):
            raise TableError(f"{path}: rule layer {preset} sizes do not match "
                             f"{attrs['positions']} positions")
        crc = zlib.crc32(np.ascontiguousarray(category).view(np.uint8))
        if _continue_crc(group["dtz"], crc) != int(group.attrs["checksum_crc32"]):
            raise TableError(f"{path}: rule layer {preset} checksum mismatch (file corrupted)")
    return category


def read_rule_layer(path: os.PathLike | str, preset: str) -> RuleLayer:
    """One rule layer of a table file (categories and DTZ), its checksum checked, without the
    file's values (a DTZ file's writer needs no more)."""
    path = Path(path)
    with _layer_file(path, preset) as (attrs, group):
        layer = RuleLayer(group["category"][...], group["dtz"][...], dict(group.attrs))
    count = int(attrs["positions"])
    if len(layer.category) != count or len(layer.dtz) != count:
        raise TableError(f"{path}: rule layer {preset} sizes do not match {count} positions")
    if layer_checksum(layer.category, layer.dtz) != int(layer.attrs["checksum_crc32"]):
        raise TableError(f"{path}: rule layer {preset} checksum mismatch (file corrupted)")
    return layer


@contextmanager
def _opened(path: Path):
    """(An open table file, its attributes), its header checked: TableError naming the file when
    it does not read (h5py's OSError for a missing, truncated or foreign file, a missing
    dataset's KeyError, a damaged chunk's ValueError or RuntimeError), here or in the caller's
    block. The one place the readers below open a file."""
    try:
        with h5py.File(path, "r") as f:
            attrs = dict(f.attrs)
            _check_header(path, attrs)
            yield f, attrs
    except TableError:
        raise
    except (OSError, KeyError, ValueError, RuntimeError) as exc:
        raise TableError(f"{path}: unreadable table file ({exc})") from exc


@contextmanager
def _layer_file(path: Path, preset: str):
    """(The file's attributes, the group of one rule layer) of an open table file, its header
    checked; TableError naming the file when it does not read."""
    with _opened(path) as (f, attrs):
        yield attrs, _layer_group(path, f, preset)


def _has_dtw(f: h5py.File, attrs: dict) -> bool:
    """The file stores DTW (every version but 3); a version-3 file holding one is foreign."""
    if int(attrs["format_version"]) != FORMAT_VERSION_NO_DTW:
        return True
    if "dtw" in f:
        raise TableError(f"{f.filename}: format version 3 with a dtw dataset")
    return False


def has_dtw(path: os.PathLike | str) -> bool:
    """Whether a table file stores DTW (without reading data)."""
    return int(read_attrs(path)["format_version"]) != FORMAT_VERSION_NO_DTW


def _read_layers(path: Path, f: h5py.File, rules: bool | tuple[str, ...]) -> dict:
    present = sorted(f[RULES_GROUP].keys()) if RULES_GROUP in f else []
    wanted = present if rules is True else (list(rules) if rules else [])
    layers = {}
    for preset in wanted:
        if preset not in present:
            raise TableError(f"{path}: no rule layer {preset!r} (has {present or 'none'})")
        group = f[RULES_GROUP][preset]
        layers[preset] = RuleLayer(group["category"][...], group["dtz"][...], dict(group.attrs))
    return layers


def read_slices(path: os.PathLike | str, *, rules: tuple[str, ...] = (), step: int = SLICE,
                check: bool = True):
    """Yield (start, wdl, dtw, categories, dtz) per slice of `step` positions of a table file.

    For reading tables too big to hold whole (:mod:`egtb.formats.scratch`): ``wdl``
    unpacked (``dtw`` None when the file stores none), ``categories`` and ``dtz``
    with one row per preset of `rules`. With
    `check`, the checksums are checked after the last slice (a second pass; a
    mismatch raises :class:`TableError` naming the file before the generator ends).
    """
    path = Path(path)
    if step % PER_BYTE:
        raise InvalidArgumentError(f"slice step {step} is not a multiple of {PER_BYTE}")
    with _opened(path) as (f, attrs):
        count = int(attrs["positions"])
        groups = [_layer_group(path, f, name) for name in rules]
        stored_dtw = f["dtw"] if _has_dtw(f, attrs) else None
        for start in range(0, count, step):
            stop = min(count, start + step)
            wdl = unpack_wdl(f["wld"][start // PER_BYTE:-(-stop // PER_BYTE)], stop - start)
            cats = np.zeros((len(rules), stop - start), dtype=np.int8)
            dtz = np.zeros((len(rules), stop - start), dtype=np.uint16)
            for row, group in enumerate(groups):
                cats[row] = group["category"][start:stop]
                dtz[row] = group["dtz"][start:stop]
            yield start, wdl, None if stored_dtw is None else stored_dtw[start:stop], cats, dtz
        if check:
            _check_datasets(path, f, attrs, rules)


def _layer_group(path: Path, f: h5py.File, preset: str) -> h5py.Group:
    if RULES_GROUP not in f or preset not in f[RULES_GROUP]:
        raise TableError(f"{path}: no rule layer {preset!r}")
    return f[RULES_GROUP][preset]


def _continue_crc(dataset, crc: int) -> int:
    """CRC-32 of a dataset's stored bytes read in slices, continuing `crc`."""
    for start in range(0, len(dataset), SLICE):
        crc = zlib.crc32(np.ascontiguousarray(dataset[start:start + SLICE]).view(np.uint8), crc)
    return crc


def _check_datasets(path: Path, f: h5py.File, attrs: dict, presets) -> None:
    """Sizes and checksums of the values and of the `presets` layers, read in slices."""
    count = int(attrs["positions"])
    dtw = f["dtw"] if _has_dtw(f, attrs) else None
    if len(f["wld"]) != -(-count // PER_BYTE) or (dtw is not None and len(dtw) != count):
        raise TableError(f"{path}: dataset sizes do not match {count} positions")
    for preset in presets:
        group = _layer_group(path, f, preset)
        if len(group["category"]) != count or len(group["dtz"]) != count:
            raise TableError(f"{path}: rule layer {preset} sizes do not match {count} positions")
    crc, layers = _stored_crcs(path, f, attrs, presets)
    if crc != int(attrs["checksum_crc32"]):
        raise TableError(f"{path}: checksum mismatch (file corrupted)")
    for preset, layer_crc in layers.items():
        if layer_crc != int(f[RULES_GROUP][preset].attrs["checksum_crc32"]):
            raise TableError(f"{path}: rule layer {preset} checksum mismatch (file corrupted)")


def _stored_crcs(path: Path, f: h5py.File, attrs: dict, presets) -> tuple[int, dict[str, int]]:
    """CRC-32 of the stored values (then DTW), and of each of the `presets` layers (categories
    then DTZ), read a slice at a time."""
    crc = _continue_crc(f["wld"], 0)
    if _has_dtw(f, attrs):
        crc = _continue_crc(f["dtw"], crc)
    layers = {}
    for preset in presets:
        group = _layer_group(path, f, preset)
        layers[preset] = _continue_crc(group["dtz"], _continue_crc(group["category"], 0))
    return crc, layers


def stored_checksums(path: os.PathLike | str, *, rules: tuple[str, ...] = ()) -> tuple[int, dict[str, int]]:
    """CRC-32 of a file's values (and DTW), and of each rule layer of `rules` by preset,
    recomputed from the stored bytes a slice at a time (the attributes are not consulted)."""
    path = Path(path)
    with _opened(path) as (f, attrs):
        return _stored_crcs(path, f, attrs, rules)


def check_table(path: os.PathLike | str) -> list[str]:
    """Check a table file's checksums reading it in slices; return its rule layers' names.

    Raises :class:`TableError` naming the file when it is broken. Unlike
    :func:`open_table` it never holds more than a slice in memory.
    """
    path = Path(path)
    with _opened(path) as (f, attrs):
        presets = sorted(f[RULES_GROUP].keys()) if RULES_GROUP in f else []
        _check_datasets(path, f, attrs, presets)
    return presets


class JsonRecord:
    """A small record kept as ``<directory>/<NAME>`` (JSON), written atomically; unreadable or
    absent, it starts empty. :class:`CheckedFiles` and the verifier's record are two."""

    NAME = "record.json"

    def __init__(self, directory: os.PathLike | str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / self.NAME
        try:
            self.known: dict = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.known = {}

    def save(self) -> None:
        """Write the record atomically."""
        tmp = self.path.with_name(f"{self.NAME}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.known, sort_keys=True))
        os.replace(tmp, self.path)


class CheckedFiles(JsonRecord):
    """The table files of a directory whose checksums passed, by name, size and modification time.

    Kept in ``<directory>/checked.json`` so that a resumed build does not read
    every finished file again (a 7-piece directory holds gigabytes): a file
    recorded with the same size and modification time is only opened (its
    header and layer names); one rewritten since is checked in full again.

    >>> CheckedFiles("/nonexistent").known
    {}
    """

    NAME = "checked.json"

    def check(self, path: os.PathLike | str) -> list[str]:
        """:func:`check_table`, skipped for a file recorded unchanged; its rule layers' names."""
        path = Path(path)
        stamp = file_stamp(path)
        if self.known.get(path.name) == stamp:
            return rule_presets_in(path)
        presets = check_table(path)
        self.known[path.name] = stamp
        return presets

    def record(self, path: os.PathLike | str) -> None:
        """Note a file this build has just written (its checksums computed from the data)."""
        path = Path(path)
        self.known[path.name] = file_stamp(path)


def stored_bytes(path: os.PathLike | str) -> dict[str, int]:
    """Bytes each dataset of a table file takes on disk (compressed), without reading data:
    ``wld``, ``dtw`` (when stored) and ``rules/<preset>`` (category and DTZ together)."""
    with _opened(Path(path)) as (f, _):
        sizes = {name: f[name].id.get_storage_size() for name in ("wld", "dtw") if name in f}
        for preset, group in (f[RULES_GROUP].items() if RULES_GROUP in f else ()):
            sizes[f"{RULES_GROUP}/{preset}"] = sum(group[name].id.get_storage_size()
                                                   for name in ("category", "dtz"))
        return sizes


def rule_presets_in(path: os.PathLike | str) -> list[str]:
    """Names of the rule layers a table file holds (without reading them)."""
    return sorted(read_layer_attrs(path))


def read_layer_attrs(path: os.PathLike | str) -> dict[str, dict]:
    """Attributes of each rule layer of a table file, by preset, without reading data."""
    with _opened(Path(path)) as (f, _):
        if RULES_GROUP not in f:
            return {}
        return {name: dict(group.attrs) for name, group in f[RULES_GROUP].items()}


def _check_header(path: Path, attrs: dict) -> None:
    if attrs.get("format") != "egtb-draughts-english":
        raise TableError(f"{path}: not an English draughts table file")
    if int(attrs.get("format_version", -1)) not in READABLE_VERSIONS:
        raise TableError(f"{path}: format version {attrs.get('format_version')} "
                         f"is not one of {READABLE_VERSIONS}")


def read_attrs(path: os.PathLike | str) -> dict:
    """Attributes of a table file without reading its data."""
    with _opened(Path(path)) as (_, attrs):
        return attrs


def open_material(directory: os.PathLike | str, material: Material, *,
                  rules: bool | tuple[str, ...] = True, packed: bool = False) -> TableData:
    """The table of a material in a directory (see :func:`open_table`).

    Raises FileNotFoundError naming the material and the file when the table is
    absent, TableError when it is broken.

    >>> open_material("/nonexistent", Material.parse("1k-1k"))
    Traceback (most recent call last):
    ...
    FileNotFoundError: no table for 1k-1k: /nonexistent/1k-1k.h5 is missing
    """
    path = table_path(directory, material)
    if not path.exists():
        raise FileNotFoundError(f"no table for {material.name}: {path} is missing")
    return open_table(path, rules=rules, packed=packed)


def load_material(directory: os.PathLike | str, material: Material
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """(wdl unpacked uint8, dtw or None) of a material's table in a directory (see :func:`open_material`)."""
    data = open_material(directory, material, rules=False)
    return data.wdl, data.dtw


def stored_materials(directory: os.PathLike | str, *, suffix: str = SUFFIX) -> list[Material]:
    """Materials with a table file in a directory (read from the names), by piece count then name.

    The one directory listing of the package: the builder, the verifier, the
    statistics and the prober all ask it (``suffix=".wld"`` for compact files).

    >>> stored_materials("/nonexistent")
    []
    """
    found = []
    for path in Path(directory).glob(f"*{suffix}"):
        try:
            found.append(Material.parse(path.name[:-len(suffix)]))
        except ValueError:
            continue
    return sorted(found, key=lambda m: (m.pieces, m.name))


def bytes_on_disk(directory: os.PathLike | str) -> int:
    """Disk blocks (bytes) the files of a table directory take, its scratch directories included.

    >>> bytes_on_disk("/nonexistent")
    0
    """
    total = 0
    # Another worker may remove its scratch directory meanwhile: os.walk passes over a directory
    # gone before it is listed (rglob raised FileNotFoundError there, failing the pair that asked).
    for folder, _subfolders, names in os.walk(directory):
        for name in names:
            try:
                total += os.stat(os.path.join(folder, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


def remove_temporaries(directory: os.PathLike | str) -> list[Path]:
    """Delete leftover ``*.h5.<pid>.tmp`` files of an interrupted build; return them."""
    removed = sorted(Path(directory).glob(TMP_GLOB))
    for p in removed:
        p.unlink(missing_ok=True)
    return removed


# --- block reads (the prober reads a table a block at a time) ----------------

#: Positions of a block: one chunk of every unpacked dataset (four chunks make one of ``wld``).
BLOCK_POSITIONS = CHUNK


def read_block(f: h5py.File, name: str, block: int, count: int) -> np.ndarray:
    """Positions ``block * BLOCK_POSITIONS ..`` (fewer at the end) of dataset ``name`` of an
    open table file of ``count`` positions: value codes unpacked for ``"wld"``, the stored
    values for ``"dtw"`` and ``"rules/<preset>/category"`` or ``"/dtz"``.

    Reads (and inflates) one chunk; h5py's errors (a damaged chunk) are the caller's to name.

    >>> import tempfile
    >>> path = write_table(Path(tempfile.mkdtemp()) / "1k-1k.h5", Material.parse("1k-1k"),
    ...                    np.array([1, 2, 3] * 330 + [1, 2], dtype=np.uint8), None)
    >>> with h5py.File(path, "r") as f:
    ...     read_block(f, "wld", 0, 992)[:4].tolist()
    [1, 2, 3, 1]
    """
    start = block * BLOCK_POSITIONS
    stop = min(start + BLOCK_POSITIONS, count)
    if name == "wld":
        lo, hi = start // PER_BYTE, -(-stop // PER_BYTE)
        return unpack_wdl(_read_items(f["wld"], lo, hi), stop - start)
    return _read_items(f[name], start, stop)


def _read_items(dataset: h5py.Dataset, start: int, stop: int) -> np.ndarray:
    """Items ``start:stop`` of a dataset, all in one chunk: the chunk's stored bytes inflated
    here (zlib, un-shuffled) when it is one as :func:`compress_chunk` makes them, else through
    HDF5's own filters (h5py slicing)."""
    chunk = dataset.chunks[0] if dataset.chunks else 0
    if not (chunk and dataset.compression == COMPRESSION and start // chunk == (stop - 1) // chunk
            and not dataset.fletcher32 and not dataset.scaleoffset):
        return dataset[start:stop]
    first = start - start % chunk
    mask, blob = dataset.id.read_direct_chunk((first,))
    if mask:  # a filter was skipped for this chunk: let HDF5 read it
        return dataset[start:stop]
    try:
        raw = np.frombuffer(zlib.decompress(blob), dtype=np.uint8)
    except zlib.error as exc:
        raise InvalidDataError(f"the chunk at {first} of {dataset.name} does not inflate ({exc})") from exc
    itemsize = dataset.dtype.itemsize
    if dataset.shuffle and itemsize > 1:
        raw = raw.reshape(itemsize, -1).T
    return np.ascontiguousarray(raw).view(dataset.dtype).reshape(-1)[start - first:stop - first]


def open_blocks(path: os.PathLike | str) -> tuple[h5py.File, dict]:
    """A table file opened for :func:`read_block` (read-only; the caller closes it) and its
    attributes, the header checked (TableError naming the file)."""
    path = Path(path)
    try:
        f = h5py.File(path, "r")
        attrs = dict(f.attrs)
    except OSError as exc:
        raise TableError(f"{path}: unreadable table file ({exc})") from exc
    try:
        _check_header(path, attrs)
        _has_dtw(f, attrs)
    except BaseException:
        f.close()
        raise
    return f, attrs
