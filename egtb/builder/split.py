"""One pair over several workers: its units as tasks, wave by wave.

A unit (a men configuration with its mirror) depends only on the units its man
moves reach, one potential higher (:func:`egtb.builder.units.config_potential`),
and on other materials; so the units of equal potential (a *wave*) are
independent of each other, and the solving order is a sequence of waves.

A pair split into tasks runs on memory-mapped scratch files (:mod:`egtb.formats.scratch`)
in the table directory, which every worker sees:

1. :func:`prepare` makes them (or keeps those of an earlier run, with the units its
   checkpoint records and the dependency parts it marks as put in), and :func:`load` puts
   the dependencies in, part by part (:func:`egtb.builder.dependency_load.dependency_parts`),
   the parts of each wave at once;
2. :func:`solve_range` solves a range of the solving order inside one wave; the
   tasks of a wave start once every task of the wave before has finished, and
   each writes only its own units, so any number of workers gives the same
   files. A task killed halfway is run again: it solves its units anew. The
   first task of a wave to start records the waves before it as the pair's
   checkpoint;
3. :func:`write` writes the files of one of the pair's materials (the two side by side), and
   :func:`finish` stamps them and removes the scratch.

:func:`pair_tasks` makes these steps executor tasks (:mod:`egtb.executor`),
each waiting for the ones before it. A worker holds the scratch pages its units
and their exits touch, not the pair.

>>> from egtb.builder.plan import plan_pairs
>>> pair = next(p for p in plan_pairs(3) if p.key == "1k-2m")
>>> unit_waves(pair)[:3]
[(0, 6), (6, 22), (22, 44)]
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import resource
import socket
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from egtb.builder import dependency_load, pipeline, spilling
from egtb.builder import progress as progress_bars
from egtb.builder.contents import Contents
from egtb.builder.plan import Pair
from egtb.builder.record import PairRecord
from egtb.builder.units import unit_potentials
from egtb.executor import Task
from egtb.formats import master, scratch
from egtb.formats.compact.writer import kept_flags_bytes
from egtb.positions.material import Material, count_positions

log = logging.getLogger(__name__)

#: Positions a unit task solves, about (a wave is cut into tasks of whole units).
TASK_POSITIONS = 1 << 24
#: The lock file the first tasks of a wave take in turn to spill the DTZ (:func:`spill_finished`).
SPILL_LOCK_NAME = "spill.lock"


def unit_waves(pair: Pair) -> list[tuple[int, int]]:
    """The waves of a pair: (first, last) ranges of its solving order, of equal potential."""
    first_material = pair.materials[0]
    configs = pipeline.unit_order(pair.materials)
    potentials = unit_potentials(configs, first_material.black_men, first_material.white_men)
    starts = [0] + [int(i) for i in np.flatnonzero(np.diff(potentials)) + 1] + [len(configs)]
    return list(zip(starts[:-1], starts[1:]))


def wave_tasks(pair: Pair, *, positions: int = TASK_POSITIONS) -> list[list[tuple[int, int]]]:
    """Each wave's unit ranges, of about `positions` positions each (at least one unit).

    >>> from egtb.builder.plan import plan_pairs
    >>> pair = next(p for p in plan_pairs(3) if p.key == "1k-2m")
    >>> wave_tasks(pair, positions=500)[:3]
    [[(0, 6)], [(6, 14), (14, 22)], [(22, 30), (30, 38), (38, 44)]]
    """
    waves = unit_waves(pair)
    per_unit = max(1, pair.positions // max(1, waves[-1][1]))  # the last wave ends at the unit count
    step = max(1, positions // per_unit)
    return [[(start, min(start + step, last)) for start in range(first, last, step)]
            for first, last in waves]


@functools.lru_cache(maxsize=2)
def _unit_order(materials: tuple[Material, ...]) -> np.ndarray:
    """:func:`egtb.builder.pipeline.unit_order`, kept by the worker for its next unit task of the
    pair (0.6 s for 1m3k-2m2k's 9,936 units, a task solves a few seconds' worth)."""
    return pipeline.unit_order(materials)


def prepare(directory: os.PathLike | str, pair: Pair, dependencies: list[Material],
            contents: Contents, *, after: Sequence = ()) -> int:
    """Make (or reuse) the pair's scratch files; the units its checkpoint records as done.

    `after`: the records of the pairs it depends on (unused: the task waits for them)."""
    cpu = time.process_time()
    _, _, done = pipeline.open_on_disk(Path(directory), pair, dependencies, contents, load=False)
    scratch.record_cpu(scratch.scratch_dir(directory, pair.key), scratch.run_name("prepare"),
                       time.process_time() - cpu)
    return done


def load(directory: os.PathLike | str, pair: Pair, dependencies: list[Material], contents: Contents,
         pieces: int | None, share: int, shares: int, *, part_positions: int = dependency_load.PART_POSITIONS,
         after: Sequence = ()) -> dict:
    """Put share `share` of `shares` of the parts of the tables of `pieces` pieces that the pair's
    flat arrays hold (every part with None) into its scratch files, those not marked as put in
    already; what was done (parts, CPU seconds). The parts are those of the tables as they are
    when it runs (:func:`egtb.builder.dependency_load.dependency_parts`, `part_positions` at
    most), not when the build was planned. `after`: the tasks of the wave before (unused: the task
    waits for them)."""
    directory = Path(directory)
    cpu = time.process_time()
    tables, _, _ = pipeline.open_on_disk(directory, pair, dependencies, contents, create=False, load=False)
    waves = dependency_load.dependency_parts(directory, list(tables.dependencies), positions=part_positions)
    parts = [part for wave in waves for part in wave if pieces in (None, part.material.pieces)][share::shares]
    began = time.perf_counter()
    count = dependency_load.load_parts(directory, tables, parts, needed_by=pair.materials[0].name,
                                       marks=scratch.scratch_dir(directory, pair.key))
    if count:
        positions = sum(part.last - part.first for part in parts)
        log.info("put in %d of %d parts of %s's dependencies (%s positions) in %.1fs", count, len(parts),
                 pair.key, f"{positions:,}", time.perf_counter() - began)
    seconds = time.process_time() - cpu
    scratch.record_cpu(scratch.scratch_dir(directory, pair.key), scratch.run_name(f"load-{pieces}-{share}"), seconds)
    return {"loaded": count, "cpu_seconds": seconds}


def solve_range(directory: os.PathLike | str, pair: Pair, dependencies: list[Material],
                contents: Contents, first: int, last: int, *, wave_first: int,
                per_pass: int = 0, after: Sequence = ()) -> dict:
    """Solve units ``first:last`` of the pair's solving order into its scratch files.

    Every wave before `wave_first` is finished (the task waits for its tasks, `after`):
    recorded as the checkpoint, and when the pair's DTZ is spilled (:mod:`egtb.builder.spilling`)
    their final DTZ pages spilled. Units a checkpoint already covers are skipped.
    Returns what was done (units, positions, CPU seconds, host, process).
    """
    directory = Path(directory)
    cpu = time.process_time()
    tables, layout, done = pipeline.open_on_disk(directory, pair, dependencies, contents,
                                                 create=False, load=False)
    path = scratch.scratch_dir(directory, pair.key)
    if wave_first > done:
        scratch.record_units(path, layout, wave_first)
        if spilling.spills_dtz(contents.presets, on_disk=True, native=contents.native):
            spill_finished(path, pair, tables, _unit_order(pair.materials)[:wave_first])
    first = max(first, done)
    units = 0
    if first < last:
        units = pipeline.solve_pair(pair.materials, tables, progress_bars.worker_counters(), per_pass=per_pass,
                                    configs=_unit_order(pair.materials)[first:last])
        scratch.flush(tables.arrays())
        scratch.release(tables.rdtz)
    seconds = time.process_time() - cpu
    scratch.record_cpu(path, scratch.run_name(f"units-{first}"), seconds)
    return {"key": pair.key, "first": first, "last": last, "units": units,
            "cpu_seconds": seconds, "host": socket.gethostname(),
            "pid": os.getpid()}


def spill_finished(path: Path, pair: Pair, tables: dependency_load.FlatTables, finished: np.ndarray) -> int:
    """Spill the final DTZ pages of the `finished` units (those of the waves before the one
    starting), not spilled yet, into the pair's scratch directory `path`; return the positions
    spilled. The first tasks of a wave may start together: one at a time holds the directory's
    lock, and each reads the spill as the one before left it."""
    with open(path / SPILL_LOCK_NAME, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        spiller = pipeline.new_spiller(path, pair, tables)
        spiller.finished(finished)
        return spiller.spill_final()


def write(directory: os.PathLike | str, pair: Pair, dependencies: list[Material], contents: Contents,
          material: Material, *, started: float, after: Sequence = ()) -> dict:
    """Write the files of one material of a pair whose every unit is solved (the materials of a
    pair are written side by side); what was done (its summary, CPU seconds, when it began).
    `after`: the records of the pair's last unit tasks (unused: the task waits for them)."""
    directory = Path(directory)
    cpu = time.process_time()
    begun = time.time()
    tables, layout, _ = pipeline.open_on_disk(directory, pair, dependencies, contents, create=False, load=False)
    if spilling.spills_dtz(contents.presets, on_disk=True, native=contents.native):
        tables.spiller = pipeline.new_spiller(scratch.scratch_dir(directory, pair.key), pair, tables)
    scratch.record_units(scratch.scratch_dir(directory, pair.key), layout, len(_unit_order(pair.materials)))
    summaries = pipeline.write_pair(directory, (material,), tables, seconds=begun - started)
    seconds = time.process_time() - cpu
    scratch.record_cpu(scratch.scratch_dir(directory, pair.key), scratch.run_name(f"write-{material.name}"),
                       seconds)
    return {"summaries": summaries, "cpu_seconds": seconds, "begun": begun}


def finish(directory: os.PathLike | str, pair: Pair, dependencies: list[Material],
           contents: Contents, *, started: float, after: Sequence[dict] = ()) -> PairRecord:
    """Once its materials are written (the :func:`write` tasks), stamp the pair's files, remove
    its scratch, and give its record (as :func:`egtb.builder.pipeline.build_pair` gives it, with
    the CPU seconds its tasks recorded, in this run and any before: :func:`scratch.recorded_cpu`)."""
    directory = Path(directory)
    tasks = [t for t in after if "units" in t]
    writes = [t for t in after if "summaries" in t]
    summaries = [summary for t in writes for summary in t["summaries"]]
    cpu = scratch.recorded_cpu(scratch.scratch_dir(directory, pair.key))
    pipeline.keep_dtz_on_one_side(directory, pair, contents)
    pipeline.remove_pair_scratch(directory, pair)
    pipeline.add_checksums(directory, summaries)
    record = PairRecord(
        pair.key, len(_unit_order(pair.materials)), pair.positions, time.time() - started,
        cpu, started, time.time(), summaries, contents.names,
        contents.dtw, True, split=len(tasks),
        workers=tuple(sorted({(t["host"], t["pid"]) for t in tasks if t["units"]})),
        peak_rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        disk_used=master.bytes_on_disk(directory), solve_seconds=min(t["begun"] for t in writes) - started)
    log.info("solved %s", record.text())
    return record


def load_tasks(directory: Path, pair: Pair, dependencies: list[Material], contents: Contents, *,
               after: tuple[str, ...], positions: int = dependency_load.PART_POSITIONS, **common) -> list[Task]:
    """The tasks that put a split pair's dependencies in (:func:`load`): a wave for each piece
    count up to the pair's, fewest first, each after the one before (the first after `after`),
    of a task for about every `positions` positions of the dependencies of that many pieces
    (two at least: the compact-native tables their captures reach are known only once built);
    then one that puts in any part they left (none, unless the tables changed since the plan).

    >>> from egtb.builder.contents import contents_for
    >>> from egtb.builder.plan import dependency_materials, plan_pairs
    >>> pair = next(p for p in plan_pairs(3) if p.key == "1k-2m")
    >>> [t.key for t in load_tasks(Path("t"), pair, dependency_materials(pair), contents_for(3), after=())]
    ['egtb-load-1k-2m-2-0', 'egtb-load-1k-2m-2-1', 'egtb-load-1k-2m-3-0', 'egtb-load-1k-2m-3-1', 'egtb-loaded-1k-2m']
    """
    where = (str(directory), pair, dependencies, contents)
    options = {"part_positions": positions}
    tasks: list[Task] = []
    for pieces in range(2, max((m.pieces for m in dependencies), default=1) + 1):
        size = sum(count_positions(m) for m in dependencies if m.pieces == pieces)
        shares = max(2, -(-size // positions))
        wave = [Task(f"egtb-load-{pair.key}-{pieces}-{share}", load, where + (pieces, share, shares), options,
                     after=after, **common) for share in range(shares)]
        after = tuple(task.key for task in wave)
        tasks += wave
    return tasks + [Task(f"egtb-loaded-{pair.key}", load, where + (None, 0, 1), options, after=after, **common)]


def pair_tasks(directory: Path, pair: Pair, dependencies: list[Material], contents: Contents, *,
               per_pass: int, after: tuple[str, ...], priority: int,
               positions: int = TASK_POSITIONS, memory: int = 0, disk: int = 0,
               part_positions: int = dependency_load.PART_POSITIONS) -> list[Task]:
    """The tasks of a split pair: prepare, the unit tasks wave by wave, the write of each material
    side by side, finish (the last, keyed ``egtb-pair-KEY``, returns the pair's record). `after`:
    the keys of the tasks the pair waits for; `positions`: what a unit task solves, about;
    `part_positions`: what a load task puts in, at most (:func:`load_tasks`). For the local pool's limits: each task
    takes `memory` bytes while it runs (a worker's share: the pages its units touch), and the
    pair's scratch files, `disk` bytes, are held from prepare to finish; a write task takes the
    flags its writer keeps between its passes too (:func:`~egtb.formats.compact.writer.kept_flags_bytes`).

    >>> from egtb.builder.contents import contents_for
    >>> from egtb.builder.plan import plan_pairs
    >>> pair = next(p for p in plan_pairs(3) if p.key == "1k-2m")
    >>> tasks = pair_tasks(Path("t"), pair, [], contents_for(3), per_pass=0, after=(), priority=1,
    ...                    positions=500)
    >>> [t.key for t in tasks][:4]
    ['egtb-prepare-1k-2m', 'egtb-loaded-1k-2m', 'egtb-units-1k-2m-0', 'egtb-units-1k-2m-6']
    >>> tasks[-1].key, tasks[3].after
    ('egtb-pair-1k-2m', ('egtb-units-1k-2m-0',))
    >>> [(t.key, t.costs["memory"]) for t in tasks if t.key.startswith("egtb-write")]  # the kept flags
    [('egtb-write-1k-2m', 1418), ('egtb-write-2m-1k', 1418)]
    """
    common = {"priority": priority, "costs": {"memory": memory}}
    where = (str(directory), pair, dependencies, contents)
    last = f"egtb-pair-{pair.key}"
    tasks = [Task(f"egtb-prepare-{pair.key}", prepare, where, after=after, holds={"disk": disk}, held_until=last,
                  **common)]
    loads = load_tasks(directory, pair, dependencies, contents, after=(tasks[0].key,), positions=part_positions,
                       **common)
    previous, units = (loads[-1].key,), []
    for ranges in wave_tasks(pair, positions=positions):
        wave = [Task(f"egtb-units-{pair.key}-{first}", solve_range, where + (first, last),
                     {"wave_first": ranges[0][0], "per_pass": per_pass}, after=previous, **common)
                for first, last in ranges]
        previous = tuple(t.key for t in wave)
        units += wave
    started = time.time()
    writes = [Task(f"egtb-write-{material.name}", write, where + (material,), {"started": started},
                   after=previous, priority=priority,
                   costs={"memory": memory + kept_flags_bytes(material, threats=contents.threats)})
              for material in pair.materials]
    finish_task = Task(last, finish, where, {"started": started},
                       after=tuple(t.key for t in loads + units + writes), priority=priority)
    return tasks + loads + units + writes + [finish_task]
