"""Pairs bigger than memory: values memory-mapped on a scratch directory, with checkpoints.

A pair planned on disk (:func:`egtb.builder.budget.plan_pair`) keeps the flat
value arrays of :class:`egtb.builder.dependency_load.FlatTables` (its own values and those
of the tables its exits reach) in files of a scratch directory
``<tables>/<pair>.pair.tmp/``, mapped into memory: the operating system keeps
in RAM the pages in use (the unit being solved and those its moves reach) and
writes the others back. The dependencies are copied in slice by slice
(:func:`egtb.formats.master.read_slices`), never held whole, their categories packed
three to a byte (:mod:`egtb.formats.packed`): all an exit reads of them.

Every few minutes the builder flushes the maps and records in
``checkpoint.json`` how many units (in solving order) are finished; a build
killed in the middle of a pair resumes from there (the units after the
checkpoint are solved again: a unit's values are all rewritten when it is
solved, and only finished units are ever read). The directory is removed once
the pair's files are written, or when the pair turns out complete.

>>> scratch_dir("/tables", "1m2k-2m2k").name
'1m2k-2m2k.pair.tmp'
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np

from egtb.formats import master
from egtb.formats.packed import pack_into, packed_size
from egtb.formats.values import UNSOLVED_CATEGORY
from egtb.positions.material import Material

#: Suffix of a pair's scratch directory.
SCRATCH_SUFFIX = ".pair.tmp"
CHECKPOINT_NAME = "checkpoint.json"
#: Prefix of the marks of a pair's dependency parts put into its scratch files (``loaded.<part>``).
LOADED_PREFIX = "loaded."
#: Prefix of the CPU seconds each task of a split pair spent on it, in any run (``cpu.<task>``).
CPU_PREFIX = "cpu."
#: The five flat arrays: file name, element type, whether one row per rule layer, and the
#: positions it covers: "values" (all, when DTW is solved, else none), "pair" (the pair's own
#: positions, which come first) or "dependencies" (the others, packed three to a byte).
ARRAYS = (("wld", np.uint8, False, "values"), ("dtw", np.uint16, False, "values"),
          ("rcat", np.int8, True, "pair"), ("rdtz", np.uint16, True, "pair"),
          ("rdep", np.uint8, True, "dependencies"))


def dtz_type(presets) -> type:
    """Element type of a pair's DTZ array for these rule layers: one byte when every layer's
    counter is zeroed by any man move (``wcdf``), since every exit from a unit then zeroes it
    and no DTZ is read while the pair is solved, only written (the solver saturates it at
    :data:`egtb.formats.values.DTZ_SATURATED`, which the compact ``.dtz`` file could not hold
    either); else two bytes (a quiet man move's exit reads its target's DTZ).

    >>> from egtb.builder.rule_layer import PRESETS
    >>> dtz_type((PRESETS["wcdf"],)).__name__, dtz_type(tuple(PRESETS.values())).__name__
    ('uint8', 'uint16')
    """
    return np.uint8 if presets and all(p.man_move_resets for p in presets) else np.uint16


def array_types(presets) -> list[type]:
    """Element types of the flat arrays (wdl, dtw, rcat, rdtz, rdep) for these rule layers."""
    return [dtz_type(presets) if name == "rdtz" else dtype for name, dtype, _, _ in ARRAYS]


def scratch_dir(directory: os.PathLike | str, key: str) -> Path:
    """The scratch directory of a pair in a table directory."""
    return Path(directory) / f"{key}{SCRATCH_SUFFIX}"


def array_shapes(total: int, own: int, *, dtw: bool, layers: int) -> list[tuple]:
    """Shapes of the flat arrays (wdl, dtw, rcat, rdtz, rdep) for `total` positions, `own` of the
    pair.

    >>> array_shapes(10, 4, dtw=False, layers=1)
    [(0,), (0,), (1, 4), (1, 4), (1, 2)]
    """
    counts = {"values": total if dtw else 0, "pair": own, "dependencies": packed_size(total - own)}
    return [(layers, counts[cover]) if rows else (counts[cover],)
            for _, _, rows, cover in ARRAYS]


def scratch_bytes(total: int, own: int, *, dtw: bool, presets: tuple) -> int:
    """Bytes of a pair's scratch files (:func:`map_arrays`) for these rule layers.

    >>> from egtb.builder.rule_layer import PRESETS
    >>> scratch_bytes(10, 4, dtw=False, presets=(PRESETS["wcdf"],))
    10
    """
    shapes = array_shapes(total, own, dtw=dtw, layers=len(presets))
    return sum(int(np.prod(shape)) * np.dtype(dtype).itemsize
               for shape, dtype in zip(shapes, array_types(presets)))


def new_arrays(total: int, own: int, *, contents) -> list[np.ndarray]:
    """The flat arrays (wdl, dtw, rcat, rdtz, rdep) in memory, laid out as :func:`map_arrays` maps
    them (rcat unsolved).

    >>> from egtb.builder.contents import contents_for
    >>> [a.shape for a in new_arrays(10, 4, contents=contents_for(7))]
    [(0,), (0,), (1, 4), (1, 4), (1, 2)]
    """
    shapes = array_shapes(total, own, dtw=contents.dtw, layers=len(contents.presets))
    return [np.full(shape, UNSOLVED_CATEGORY, dtype=dtype) if name == "rcat"
            else np.zeros(shape, dtype=dtype)
            for (name, _, _, _), dtype, shape in zip(ARRAYS, array_types(contents.presets), shapes)]


def map_arrays(path: Path, total: int, own: int, *, contents, create: bool) -> list[np.ndarray]:
    """The flat arrays (wdl, dtw, rcat, rdtz, rdep) mapped on files in `path`: `total` positions,
    `own` of them the pair's, holding what `contents` (:class:`egtb.builder.contents.Contents`)
    says is solved.

    With `create` the files are made anew (wdl zero, rcat unsolved, so that
    nothing solved is assumed); else the existing ones are opened for update.
    Returned as plain arrays over the maps (numba takes them as they are); an
    array of no elements is a plain empty array.
    """
    path.mkdir(parents=True, exist_ok=True)
    if create:  # the parts an earlier run put in are gone with its files, and its work
        for mark in [*path.glob(f"{LOADED_PREFIX}*"), *path.glob(f"{CPU_PREFIX}*")]:
            mark.unlink()
    arrays = []
    shapes = array_shapes(total, own, dtw=contents.dtw, layers=len(contents.presets))
    for (name, _, _, _), dtype, shape in zip(ARRAYS, array_types(contents.presets), shapes):
        if int(np.prod(shape)) == 0:
            arrays.append(np.zeros(shape, dtype=dtype))
            continue
        mapped = np.memmap(path / f"{name}.bin", dtype=dtype, mode="w+" if create else "r+",
                           shape=shape)
        if create and name == "rcat":
            fill_slices(mapped, UNSOLVED_CATEGORY)
        arrays.append(np.asarray(mapped))  # a plain array over the map (its base)
    return arrays


def flat_starts(own: list[int], dependencies: list[int]) -> tuple[list[int], int]:
    """Where each material starts in a pair's flat arrays, and their length: the pair's materials
    (`own`: their positions) one after the other, then its dependencies', each from a byte of the
    packed categories of its own (a multiple of 3 past the pair's positions), so that no two
    dependencies share a byte and several processes may put them in at once.

    >>> flat_starts([10, 10], [4, 5])
    ([0, 10, 20, 26], 31)
    """
    starts, start = [], 0
    for count in own:
        starts.append(start)
        start += count
    first = start
    for count in dependencies:
        start = first + -(-(start - first) // 3) * 3
        starts.append(start)
        start += count
    return starts, start


def mark_loaded(path: Path, name: str) -> None:
    """Mark in a pair's scratch directory `path` that the dependency part `name` is in its files
    (flushed already): an empty file, made atomically."""
    _replace(path / f"{LOADED_PREFIX}{name}", "")


def record_cpu(path: Path, name: str, seconds: float) -> None:
    """Record in a pair's scratch directory `path` that the work `name` (a task's in one run, or a
    run's so far) spent `seconds` of CPU on the pair: ``cpu.<name>``, replaced atomically."""
    _replace(path / f"{CPU_PREFIX}{name}", f"{seconds:.6f}")


def _replace(target: Path, text: str) -> None:
    """Write `text` to `target` atomically: a hidden temporary of this process's, then renamed."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, target)


def run_name(what: str) -> str:
    """A name of `what` for :func:`record_cpu` that no other run or process gives.

    >>> run_name("units-0").startswith("units-0.")
    True
    """
    return f"{what}.{os.getpid()}.{time.time_ns()}"


def recorded_cpu(path: Path) -> float:
    """CPU seconds the tasks of a pair recorded in its scratch directory, over all its runs.

    >>> recorded_cpu(Path("/nonexistent"))
    0.0
    """
    return float(sum(float(record.read_text()) for record in path.glob(f"{CPU_PREFIX}*")))


def loaded_marks(path: Path) -> set[str]:
    """The dependency parts marked as put into a pair's scratch files (:func:`mark_loaded`).

    >>> loaded_marks(Path("/nonexistent"))
    set()
    """
    return {mark.name[len(LOADED_PREFIX):] for mark in path.glob(f"{LOADED_PREFIX}*")}


def fill_slices(array: np.ndarray, value: int) -> None:
    """Set every element of a (mapped) array, a slice of :data:`master.SLICE` at a time, each
    slice's pages dropped from resident memory once written (:func:`release_range`)."""
    flat = array.reshape(-1)
    for start in range(0, len(flat), master.SLICE):
        flat[start:start + master.SLICE] = value
        release_range(flat, start, start + master.SLICE)  # written back in time, never kept resident


def copy_table(directory: Path, material: Material, start: int, arrays: list[np.ndarray],
               presets: tuple[str, ...]) -> None:
    """Copy a finished table into the flat arrays at flat index `start` (after the pair's own
    positions), slice by slice: its values and DTW, and its categories packed.

    The checksums are not checked again: the build checked every file when it
    started (:func:`egtb.builder.plan.find_complete`).
    """
    wdl, dtw, rcat, _, rdep = arrays  # a dependency's DTZ is never read (its exits zero the counter)
    at_dependency = start - rcat.shape[1]
    path = master.table_path(directory, material)
    if not path.exists():
        raise FileNotFoundError(f"no table for {material.name}: {path} is missing")
    for at, values, distances, cats, _ in master.read_slices(path, rules=presets, check=False):
        stop = start + at + len(values)
        if len(wdl):
            if distances is None:
                raise master.TableError(f"{path} stores no DTW, which this build needs")
            wdl[start + at:stop] = values
            dtw[start + at:stop] = distances
        for row in range(len(cats)):
            pack_into(rdep[row], at_dependency + at, cats[row])


def flush(arrays: list[np.ndarray]) -> None:
    """Write the mapped arrays' dirty pages back to their files."""
    for array in arrays:
        if isinstance(array.base, np.memmap):
            array.base.flush()


def read_checkpoint(path: Path, layout: dict) -> int | None:
    """Units finished in a scratch directory for this `layout`, or None (no usable checkpoint)."""
    try:
        record = json.loads((path / CHECKPOINT_NAME).read_text())
    except (OSError, ValueError):
        return None
    if record.get("layout") != layout:
        return None
    return int(record["units"])


def write_checkpoint(path: Path, layout: dict, units: int, arrays: list[np.ndarray]) -> None:
    """Flush the arrays, then record atomically that `units` units are finished.

    Every array's pages then leave this process's resident memory (they stay in the page
    cache, and a later access maps them back): a unit's DTZ is written once and never read
    while the pair is solved, and of the categories the next units read only a few pages, so
    that a pair bigger than memory keeps its resident set to what it touched since the last
    checkpoint.
    """
    flush(arrays)
    record_units(path, layout, units)
    for array in arrays:
        release(array)


def record_units(path: Path, layout: dict, units: int) -> None:
    """Record atomically that `units` units are finished (their values flushed already).

    Each writer has its own temporary name: tasks on several workers may record
    the same count at once (:mod:`egtb.builder.split`).
    """
    tmp = path / f"{CHECKPOINT_NAME}.{os.getpid()}.{threading.get_ident()}.tmp"
    tmp.write_text(json.dumps({"layout": layout, "units": units}))
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path / CHECKPOINT_NAME)


def release(array: np.ndarray) -> None:
    """Drop a mapped array's pages from this process's resident memory.

    The mapping is shared: written pages stay in the page cache and reach the
    file (a checkpoint flushes them first); a later access maps them back.
    """
    mapped = _memmap_of(array)
    if mapped is not None:
        mapped._mmap.madvise(mmap.MADV_DONTNEED)


def release_range(array: np.ndarray, start: int, stop: int) -> None:
    """Drop the pages wholly inside elements start..stop of a row of a mapped array (1-d,
    contiguous) from this process's resident memory, as :func:`release` does the whole map's;
    nothing for an array in memory.
    """
    mapped = _memmap_of(array)
    if mapped is None or array.ndim != 1 or array.strides[0] != array.itemsize:
        return
    base = mapped.ctypes.data - mapped.offset % mmap.ALLOCATIONGRANULARITY  # where the map starts
    first = array.ctypes.data + start * array.itemsize - base
    last = array.ctypes.data + min(stop, len(array)) * array.itemsize - base
    first = -(-first // mmap.PAGESIZE) * mmap.PAGESIZE
    last = last // mmap.PAGESIZE * mmap.PAGESIZE
    if last > first:
        mapped._mmap.madvise(mmap.MADV_DONTNEED, first, last - first)


def _memmap_of(array: np.ndarray) -> np.memmap | None:
    """The shared memory map an array is a view of (None: in memory, or a private map, whose
    dropped pages would lose what was written to them)."""
    while array is not None and not isinstance(array, np.memmap):
        array = getattr(array, "base", None)
    if (array is None or getattr(array, "_mmap", None) is None or array.mode not in ("r+", "w+")
            or not hasattr(mmap, "MADV_DONTNEED")):
        return None
    return array


class ReadOnce:
    """A row of a mapped array read a range at a time, whole: each range is copied out and its
    pages dropped from this process's resident memory (:func:`release_range`), so that a pass
    over a material bigger than memory (the compact writer's) keeps none of it resident.

    >>> row = ReadOnce(np.arange(5, dtype=np.int8))
    >>> len(row), row[1:3].tolist(), row.dtype.name
    (5, [1, 2], 'int8')
    """

    def __init__(self, array: np.ndarray) -> None:
        self._array = array
        self.dtype = array.dtype
        self.shape = array.shape

    def __len__(self) -> int:
        return len(self._array)

    def __getitem__(self, part: slice) -> np.ndarray:
        start, stop, step = part.indices(len(self._array))
        if step != 1:
            raise IndexError("a mapped row is read by ranges")
        out = np.array(self._array[start:stop])
        release_range(self._array, start, stop)
        return out


def remove_scratch(path: Path) -> None:
    """Delete a pair's scratch directory (after its files are written)."""
    shutil.rmtree(path, ignore_errors=True)


def bytes_in(directory: os.PathLike | str, keys: list[str]) -> int:
    """Disk blocks (bytes) the scratch directories of these pairs take now (sparse files count
    what they hold): space a resumed build reuses.

    >>> bytes_in("/nonexistent", ["1m2k-2m2k"])
    0
    """
    return sum(path.stat().st_blocks * 512 for key in keys
               for path in scratch_dir(directory, key).glob("*") if path.is_file())


def scratch_dirs(directory: os.PathLike | str) -> list[Path]:
    """Scratch directories left in a table directory (one per pair being built on disk)."""
    return sorted(Path(directory).glob(f"*{SCRATCH_SUFFIX}"))
