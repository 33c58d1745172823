"""One material pair from start to files: load its dependencies, solve, write, checkpoint.

The steps, in the order :func:`build_pair` runs them:

1. :func:`egtb.builder.dependency_load.load_dependencies` - the finished tables the pair's
   exits look up, in flat arrays (:class:`~egtb.builder.dependency_load.FlatTables`), kept
   between pairs in the process's table cache (:func:`egtb.formats.cache.process_cache`);
2. :func:`solve_pair` - the numba retrograde over the pair's units
   (:mod:`egtb.builder.solve`), in decreasing potential of the men configuration,
   solving the rule layers (:mod:`egtb.builder.rule_layer`) in the same pass; the
   kernel keeps the progress counters (positions, units) up to date as it goes,
   even inside a unit; a pair too big for memory is solved on disk, memory-mapped
   and checkpointed (:func:`solve_on_disk`, resumed from its last checkpoint);
3. :func:`summarise` - counts and max DTW (and per rule layer its category
   counts and max DTZ);
4. :func:`write_pair` - one HDF5 file per material (:mod:`egtb.formats.master`).

The same steps run in a local worker and on a Dask worker; which pairs run,
in which order, is :mod:`egtb.builder.plan`'s, and running them :mod:`egtb.builder.driver`'s.

>>> fen_of(Material.parse("1k-1k"), 0)
'B:WK2:BK1'
"""

from __future__ import annotations

import logging
import resource
import time
from pathlib import Path

import numpy as np
from numba import njit

from egtb.builder import budget, native, rule_layer, solve, solve_regen, spilling
from egtb.builder.contents import Contents, contents_for
from egtb.builder.dependency_load import (FlatTables, cache_key, dependency_parts, load_dependencies, load_parts,
                                          native_key)
from egtb.builder.plan import Pair, captured_natives, contents_of, plan_pairs
from egtb.builder.record import PairRecord
from egtb.builder.units import order_units
from egtb.errors import SolverError
from egtb.formats import master, scratch
from egtb.formats.cache import process_cache
from egtb.formats.spill import SPILLED_BYTES_A_POSITION, DtzSpill, remove_spill
from egtb.formats.values import DRAW, LOSS, UNKNOWN, WIN
from egtb.positions.index import global_unrank, slice_unit_size, unit_size
from egtb.positions.material import Material, count_positions
from egtb.rules.notation import Placement, format_fen

log = logging.getLogger("egtb.builder.pipeline")

#: Seconds between two checkpoints of a pair solved on disk.
CHECKPOINT_SECONDS = 300.0
#: Positions solved per kernel call of a pair on disk (between two looks at the clock).
CHECKPOINT_POSITIONS = 1 << 24
#: How a scratch directory holds the dependencies (its checkpoint's layout names it, so that a
#: scratch directory of an earlier layout is made anew, never misread).
SCRATCH_DEPENDENCIES = "categories packed three to a byte, each from a byte of its own, put in by marked parts"


def solve_pair(materials: tuple[Material, ...], tables: FlatTables,
               progress: np.ndarray | None = None, *, per_pass: int = 0,
               configs: np.ndarray | None = None) -> int:
    """Solve every unit of a pair into `tables`; return the number of units.

    `progress` (int64 counters, positions then units, see :func:`egtb.builder.solve.solve_units`)
    is raised by the pair's positions and units, in part while the kernel runs.
    `per_pass`: 0 solves with edge lists (:func:`egtb.builder.solve.solve_units`);
    n > 0 with the few-bytes-per-node kernel for big units
    (:mod:`egtb.builder.solve_regen`), n tables per move generation pass.
    `configs`: the units to solve (default all, see :func:`egtb.builder.units.order_units`).
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
    limits = np.array([p.limit_plies for p in tables.presets], dtype=np.int64)
    man_resets = np.array([p.man_move_resets for p in tables.presets], dtype=np.bool_)
    status = kernel(counts, configs, tables.offsets, tables.wdl, tables.dtw,
                    tables.rcat, tables.rdtz, tables.rdep, solve.quiet_dtz_of(tables.rdtz), limits, man_resets,
                    *work.arrays(), progress)
    if status != solve.OK:
        raise SolverError(f"solving {'/'.join(m.name for m in materials)} failed: "
                          f"{solve.STATUS_NAMES.get(status, f'kernel status {status}')}")
    return len(configs)


def unit_order(materials: tuple[Material, ...]) -> np.ndarray:
    """Men-configuration indices of a pair's units in solving order (:func:`egtb.builder.units.order_units`)."""
    first = materials[0]
    return order_units(first.black_men, first.white_men, len(materials) == 1)


def summarise(material: Material, wdl: np.ndarray, dtw: np.ndarray | None) -> dict:
    """Counts, max DTW and a FEN reaching it (when DTW is stored), as file attributes."""
    counts = np.zeros(4, dtype=np.int64)
    for start in range(0, len(wdl), master.SLICE):  # wdl may be a memory map: a slice at a time
        count_codes(np.asarray(wdl[start:start + master.SLICE]), counts)
    summary = {"wins": int(counts[WIN]), "losses": int(counts[LOSS]), "draws": int(counts[DRAW])}
    if dtw is None:
        return summary
    worst = int(np.argmax(dtw)) if len(dtw) else 0
    return dict(summary, max_dtw=int(dtw[worst]) if len(dtw) else 0,
                max_dtw_fen=fen_of(material, worst))


@njit(cache=True)
def count_codes(wdl, counts):
    """Add the number of positions holding each value code (0-3) of `wdl` to `counts`.

    One pass without a temporary (``np.bincount`` first widens every byte to
    an int64 array, which took most of a summary's time, and its pages).

    >>> counts = np.zeros(4, dtype=np.int64)
    >>> count_codes(np.array([1, 2, 2, 3], dtype=np.uint8), counts)
    >>> counts.tolist()
    [0, 1, 2, 1]
    """
    draws = wins = losses = 0
    for i in range(wdl.shape[0]):  # three sums the compiler vectorises
        draws += wdl[i] == DRAW
        wins += wdl[i] == WIN
        losses += wdl[i] == LOSS
    counts[DRAW] += draws
    counts[WIN] += wins
    counts[LOSS] += losses
    counts[UNKNOWN] += wdl.shape[0] - draws - wins - losses


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
    if tables.contents.native:
        return [write_native(directory, material, tables, seconds=seconds) for material in materials]
    summaries = []
    for material in materials:
        part = tables.slice_of(material)
        if tables.contents.dtw:
            wdl, dtw = tables.wdl[part], tables.dtw[part]
        else:  # the values are the signs of the first layer's categories
            wdl, dtw = rule_layer.values_of(tables.rcat[0, part]), None
        summary = summarise(material, wdl, dtw)
        layers = {p.name: rule_layer.make_layer(p, tables.rcat[row, part],
                                                tables.rdtz[row, part])
                  for row, p in enumerate(tables.presets)}
        attrs = dict(summary, rule_presets=",".join(layers), build_seconds=round(seconds, 3))
        master.write_table(master.table_path(directory, material), material, wdl, dtw,
                            attrs=attrs, rules=layers)
        keep_written(directory, material, tables)
        summaries.append(dict(summary, material=material.name, positions=len(wdl),
                              rules={name: layer.attrs for name, layer in layers.items()}))
    return summaries


def keep_dtz_on_one_side(directory: Path, pair: Pair, contents: Contents) -> None:
    """Keep a written compact-native pair's DTZ in one file from ONE_SIDED_DTZ_PIECES pieces on
    (:func:`egtb.builder.native.keep_dtz_on_one_side`: the larger ``.dtz`` deleted, that side's
    DTZ derived from its moves); the tables of fewer pieces keep both."""
    if contents.native and pair.materials[0].pieces >= native.ONE_SIDED_DTZ_PIECES:
        dropped = native.keep_dtz_on_one_side(directory, pair.materials)
        if dropped is not None:
            log.info("%s: its DTZ kept on one side, %s deleted (derived from its moves)", pair.key, dropped.name)


def write_native(directory: Path, material: Material, tables: FlatTables, *, seconds: float) -> dict:
    """Write a solved material of a compact-native pair (:func:`egtb.builder.native.write_material`)
    and keep its categories in this process's table cache; return its summary."""
    part = tables.slice_of(material)
    dtz = scratch.ReadOnce(tables.rdtz[0, part]) if tables.spiller is None else tables.spiller.row(part)
    summary = native.write_material(directory, material, scratch.ReadOnce(tables.rcat[0, part]), dtz,
                                    seconds=seconds, threats=tables.contents.threats)
    if count_positions(material) <= process_cache().max_bytes:
        process_cache().put(native_key(directory, material), native.categories_path(directory, material),
                            tables.rcat[0, part].copy())
    layer = summary["rules"][native.LEAN_RULES]
    return {"material": material.name, "positions": summary["positions"], "wins": summary["wins"],
            "losses": summary["losses"], "draws": summary["draws"], "rules": {native.LEAN_RULES: layer},
            "checksum": layer["checksum_crc32"], "native": True}


def keep_written(directory: Path, material: Material, tables: FlatTables) -> None:
    """Put a table just written into this process's table cache, as :func:`load_table_cached`
    would read it back (values packed, distances narrowed to their stored type).

    A pair that depends on it and runs next in this worker then skips reading
    and decompressing the file. Tables bigger than the cache holds are left out.
    """
    contents = tables.contents
    part = tables.slice_of(material)
    if budget.values_bytes(part.stop - part.start, contents) > process_cache().max_bytes:
        return
    if contents.dtw:
        dtw = tables.dtw[part]
        values = (master.pack_wdl(tables.wdl[part]), dtw.astype(master.narrow_type(dtw)))
    else:
        values = (None, None)
    value = values + (tuple(tables.rcat[row, part].copy() for row in range(len(contents.names))),)
    process_cache().put(cache_key(directory, material, contents),
                        master.table_path(directory, material), value)


def build_pair(directory: Path, pair: Pair, dependencies: list[Material], *,
               contents: Contents | None = None, progress: np.ndarray | None = None,
               plan: budget.PairPlan | None = None,
               checkpoint_seconds: float = CHECKPOINT_SECONDS) -> PairRecord:
    """Load, solve and write one pair (runs in a worker); return its record (:class:`PairRecord`).

    `contents`: the rule layers, whether DTW is built and whether the tables are compact files
    alone (default: :func:`egtb.builder.plan.contents_of` the pair, its piece count's defaults).
    Idempotent: a re-run rewrites identical table data (atomic rename). The same
    function runs in the local pool and on Dask workers (:mod:`egtb.builder.driver`).
    `progress`: counters raised while solving (see :func:`solve_pair`).
    `plan`: how to run it (:func:`egtb.builder.budget.plan_pair`; default: planned
    for :func:`egtb.builder.budget.default_budget`); a pair on disk is
    checkpointed about every `checkpoint_seconds`, 0 after every unit (:func:`solve_on_disk`).
    """
    started = time.time()
    cpu = time.thread_time()
    start = time.perf_counter()
    contents = contents or contents_of(pair)
    if plan is None:
        plan = budget.plan_pair(pair, dependencies, contents=contents,
                                budget=budget.default_budget())
    log.info("solving %s: %d positions, %s, %s kernel", pair.key, pair.positions,
             "on disk" if plan.on_disk else "in memory",
             f"regenerating ({plan.per_pass} tables a pass)" if plan.per_pass else "edge-list")
    earlier = 0.0  # CPU seconds the runs before this one spent on a pair on disk
    if plan.on_disk:
        earlier = scratch.recorded_cpu(scratch.scratch_dir(directory, pair.key))
        tables, units, loaded = solve_on_disk(directory, pair, dependencies, contents,
                                              per_pass=plan.per_pass, progress=progress,
                                              checkpoint_seconds=checkpoint_seconds)
    else:
        tables = load_dependencies(directory, dependencies, pair.materials, contents)
        loaded = time.perf_counter()
        units = solve_pair(pair.materials, tables, progress, per_pass=plan.per_pass)
    solved = time.perf_counter()
    summaries = write_pair(directory, pair.materials, tables, seconds=solved - start)
    keep_dtz_on_one_side(directory, pair, tables.contents)
    del tables
    if plan.on_disk:
        remove_pair_scratch(directory, pair)
    seconds = time.perf_counter() - start
    add_checksums(directory, summaries)
    record = PairRecord(pair.key, units, pair.positions, seconds, time.thread_time() - cpu + earlier, started,
                        time.time(), summaries, contents.names, contents.dtw, plan.on_disk, per_pass=plan.per_pass,
                        estimated_bytes=plan.bytes, scratch_bytes=plan.disk,
                        peak_rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                        disk_used=master.bytes_on_disk(directory), load_seconds=loaded - start,
                        solve_seconds=solved - loaded)
    log.info("solved %s", record.text())
    return record


def add_checksums(directory: Path, summaries: list[dict]) -> None:
    """Add each written file's CRC-32 (``checksum``) to its summary (a compact-native table's
    summary has its layer's already)."""
    for summary in summaries:
        if summary.get("native"):
            continue
        path = master.table_path(directory, Material.parse(summary["material"]))
        summary["checksum"] = int(master.read_attrs(path)["checksum_crc32"])


def solve_on_disk(directory: Path, pair: Pair, dependencies: list[Material], contents: Contents, *,
                  per_pass: int, progress: np.ndarray | None,
                  checkpoint_seconds: float) -> tuple[FlatTables, int, float]:
    """Solve a pair with memory-mapped values (:mod:`egtb.formats.scratch`), checkpointed.

    Resumes from the pair's last checkpoint when its scratch directory has one
    for the same tables and rules. Returns (tables, units, perf_counter time when loaded). The
    CPU seconds it spends are recorded in the scratch directory at each checkpoint
    (:func:`egtb.formats.scratch.record_cpu`), so that a resumed pair's record counts every run.
    """
    clock, run = time.thread_time(), scratch.run_name("solve")  # this run's CPU, one record
    tables, layout, done = open_on_disk(directory, pair, dependencies, contents)
    path = scratch.scratch_dir(directory, pair.key)
    loaded = time.perf_counter()
    configs = unit_order(pair.materials)
    step = max(1, CHECKPOINT_POSITIONS * len(configs) // max(pair.positions, 1))
    if checkpoint_seconds <= 0:
        step = 1  # a checkpoint after every unit
    last = time.monotonic()
    if spilling.spills_dtz(contents.presets, on_disk=True, native=contents.native):
        tables.spiller = new_spiller(path, pair, tables)
        tables.spiller.finished(configs[:done])
    counted = done
    for first in range(done, len(configs), step):
        solve_pair(pair.materials, tables, progress, per_pass=per_pass,
                   configs=configs[first:first + step])
        scratch.release(tables.rdtz)  # written once, never read while the pair is solved
        if time.monotonic() - last >= checkpoint_seconds:
            counted = _checkpoint(path, layout, tables, configs, counted, min(first + step, len(configs)))
            last = time.monotonic()
            scratch.record_cpu(path, run, time.thread_time() - clock)
    _checkpoint(path, layout, tables, configs, counted, len(configs))
    scratch.record_cpu(path, run, time.thread_time() - clock)
    return tables, len(configs), loaded


def _checkpoint(path: Path, layout: dict, tables: FlatTables, configs: np.ndarray, counted: int,
                done: int) -> int:
    """Record that `done` units are finished, then spill the DTZ pages they finished (units from
    `counted` on were not counted yet) when the DTZ is spilled; return `done`."""
    scratch.write_checkpoint(path, layout, done, tables.arrays())
    if tables.spiller is not None:
        tables.spiller.finished(configs[counted:done])
        tables.spiller.spill_final()
    return done


def remove_pair_scratch(directory: Path, pair: Pair) -> None:
    """Remove a written pair's scratch directory, logging what its spilled DTZ took (the plan
    counts :data:`egtb.formats.spill.SPILLED_BYTES_A_POSITION`)."""
    path = scratch.scratch_dir(directory, pair.key)
    spill = DtzSpill.open(path)  # none: empty
    if spill.positions:
        log.info("%s: %s DTZ positions spilled in %s bytes (%.3f bytes a position; the plan counts %.2f)",
                 pair.key, f"{spill.positions:,}", f"{spill.file_bytes:,}", spill.file_bytes / spill.positions,
                 SPILLED_BYTES_A_POSITION)
    scratch.remove_scratch(path)


def new_spiller(path: Path, pair: Pair, tables: FlatTables) -> spilling.DtzSpiller:
    """The DTZ spill of a pair solved in scratch directory `path` (:mod:`egtb.builder.spilling`)."""
    first, last = pair.materials[0], pair.materials[-1]
    counts = np.array([[m.black_men, m.black_kings, m.white_men, m.white_kings]
                       for m in (first, last)], dtype=np.int64)
    size = int(unit_size(first.black_men, first.black_kings, first.white_men, first.white_kings))
    return spilling.DtzSpiller(path, tables.rdtz[0], counts=counts, offsets=tables.offsets, size=size)


def open_on_disk(directory: Path, pair: Pair, dependencies: list[Material],
                 contents: Contents, *, create: bool = True, load: bool = True) -> tuple[FlatTables, dict, int]:
    """A pair's memory-mapped flat arrays, its checkpoint layout and the units it has done.

    Maps the scratch files of an earlier run when its checkpoint is for the
    same tables and rules (logged as a resume when `create`), else makes them anew
    (checkpoint: 0 units done), or with `create` False raises SolverError. With `load`,
    puts in the dependency parts not yet marked as put in
    (:func:`egtb.builder.dependency_load.load_parts`). Any process that sees the directory may
    map them (:mod:`egtb.builder.split`: its tasks open them with `create` False, and put the
    dependencies in part by part).
    """
    path = scratch.scratch_dir(directory, pair.key)
    dependencies = list(dependencies) + captured_natives(directory, dependencies)  # as load_dependencies
    counts = [count_positions(m) for m in pair.materials], [count_positions(m) for m in dependencies]
    layout = {"pair": pair.key, "rules": list(contents.names), "dtw": contents.dtw,
              "materials": [m.name for m in list(pair.materials) + list(dependencies)],
              "positions": scratch.flat_starts(*counts)[1], "dependencies": SCRATCH_DEPENDENCIES}
    done = scratch.read_checkpoint(path, layout)
    if done is None and not create:
        raise SolverError(f"{path} holds no checkpoint of pair {pair.key} with these tables "
                          f"({layout['rules']}, dtw {contents.dtw}): prepare it first")
    if done is None:  # the arrays are made anew: a spilled DTZ of another run is not theirs
        remove_spill(path)
    arrays = scratch.map_arrays(path, layout["positions"], pair.positions, contents=contents,
                                create=done is None)
    tables = load_dependencies(directory, dependencies, pair.materials, contents, arrays=arrays, fill=False)
    if done is None:
        scratch.write_checkpoint(path, layout, 0, arrays)
        done = 0
    elif create:
        log.info("resuming %s from its checkpoint: %d units done", pair.key, done)
    if load:
        parts = [part for wave in dependency_parts(directory, dependencies) for part in wave]
        load_parts(directory, tables, parts, needed_by=pair.materials[0].name, marks=path)
    return tables, layout, done


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels a pair runs: the solver's, and those
    that summarise, pack and unpack a table. A build runs it before its workers start (the
    local pool's are forked after it, so they do not each do it)."""
    pair = plan_pairs(2)[0]
    for dtw in (True, False):  # with DTW, and the values from the first layer
        contents = contents_for(2, rules="all", dtw=dtw)
        tables = load_dependencies(Path("."), [], pair.materials, contents)
        solve_pair(pair.materials, tables)
        for row, preset in enumerate(tables.presets):
            rule_layer.make_layer(preset, tables.rcat[row], tables.rdtz[row])
    summarise(pair.materials[0], rule_layer.values_of(tables.rcat[0]), None)
    master.unpack_into(master.pack_wdl(tables.wdl), tables.wdl)

