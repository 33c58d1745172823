"""Where a table build's time goes: one material pair solved phase by phase (prints figures).

Run: ``.venv/bin/python bench/profile_build.py [--pieces 5] [--pair KEY] [--tables DIR] [--out DIR]``

Builds every table up to ``--pieces`` (or reads a complete ``--tables DIR``
without writing there, e.g. ``--pair 2k-4k --tables /work/egtb6``), then solves
one pair again in this process (default: the largest pair with men on both
sides with the most pieces) and times each phase on its own, calling the
solver's kernels (:mod:`egtb.builder.solve`) one at a time:

- load: reading the dependency tables from disk into the flat arrays;
- unrank: men configuration and king placements of every unit;
- moves: ``collect_moves``, which generates every position's moves (set-wise,
  on the position mirrored once), ranks each successor (king steps in the
  unit, exits in their material), reads the exits' values and folds them into
  the node tables of every layer (one kernel: its steps are not timed apart);
- propagation: edge inversion, then the bucket-queue retrograde pass of the
  rule-free values and of each rule layer (``--rules``, default all);
- write: summaries and layer counts, then packing, checksums, compression
  and the HDF5 files (written to ``--out``).

Every phase is timed around the solver's own kernels, unit by unit. CPU
seconds of this process (``time.process_time``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from egtb.builder.contents import Contents  # noqa: E402
from egtb.builder import dependency_load, driver as builder, pipeline, plan as planner
from egtb.builder import rule_layer
from egtb.builder import solve, units
from egtb.positions.index import code_of_material, rank_men, slice_unit_size, unit_size, unrank_men, unrank_unit
from egtb.positions.material import Material, mirror_bb

def cpu(function, *args, **kwargs):
    """(result, CPU seconds) of one call."""
    start = time.process_time()
    result = function(*args, **kwargs)
    return result, time.process_time() - start


def pick_pair(pieces: int, key: str | None) -> planner.Pair:
    """The pair named `key`, or the largest pair of `pieces` pieces with men on both sides."""
    if key is not None:
        for pair in planner.plan_pairs(Material.parse(key).pieces):
            if key in (m.name for m in pair.materials):
                return pair
        raise SystemExit(f"no pair {key!r}")
    pairs = planner.plan_pairs(pieces)
    mixed = [p for p in pairs if p.materials[0].pieces == pieces
             and p.materials[0].black_men and p.materials[0].white_men]
    return max(mixed, key=lambda p: p.positions)


def warm_up(presets: tuple) -> None:
    """Load or compile every kernel the timings call (a two-piece pair solved in memory)."""
    pair = planner.plan_pairs(2)[0]
    tables = dependency_load.load_dependencies(Path("."), [], pair.materials, Contents(True, presets))
    pipeline.solve_pair(pair.materials, tables)


def profile_pair(directory: Path, out: Path, pair: planner.Pair, presets: tuple
                 ) -> list[tuple[str, float]]:
    """(phase, CPU seconds) of solving `pair` again from the tables in `directory` (read only).

    The pair's files are written to `out`.
    """
    materials = pair.materials
    first, last = materials[0], materials[-1]
    counts = np.array([[m.black_men, m.black_kings, m.white_men, m.white_kings] for m in (first, last)],
                      dtype=np.int64)
    configs = units.order_units(first.black_men, first.white_men, len(materials) == 1)
    warm_up(presets)
    tables, load = cpu(dependency_load.load_dependencies, directory, planner.dependency_materials(pair), materials,
                       Contents(True, presets))

    halves = 1 if (len(materials) == 1 and first.men == 0) else 2
    scratch = solve.Scratch(slice_unit_size(first), halves=halves, kings=(first.black_kings, first.white_kings),
                            tables=len(presets) + 1)
    bk_arr, wk_arr, succ_start, succ, pred_start, pred, node, entries = scratch.arrays()
    limits = np.array([p.limit_plies for p in presets], dtype=np.int64)
    man_resets = np.array([p.man_move_resets for p in presets], dtype=np.bool_)
    size = unit_size(*counts[0])
    code_a, code_b = (code_of_material(m) for m in (first, last))
    captures = solve.new_capture_buffer()
    step_base = np.empty((2, solve.STEP_SHIFTS, 32), dtype=np.int64)
    heads = np.full(solve.MAX_DEPTH + 2, -1, dtype=np.int64)
    men = np.zeros((2, 2), dtype=np.int64)
    base = np.zeros(2, dtype=np.int64)
    progress = np.zeros(solve.PROGRESS_SIZE, dtype=np.int64)
    symmetric = len(materials) == 1
    unrank = collect = invert = check = 0.0
    layer_seconds = np.zeros(len(presets) + 1)
    share = 8 * (len(presets) + 1)
    for ca in configs:
        bm_a, wm_a = unrank_men(ca, counts[0, 0], counts[0, 2])
        men[0] = bm_a, wm_a
        men[1] = mirror_bb(wm_a), mirror_bb(bm_a)
        cb = rank_men(men[1, 0], men[1, 1], counts[1, 0], counts[1, 2])
        unit_halves = 1 if (symmetric and cb == ca) else 2
        base[0] = tables.offsets[code_a] + ca * size
        base[1] = tables.offsets[code_b] + cb * size
        n = unit_halves * size
        t = time.process_time()
        for h in range(unit_halves):
            unrank_unit(counts[h, 1], counts[h, 3], men[h, 0], men[h, 1],
                        bk_arr[h * size:(h + 1) * size], wk_arr[h * size:(h + 1) * size])
        t0 = time.process_time()
        unrank += t0 - t
        status = solve.collect_moves(counts, unit_halves, size, men, bk_arr, wk_arr, tables.offsets, tables.wdl,
                                     tables.dtw, tables.rcat, tables.rdtz, limits, man_resets, captures,
                                     step_base, succ_start, succ, node, progress)
        t1 = time.process_time()
        solve.invert_edges(n, succ_start, succ, pred_start, pred)
        t2 = time.process_time()
        collect += t1 - t0
        invert += t2 - t1
        status |= solve.propagate(n, pred_start, pred, node[0], entries, heads, size, base, tables.wdl,
                                  tables.dtw, progress, share)
        layer_seconds[0] += time.process_time() - t2
        for layer in range(len(presets)):
            t = time.process_time()
            status |= solve.propagate(n, pred_start, pred, node[layer + 1], entries, heads, size, base,
                                      tables.rcat[layer], tables.rdtz[layer], progress, share, limits[layer])
            layer_seconds[layer + 1] += time.process_time() - t
        t = time.process_time()
        same = solve.same_wdl(n, size, base, tables.wdl, tables.rcat)
        check += time.process_time() - t
        if status != solve.OK or not same:
            raise SystemExit(f"solving {pair.key} failed: status {status}, same wdl {same}")
    t = time.process_time()
    for material in materials:
        part = tables.slice_of(material)
        pipeline.summarise(material, tables.wdl[part], tables.dtw[part])
        for row, preset in enumerate(presets):
            rule_layer.make_layer(preset, tables.rcat[row, part], tables.rdtz[row, part])
    summaries = time.process_time() - t
    out.mkdir(parents=True, exist_ok=True)
    _, write = cpu(pipeline.write_pair, out, materials, tables, seconds=0.0)
    return [
        ("load dependencies (read, decompress)", load),
        ("unrank (men configurations, king placements)", unrank),
        ("moves: generation, indexing, value lookups, exit folding (collect_moves)", collect),
        ("edge inversion", invert),
        *((f"propagation, {name}", seconds) for name, seconds in
          zip(["rule-free (WDL, DTW)"] + [f"layer {p.name}" for p in presets], layer_seconds)),
        ("layer check (same win/draw/loss)", check),
        ("write: summaries and layer counts", summaries),
        ("write: packing, checksums, compression, HDF5", write - summaries),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", type=int, default=5, help="build up to this many pieces (5 takes about 30 s)")
    parser.add_argument("--pair", default=None, help="material of the pair to profile, e.g. 1m2k-1m2k")
    parser.add_argument("--tables", type=Path, default=None,
                        help="read the dependency tables from this complete directory (read only, not built)")
    parser.add_argument("--out", type=Path, default=None, help="where the profiled pair's files are written")
    parser.add_argument("--rules", default="all", help="rule layers to solve (default all)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    presets = rule_layer.parse_presets(args.rules)
    if args.tables is None:
        directory = Path(tempfile.mkdtemp(prefix="egtb-profile-"))
        start = time.perf_counter()
        builder.build(args.pieces, directory=directory, jobs=args.jobs, rules=args.rules, progress=False)
        print(f"tables up to {args.pieces} pieces built in {directory} ({time.perf_counter() - start:.1f} s wall)")
    else:
        directory = args.tables
    pair = pick_pair(args.pieces, args.pair)
    out = args.out or Path(tempfile.mkdtemp(prefix="egtb-profile-out-"))
    phases = profile_pair(directory, out, pair, presets)
    total = sum(seconds for _, seconds in phases)
    print(f"\npair {'/'.join(m.name for m in pair.materials)}: {pair.positions:,} positions, "
          f"rules {args.rules}, CPU seconds by phase (load average {os.getloadavg()[0]:.1f})")
    width = max(len(name) for name, _ in phases)
    for name, seconds in phases:
        print(f"  {name.ljust(width)}  {seconds:8.3f}  {100 * seconds / total:5.1f}%")
    print(f"  {'total'.ljust(width)}  {total:8.3f}  {pair.positions / total:,.0f} positions/s "
          f"({total / pair.positions * 1e6:.2f} CPU s per million positions)")


if __name__ == "__main__":
    main()
