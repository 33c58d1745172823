"""Memory budget of a build: what a pair needs, and how it runs within a budget.

A pair is solved with its values and those of the tables its exits reach in
flat arrays (:class:`egtb.builder.dependency_load.FlatTables`: 3 bytes a position for the
values and DTW when they are solved, 1 per rule layer, and 2 more per layer for
the pair's own positions) and the solver's work arrays for its largest unit.
Up to 6 pieces everything fits in a few GB; at 7 pieces (the ``wcdf`` layer
alone) a pair with men holds up to 4.7 G positions with its dependencies
(10.4 GB) and the all-kings units up to 236 M nodes (70 GB of edge lists).
:func:`plan_pair` picks, for a byte budget, the first of these ways to run a
pair that fits:

1. values in RAM, edge lists (:func:`egtb.builder.solve.solve_units`): the fastest;
2. values in RAM, the few-bytes-per-node kernel (:mod:`egtb.builder.solve_regen`),
   as many tables per move generation pass as fit;
3. values memory-mapped on a scratch file next to the tables
   (:mod:`egtb.formats.scratch`, checkpointed), edge lists;
4. values memory-mapped, the few-bytes-per-node kernel.

For the memory-mapped ways the estimate counts :data:`DISK_RESIDENT` bytes of
page cache for the working set (the unit being solved, the units its man moves
reach, the exits' targets).

>>> from egtb.builder.plan import plan_pairs, dependency_materials
>>> pair = plan_pairs(3)[3]
>>> from egtb.builder.contents import contents_for
>>> plan = plan_pair(pair, dependency_materials(pair), contents=contents_for(3), budget=1 << 30)
>>> plan.on_disk, plan.per_pass
(False, 0)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from egtb.errors import MemoryBudgetError
from egtb.builder import predecessors, solve, solve_regen, spilling
from egtb.formats import scratch
from egtb.formats.spill import RELEASE_LAG_POSITIONS, SPILLED_BYTES_A_POSITION
from egtb.positions.index import slice_unit_size
from egtb.positions.material import count_positions

#: Page cache (bytes) counted for a pair whose values are memory-mapped.
DISK_RESIDENT = 2 << 30
#: Pairs of this many positions or more run on disk, checkpointed: at 0.5 CPU microseconds a
#: position (7 pieces, edge lists) a smaller one takes at most about 5 minutes, the checkpoint
#: interval, which is what a killed build may redo of a pair. (A unit is never cut: an
#: all-kings pair is one unit, 3k-4k about 5 minutes with the regenerating kernel.)
CHECKPOINTED_POSITIONS = 1 << 29
#: Share of the physical memory a build uses by default.
DEFAULT_SHARE = 0.6
#: Bytes in a GB, as ``--memory`` counts them.
GB = 1 << 30


@dataclass(frozen=True)
class PairPlan:
    """How one pair runs, and the memory it needs that way."""

    key: str
    """The pair (name of its first material)."""
    on_disk: bool
    """Values memory-mapped on a scratch file (:mod:`egtb.formats.scratch`), with checkpoints."""
    per_pass: int
    """0: edge lists; n > 0: the compact kernel with n tables per move generation pass."""
    bytes: int
    """Estimated peak RAM of the worker solving it."""
    disk: int = 0
    """Bytes of its scratch files when on disk (:func:`scratch_bytes`)."""


def default_budget() -> int:
    """:data:`DEFAULT_SHARE` of this machine's physical memory, in bytes.

    >>> default_budget() > 0
    True
    """
    return int(DEFAULT_SHARE * os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


#: Memory a build process holds besides its pairs' arrays and table cache (interpreter,
#: numpy, numba kernels: a worker 229 MB after the 4-piece pairs, the parent 159 MB).
PROCESS_BYTES = 256 << 20
#: Measured peaks run up to 16% above the estimates: a 6-piece build with ``--memory 8``
#: and a margin of 1.1 peaked at 8,320 MB summed, 5.5 GB of it for 4.77 GB of estimates.
ESTIMATE_MARGIN = 1.25
#: Share of a build's memory that each worker's table cache may take (at most the build's cap).
CACHE_SHARE = 1 / 16


def cache_budget(memory: int, *, most: int) -> int:
    """Bytes each worker's table cache may keep in a build of `memory` bytes: a share, at most `most`.

    >>> cache_budget(8 * GB, most=GB) / GB, cache_budget(32 * GB, most=GB) / GB
    (0.5, 1.0)
    """
    return min(most, int(memory * CACHE_SHARE))


def pair_budget(memory: int, *, jobs: int, cache_bytes: int) -> int:
    """Bytes the running pairs' estimates may add up to, out of a build's `memory`.

    Each of the `jobs` workers also keeps a table cache of up to `cache_bytes`
    and its process; the parent keeps its own; the rest, less the estimates'
    margin, is for the pairs.

    >>> round(pair_budget(8 * GB, jobs=2, cache_bytes=GB // 2) / GB, 2)
    5.0
    """
    rest = memory - jobs * (cache_bytes + PROCESS_BYTES) - PROCESS_BYTES
    if rest <= 0:
        raise MemoryBudgetError(f"a memory budget of {memory / GB:.1f} GB leaves nothing for "
                                f"the pairs of {jobs} jobs (each keeps {cache_bytes / GB:.1f} GB "
                                f"of tables and {PROCESS_BYTES / GB:.2f} GB of process)")
    return int(rest / ESTIMATE_MARGIN)


def values_bytes(positions: int, contents, *, own: int = 0) -> int:
    """Bytes of the flat value arrays for `positions` positions, `own` of them the pair's,
    holding `contents` (:class:`egtb.builder.contents.Contents`): in memory as on disk
    (:func:`egtb.formats.scratch.scratch_bytes`).

    >>> from egtb.builder.contents import contents_for
    >>> values_bytes(1000, contents_for(6)), values_bytes(1000, contents_for(7), own=400)
    (4002, 1000)
    """
    return scratch.scratch_bytes(positions, own, dtw=contents.dtw, presets=contents.presets)


def unit_nodes(pair) -> int:
    """Nodes of the pair's largest unit (one or two halves of king placements)."""
    first = pair.materials[0]
    halves = 1 if (len(pair.materials) == 1 and first.men == 0) else 2
    return halves * slice_unit_size(first)


def edge_scratch_bytes(pair, tables: int) -> int:
    """Bytes of :class:`egtb.builder.solve.Scratch` and the propagation's arrays for a pair."""
    first = pair.materials[0]
    nodes = unit_nodes(pair)
    unit = slice_unit_size(first)
    kings = first.black_kings + (first.white_kings if nodes == 2 * unit else 0)
    edges = 4 * unit * kings
    way = predecessors.predecessor_way(unit, tables=tables)
    return (2 * 8 * nodes  # kings
            + (8 * (nodes + 1) + 4 * edges if way != predecessors.TOLD else 0)  # predecessor lists
            + (8 * (nodes + 1) + 4 * edges if way == predecessors.INVERTED  # the successor lists
               else (nodes + 7) // 8)  # or the stepping bits
            + tables * nodes * 5 * np.dtype(solve.NODE_DTYPE).itemsize  # node tables
            + (solve.ENTRIES_PER_NODE * nodes + 1) * 2 * 4  # bucket entries
            + nodes * 6)  # resolved, processed, depth


def plan_pair(pair, dependencies, *, contents, budget: int, on_disk: bool = False, beside: int = 0) -> PairPlan:
    """The first way to run `pair` (see the module) whose estimate fits in `budget` bytes.

    `contents`: the tables solved (:class:`egtb.builder.contents.Contents`). `beside`: bytes of
    the tables loaded beside its flat arrays (:func:`egtb.builder.plan.beside_bytes`).
    `on_disk` considers only the ways with values on disk, as does a pair of
    :data:`CHECKPOINTED_POSITIONS` or more. Raises :class:`MemoryBudgetError`
    naming the pair and the least it needs.
    """
    on_disk = on_disk or pair.positions >= CHECKPOINTED_POSITIONS
    positions = pair.positions + sum(count_positions(m) for m in dependencies)
    tables = contents.tables
    nodes = unit_nodes(pair)
    options = []
    for mapped in ((True,) if on_disk else (False, True)):
        held = DISK_RESIDENT if mapped else values_bytes(positions, contents, own=pair.positions)
        held += beside
        if solve.edge_lists_fit(nodes):
            options.append(PairPlan(pair.key, mapped, 0, held + edge_scratch_bytes(pair, tables)))
        for per_pass in range(tables, 0, -1):
            options.append(PairPlan(pair.key, mapped, per_pass,
                                    held + nodes * solve_regen.node_bytes(per_pass)))
        if mapped:
            disk = scratch_bytes(pair, dependencies, contents=contents)
            options = [replace(o, disk=disk) if o.on_disk else o for o in options]
    for plan in options:
        if plan.bytes <= budget:
            return plan
    least = min(plan.bytes for plan in options)
    raise MemoryBudgetError(f"pair {pair.key} needs at least {format_bytes(least)} "
                            f"(its largest unit has {nodes:,} nodes), more than the memory "
                            f"budget of {format_bytes(budget)}; raise --memory")


def scratch_bytes(pair, dependencies, *, contents) -> int:
    """Bytes of a pair's scratch files on disk: the values of its positions and its dependencies'
    (:func:`egtb.formats.scratch.scratch_bytes`); a spilled DTZ (:mod:`egtb.builder.spilling`) at
    :data:`egtb.formats.spill.SPILLED_BYTES_A_POSITION`, with the positions of
    :data:`SPILL_LAG_POSITIONS` still whole between two checkpoints and those of
    :data:`egtb.formats.spill.RELEASE_LAG_POSITIONS` spilled but not yet given back."""
    total = scratch.flat_starts([pair.positions], [count_positions(m) for m in dependencies])[1]
    arrays = scratch.scratch_bytes(total, pair.positions, dtw=contents.dtw, presets=contents.presets)
    if not spilling.spills_dtz(contents.presets, on_disk=True, native=contents.native):
        return arrays
    dtz = pair.positions  # one byte a position (scratch.dtz_type)
    return arrays - dtz + int(dtz * SPILLED_BYTES_A_POSITION) + min(dtz, SPILL_LAG_POSITIONS + RELEASE_LAG_POSITIONS)


#: Positions of a spilled DTZ that the plan counts whole: those solved between two checkpoints
#: (5 minutes at 0.24 CPU us a position: 1.25 G), pages shared with unfinished units included.
SPILL_LAG_POSITIONS = 2 * 10**9


def check_disk(pair, dependencies, *, contents, free: int, directory) -> None:
    """Raise :class:`MemoryBudgetError` when a pair's scratch files would not fit in `free` bytes.

    A pair on disk maps its values (:func:`scratch_bytes`) in ``<directory>/<pair>.pair.tmp/``.
    """
    need = scratch_bytes(pair, dependencies, contents=contents)
    if need > free:
        raise MemoryBudgetError(f"pair {pair.key} needs {format_bytes(need)} of scratch files "
                                f"on disk, {directory} has {format_bytes(free)} free")


#: Stored bits a position of the values, the DTW, a rule layer and the compact files (``.wld``,
#: ``.wcdf``, ``.dtz`` and their marks files), when no finished table of the directory shows them
#: (the 6-piece files: 0.34, 3.15, 1.08 for wcdf and 0.39 without .dtz files; the 7-piece compact
#: files: 0.66, of which 0.37 the .dtz files with their marks).
DEFAULT_BITS = {"wld": 0.5, "dtw": 4.0, "layer": 2.0, "compact": 0.8}
#: Margin on estimated file sizes: bigger tables compress differently.
FILE_MARGIN = 1.5


def stored_bits(directory, materials) -> dict[str, float]:
    """Stored bits a position of the values, DTW, a rule layer and the compact files, measured
    on the files of the `materials` present in `directory`: the masters of the most pieces for the
    first three, the compact files of the most pieces (a compact-native table's, or a master's)
    for the last, so that an 8-piece build's compact-native files are estimated at the rate of the
    8-piece files already written, not of the 7-piece masters' compact files (which hold
    larger DTZ files); :data:`DEFAULT_BITS` for what none shows.

    The compact files' rate is also given by the split of their pieces between the sides
    (:func:`side_split`, key ``compact 5-3``), where files of that split are present: at 7
    pieces those of 5 against 2 take 0.07 bits a position, of 4 against 3 1.13, so the rate of
    one split says little of another's (:func:`file_bytes` takes a split's own when it has one).

    >>> stored_bits("/nonexistent", []) == DEFAULT_BITS
    True
    """
    from egtb.formats import master
    present = [m for m in materials if master.table_path(directory, m).exists()]
    top = max((m.pieces for m in present), default=0)
    sums = {"wld": [0, 0], "dtw": [0, 0], "layer": [0, 0], "compact": [0, 0]}
    for material in (m for m in present if m.pieces == top):
        for name, size in master.stored_bytes(master.table_path(directory, material)).items():
            kind = "layer" if name.startswith(master.RULES_GROUP) else name
            sums[kind][0] += 8 * size
            sums[kind][1] += count_positions(material)
    compacted = {m: compact_bytes(directory, m) for m in set(materials)}
    compacted = {m: size for m, size in compacted.items() if size}
    top_compact = max((m.pieces for m in compacted), default=0)
    for material, size in compacted.items():
        if material.pieces == top_compact:
            for kind in ("compact", f"compact {side_split(material)}"):
                total = sums.setdefault(kind, [0, 0])
                total[0] += 8 * size
                total[1] += count_positions(material)
    return {kind: bits / positions if positions else DEFAULT_BITS[kind]
            for kind, (bits, positions) in sums.items()}


def side_split(material) -> str:
    """How a material's pieces split between the sides, the larger first (its class of files).

    >>> from egtb.positions.material import Material
    >>> side_split(Material.parse("1m2k-2m3k")), side_split(Material.parse("2k-1k"))
    ('5-3', '2-1')
    """
    sides = sorted((material.black_men + material.black_kings, material.white_men + material.white_kings))
    return f"{sides[1]}-{sides[0]}"


def compact_bytes(directory, material) -> int:
    """Bytes of a material's compact files and their marks files in `directory` (0: none)."""
    from egtb.formats.compact import compact_paths, marks_path
    return sum(p.stat().st_size for path in compact_paths(directory, material)
               for p in (path, marks_path(path)) if p.exists())


def file_bytes(positions: int, contents, bits: dict[str, float], *, material=None) -> int:
    """Estimated bytes of the files of `positions` positions holding `contents`, with the margin;
    compact files at the rate of `material`'s side split when `bits` has one (:func:`stored_bits`).

    >>> from egtb.builder.contents import contents_for
    >>> file_bytes(8_000_000, contents_for(7), DEFAULT_BITS) / 1e6
    3.75
    >>> from egtb.positions.material import Material
    >>> native, bits = contents_for(8), dict(DEFAULT_BITS, **{"compact 5-3": 0.2})
    >>> [file_bytes(8_000_000, native, bits, material=Material.parse(m)) / 1e6 for m in ("5k-3k", "4k-4k")]
    [0.3, 1.2]
    """
    if contents.native:  # compact files alone
        rate = bits["compact"] if material is None else bits.get(f"compact {side_split(material)}", bits["compact"])
        return int(FILE_MARGIN * positions * rate / 8)
    per_position = bits["wld"] + bits["dtw"] * contents.dtw + bits["layer"] * len(contents.presets)
    return int(FILE_MARGIN * positions * per_position / 8)


def pair_file_bytes(pair, contents, bits: dict[str, float]) -> int:
    """Estimated bytes of a pair's files (:func:`file_bytes`, at its side split's rate).

    >>> from egtb.builder.contents import contents_for
    >>> from egtb.builder.plan import plan_pairs
    >>> pair = next(p for p in plan_pairs(8, min_pieces=8) if p.key == "3k-5k")
    >>> pair_file_bytes(pair, contents_for(8), dict(DEFAULT_BITS, **{"compact 5-3": 0.5})) / 1e6
    110.44215
    """
    return file_bytes(pair.positions, contents, bits, material=pair.materials[0])


#: CPU seconds a position costs the solver, per table it solves (the rule-free one with DTW, each
#: rule layer) and once besides: the 7-piece build (values and wcdf) took 0.24 CPU microseconds a
#: position on this 2-core machine, every table up to 6 pieces with DTW and three layers 0.50.
CPU_SECONDS_A_TABLE = 0.12e-6
CPU_SECONDS_A_POSITION = 0.12e-6


#: CPU seconds a position costs the regenerating kernel (an all-kings pair too big for its edge
#: lists, :func:`plan_pair`), a table a pass: 4k-4k (736 M positions, the wcdf layer) took 846.7
#: CPU s, 1.15 us a position, five times the edge-list kernel's rate.
CPU_SECONDS_REGENERATING = 1.2e-6


#: CPU seconds a position costs a compact-native pair solved with edge lists, by piece count, where
#: measured on this machine (the model above says 0.24 us): the 7-piece set 0.36 us a position (52
#: pairs, 3.41 CPU hours); the 8-piece pairs, on disk, 0.385 (Dec 7: 4k-3m1k, 2m2k-2m2k and
#: 1m3k-3m1k, 32.97 G positions in 12,700.7 CPU s; 0.58-0.70 on Dec 6, with slower kernels):
#: putting their dependencies into the scratch, the DTZ spill and the compact write come on top
#: of the solve. bench/plan_distributed.py takes the same rate for 8 pieces and more.
CPU_SECONDS_NATIVE = {7: 0.36e-6, 8: 0.385e-6}


def cpu_seconds(positions: int, contents, *, regenerating: bool = False, pieces: int = 0) -> float:
    """Estimated CPU seconds of solving `positions` positions of `pieces` pieces holding
    `contents` (with the regenerating kernel when `regenerating`).

    >>> from egtb.builder.contents import contents_for
    >>> round(cpu_seconds(10**9, contents_for(6, native=False), pieces=6))
    600
    >>> eight = contents_for(8)
    >>> round(cpu_seconds(10**9, eight, pieces=8)), round(cpu_seconds(10**9, eight, regenerating=True))
    (385, 1200)
    """
    if regenerating:
        return positions * CPU_SECONDS_REGENERATING * contents.tables
    if contents.native and pieces in CPU_SECONDS_NATIVE:
        return positions * CPU_SECONDS_NATIVE[pieces] * contents.tables
    return positions * (CPU_SECONDS_A_POSITION + CPU_SECONDS_A_TABLE * contents.tables)


def check_build_disk(todo, plans: dict, contents: dict, *, jobs: int, free: int, directory,
                     bits: dict[str, float], compact_positions: int = 0) -> int:
    """Raise :class:`MemoryBudgetError` before any work when the whole build would not fit in
    the `free` bytes it may add to its directory; return the bytes it adds at its peak.

    The peak counts the files of every pair (:func:`file_bytes`, by the rates of
    :func:`stored_bits`), and the larger of two things that come after one another: the
    scratch files of the pairs on disk solved side by side (:func:`scratch_peak`: the `jobs`
    with the most, :attr:`PairPlan.disk`, as long as they fit beside the files, else fewer, down
    to the largest alone) and the compact files of `compact_positions` positions that the build
    writes once its pairs are done. `contents`: by pair key.

    A pair on disk whose scratch does not fit beside every file runs alone (the local pool's
    disk limit), and while it runs no pair that depends on it has started: its peak counts the
    files of the other pairs only (:func:`files_beside`). So the 8-piece 4-4 set, whose largest
    pair's scratch comes before most of the set's files, is planned as it runs.
    """
    files = {p.key: pair_file_bytes(p, contents[p.key], bits) for p in todo}
    total = sum(files.values())
    sizes = sorted(((plans[p.key].disk, p.key) for p in todo), reverse=True)
    room = free - total  # the scratch the local pool lets run at once (:attr:`BuildPlan.scratch_room`)
    alone = [(size, key) for size, key in sizes if size > room]  # each runs by itself
    together = scratch_peak([size for size, _ in sizes if size <= room], jobs=jobs, room=room)
    compact = int(FILE_MARGIN * compact_positions * bits["compact"] / 8)
    need = total + max(together, compact)
    if alone:
        beside = files_beside(todo, files)
        need = max(need, max(beside[key] + size for size, key in alone))
    if need > free:
        largest = max(files, key=files.get)
        scratch_text = ", ".join(f"{key} {format_bytes(size)}" for size, key in sizes[:jobs] if size)
        raise MemoryBudgetError(
            f"the build needs about {format_bytes(need)} of disk at its peak, {directory} has "
            f"{format_bytes(free)} for it: {format_bytes(total)} of table files for "
            f"{len(todo)} pairs (the largest, {largest}, about {format_bytes(files[largest])})"
            + (f", the scratch files of the largest pairs on disk ({scratch_text})"
               if scratch_text else "")
            + (f", the compact files {format_bytes(compact)}" if compact else ""))
    return need


def dependants(pairs) -> dict[str, list[str]]:
    """Per pair key, the keys of the pairs of `pairs` that depend on it directly (the build's
    graph, here because the disk peak needs it and :mod:`egtb.builder.plan` imports this module;
    :func:`egtb.builder.plan.longest_chains` walks it too).

    >>> from types import SimpleNamespace as Pair
    >>> dependants([Pair(key="a", depends=frozenset()), Pair(key="b", depends=frozenset({"a", "x"}))])
    {'a': ['b'], 'b': []}
    """
    found: dict[str, list[str]] = {pair.key: [] for pair in pairs}
    for pair in pairs:
        for key in pair.depends & found.keys():
            found[key].append(pair.key)
    return found


def files_beside(todo, files: dict[str, int]) -> dict[str, int]:
    """Per pair key, the bytes of the files (`files`, by key) that can exist while the pair is
    solved: every pair's but those of the pairs that depend on it, directly or not (they
    start once it is finished). Its own files count (written before its scratch is gone).

    >>> from types import SimpleNamespace as Pair
    >>> chain = [Pair(key="a", depends=frozenset()), Pair(key="b", depends=frozenset({"a"})),
    ...          Pair(key="c", depends=frozenset({"b"})), Pair(key="d", depends=frozenset())]
    >>> files_beside(chain, {"a": 1, "b": 10, "c": 100, "d": 1000})
    {'a': 1001, 'b': 1011, 'c': 1111, 'd': 1111}
    """
    direct = dependants(todo)
    after: dict[str, set[str]] = {}

    def later(key: str) -> set[str]:  # the pairs that cannot start before `key` is finished
        if key not in after:
            after[key] = set(direct[key]).union(*(later(k) for k in direct[key]))
        return after[key]

    total = sum(files.values())
    return {p.key: total - sum(files[k] for k in later(p.key)) for p in todo}


def scratch_peak(sizes: list[int], *, jobs: int, room: int) -> int:
    """Bytes of scratch files at once when pairs of these scratch `sizes` (largest first) run
    `jobs` at a time but only while their scratch files fit in `room` (the local pool's disk
    limit): the `jobs` largest together when they fit, else no more than `room`, and never less
    than the largest alone (which runs by itself, and is refused when over `room`).

    >>> scratch_peak([50, 30, 10], jobs=2, room=100), scratch_peak([50, 30, 10], jobs=2, room=60)
    (80, 60)
    >>> scratch_peak([50, 30], jobs=2, room=40), scratch_peak([], jobs=2, room=10)
    (50, 0)
    """
    if not sizes:
        return 0
    return max(sizes[0], min(sum(sizes[:jobs]), room))


def format_bytes(count: int) -> str:
    """A byte count in GB (MB below 0.1 GB), for messages.

    >>> format_bytes(3 * GB), format_bytes(5 << 20)
    ('3.00 GB', '5.0 MB')
    """
    return f"{count / GB:.2f} GB" if count >= GB // 10 else f"{count / (1 << 20):.1f} MB"
