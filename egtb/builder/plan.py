"""The build plan: which material pairs, in which order, what each needs, and whether it fits.

A pair is a material and its mirror, solved together. :func:`plan_pairs` lists
every pair up to N pieces with the pairs it depends on (captures lead to fewer
pieces, crownings to one man fewer), in a valid solving order;
:func:`longest_chains` ranks ready pairs (the critical path first);
:func:`find_complete` tells which pairs' files are already complete;
:func:`plan_memory` decides how each pair runs within the memory budget (in
memory or on disk, which kernel) and refuses a build that cannot fit before
any work. One pair's solving is :mod:`egtb.builder.pipeline`'s; running the
plan is :mod:`egtb.builder.driver`'s.

>>> [p.key for p in plan_pairs(2)]
['1k-1k', '1k-1m', '1m-1m']
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from egtb.builder import budget, rule_layer
from egtb.builder import native as native_files
from egtb.builder.contents import AUTO, Contents, contents_for
from egtb.errors import InvalidArgumentError
from egtb.formats import master, scratch
from egtb.formats.packed import packed_size
from egtb.positions.material import Material, all_materials, count_positions, pair_of, successor_materials

log = logging.getLogger("egtb.builder.plan")

#: Rule presets a build may be asked for (one rule layer each; DTW ignores the rule).
RULE_PRESETS = tuple(rule_layer.PRESETS)
#: Rule layers built by default: all of them up to 6 pieces, wcdf from 7 (:mod:`egtb.builder.contents`).
DEFAULT_RULES = AUTO


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


@dataclass(frozen=True)
class BuildPlan:
    """What a build will do and need, worked out before any work (:func:`egtb.builder.driver.build`)."""

    pairs: int
    """Pairs to solve."""
    positions: int
    """Their positions."""
    cpu_seconds: float
    """Estimated CPU seconds (:func:`egtb.builder.budget.cpu_seconds`)."""
    jobs: int
    """Workers."""
    disk: int
    """Bytes of disk at the build's peak (:func:`egtb.builder.budget.check_build_disk`)."""
    free: int
    """Bytes the build may add to the table directory: free on its disk (its scratch files
    counted as free), or less under a ``--disk`` budget."""
    memory: int
    """Bytes of RAM at most: the `jobs` largest pairs' estimates side by side (no more than the pairs'
    share of the budget, within which the local pool starts them), the processes and their caches."""
    budget: int
    """The memory budget (``--memory``)."""
    refused: tuple[str, ...] = ()
    """Why the build cannot run as asked (a pair that fits in no way, the disk), when only planned."""
    wall_seconds: float = 0.0
    """Estimated wall seconds: the CPU seconds over the jobs, or the longest chain of pairs that
    depend on each other (:func:`longest_chains` by CPU seconds) when longer (0: not worked out)."""
    held: int = 0
    """Bytes the table directory holds before the build (a resumed pair's scratch not counted)."""
    scratch_room: int = 1 << 62
    """Bytes the scratch files of the pairs running side by side may take at once: what the
    build may add, less its table files (the local pool's disk limit)."""

    def text(self) -> str:
        """One line for a person.

        >>> print(BuildPlan(2, 10**9, 3600.0, 2, 3 << 30, 10 << 30, 1 << 30, 8 << 30).text())
        plan: 2 pairs, 1,000,000,000 positions; about 1.0 CPU hours (0.5 h wall on 2 jobs); disk 3.00 GB at its peak (10.00 GB free); memory at most 1.00 GB (budget 8.00 GB)
        """
        return (f"plan: {self.pairs} pairs, {self.positions:,} positions; about "
                f"{self.cpu_seconds / 3600:.1f} CPU hours ({self.wall_hours:.1f} h wall on "
                f"{self.jobs} jobs); disk {budget.format_bytes(self.disk)} at its peak "
                f"({budget.format_bytes(self.free)} free{self._held_text()}); memory at most {budget.format_bytes(self.memory)} "
                f"(budget {budget.format_bytes(self.budget)})"
                + "".join(f"\nrefused: {reason}" for reason in self.refused))

    @property
    def wall_hours(self) -> float:
        """Estimated wall hours (:attr:`wall_seconds`, or the CPU hours over the jobs)."""
        return max(self.wall_seconds, self.cpu_seconds / self.jobs) / 3600

    def _held_text(self) -> str:
        return (f"; the directory then {budget.format_bytes(self.held + self.disk)}, with the "
                f"{budget.format_bytes(self.held)} it holds" if self.held >= budget.GB // 10 else "")


def plan_pairs(max_pieces: int, *, min_pieces: int = 2, max_per_side: int | None = None) -> list[Pair]:
    """Every pair with min..max pieces with its dependencies, in a valid solving order.

    `max_per_side`: only the materials with at most that many pieces a side (KingsRow's cut of
    its 10-piece set is 5); their dependencies keep within it, since a move never adds a piece.

    >>> [p.key for p in plan_pairs(2)]
    ['1k-1k', '1k-1m', '1m-1m']
    >>> len(plan_pairs(8, min_pieces=8, max_per_side=4)), len(plan_pairs(3, max_per_side=1))
    (15, 3)
    """
    keys = {}
    for material in all_materials(max_pieces, min_pieces=2):
        if max_per_side is not None and pieces_a_side(material) > max_per_side:
            continue
        keys.setdefault(pair_of(material)[0].name, pair_of(material))
    pairs = []
    for key, materials in keys.items():
        if materials[0].pieces < min_pieces:
            continue
        deps = {pair_of(s)[0].name for m in materials for s in successor_materials(m)}
        pairs.append(Pair(materials, frozenset(deps)))
    return sorted(pairs, key=lambda p: (p.materials[0].pieces, p.materials[0].men, p.key))


def select_pairs(pairs: list[Pair], names) -> set[str]:
    """Keys of the pairs that hold a material of `names` (either side first: a pair is built
    whole), for a build of some materials only (``egtb build --materials``).

    InvalidArgumentError names a material that is not one of `pairs` (a bad name, more pieces
    than the build goes to, or more pieces a side than it allows).

    >>> sorted(select_pairs(plan_pairs(3), ["1k-2k", "1m-1k"]))
    ['1k-1m', '1k-2k']
    """
    by_material = {m: p.key for p in pairs for m in p.materials}
    keys = set()
    for name in names:
        material = Material.parse(name)
        if material not in by_material:
            raise InvalidArgumentError(f"material {name!r} is not in this build (up to "
                                       f"{max(m.pieces for m in by_material)} pieces, as limited)")
        keys.add(by_material[material])
    return keys


def pieces_a_side(material: Material) -> int:
    """The larger side's piece count.

    >>> pieces_a_side(Material.parse("2m1k-1k"))
    3
    """
    return max(material.black_men + material.black_kings, material.white_men + material.white_kings)


def contents_of(pair: Pair, *, rules: str | tuple = DEFAULT_RULES,
                dtw: bool | None = None, native: bool | None = None, threats: bool = False) -> Contents:
    """What the files of a pair hold (:func:`egtb.builder.contents.contents_for` its piece count)."""
    return contents_for(pair.materials[0].pieces, rules=rules, dtw=dtw, native=native, threats=threats)


def dependency_materials(pair: Pair) -> list[Material]:
    """Sorted materials whose tables a pair's exits look up."""
    found = set()
    for material in pair.materials:
        found |= successor_materials(material)
    return sorted(found, key=lambda m: (m.pieces, m.name))


def longest_chains(pairs: list[Pair], *, weight: Callable[[Pair], float] | None = None) -> dict[str, float]:
    """Per pair, the positions (or the `weight`, such as CPU seconds) of the longest chain of
    pairs from it to the end of the build.

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
    dependants = budget.dependants(pairs)
    chains: dict[str, int] = {}

    def chain(key: str) -> int:
        if key not in chains:
            own = by_key[key].positions if weight is None else weight(by_key[key])
            chains[key] = own + max(map(chain, dependants[key]), default=0)
        return chains[key]

    for key in sorted(by_key, key=lambda k: by_key[k].materials[0].pieces):  # shallow recursion
        chain(key)
    return chains


def plan_memory(todo: list[Pair], memory: int, *, rules: str | tuple = DEFAULT_RULES,
                dtw: bool | None = None, native: bool | None = None, on_disk: bool = False,
                directory: Path | None = None) -> dict[str, budget.PairPlan]:
    """How each pair runs within `memory` bytes (:func:`egtb.builder.budget.plan_pair`), by key.

    `on_disk` plans every pair on disk. Raises
    :class:`~egtb.builder.budget.MemoryBudgetError` for the first pair that cannot
    fit, or (with `directory`) whose scratch files would not fit on its disk.
    """
    plans = {}
    free = shutil.disk_usage(directory).free if directory else None
    contents_by_key = {pair.key: contents_of(pair, rules=rules, dtw=dtw, native=native) for pair in todo}
    planned = frozenset(m for pair in todo if contents_by_key[pair.key].native
                        for m in pair.materials)  # compact-native once built, before their dependants
    for pair in todo:
        dependencies = dependency_materials(pair)
        contents = contents_by_key[pair.key]
        if directory:
            dependencies = dependencies + captured_natives(directory, dependencies, planned=planned)
        plan = budget.plan_pair(pair, dependencies, contents=contents, budget=memory, on_disk=on_disk,
                                beside=beside_bytes(directory, dependencies, planned=planned) if directory else 0)
        if plan.on_disk and free is not None:  # a resumed pair's scratch is reused
            budget.check_disk(pair, dependencies, contents=contents,
                              free=free + scratch.bytes_in(directory, [pair.key]), directory=directory)
        plans[pair.key] = plan
        if plan.on_disk or plan.per_pass:
            log.info("pair %s runs %s with the %s kernel (about %.2f GB)", pair.key,
                     "on disk" if plan.on_disk else "in memory",
                     f"compact ({plan.per_pass} tables a pass)" if plan.per_pass else "edge-list",
                     plan.bytes / budget.GB)
    return plans


def beside_materials(directory: Path, dependencies: list[Material], *,
                     planned: frozenset[Material] = frozenset()) -> list[Material]:
    """The masters a pair loads beside its flat arrays (:func:`egtb.builder.dependency_load.capture_tables`):
    those with fewer pieces that the captures of its compact-native dependencies (and of
    `planned`, as :func:`captured_natives`) reach outside them (one capture or several), fewest
    pieces first."""
    natives = [m for m in dependencies if m in planned or native_files.is_native_only(directory, m)]
    reached = {s for m in natives for s in successor_materials(m) if s.pieces < m.pieces} - set(dependencies)
    return sorted((m for m in reached if master.table_path(directory, m).exists()), key=lambda m: (m.pieces, m.name))


def captured_natives(directory: Path, dependencies: list[Material], *,
                     planned: frozenset[Material] = frozenset()) -> list[Material]:
    """The compact-native tables a pair puts into its flat arrays besides its `dependencies`:
    those that the captures of its compact-native dependencies reach outside them (and theirs in
    turn), fewest pieces first. Their capture positions are then answered from the flat arrays
    (:mod:`egtb.builder.dependency_captures`), not by the prober's capture search, which costs
    ten times as much a position (bench/bench_split_load.py). `planned`: the tables a build
    plans to write compact-native before the pair runs (a plan counts them as such)."""
    held, found = set(dependencies), []

    def native(material: Material) -> bool:
        return material in planned or native_files.is_native_only(directory, material)

    todo = [m for m in dependencies if native(m)]
    while todo:
        material = todo.pop()
        for reached in successor_materials(material):
            if reached.pieces < material.pieces and reached not in held and native(reached):
                held.add(reached)
                found.append(reached)
                todo.append(reached)
    return sorted(found, key=lambda m: (m.pieces, m.name))


def beside_bytes(directory: Path, dependencies: list[Material], *,
                 planned: frozenset[Material] = frozenset()) -> int:
    """Bytes of the tables of :func:`beside_materials`: their categories, packed three to a byte."""
    return sum(packed_size(count_positions(m))
               for m in beside_materials(directory, dependencies, planned=planned))


def _compact_alone(directory: Path, pair: Pair, *, native: bool, unstamped: bool) -> bool:
    """Whether a pair's tables are complete as compact files alone: compact-native files that are
    those their summaries name (:func:`egtb.builder.native.is_complete`, when `native`), or, when
    `unstamped` is allowed and there is no master at all, three compact files a material whose
    headers read (a master compacted, then deleted)."""
    if native and all(native_files.is_complete(directory, m) for m in pair.materials):
        return True
    return unstamped and not any(master.table_path(directory, m).exists() for m in pair.materials) and all(
        native_files.has_compact_table(directory, m) for m in pair.materials)


@dataclass
class Found:
    """What :func:`find_complete` found in the table directory."""

    done: set[str] = field(default_factory=set)
    """Keys of the pairs whose files are complete."""
    skipped: list[str] = field(default_factory=list)
    """Their materials."""
    rebuilt: list[str] = field(default_factory=list)
    """Materials whose files were broken (removed) or lack what is asked (overwritten when built)."""


def find_complete(pairs: list[Pair], directory: Path, *,
                  rules: str | tuple = DEFAULT_RULES, dtw: bool | None = None,
                  native: bool | None = None, min_pieces: int = 2,
                  checked: master.CheckedFiles | None = None, read_only: bool = False) -> Found:
    """The pairs whose files all pass the checksum and hold what `rules` and `dtw` ask
    (:func:`contents_of`).

    Broken files are reported and removed (with `read_only`, for a plan, nothing is removed or
    recorded); a file lacking a requested layer or
    DTW is reported as rebuilt too (it is overwritten when its pair is solved again).
    `checked`: the record of files already checked (:class:`egtb.formats.master.CheckedFiles`).
    A pair asked for compact-native is complete as its stamped files (:func:`_compact_alone`) or as
    masters holding its ``wcdf`` layer; a pair of fewer than `min_pieces` pieces (a dependency,
    not to be built) also as compact files alone, however they were written.
    """
    found = Found()
    checked = checked or master.CheckedFiles(directory)
    for pair in pairs:
        complete = True
        wanted = contents_of(pair, rules=rules, dtw=dtw, native=native)
        if _compact_alone(directory, pair, native=wanted.native,
                          unstamped=pair.materials[0].pieces < min_pieces):
            found.done.add(pair.key)
            found.skipped += [m.name for m in pair.materials]
            continue
        for material in pair.materials:
            path = master.table_path(directory, material)
            if not path.exists():
                complete = False
                continue
            try:
                present = checked.check(path)  # in slices, once: 7-piece files are big
            except master.TableError as exc:
                log.warning("%s; rebuilding it", exc)
                found.rebuilt.append(material.name)
                if not read_only:
                    path.unlink()
                complete = False
                continue
            lacking = [name for name in wanted.names if name not in present]
            if wanted.dtw and not master.has_dtw(path):
                lacking.append("dtw")
            if lacking:
                log.warning("%s lacks %s; rebuilding it", path, ",".join(lacking))
                found.rebuilt.append(material.name)
                complete = False
        if complete:
            found.done.add(pair.key)
            found.skipped += [m.name for m in pair.materials]
    if not read_only:
        checked.save()
    return found

