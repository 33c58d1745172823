"""Running a build: what is left to do, refused before any work if it cannot fit, then every
pair on an executor, with progress bars and the build log.

:func:`build` plans the pairs (:mod:`egtb.builder.plan`), skips those whose
files are complete, refuses a build whose memory or disk plan cannot fit
(:class:`egtb.errors.MemoryBudgetError`, before any work), and runs the rest
as executor tasks (:mod:`egtb.executor`): the local pool of ``jobs`` forked
processes by default, or a Dask cluster (:class:`egtb.dask.executor.DaskPool`).
A pair is one task that runs :func:`egtb.builder.pipeline.build_pair` (load the
dependency tables from the table directory, solve, write each file under a
temporary name and rename it when complete, return a small record), waiting
for the tasks of the pairs it depends on; among ready pairs the one with the
longest chain of dependants goes first (:func:`egtb.builder.plan.longest_chains`).
On a cluster the largest pairs become unit tasks (:mod:`egtb.builder.split`). The
files are the same whichever executor wrote them.

The local pool starts a ready pair only while the running pairs' memory
estimates and scratch files fit (:func:`egtb.builder.plan.plan_memory`), and
kills its workers when a pair fails or on Ctrl-C (complete files stay; a pair
on disk resumes from its checkpoint). While it waits, the workers' progress
counters, in shared memory, move the positions bar (with its ETA) and the
units count about twice a second.

>>> LOCK_NAME
'build.lock'
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path


from egtb.builder import budget, pipeline, split
from egtb.builder import native as native_files
from egtb.builder import progress as progress_bars
from egtb.builder.config import BuildConfig, Split
from egtb.builder.contents import Contents, contents_for
from egtb.builder.record import PairRecord
from egtb.builder.plan import BuildPlan, Pair, dependency_materials, find_complete, longest_chains, plan_memory
from egtb.errors import BuildRunningError, MemoryBudgetError, MissingTableError, SolverError, TaskError
from egtb.executor import Executor, LocalPool, Task
from egtb.formats import master, scratch
from egtb.formats.cache import process_cache
from egtb.positions.material import Material, count_positions

log = logging.getLogger("egtb.builder.driver")

#: Bytes of loaded dependency tables a local worker keeps between pairs, at most: the process's
#: table cache is held to it during a local build (less with little memory:
#: :func:`egtb.builder.budget.cache_budget`).
CACHE_BYTES = 1 << 30
LOG_NAME = "build.log"
#: The lock file a running build holds (:func:`directory_lock`).
LOCK_NAME = "build.lock"
#: A directory holding tables of this many pieces or more gets compact files by default
#: (``.wld``, ``.wcdf`` and their marks): those masters are too large to probe in memory.
COMPACT_FROM_PIECES = 7


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
    records: list[PairRecord] = field(default_factory=list)
    """The record of each pair built (:func:`egtb.builder.pipeline.build_pair`, with the worker's
    ``host`` and ``pid``), in the order they finished."""
    compacted: list[str] = field(default_factory=list)
    """Materials whose compact files this run wrote."""
    plan: BuildPlan | None = None
    """What the build planned before any work."""


def build(max_pieces: int, *, directory: os.PathLike | str | None = None, jobs: int | None = None,
          progress: bool = True, executor: Executor | None = None,
          on_plan: Callable[[BuildPlan], None] | None = None, plan_only: bool = False,
          config: BuildConfig | None = None, **options) -> BuildReport:
    """Build every table with min..max pieces into a directory; skip complete ones.

    The options, as keywords or as one `config` (:class:`~egtb.builder.config.BuildConfig`):
    `rules`: the rule layers every file gets ("auto": all up to 6 pieces, wcdf
    from 7; "all", "none", or a comma list of presets); `dtw`: whether files
    store DTW (None: up to 6 pieces); see :mod:`egtb.builder.contents`. A file
    lacking a requested layer or DTW is incomplete and is rebuilt. `min_pieces`: the smallest
    piece count built (the smaller tables must be complete).
    `memory`: the bytes the local workers may use together (default
    :func:`egtb.builder.budget.default_budget`), all processes together: what
    the workers' table caches and processes leave of it
    (:func:`egtb.builder.budget.pair_budget`) is for the pairs, each planned
    within it (:func:`egtb.builder.budget.plan_pair`), and pairs run side by side
    only while their estimates fit; a pair that fits in no way raises
    :class:`egtb.errors.MemoryBudgetError` before any work. `disk`: the bytes the table
    directory may take at the build's peak, what it holds already counted (default: what its
    disk has free); pairs run side by side only while their scratch files fit in it. `on_disk`
    puts every pair's values on disk (:mod:`egtb.formats.scratch`), checkpointed
    every `checkpoint_seconds`. `split_pairs`: which pairs run as unit tasks
    (default: :class:`Split` on a remote executor, none on the local pool).
    `compact`: once the pairs are done, write the compact files of every table of the
    directory that lacks them or is newer (:mod:`egtb.formats.compact`): True always, False
    never, None when the directory holds tables of :data:`COMPACT_FROM_PIECES` or more. The
    disk check before any work counts them. `native`: tables as compact files alone, no master
    (None: from :data:`egtb.builder.contents.NATIVE_PIECES` pieces on; see
    :mod:`egtb.builder.native`); `threats`: their WLD files leave threat positions out too
    (:mod:`egtb.rules.threats`). `max_per_side`: only the materials with at most that many pieces
    a side (:func:`egtb.builder.plan.plan_pairs`). `materials`: only the pairs of these
    materials (names such as ``"4k-4k"``; :func:`egtb.builder.plan.select_pairs`), whose
    dependencies must be complete or among them.

    `executor`: where the pairs run; None is the local process pool of `jobs`
    workers, else an :class:`egtb.executor.Executor` such as
    :class:`egtb.dask.executor.DaskPool` (a Dask cluster). `on_plan` is called with the plan
    (:class:`BuildPlan`) once it fits, before any work; with `plan_only` the build stops there.

    >>> build(2, directory=tmp_path, jobs=1, progress=False, rules="wcdf").positions  # doctest: +SKIP
    3488
    """
    config = replace(config or BuildConfig(), **options)
    for pieces in range(config.min_pieces, max_pieces + 1):
        contents_for(pieces, rules=config.rules, dtw=config.dtw, native=config.native,
                     threats=config.threats)  # ValueError
    if not isinstance(config.rules, str):
        config = replace(config, rules=tuple(config.rules))
    directory = master.resolve_dir(directory)
    directory.mkdir(parents=True, exist_ok=True)
    jobs = jobs or os.cpu_count() or 1
    if executor is not None and config.split_pairs is None and executor.remote:
        config = replace(config, split_pairs=Split())
    config = replace(config, memory=config.memory or budget.default_budget(),
                     materials=tuple(config.materials),
                     compact=_compacts(directory, max_pieces) if config.compact is None else config.compact)
    pairs, selected = config.pairs(max_pieces)
    with (nullcontext() if plan_only else directory_lock(directory)):
        handler = None if plan_only else _start_logging(directory)  # a plan writes nothing into it
        try:
            return _run(pairs, directory, config, jobs=jobs, selected=selected, progress=progress,
                        executor=executor, on_plan=on_plan or (lambda plan: None), plan_only=plan_only)
        finally:
            _stop_logging(handler)


@contextmanager
def directory_lock(directory: Path) -> Iterator[None]:
    """Hold the table directory's lock file (``build.lock``, an advisory ``flock``) while a build
    runs: a second build of the directory raises :class:`~egtb.errors.BuildRunningError` before
    any work instead of removing the first one's unfinished files and scratch. The kernel drops
    the lock when the process ends, however it ends, so a killed build leaves none behind.

    >>> import tempfile
    >>> with directory_lock(Path(tempfile.mkdtemp())):
    ...     pass
    """
    with open(directory / LOCK_NAME, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise BuildRunningError(f"{directory} is being built by {holder} (its {LOCK_NAME} is held): "
                                    "wait for it, or stop it first") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        fh.flush()
        try:
            yield
        finally:
            fh.truncate(0)
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(pairs: list[Pair], directory: Path, config: BuildConfig, *, jobs: int, selected: set[str] | None,
         progress: bool, executor: Executor | None, on_plan: Callable[[BuildPlan], None],
         plan_only: bool) -> BuildReport:
    report = BuildReport()
    start = time.perf_counter()
    if not plan_only:  # a plan changes nothing: another build may be running in the directory
        for tmp in master.remove_temporaries(directory) + native_files.remove_leftovers(directory):
            log.warning("removed unfinished file %s", tmp)
        for dropped in native_files.keep_dtz_on_one_side_in(directory):  # pairs a kill left with both
            log.info("deleted %s: its pair's DTZ is kept on the other side", dropped.name)
    checked = master.CheckedFiles(directory)
    found = find_complete(pairs, directory, rules=config.rules, dtw=config.dtw, native=config.native,
                          min_pieces=config.min_pieces, checked=checked, read_only=plan_only)
    report.skipped, report.rebuilt, done = found.skipped, found.rebuilt, found.done
    todo = [p for p in pairs if p.key not in done and p.materials[0].pieces >= config.min_pieces
            and (selected is None or p.key in selected)]
    missing = {d for p in todo for d in p.depends} - done - {p.key for p in todo}
    if missing and not plan_only:
        raise MissingTableError(f"tables needed but not built: {sorted(missing)}"
                                + (" (build them first, or add them to --materials)" if selected else ""))
    contents = {p.key: config.pair_contents(p) for p in todo}
    _check_compact_dependencies(todo, directory, contents)
    cache_bytes = None
    memory = config.memory
    if executor is None:  # the workers' table caches and processes come out of the budget
        cache_bytes = budget.cache_budget(memory, most=min(CACHE_BYTES, process_cache().max_bytes))
        memory = budget.pair_budget(memory, jobs=jobs, cache_bytes=cache_bytes)
    plans, report.plan = _plan_build(  # before any work; refused here unless only planning
        todo, directory, config, contents=contents, memory=memory, jobs=jobs,
        bits=budget.stored_bits(directory, [m for p in pairs for m in p.materials]),
        compact_positions=_compact_positions(directory, todo, contents) if config.compact else 0,
        processes=config.memory - memory if executor is None else 0, strict=not plan_only)
    log.info("%s", report.plan.text())
    on_plan(report.plan)
    if plan_only:
        return report
    for path in scratch.scratch_dirs(directory):
        if path.name[:-len(scratch.SCRATCH_SUFFIX)] in done:
            log.warning("removed the scratch directory %s of a finished pair", path)
            scratch.remove_scratch(path)
    log.info("building %d pairs (%d positions) with %d jobs into %s", len(todo),
             sum(p.positions for p in todo), jobs, directory)
    bars = progress_bars.Bars(todo, enabled=progress)
    with (process_cache().bounded(cache_bytes) if cache_bytes else nullcontext()):
        # forked workers inherit the bound
        for record in run_pairs(todo, directory, replace(config, memory=memory), jobs=jobs,
                                executor=executor, plans=plans, scratch_room=report.plan.scratch_room,
                                on_progress=bars.advance):
            bars.update(record)
            report.records.append(record)
            report.built += [t["material"] for t in record.tables]
            for table in (t for t in record.tables if not t.get("native")):
                checked.record(master.table_path(directory, Material.parse(table["material"])))
            checked.save()
            report.positions += record.positions
    bars.close()
    if config.compact:
        report.compacted = _compact_tables(directory, jobs=jobs)
    report.seconds = time.perf_counter() - start
    log.info("build finished: %d tables in %.1fs", len(report.built), report.seconds)
    return report


def _plan_build(todo: list[Pair], directory: Path, config: BuildConfig, *, contents: dict, memory: int,
                jobs: int, bits: dict, compact_positions: int, processes: int,
                strict: bool) -> tuple[dict[str, budget.PairPlan], BuildPlan]:
    """Each pair's plan within `memory` (:func:`egtb.builder.plan.plan_memory`) and the build's
    (:class:`BuildPlan`); `strict` raises MemoryBudgetError for the first thing that does not fit,
    else the plan lists them (``refused``) and counts the pairs that fit."""
    plans: dict[str, budget.PairPlan] = {}
    refused = []
    for pair in todo:
        try:
            plans.update(plan_memory([pair], memory, rules=contents[pair.key].names, dtw=contents[pair.key].dtw,
                                     native=contents[pair.key].native, on_disk=config.on_disk,
                                     directory=directory))
        except MemoryBudgetError as exc:
            if strict:
                raise
            refused.append(str(exc))
    planned = [p for p in todo if p.key in plans]
    reusable = scratch.bytes_in(directory, [p.key for p in todo])  # a resumed pair's scratch
    held = master.bytes_on_disk(directory) - reusable
    room = shutil.disk_usage(directory).free + reusable
    if config.disk is not None:
        room = min(room, config.disk - held)
    try:
        need = budget.check_build_disk(planned, plans, contents, jobs=jobs, free=room, directory=directory,
                                       bits=bits, compact_positions=compact_positions)
    except MemoryBudgetError as exc:
        if strict:
            raise MemoryBudgetError(f"{exc}{_disk_budget_text(config, held)}") from None
        need = budget.check_build_disk(planned, plans, contents, jobs=jobs, free=1 << 62, directory=directory,
                                       bits=bits, compact_positions=compact_positions)
        least = budget.check_build_disk(planned, plans, contents, jobs=1, free=1 << 62, directory=directory,
                                        bits=bits, compact_positions=compact_positions)
        refused.append(f"the build needs about {budget.format_bytes(need)} of disk at its peak "
                       f"({budget.format_bytes(least)} with the pairs on disk one at a time), "
                       f"{directory} has {budget.format_bytes(room)} for it{_disk_budget_text(config, held)}")
    log.info("the build needs about %s of disk at its peak", budget.format_bytes(need))
    largest = sorted((plans[p.key].bytes for p in planned), reverse=True)[:jobs]
    files = sum(budget.pair_file_bytes(p, contents[p.key], bits) for p in planned)
    seconds = {p.key: budget.cpu_seconds(p.positions, contents[p.key], pieces=p.materials[0].pieces,
                                        regenerating=p.key in plans and plans[p.key].per_pass > 0) for p in todo}
    split = config.split_pairs

    def wall(pair: Pair) -> float:  # a split pair's units run on every worker
        return seconds[pair.key] / (jobs if split is not None and pair.positions >= split.positions else 1)

    chain = max(longest_chains(todo, weight=wall).values(), default=0.0)
    return plans, BuildPlan(
        len(todo), sum(p.positions for p in todo), sum(seconds.values()), jobs, need, room,
        min(memory, sum(largest)) + processes, config.memory, tuple(refused), wall_seconds=chain,
        held=held, scratch_room=max(room - files, 0))


def _disk_budget_text(config: BuildConfig, held: int) -> str:
    """What a --disk budget leaves, for a refusal ('' without one)."""
    if config.disk is None:
        return ""
    return (f" (the --disk budget of {budget.format_bytes(config.disk)}, less the "
            f"{budget.format_bytes(held)} the directory holds)")


def _check_compact_dependencies(todo: list[Pair], directory: Path, contents: dict) -> None:
    """Refuse, before any work, a pair that needs more of a dependency than its compact files hold
    (DTW, a rule layer other than wcdf) when that dependency has no master
    (:func:`egtb.builder.native.refuse_unheld`). `contents`: by pair key."""
    for pair in todo:
        if native_files.holds(contents[pair.key]):
            continue
        for material in dependency_materials(pair):
            if native_files.is_native_only(directory, material):
                native_files.refuse_unheld(directory, material, contents[pair.key], needed_by=pair.key)


def _compacts(directory: Path, max_pieces: int) -> bool:
    """Whether a build up to `max_pieces` leaves a directory holding tables of
    :data:`COMPACT_FROM_PIECES` or more (which then gets compact files, unasked)."""
    return max_pieces >= COMPACT_FROM_PIECES or any(m.pieces >= COMPACT_FROM_PIECES
                                                    for m in master.stored_materials(directory))


def _compact_positions(directory: Path, todo: list[Pair], contents: dict) -> int:
    """Positions of the tables whose compact files a build of `todo` will write once its pairs
    are done: the pairs' own that get a master (a compact-native pair's files are its table,
    counted with the others), and the tables already there whose compact files are missing or
    stale."""
    from egtb.builder.compaction import stale_materials
    materials = ({m for p in todo if not contents[p.key].native for m in p.materials}
                 | set(stale_materials(directory)))
    return sum(count_positions(m) for m in materials)


def _compact_tables(directory: Path, *, jobs: int) -> list[str]:
    """Write the compact files of every table of the directory whose files are missing or older
    than the master (a compact file's capture positions are answered from the smaller tables'
    compact files, so they are only of use all together); return the materials compacted."""
    from egtb.builder.compaction import compact_directory, stale_materials
    stale = stale_materials(directory)
    if stale:
        log.info("writing the compact files of %d tables", len(stale))
        compact_directory(directory, jobs=jobs, materials=stale, only_stale=True)
    return [m.name for m in stale]


def run_pairs(todo: list[Pair], directory: Path, config: BuildConfig | None = None, *, jobs: int = 1,
              executor: Executor | None = None, plans: dict[str, budget.PairPlan] | None = None,
              scratch_room: int | None = None,
              on_progress: Callable[[int, int], None] | None = None) -> Iterator[PairRecord]:
    """Yield the record of each pair of `todo` as it completes (the pairs it depends on outside
    `todo` exist), the pair's worker added (``host``, ``pid``).

    `config`: the build's options (:class:`~egtb.builder.config.BuildConfig`: the rule layers,
    DTW, native, memory, checkpoints, split pairs). `executor`: where (None: a
    :class:`~egtb.executor.LocalPool` of `jobs`, whose workers count into shared progress
    counters, :mod:`egtb.builder.progress`). `plans` (by key,
    :func:`egtb.builder.plan.plan_memory`; default planned for the config's memory): how each
    pair runs; the local pool starts a ready pair only while the running ones' estimates and its
    own fit in that memory, and their scratch files in `scratch_room` bytes (default: the disk's
    free space), or nothing else runs. `on_progress(positions, units)` is called with the totals
    solved so far by this run: by the local pool of `jobs` about every
    :data:`egtb.executor.POLL_SECONDS` while pairs are being solved (from the workers'
    counters) and after each pair; with an `executor`, after each pair.
    A pair that fails raises :class:`~egtb.errors.SolverError` naming its materials.
    """
    config = config or BuildConfig()
    memory = config.memory or budget.default_budget()
    plans = plans or plan_memory(todo, memory, rules=config.rules, dtw=config.dtw, native=config.native)
    on_progress = on_progress or (lambda positions, units: None)
    counters = progress_bars.SharedCounters(jobs) if executor is None else None  # live progress, locally
    executor = executor or LocalPool(jobs, initializer=progress_bars.count_into, initargs=(counters,))
    tasks, pair_of_task, records = _tasks(todo, directory, config, plans=plans)
    limits = {"memory": memory,
              "disk": shutil.disk_usage(directory).free if scratch_room is None else scratch_room}
    positions = units = 0
    run = executor.run(tasks, limits=limits, setup=pipeline.warm_up, directories=[directory],
                       writable=True, logger="egtb",
                       on_wait=(lambda: on_progress(*counters.totals())) if counters else None)
    try:
        with closing(run):  # closed early: the executor stops its tasks
            for finished in run:
                if finished.task.key not in records:
                    continue  # a unit task of a split pair
                record = replace(finished.result, host=finished.host, pid=finished.pid)
                positions += record.positions
                units += record.units
                if counters is None:
                    on_progress(positions, units)
                yield record
    except TaskError as exc:
        pair = pair_of_task.get(exc.key)
        if pair is None:
            raise
        materials = "/".join(m.name for m in pair.materials)
        cause = exc.__cause__
        raise SolverError(f"building {materials} failed"
                          f"{' on the cluster' if executor.remote else ''}: "
                          f"{type(cause).__name__}: {cause}") from cause
    finally:
        if executor.remote:
            removed = [p.name for p in master.remove_temporaries(directory)]
            if removed:
                log.info("removed unfinished files of workers that died: %s", removed)


def _tasks(todo: list[Pair], directory: Path, config: BuildConfig, *,
           plans: dict[str, budget.PairPlan]) -> tuple[list[Task], dict[str, Pair], set[str]]:
    """The build's tasks, each pair's after the last tasks of the pairs it depends on (`todo` is
    in dependency order); the pair of each task by key; the keys of the tasks that return a
    pair's record (each pair's last)."""
    chains = longest_chains(todo)
    tasks: list[Task] = []
    pair_of_task: dict[str, Pair] = {}
    last: dict[str, str] = {}  # pair key -> the key of its last task
    for pair in todo:
        dependencies = dependency_materials(pair)
        after = tuple(last[key] for key in sorted(pair.depends) if key in last)
        plan = plans[pair.key]
        contents = config.pair_contents(pair)
        if config.split_pairs is not None and pair.positions >= config.split_pairs.positions:
            mapped = plan if plan.on_disk else budget.plan_pair(  # a split pair runs on disk
                pair, dependencies, contents=contents, budget=config.memory or budget.default_budget(), on_disk=True)
            made = split.pair_tasks(directory, pair, dependencies, contents, per_pass=mapped.per_pass,
                                    after=after, priority=chains[pair.key],
                                    positions=config.split_pairs.task_positions, memory=mapped.bytes,
                                    disk=mapped.disk, part_positions=config.split_pairs.part_positions)
        else:
            made = [Task(f"egtb-pair-{pair.key}", _build_pair_task,
                         (str(directory), pair, dependencies),
                         {"contents": contents, "plan": plan, "checkpoint_seconds": config.checkpoint_seconds},
                         after=after, priority=chains[pair.key],
                         costs={"memory": plan.bytes, "disk": plan.disk})]
        tasks += made
        pair_of_task.update((task.key, pair) for task in made)
        last[pair.key] = made[-1].key
    return tasks, pair_of_task, set(last.values())


def _build_pair_task(directory: str, pair: Pair, dependencies: list, *, contents: Contents,
                     plan: budget.PairPlan, checkpoint_seconds: float, after: Sequence = ()) -> PairRecord:
    """A pair's task: :func:`egtb.builder.pipeline.build_pair`, counting into this worker's progress
    counters when the local pool gave it some. `after`: the records of the pairs it depends on
    (unused: the task waits for them)."""
    return pipeline.build_pair(Path(directory), pair, dependencies, contents=contents,
                               progress=progress_bars.worker_counters(), plan=plan,
                               checkpoint_seconds=checkpoint_seconds)


def _start_logging(directory: Path) -> logging.Handler:
    """Log the build into the directory's build.log (beside the logging a caller set up)."""
    handler = logging.FileHandler(directory / LOG_NAME)
    handler.setFormatter(logging.Formatter("%(asctime)s %(processName)s %(levelname)s "
                                           "%(message)s"))
    logger = logging.getLogger("egtb")
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    return handler


def _stop_logging(handler: logging.Handler | None) -> None:
    if handler is not None:
        logging.getLogger("egtb").removeHandler(handler)
        handler.close()
