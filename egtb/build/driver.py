"""Table builder: dependency graph of material pairs, retrograde solving, parallel driver.

Phases, in the order they run for one material pair {M, mirror(M)}:

1. :func:`plan_pairs` - every pair up to N pieces and the pairs it depends on
   (captures lead to fewer pieces, crownings to one man fewer);
2. :func:`load_dependencies` - the finished tables the pair's exits look up;
3. :func:`solve_pair` - the numba retrograde over the pair's units
   (:mod:`egtb.build.solve`), in decreasing potential of the men configuration,
   solving the rule layers (:mod:`egtb.build.rule_layer`) in the same pass; the
   kernel keeps a worker's progress counters (positions, units) up to date in
   shared memory as it goes, even inside a unit;
4. :func:`summarise` - counts and max DTW (and per rule layer its category
   counts and max DTZ);
5. :func:`write_pair` - one HDF5 file per material (:mod:`egtb.formats.master`).

:func:`build` runs the pairs in a process pool as their dependencies complete,
skipping materials whose files are already complete. While it waits for them
it reads the workers' counters about twice a second to move the positions bar
(with its ETA) and the units count.

>>> [str(m) for m in plan_pairs(2)[0].materials]
['1k-1k']
"""

from __future__ import annotations

import ctypes
import logging
import os
import resource
import shutil
import signal
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from numba import njit

from egtb.errors import MissingTableError, SolverError, TableError
from egtb.build import budget, rule_layer, solve, solve_regen
from egtb.build.contents import AUTO, Contents, contents_for
from egtb.formats import master, scratch
from egtb.formats.cache import TableCache
from egtb.formats.values import DRAW, LOSS, UNKNOWN, WIN
from egtb.positions.index import NUM_CODES, code_of_material, global_unrank, slice_unit_size
from egtb.positions.material import Material, all_materials, count_positions
from egtb.rules.notation import Placement, format_fen

log = logging.getLogger("egtb.build.driver")

#: Rule presets a build may be asked for (one rule layer each; DTW ignores the rule).
RULE_PRESETS = tuple(rule_layer.PRESETS)
#: Rule layers built by default: all of them up to 6 pieces, wcdf from 7 (:mod:`egtb.build.contents`).
DEFAULT_RULES = AUTO
#: Bytes of loaded dependency tables a worker keeps between pairs, at most
#: (a build with little memory keeps less: :func:`egtb.build.budget.cache_budget`).
CACHE_BYTES = 1 << 30

#: Seconds between two checkpoints of a pair solved on disk.
CHECKPOINT_SECONDS = 300.0
#: Positions solved per kernel call of a pair on disk (between two looks at the clock).
CHECKPOINT_POSITIONS = 1 << 24
LOG_NAME = "build.log"


@dataclass(frozen=True)
class Pair:
    """A material and its mirror (one material when symmetric), solved together."""

    materials: tuple[Material, ...]
    """M (the smaller of the two) and mirror(M), or just M when symmetric."""
    depends: frozenset = field(default_factory=frozenset)
    """Keys (names of the first material) of the pairs this one needs."""

    @property
    def key(self) -> str:
        """Name of the first material, identifying the pair."""
        return self.materials[0].name

    @property
    def positions(self) -> int:
        """Positions of all materials of the pair."""
        return sum(count_positions(m) for m in self.materials)


def pair_of(material: Material) -> tuple[Material, ...]:
    """The materials of a pair, smaller first.

    >>> [m.name for m in pair_of(Material.parse("1k-1m"))]
    ['1k-1m', '1m-1k']
    """
    mirrored = material.mirrored()
    return (material,) if mirrored == material else tuple(sorted((material, mirrored)))


def successor_materials(material: Material) -> set[Material]:
    """Materials (normalised, both colours present) Black's moves can lead to outside the pair.

    >>> sorted(m.name for m in successor_materials(Material.parse("1m1k-1k")))
    ['1k-2k']
    """
    out = set()
    bm, bk, wm, wk = material.black_men, material.black_kings, material.white_men, \
        material.white_kings
    movers = [(bm, bk)] + ([(bm - 1, bk + 1)] if bm else [])
    for nbm, nbk in movers:
        for nwm in range(wm + 1):
            for nwk in range(wk + 1):
                if nwm + nwk == 0 or (nbm, nbk, nwm, nwk) == (bm, bk, wm, wk):
                    continue
                out.add(Material(nwm, nwk, nbm, nbk))
    return out - set(pair_of(material))


def plan_pairs(max_pieces: int, *, min_pieces: int = 2) -> list[Pair]:
    """Every pair with min..max pieces with its dependencies, in a valid solving order.

    >>> [p.key for p in plan_pairs(2)]
    ['1k-1k', '1k-1m', '1m-1m']
    """
    keys = {}
    for material in all_materials(max_pieces, min_pieces=2):
        keys.setdefault(pair_of(material)[0].name, pair_of(material))
    pairs = []
    for key, materials in keys.items():
        if materials[0].pieces < min_pieces:
            continue
        deps = {pair_of(s)[0].name for m in materials for s in successor_materials(m)}
        pairs.append(Pair(materials, frozenset(deps)))
    return sorted(pairs, key=lambda p: (p.materials[0].pieces, p.materials[0].men, p.key))


# ------------------------------------------------------------------ one pair

#: Tables this process has read for solving (a worker solves many pairs that share dependencies).
_CACHE = TableCache(max_bytes=CACHE_BYTES)


def load_table_cached(directory: Path, material: Material, contents: Contents
                      ) -> tuple[np.ndarray | None, np.ndarray | None, tuple]:
    """(wld packed four a byte, dtw, rule categories) of a finished table, kept in the
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
        return (data.wld if contents.dtw else None, data.dtw if contents.dtw else None,
                tuple(data.rules[name].category for name in contents.names))
    return _CACHE.get((str(directory), material, contents), master.table_path(directory, material),
                      read)


@dataclass
class FlatTables:
    """Tables concatenated for the kernels: offsets by material code, values, DTW, rule layers.

    The pair being solved comes first, then the tables its exits reach. A
    position costs 3 bytes of values and DTW (none without ``contents.dtw``) and
    1 byte per rule layer; a position of the pair 2 more per layer (its DTZ).
    """

    offsets: np.ndarray
    """Where each material starts (by :func:`egtb.positions.index.code_of_material`), or -1."""
    wld: np.ndarray
    """Value codes (empty without DTW: the values are then the first layer's signs)."""
    dtw: np.ndarray
    """Rule-free distances (empty without DTW)."""
    contents: Contents
    """What is solved: DTW and the rule layers (:mod:`egtb.build.contents`)."""
    rcat: np.ndarray
    """Category per layer (row) and position (UNSOLVED_CATEGORY until solved)."""
    rdtz: np.ndarray
    """DTZ per layer (row) and position of the pair (the first positions)."""

    @property
    def presets(self) -> tuple:
        """The rule layers solved (:class:`egtb.build.rule_layer.RulePreset`)."""
        return self.contents.presets

    def slice_of(self, material: Material) -> slice:
        """The positions of a loaded material in the flat arrays."""
        start = int(self.offsets[code_of_material(material)])
        return slice(start, start + count_positions(material))


def load_dependencies(directory: Path, solved: list[Material],
                      fresh: tuple[Material, ...], contents: Contents, *,
                      arrays: list[np.ndarray] | None = None, fill: bool = True) -> FlatTables:
    """Flat arrays with room for the `fresh` tables (the pair, first) and the `solved` ones
    (read from disk).

    `contents`: the tables to load and solve (:class:`~egtb.build.contents.Contents`).
    `arrays`: the (wld, dtw, rcat, rdtz) arrays to use (memory maps of a pair
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
    tables = FlatTables(offsets, *arrays[:2], contents, *arrays[2:])
    for material in solved if fill else ():
        part = tables.slice_of(material)
        if isinstance(arrays[2].base, np.memmap) or budget.values_bytes(
                count_positions(material), contents) > _CACHE.max_bytes:
            scratch.copy_table(directory, material, part.start, arrays, contents.names)
            continue
        packed, dtw, categories = load_table_cached(directory, material, contents)
        if contents.dtw:
            master.unpack_into(packed, tables.wld[part])
            tables.dtw[part] = dtw
        for row in range(len(categories)):
            tables.rcat[row, part] = categories[row]
    return tables


def solve_pair(materials: tuple[Material, ...], tables: FlatTables,
               progress: np.ndarray | None = None, *, per_pass: int = 0,
               configs: np.ndarray | None = None) -> int:
    """Solve every unit of a pair into `tables`; return the number of units.

    `progress` (int64 counters, positions then units, see :func:`egtb.build.solve.solve_units`)
    is raised by the pair's positions and units, in part while the kernel runs.
    `per_pass`: 0 solves with edge lists (:func:`egtb.build.solve.solve_units`);
    n > 0 with the few-bytes-per-node kernel for big units
    (:mod:`egtb.build.solve_regen`), n tables per move generation pass.
    `configs`: the units to solve (default all, see :func:`egtb.build.solve.order_units`).
    """
    if progress is None:
        progress = np.zeros(solve.PROGRESS_SIZE, dtype=np.int64)
    first, last = materials[0], materials[-1]
    counts = np.array([[m.black_men, m.black_kings, m.white_men, m.white_kings]
                       for m in (first, last)], dtype=np.int64)
    if configs is None:
        configs = unit_order(materials)
    halves = 1 if (len(materials) == 1 and first.men == 0) else 2
    if per_pass:
        work = solve_regen.CompactScratch(halves * slice_unit_size(first),
                                          min(per_pass, tables.contents.tables))
        kernel = solve_regen.solve_units_compact
    else:
        work = solve.Scratch(slice_unit_size(first), halves=halves,
                             kings=(first.black_kings, first.white_kings),
                             tables=tables.contents.tables)
        kernel = solve.solve_units
    limits = np.array([p.limit for p in tables.presets], dtype=np.int64)
    man_resets = np.array([p.man_move_resets for p in tables.presets], dtype=np.bool_)
    status = kernel(counts, configs, tables.offsets, tables.wld, tables.dtw,
                    tables.rcat, tables.rdtz, limits, man_resets, *work.arrays(), progress)
    if status != solve.OK:
        raise SolverError(f"solving {'/'.join(m.name for m in materials)} failed: "
                          f"{solve.STATUS_NAMES.get(status, f'kernel status {status}')}")
    return len(configs)


def unit_order(materials: tuple[Material, ...]) -> np.ndarray:
    """Men-configuration indices of a pair's units in solving order (:func:`egtb.build.solve.order_units`)."""
    first = materials[0]
    return solve.order_units(first.black_men, first.white_men, len(materials) == 1)


def summarise(material: Material, wld: np.ndarray, dtw: np.ndarray | None) -> dict:
    """Counts, max DTW and a FEN reaching it (when DTW is stored), as file attributes."""
    counts = np.zeros(4, dtype=np.int64)
    for start in range(0, len(wld), master.SLICE):  # wld may be a memory map: a slice at a time
        count_codes(np.asarray(wld[start:start + master.SLICE]), counts)
    summary = {"wins": int(counts[WIN]), "losses": int(counts[LOSS]), "draws": int(counts[DRAW])}
    if dtw is None:
        return summary
    worst = int(np.argmax(dtw)) if len(dtw) else 0
    return dict(summary, max_dtw=int(dtw[worst]) if len(dtw) else 0,
                max_dtw_fen=fen_of(material, worst))


@njit(cache=True)
def count_codes(wld, counts):
    """Add the number of positions holding each value code (0-3) of `wld` to `counts`.

    One pass without a temporary (``np.bincount`` first widens every byte to
    an int64 array, which took most of a summary's time, and its pages).

    >>> counts = np.zeros(4, dtype=np.int64)
    >>> count_codes(np.array([1, 2, 2, 3], dtype=np.uint8), counts)
    >>> counts.tolist()
    [0, 1, 2, 1]
    """
    draws = wins = losses = 0
    for i in range(wld.shape[0]):  # three sums the compiler vectorises
        draws += wld[i] == DRAW
        wins += wld[i] == WIN
        losses += wld[i] == LOSS
    counts[DRAW] += draws
    counts[WIN] += wins
    counts[LOSS] += losses
    counts[UNKNOWN] += wld.shape[0] - draws - wins - losses


def fen_of(material: Material, index: int) -> str:
    """FEN (Black to move) of a position index of a material.

    >>> fen_of(Material.parse("1k-1k"), 0)
    'B:WK2:BK1'
    """
    bm, bk, wm, wk = global_unrank(material, index)
    return format_fen(Placement(bm, bk, wm, wk, 0))


def write_pair(directory: Path, materials: tuple[Material, ...], tables: FlatTables,
               *, seconds: float) -> list[dict]:
    """Write one file per material of a solved pair (with its rule layers); return summaries."""
    summaries = []
    for material in materials:
        part = tables.slice_of(material)
        if tables.contents.dtw:
            wld, dtw = tables.wld[part], tables.dtw[part]
        else:  # the values are the signs of the first layer's categories
            wld, dtw = rule_layer.values_of(tables.rcat[0, part]), None
        summary = summarise(material, wld, dtw)
        layers = {p.name: rule_layer.make_layer(p, tables.rcat[row, part],
                                                tables.rdtz[row, part])
                  for row, p in enumerate(tables.presets)}
        attrs = dict(summary, rule_presets=",".join(layers), build_seconds=round(seconds, 3))
        master.write_table(master.table_path(directory, material), material, wld, dtw,
                            attrs=attrs, rules=layers)
        keep_written(directory, material, tables)
        summaries.append(dict(summary, material=material.name, positions=len(wld),
                              rules={name: layer.attrs for name, layer in layers.items()}))
    return summaries


def keep_written(directory: Path, material: Material, tables: FlatTables) -> None:
    """Put a table just written into this process's table cache, as :func:`load_table_cached`
    would read it back (values packed, distances narrowed to their stored type).

    A pair that depends on it and runs next in this worker then skips reading
    and decompressing the file. Tables bigger than the cache holds are left out.
    """
    contents = tables.contents
    part = tables.slice_of(material)
    if budget.values_bytes(part.stop - part.start, contents) > _CACHE.max_bytes:
        return
    if contents.dtw:
        dtw = tables.dtw[part]
        values = (master.pack_wld(tables.wld[part]), dtw.astype(master.narrow_type(dtw)))
    else:
        values = (None, None)
    value = values + (tuple(tables.rcat[row, part].copy() for row in range(len(contents.names))),)
    _CACHE.put((str(directory), material, contents), master.table_path(directory, material),
               value)


def build_pair(directory: Path, pair: Pair, dependencies: list[Material], *,
               rules: str | tuple = DEFAULT_RULES, dtw: bool | None = None,
               progress: np.ndarray | None = None,
               plan: budget.PairPlan | None = None,
               checkpoint_seconds: float = CHECKPOINT_SECONDS) -> dict:
    """Load, solve and write one pair (runs in a worker); return a small record.

    `rules`, `dtw`: the rule layers and whether DTW is built (:func:`egtb.build.contents.contents_for`
    for the pair's piece count). The record: key, units, positions, seconds, cpu_seconds (of this thread),
    started/finished (wall-clock epoch seconds), the plan (on_disk, per_pass,
    estimated bytes), the worker's peak RSS so far (bytes) and per table its
    summary with the file's CRC-32 ``checksum``.
    Idempotent: a re-run rewrites identical table data (atomic rename). The same
    function runs in the local pool and on Dask workers (:mod:`egtb.build.executor`).
    `progress`: counters raised while solving (see :func:`solve_pair`).
    `plan`: how to run it (:func:`egtb.build.budget.plan_pair`; default: planned
    for :func:`egtb.build.budget.default_budget`); a pair on disk is
    checkpointed about every `checkpoint_seconds`, 0 after every unit (:func:`solve_on_disk`).
    """
    started = time.time()
    cpu = time.thread_time()
    start = time.perf_counter()
    contents = contents_of(pair, rules=rules, dtw=dtw)
    if plan is None:
        plan = budget.plan_pair(pair, dependencies, contents=contents,
                                budget=budget.default_budget())
    log.info("solving %s: %d positions, %s, %s kernel", pair.key, pair.positions,
             "on disk" if plan.on_disk else "in memory",
             f"regenerating ({plan.per_pass} tables a pass)" if plan.per_pass else "edge-list")
    if plan.on_disk:
        tables, units, loaded = solve_on_disk(directory, pair, dependencies, contents,
                                              per_pass=plan.per_pass, progress=progress,
                                              checkpoint_seconds=checkpoint_seconds)
    else:
        tables = load_dependencies(directory, dependencies, pair.materials, contents)
        loaded = time.perf_counter()
        units = solve_pair(pair.materials, tables, progress, per_pass=plan.per_pass)
    solved = time.perf_counter()
    summaries = write_pair(directory, pair.materials, tables, seconds=solved - start)
    del tables
    if plan.on_disk:
        scratch.remove_scratch(scratch.scratch_dir(directory, pair.key))
    seconds = time.perf_counter() - start
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    disk_used = master.bytes_on_disk(directory)
    log.info("solved %s: %d units, %d positions in %.2fs (load %.2fs, solve %.2fs, "
             "write %.2fs); %.1f CPU s, worker peak RSS %d MB, table directory %.2f GB",
             pair.key, units, pair.positions, seconds, loaded - start, solved - loaded,
             seconds - (solved - start), time.thread_time() - cpu, peak_rss >> 20,
             disk_used / budget.GB)
    add_checksums(directory, summaries)
    return {"key": pair.key, "units": units, "positions": pair.positions,
            "seconds": seconds, "cpu_seconds": time.thread_time() - cpu, "started": started,
            "finished": time.time(), "tables": summaries, "on_disk": plan.on_disk,
            "per_pass": plan.per_pass, "estimated_bytes": plan.bytes, "scratch_bytes": plan.disk,
            "rules": list(contents.names), "dtw": contents.dtw,
            "peak_rss": peak_rss, "disk_used": disk_used}


def add_checksums(directory: Path, summaries: list[dict]) -> None:
    """Add each written file's CRC-32 (``checksum``) to its summary."""
    for summary in summaries:
        path = master.table_path(directory, Material.parse(summary["material"]))
        summary["checksum"] = int(master.read_attrs(path)["checksum_crc32"])


def contents_of(pair: Pair, *, rules: str | tuple = DEFAULT_RULES,
                dtw: bool | None = None) -> Contents:
    """What the files of a pair hold (:func:`egtb.build.contents.contents_for` its piece count)."""
    return contents_for(pair.materials[0].pieces, rules=rules, dtw=dtw)


def solve_on_disk(directory: Path, pair: Pair, dependencies: list[Material], contents: Contents, *,
                  per_pass: int, progress: np.ndarray | None,
                  checkpoint_seconds: float) -> tuple[FlatTables, int, float]:
    """Solve a pair with memory-mapped values (:mod:`egtb.formats.scratch`), checkpointed.

    Resumes from the pair's last checkpoint when its scratch directory has one
    for the same tables and rules. Returns (tables, units, perf_counter time when loaded).
    """
    tables, layout, done = open_on_disk(directory, pair, dependencies, contents)
    path = scratch.scratch_dir(directory, pair.key)
    arrays = [tables.wld, tables.dtw, tables.rcat, tables.rdtz]
    loaded = time.perf_counter()
    configs = unit_order(pair.materials)
    step = max(1, CHECKPOINT_POSITIONS * len(configs) // max(pair.positions, 1))
    if checkpoint_seconds <= 0:
        step = 1  # a checkpoint after every unit
    last = time.monotonic()
    for first in range(done, len(configs), step):
        solve_pair(pair.materials, tables, progress, per_pass=per_pass,
                   configs=configs[first:first + step])
        scratch.release(tables.rdtz)  # written once, never read while the pair is solved
        if time.monotonic() - last >= checkpoint_seconds:
            scratch.write_checkpoint(path, layout, min(first + step, len(configs)), arrays)
            last = time.monotonic()
    scratch.write_checkpoint(path, layout, len(configs), arrays)
    return tables, len(configs), loaded


def open_on_disk(directory: Path, pair: Pair, dependencies: list[Material],
                 contents: Contents, *, create: bool = True) -> tuple[FlatTables, dict, int]:
    """A pair's memory-mapped flat arrays, its checkpoint layout and the units it has done.

    Maps the scratch files of an earlier run when its checkpoint is for the
    same tables and rules, else makes them anew with the dependencies copied in
    (checkpoint: 0 units done), or with `create` False raises SolverError. Any
    process that sees the directory may map them (:mod:`egtb.build.split`).
    """
    path = scratch.scratch_dir(directory, pair.key)
    materials = list(pair.materials) + list(dependencies)
    total = sum(count_positions(m) for m in materials)
    layout = {"pair": pair.key, "rules": list(contents.names), "dtw": contents.dtw,
              "materials": [m.name for m in materials], "positions": total}
    done = scratch.read_checkpoint(path, layout)
    if done is None and not create:
        raise SolverError(f"{path} holds no checkpoint of pair {pair.key} with these tables "
                          f"({layout['rules']}, dtw {contents.dtw}): prepare it first")
    arrays = scratch.map_arrays(path, total, pair.positions, contents=contents,
                                create=done is None)
    tables = load_dependencies(directory, dependencies, pair.materials, contents, arrays=arrays,
                               fill=done is None)
    if done is None:
        scratch.write_checkpoint(path, layout, 0, arrays)
        done = 0
    else:
        log.info("resuming %s from its checkpoint: %d units done", pair.key, done)
    return tables, layout, done


def dependency_materials(pair: Pair) -> list[Material]:
    """Sorted materials whose tables a pair's exits look up."""
    found = set()
    for material in pair.materials:
        found |= successor_materials(material)
    return sorted(found, key=lambda m: (m.pieces, m.name))


# ------------------------------------------------------------------ driver

@dataclass
class BuildReport:
    """What a call to :func:`build` did."""

    built: list[str] = field(default_factory=list)
    """Materials written by this run."""
    skipped: list[str] = field(default_factory=list)
    """Materials already complete."""
    rebuilt: list[str] = field(default_factory=list)
    """Materials whose files were broken and were rebuilt."""
    seconds: float = 0.0
    """Wall time."""
    positions: int = 0
    """Positions solved by this run."""
    records: list[dict] = field(default_factory=list)
    """The record of each pair built (:func:`build_pair`), in the order they finished."""


def build(max_pieces: int, *, directory: os.PathLike | str | None = None, jobs: int | None = None,
          rules: str | tuple = DEFAULT_RULES, dtw: bool | None = None, min_pieces: int = 2,
          progress: bool = True, executor=None, memory: int | None = None,
          on_disk: bool = False, checkpoint_seconds: float = CHECKPOINT_SECONDS) -> BuildReport:
    """Build every table with min..max pieces into a directory; skip complete ones.

    `rules`: the rule layers every file gets ("auto": all up to 6 pieces, wcdf
    from 7; "all", "none", or a comma list of presets); `dtw`: whether files
    store DTW (None: up to 6 pieces); see :mod:`egtb.build.contents`. A file
    lacking a requested layer or DTW is incomplete and is rebuilt.
    `executor`: where the pairs run; None is the local process pool of `jobs`
    workers, else an object with the ``run`` method of
    :class:`egtb.build.executor.DaskExecutor` (a Dask cluster).
    `memory`: the bytes the local workers may use together (default
    :func:`egtb.build.budget.default_budget`), all processes together: what
    the workers' table caches and processes leave of it
    (:func:`egtb.build.budget.pair_budget`) is for the pairs, each planned
    within it (:func:`egtb.build.budget.plan_pair`), and pairs run side by side
    only while their estimates fit; a pair that fits in no way raises
    :class:`egtb.build.budget.MemoryBudgetError` before any work. `on_disk`
    puts every pair's values on disk (:mod:`egtb.formats.scratch`), checkpointed
    every `checkpoint_seconds`.

    >>> build(2, directory=tmp_path, jobs=1, progress=False).positions  # doctest: +SKIP
    3488
    """
    for pieces in range(min_pieces, max_pieces + 1):
        contents_for(pieces, rules=rules, dtw=dtw)  # ValueError when unknown or empty
    rules = rules if isinstance(rules, str) else tuple(rules)
    directory = master.resolve_dir(directory)
    directory.mkdir(parents=True, exist_ok=True)
    jobs = jobs or os.cpu_count() or 1
    handler = _start_logging(directory)
    try:
        return _run(plan_pairs(max_pieces), directory, jobs=jobs, rules=rules, dtw=dtw,
                    min_pieces=min_pieces, progress=progress, executor=executor,
                    memory=memory or budget.default_budget(), on_disk=on_disk,
                    checkpoint_seconds=checkpoint_seconds)
    finally:
        _stop_logging(handler)


def _run(pairs: list[Pair], directory: Path, *, jobs: int, rules: str | tuple,
         dtw: bool | None, min_pieces: int, progress: bool, executor=None, memory: int,
         on_disk: bool = False, checkpoint_seconds: float = CHECKPOINT_SECONDS) -> BuildReport:
    report = BuildReport()
    start = time.perf_counter()
    for tmp in master.remove_temporaries(directory):
        log.warning("removed unfinished file %s", tmp)
    checked = master.CheckedFiles(directory)
    done = find_complete(pairs, directory, report, rules=rules, dtw=dtw, checked=checked)
    todo = [p for p in pairs if p.key not in done and p.materials[0].pieces >= min_pieces]
    missing = {d for p in todo for d in p.depends} - done - {p.key for p in todo}
    if missing:
        raise MissingTableError(f"tables needed but not built: {sorted(missing)}")
    if executor is None:  # the workers' table caches and processes come out of the budget
        _CACHE.max_bytes = budget.cache_budget(memory, most=CACHE_BYTES)  # forked workers inherit it
        memory = budget.pair_budget(memory, jobs=jobs, cache_bytes=_CACHE.max_bytes)
    plans = plan_memory(todo, memory, rules=rules, dtw=dtw, on_disk=on_disk,  # before any work
                        directory=directory)
    need = budget.check_build_disk(
        todo, plans, {p.key: contents_of(p, rules=rules, dtw=dtw) for p in todo}, jobs=jobs,
        free=shutil.disk_usage(directory).free + scratch.bytes_in(directory, [p.key for p in todo]),
        directory=directory, bits=budget.stored_bits(directory, [m for p in pairs for m in p.materials]))
    log.info("the build needs about %s of disk at its peak", budget.format_bytes(need))
    for path in scratch.scratch_dirs(directory):
        if path.name[:-len(scratch.SCRATCH_SUFFIX)] not in {p.key for p in todo}:
            log.warning("removed the scratch directory %s of a finished pair", path)
            scratch.remove_scratch(path)
    log.info("building %d pairs (%d positions) with %d jobs into %s", len(todo),
             sum(p.positions for p in todo), jobs, directory)
    bars = _Progress(todo, enabled=progress)
    if executor is None:
        results = _execute(todo, done, directory, jobs=jobs, rules=rules, dtw=dtw,
                           on_progress=bars.advance, plans=plans, memory=memory,
                           checkpoint_seconds=checkpoint_seconds)
    else:
        results = executor.run(todo, done, directory, rules=rules, dtw=dtw,
                               on_progress=bars.advance)
    for result in results:
        bars.update(result)
        report.records.append(result)
        report.built += [t["material"] for t in result["tables"]]
        for table in result["tables"]:
            checked.record(master.table_path(directory, Material.parse(table["material"])))
        checked.save()
        report.positions += result["positions"]
    bars.close()
    report.seconds = time.perf_counter() - start
    log.info("build finished: %d tables in %.1fs", len(report.built), report.seconds)
    return report


def plan_memory(todo: list[Pair], memory: int, *, rules: str | tuple = DEFAULT_RULES,
                dtw: bool | None = None, on_disk: bool = False,
                directory: Path | None = None) -> dict[str, budget.PairPlan]:
    """How each pair runs within `memory` bytes (:func:`egtb.build.budget.plan_pair`), by key.

    `on_disk` plans every pair on disk. Raises
    :class:`~egtb.build.budget.MemoryBudgetError` for the first pair that cannot
    fit, or (with `directory`) whose scratch files would not fit on its disk.
    """
    plans = {}
    free = shutil.disk_usage(directory).free if directory else None
    for pair in todo:
        dependencies = dependency_materials(pair)
        contents = contents_of(pair, rules=rules, dtw=dtw)
        plan = budget.plan_pair(pair, dependencies, contents=contents, budget=memory,
                                on_disk=on_disk)
        if plan.on_disk and free is not None:
            budget.check_disk(pair, dependencies, contents=contents, free=free,
                              directory=directory)
        plans[pair.key] = plan
        if plan.on_disk or plan.per_pass:
            log.info("pair %s runs %s with the %s kernel (about %.2f GB)", pair.key,
                     "on disk" if plan.on_disk else "in memory",
                     f"compact ({plan.per_pass} tables a pass)" if plan.per_pass else "edge-list",
                     plan.bytes / budget.GB)
    return plans


def find_complete(pairs: list[Pair], directory: Path, report: BuildReport, *,
                  rules: str | tuple = DEFAULT_RULES, dtw: bool | None = None,
                  checked: master.CheckedFiles | None = None) -> set[str]:
    """Keys of pairs whose files all pass the checksum and hold what `rules` and `dtw` ask
    (:func:`contents_of`).

    Broken files are reported and removed; a file lacking a requested layer or
    DTW is reported as rebuilt too (it is overwritten when its pair is solved again).
    `checked`: the record of files already checked (:class:`egtb.formats.master.CheckedFiles`).
    """
    done = set()
    checked = checked or master.CheckedFiles(directory)
    for pair in pairs:
        complete = True
        wanted = contents_of(pair, rules=rules, dtw=dtw)
        for material in pair.materials:
            path = master.table_path(directory, material)
            if not path.exists():
                complete = False
                continue
            try:
                present = checked.check(path)  # in slices, once: 7-piece files are big
            except master.TableError as exc:
                log.warning("%s; rebuilding it", exc)
                report.rebuilt.append(material.name)
                path.unlink()
                complete = False
                continue
            lacking = [name for name in wanted.names if name not in present]
            if wanted.dtw and not master.has_dtw(path):
                lacking.append("dtw")
            if lacking:
                log.warning("%s lacks %s; rebuilding it", path, ",".join(lacking))
                report.rebuilt.append(material.name)
                complete = False
        if complete:
            done.add(pair.key)
            report.skipped += [m.name for m in pair.materials]
    checked.save()
    return done


def _execute(todo: list[Pair], done: set[str], directory: Path, *, jobs: int,
             rules: str | tuple = DEFAULT_RULES, dtw: bool | None = None,
             on_progress=None, plans: dict | None = None,
             memory: int | None = None, checkpoint_seconds: float = CHECKPOINT_SECONDS):
    """Yield the report of each pair as it completes, running ready pairs in parallel.

    `on_progress(positions, units)` is called with the totals solved so far by
    this run: with several jobs about every :data:`POLL_SECONDS` while pairs are
    being solved (from the workers' shared counters), with one job after each pair.
    `plans` (by key, :func:`plan_memory`; default planned for `memory`): a ready
    pair starts only while the estimates of the running ones and its own fit in
    `memory` bytes, and their scratch files in the disk's free space (or nothing
    else runs).
    """
    memory = memory or budget.default_budget()
    plans = plans or plan_memory(todo, memory, rules=rules, dtw=dtw)
    disk = shutil.disk_usage(directory).free
    pending = {p.key: p for p in todo}
    done = set(done)
    chain = longest_chains(todo)
    on_progress = on_progress or (lambda positions, units: None)
    if jobs == 1:
        counters = np.zeros(solve.PROGRESS_SIZE, dtype=np.int64)
        for pair in todo:  # already in dependency order
            result = build_pair(directory, pair, dependency_materials(pair), rules=rules,
                                dtw=dtw, progress=counters, plan=plans[pair.key],
                                checkpoint_seconds=checkpoint_seconds)
            on_progress(int(counters[solve.P_POSITIONS]), int(counters[solve.P_UNITS]))
            yield result
        return
    _warm_up()
    context = get_context("fork")
    counters = _SharedCounters(context, jobs)
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context,
                               initializer=_init_worker, initargs=(counters,))
    try:
        running = {}
        waiting: list[Pair] = []  # ready, not started: the memory budget is taken
        while pending or running or waiting:
            waiting = sorted(waiting + _ready(pending, done), key=lambda p: (-chain[p.key], p.key))
            for pair in list(waiting):
                used = sum(plans[key].bytes for key in running.values())
                on_disk = sum(plans[key].disk for key in running.values())
                if running and (len(running) >= jobs or used + plans[pair.key].bytes > memory
                                or on_disk + plans[pair.key].disk > disk):
                    continue
                future = pool.submit(_build_in_worker, directory, pair,
                                     dependency_materials(pair), rules, dtw, plans[pair.key],
                                     checkpoint_seconds)
                running[future] = pair.key
                waiting.remove(pair)
            finished, _ = wait(running, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
            on_progress(*counters.totals())
            for future in finished:
                key = running.pop(future)
                result = future.result()
                done.add(key)
                yield result
    except BaseException:
        _kill_workers(pool)  # Ctrl-C or a failed pair: stop now, complete files stay
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


#: Seconds between two readings of the workers' progress counters.
POLL_SECONDS = 0.5


class _SharedCounters:
    """Progress counters of the workers: one slot (positions, units) per worker.

    Each worker only writes its own slot (from the kernel, no lock); the parent
    sums the slots. Created before the pool, inherited by the forked workers.
    """

    def __init__(self, context, slots: int) -> None:
        self.slots = slots
        self.array = context.RawArray("q", slots * solve.PROGRESS_SIZE)
        self.next_slot = context.Value("i", 0)

    def claim(self) -> np.ndarray:
        """A worker's own counters (a private array if every slot is taken)."""
        with self.next_slot.get_lock():
            slot = self.next_slot.value
            self.next_slot.value += 1
        if slot >= self.slots:
            return np.zeros(solve.PROGRESS_SIZE, dtype=np.int64)
        size = solve.PROGRESS_SIZE
        return np.frombuffer(self.array, dtype=np.int64)[slot * size:(slot + 1) * size]

    def totals(self) -> tuple[int, int]:
        """(positions, units) summed over the workers."""
        values = np.frombuffer(self.array, dtype=np.int64).reshape(self.slots, -1).sum(axis=0)
        return int(values[solve.P_POSITIONS]), int(values[solve.P_UNITS])


#: This worker's progress counters (set by :func:`_init_worker`).
_WORKER_PROGRESS: np.ndarray | None = None


def _init_worker(counters: _SharedCounters) -> None:
    """Pool initializer: die with the parent, take a slot of the progress counters."""
    global _WORKER_PROGRESS
    _die_with_parent()
    _WORKER_PROGRESS = counters.claim()


def _build_in_worker(directory: Path, pair: Pair, dependencies: list[Material],
                     rules: str | tuple, dtw: bool | None, plan: budget.PairPlan,
                     checkpoint_seconds: float) -> dict:
    """:func:`build_pair` counting into this worker's shared progress counters."""
    return build_pair(directory, pair, dependencies, rules=rules, dtw=dtw,
                      progress=_WORKER_PROGRESS,
                      plan=plan, checkpoint_seconds=checkpoint_seconds)


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's worker processes (their unfinished files are temporaries)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()


def _ready(pending: dict, done: set[str]) -> list[Pair]:
    """Pending pairs whose dependencies are done; removed from pending."""
    ready = [p for p in pending.values() if p.depends <= done]
    for p in ready:
        del pending[p.key]
    return ready


def longest_chains(pairs: list[Pair]) -> dict[str, int]:
    """Per pair, the positions of the longest chain of pairs from it to the end of the build.

    A chain is the pair, one of the pairs of `pairs` that depend on it, one that
    depends on that one, and so on: the work that cannot start before the pair
    is finished, however many workers there are. Ready pairs start longest
    chain first (the critical path), so that a worker rarely waits at the end of
    the build while the last dependencies of the remaining pairs are solved one
    after the other (everything up to 5 pieces, simulated with each pair's
    measured CPU seconds on 2 workers: 15.1 s largest pair first, 14.0 s
    longest chain first, 13.7 s the perfect split).

    >>> chains = longest_chains(plan_pairs(3))
    >>> chains["1k-1k"] == max(chains.values())
    True
    """
    by_key = {p.key: p for p in pairs}
    dependants: dict[str, list[str]] = {key: [] for key in by_key}
    for pair in pairs:
        for key in pair.depends & by_key.keys():
            dependants[key].append(pair.key)
    chains: dict[str, int] = {}

    def chain(key: str) -> int:
        if key not in chains:
            chains[key] = by_key[key].positions + max(map(chain, dependants[key]), default=0)
        return chains[key]

    for key in sorted(by_key, key=lambda k: by_key[k].materials[0].pieces):  # shallow recursion
        chain(key)
    return chains


def _die_with_parent() -> None:
    """Ask Linux to kill this worker when the parent dies (no orphan keeps writing)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C


def _warm_up() -> None:
    """Compile (or load) the kernels in the parent so forked workers do not each do it:
    the solver's, and those that summarise, pack and unpack a table."""
    pair = plan_pairs(2)[0]
    for dtw in (True, False):  # with DTW, and the values from the first layer
        contents = contents_for(2, rules="all", dtw=dtw)
        tables = load_dependencies(Path("."), [], pair.materials, contents)
        solve_pair(pair.materials, tables)
        for row, preset in enumerate(tables.presets):
            rule_layer.make_layer(preset, tables.rcat[row], tables.rdtz[row])
    summarise(pair.materials[0], rule_layer.values_of(tables.rcat[0]), None)
    master.unpack_into(master.pack_wld(tables.wld), tables.wld)


class _Progress:
    """Two tqdm bars with ETA: positions (with the units count), and material pairs.

    The positions bar moves while pairs are being solved (:meth:`advance`); it
    never goes back and never falls behind the pairs already finished.
    """

    def __init__(self, todo: list[Pair], *, enabled: bool) -> None:
        from tqdm import tqdm
        self.total = sum(p.positions for p in todo)
        self.positions = tqdm(total=self.total, unit="pos", unit_scale=True, desc="positions",
                              disable=not enabled)
        self.pairs = tqdm(total=len(todo), unit="pair", desc="materials", disable=not enabled)
        self.units = 0
        self.finished = 0
        """Positions of the pairs finished."""

    def advance(self, positions: int, units: int) -> None:
        """Show the totals solved so far (finished pairs and the running ones in part)."""
        self._show(positions)
        if units > self.units:
            self.units = units
            self.positions.set_postfix(units=f"{units:,}")

    def update(self, result: dict) -> None:
        """A pair finished."""
        self.finished += result["positions"]
        self._show(self.finished)
        self.pairs.set_postfix(last=result["key"])
        self.pairs.update(1)

    def _show(self, positions: int) -> None:
        step = min(positions, self.total) - self.positions.n
        if step > 0:
            self.positions.update(step)

    def close(self) -> None:
        self.pairs.close()
        self.positions.close()


def _start_logging(directory: Path) -> logging.Handler:
    handler = logging.FileHandler(directory / LOG_NAME)
    handler.setFormatter(logging.Formatter("%(asctime)s %(processName)s %(levelname)s "
                                           "%(message)s"))
    logger = logging.getLogger("egtb")
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    import multiprocessing_logging
    multiprocessing_logging.install_mp_handler(logger)
    return handler


def _stop_logging(handler: logging.Handler) -> None:
    logger = logging.getLogger("egtb")
    for h in list(logger.handlers):
        if h is handler or getattr(h, "sub_handler", None) is handler:
            logger.removeHandler(h)
            h.close()
    handler.close()
