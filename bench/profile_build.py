"""Where a pair's build time goes: one pair built for real, its solve timed phase by phase (prints figures).

Run: ``.venv/bin/python bench/profile_build.py --tables DIR --pair KEY [--out DIR] [--compact-native] [--units N [--from-unit K]]``

Builds the pair ``KEY`` (e.g. ``2m1k-2m2k``) into ``--out`` (default a
temporary directory), reading its dependencies from ``--tables`` (a finished
directory, read only: they are linked into ``--out``), through the builder's
own path (:func:`egtb.builder.pipeline.build_pair`: load, solve, write, a pair
of 2^29 positions or more on disk with its checkpoints). Only the edge-list
kernel is replaced, by a loop over the same units calling its steps one at a
time, each timed in CPU seconds of this thread:

- locate and unrank: the unit's men and king placements;
- moves (``collect_moves``): every node's moves generated, the successors
  ranked, the exits' values read (the pair's own units solved earlier, the
  dependencies' packed categories) and folded into the node tables;
- predecessor lists (``list_predecessors`` for big units, else ``invert_edges``; none
  for one table, whose propagation finds a node's predecessors as it resolves it);
- propagation: the bucket queue of each table solved;
- finish: the layer check and the counters.

The load and the write are timed around the pipeline's calls, from its log
line ("solved KEY: ... (load, solve, write)"). A regenerating pair (all kings,
units too big for edge lists) is refused: its kernel has no steps to time.

``--units N`` solves a sample of N units and writes nothing (a pair too big to solve whole in
a profile); the figures are then a node solved, not a position of the pair. The pair's
scratch is not filled as unsolved first, so that only the sample's pages take disk, and
``--from-unit K`` starts the sample at the K-th unit of the pair's order: the units before it
are not solved, and their values read as draws (the sample's values are wrong, its work is
that of those units).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from egtb.builder import budget, native, pipeline, plan as planner, predecessors, solve
from egtb.builder.contents import contents_for
from egtb.builder.units import locate_unit
from egtb.formats import master, scratch
from egtb.positions.index import unit_size, unrank_unit
from egtb.positions.material import Material

PHASES = ("locate and unrank", "moves (collect_moves)", "predecessor lists", "propagation", "finish")


class UnitsDone(Exception):
    """The sample of ``--units`` is solved: the build stops there."""


class TimedKernel:
    """:func:`egtb.builder.solve.solve_units`, unit by unit from Python, each step timed; it stops
    the build (:class:`UnitsDone`) after `units` units when given."""

    def __init__(self, *, units: int | None = None, skip: int = 0) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.nodes = 0
        self.edges = 0
        self.units = 0
        self.limit = units
        self.skip = skip

    def _timed(self, phase: str, function, *args):
        start = time.thread_time()
        result = function(*args)
        self.seconds[phase] += time.thread_time() - start
        return result

    def __call__(self, counts, configs, offsets, wdl, dtw, rcat, rdtz, rdep, quiet_dtz, limits, man_resets,
                 bk_arr, wk_arr, succ_start, succ, stepping, pred_start, pred, node, entries, progress) -> int:
        size = unit_size(counts[0, 0], counts[0, 1], counts[0, 2], counts[0, 3])
        first = 1 if wdl.shape[0] > 0 else 0
        layers = limits.shape[0]
        _, men, base = solve.unit_buffers()
        step_base = np.empty((2, solve.STEP_SHIFTS, 32), dtype=np.int64)
        captures = solve.new_capture_buffer()
        heads = np.full(solve.MAX_DEPTH + 2, -1, dtype=np.int64)
        sources = predecessors.new_sources()
        share = 8 * (layers + first)
        for u in range(configs.shape[0]):
            if self.skip:  # before the sample (the pipeline may pass the units a chunk at a time)
                self.skip -= 1
                continue
            start = progress[solve.P_POSITIONS]
            halves = self._timed(PHASES[0], self._unrank, configs[u], counts, offsets, size, men, base,
                                 bk_arr, wk_arr)
            n = halves * size
            status, edges = self._timed(PHASES[1], solve.collect_moves, counts, halves, size, men, bk_arr,
                                        wk_arr, offsets, wdl, dtw, rcat, quiet_dtz, rdep, limits, man_resets,
                                        captures, step_base, succ_start, succ, stepping, node, progress)
            self.nodes += n
            self.edges += edges
            if status == solve.OK and edges == 0:
                status = self._timed(PHASES[3], solve.resolve_exits, n, node, size, base, wdl, dtw, rcat,
                                     rdtz, limits)
            elif status == solve.OK:
                steps = (solve.told(node, stepping), halves, size, counts, men, bk_arr, wk_arr, stepping,
                         sources)
                if steps[0]:
                    pass  # found as the propagation tells them
                elif stepping.shape[0]:
                    self._timed(PHASES[2], predecessors.list_predecessors, n, size, halves, counts, men, bk_arr,
                                wk_arr, stepping, pred_start, pred, sources)
                else:
                    self._timed(PHASES[2], predecessors.invert_edges, n, succ_start, succ, pred_start, pred)
                tables = [(node[0], wdl, dtw, -1)] if first else []
                tables += [(node[first + k], rcat[k], rdtz[k], limits[k]) for k in range(layers)]
                for table, values, distances, limit in tables:
                    if status == solve.OK:
                        status = self._timed(PHASES[3], solve.propagate, n, pred_start, pred, steps, table, entries,
                                             heads, size, base, values, distances, progress, share, limit)
            if status == solve.OK:
                status = self._timed(PHASES[4], solve.finish_unit, n, size, base, wdl, rcat, progress, start)
            if status != solve.OK:
                return status
            self.units += 1
            if self.units == self.limit:
                raise UnitsDone
        return solve.OK

    @staticmethod
    def _unrank(ca, counts, offsets, size, men, base, bk_arr, wk_arr) -> int:
        halves = locate_unit(ca, counts, offsets, size, men, base)
        for h in range(halves):
            unrank_unit(counts[h, 1], counts[h, 3], men[h, 0], men[h, 1],
                        bk_arr[h * size:(h + 1) * size], wk_arr[h * size:(h + 1) * size])
        return halves


class SolvedLine(logging.Handler):
    """Keeps the pipeline's "solved KEY: ..." log line."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.line = ""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("solved "):
            self.line = message


def link_dependencies(tables: Path, out: Path, dependencies: list[Material], pieces: int) -> None:
    """Symlinks in `out` to every file of the tables up to `pieces` in `tables` (dependencies
    and the compact-native tables their captures reach)."""
    out.mkdir(parents=True, exist_ok=True)
    wanted = {m.name for m in dependencies}
    for path in tables.iterdir():
        material = path.name.split(".")[0]
        try:
            count = Material.parse(material).pieces
        except ValueError:
            continue
        if (material in wanted or count < pieces) and not (out / path.name).exists():
            (out / path.name).symlink_to(path.resolve())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, required=True, help="finished tables the pair depends on (read only)")
    parser.add_argument("--pair", required=True, help="a material of the pair, e.g. 2m1k-2m2k")
    parser.add_argument("--out", type=Path, default=None, help="where the pair's files go (default: a temporary directory)")
    parser.add_argument("--compact-native", action="store_true", help="the pair as compact files alone (8 pieces' way)")
    parser.add_argument("--memory", type=float, default=8.0, help="GB the pair's plan may take (default 8)")
    parser.add_argument("--units", type=int, default=None,
                        help="solve a sample of N units, writing nothing (figures a node solved)")
    parser.add_argument("--from-unit", type=int, default=0, help="with --units: the sample's first unit (default 0)")
    args = parser.parse_args()
    material = Material.parse(args.pair)
    pair = next((p for p in planner.plan_pairs(material.pieces, min_pieces=material.pieces)
                 if material in p.materials), None)
    if pair is None:
        raise SystemExit(f"no pair {args.pair!r}")
    contents = contents_for(material.pieces, native=True if args.compact_native else None)
    dependencies = planner.dependency_materials(pair)
    missing = [m.name for m in dependencies  # a dependency is read from its master or its .wcdf file
               if not (master.table_path(args.tables, m).exists() or native.has_native(args.tables, m))]
    if missing:  # before the load, which would stop at the first after minutes
        raise SystemExit(f"{args.tables} has no table of {', '.join(missing)}, which {pair.key} depends on")
    out = args.out or Path(tempfile.mkdtemp(prefix="egtb-profile-"))
    link_dependencies(args.tables, out, dependencies, material.pieces)
    plan = budget.plan_pair(pair, dependencies, contents=contents, budget=int(args.memory * budget.GB))
    if plan.per_pass:
        raise SystemExit(f"{pair.key} runs on the regenerating kernel: nothing to time step by step")
    kernel = TimedKernel(units=args.units, skip=args.from_unit if args.units else 0)
    if args.units is not None:
        scratch.fill_slices = lambda mapped, value: None  # sparse scratch: the sample's pages alone
    solve.solve_units = kernel  # pipeline.solve_pair looks the kernel up at each call
    line = SolvedLine()
    logging.getLogger("egtb").addHandler(line)
    logging.getLogger("egtb").setLevel(logging.INFO)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        pipeline.build_pair(out, pair, dependencies, contents=contents, plan=plan)
    except UnitsDone:
        pass
    finally:
        if args.units is not None and args.out is None:  # the sample's scratch: nothing of it is kept
            shutil.rmtree(out)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    solved = sum(kernel.seconds.values())
    each, unit = (pair.positions, "position") if args.units is None else (max(kernel.nodes, 1), "node")
    print(f"pair {pair.key}: {pair.positions:,} positions, {'on disk' if plan.on_disk else 'in memory'}, "
          f"{contents.tables} table(s) solved; load average {os.getloadavg()[0]:.1f}")
    if args.units is None:
        print(f"  {line.line}")
    else:
        print(f"  a sample of {kernel.units} units from unit {args.from_unit}: {kernel.nodes:,} nodes ({kernel.nodes / max(kernel.units, 1):,.0f} a unit)")
    print(f"  wall {wall:.1f} s, CPU {cpu:.1f} s ({cpu / pair.positions * 1e9:.0f} ns a position of the pair)")
    print(f"  in-unit edges: {kernel.edges / max(kernel.nodes, 1):.2f} a node")
    print(f"  solve steps, CPU seconds of this thread ({solved:.1f} s, {solved / each * 1e9:.0f} ns a {unit}):")
    for phase, seconds in kernel.seconds.items():
        print(f"    {phase:24s} {seconds:9.2f} s  {seconds / each * 1e9:6.1f} ns a {unit}  "
              f"{100 * seconds / max(solved, 1e-9):5.1f}%")
    if args.units is not None:
        return
    written = sum(p.stat().st_size for m in pair.materials
                  for p in out.glob(f"{m.name}.*") if not p.is_symlink() and p.is_file())
    print(f"  files: {written:,} bytes ({8 * written / pair.positions:.3f} bits a position)")


if __name__ == "__main__":
    main()
