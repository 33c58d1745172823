"""Benchmark putting a pair's dependencies into its scratch files: one process against the split
pair's load tasks on several processes (:func:`egtb.builder.split.load`), wave by wave.

Prints figures, never asserts. For the pair, in a directory of links to the tables of
``--tables`` (its scratch files there, removed at the end): the files made
(:func:`egtb.builder.pipeline.open_on_disk`), then every wave
(:func:`egtb.builder.dependency_load.dependency_parts`; of the last, the first ``--parts``) put in by one process (the
baseline, as a pair's prepare did before), then again by ``--jobs`` forked processes, each a
share of each wave, the next wave once the last one ends. Wall and CPU seconds, nanoseconds a
position, and a check that both give the same packed categories (CRC-32 of the row).

    .venv/bin/python bench/bench_split_load.py --tables /work/egtb --pair 4k-3m1k --parts 4
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import time
import zlib
from pathlib import Path

from egtb.builder import dependency_load, pipeline, plan as planner
from egtb.builder.contents import contents_for
from egtb.formats import scratch
from egtb.positions.material import Material, count_positions


def link_tables(tables: Path, into: Path) -> None:
    """Link every finished table file of `tables` into `into` (no scratch, no logs)."""
    into.mkdir(parents=True, exist_ok=True)
    for path in tables.iterdir():
        if path.is_file() and not path.name.endswith((".log", ".lock", ".tmp")) and not (into / path.name).exists():
            (into / path.name).symlink_to(path)


def put_in(directory: Path, pair, deps, contents, parts) -> float:
    """Put `parts` in (this process); its CPU seconds."""
    cpu = time.process_time()
    tables, _, _ = pipeline.open_on_disk(directory, pair, deps, contents, create=False, load=False)
    dependency_load.load_parts(directory, tables, parts, needed_by=pair.key,
                               marks=scratch.scratch_dir(directory, pair.key))
    return time.process_time() - cpu


def run(directory: Path, pair, deps, contents, waves, jobs: int) -> tuple[float, float]:
    """Wall and CPU seconds of putting the `waves` in over `jobs` processes (marks cleared first)."""
    path = scratch.scratch_dir(directory, pair.key)
    for mark in path.glob(f"{scratch.LOADED_PREFIX}*"):
        mark.unlink()
    start, cpu = time.perf_counter(), 0.0
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for parts in waves:
            shares = [parts[k::jobs] for k in range(jobs)]
            cpu += sum(pool.starmap(put_in, [(directory, pair, deps, contents, share) for share in shares if share]))
    return time.perf_counter() - start, cpu


def rdep_crc(directory: Path, pair, deps, contents) -> int:
    tables, _, _ = pipeline.open_on_disk(directory, pair, deps, contents, create=False, load=False)
    crc = 0
    for start in range(0, tables.rdep.shape[1], 1 << 26):
        crc = zlib.crc32(tables.rdep[0, start:start + (1 << 26)], crc)
    return crc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, required=True, help="a table directory holding the pair's dependencies")
    parser.add_argument("--pair", required=True, help="a pair whose dependencies are all built, e.g. 4k-3m1k")
    parser.add_argument("--parts", type=int, default=0, help="parts of the last wave (default 0: all)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench-split-load"),
                        help="where the links and the scratch files go (on the disk of --tables for a fair figure)")
    args = parser.parse_args()
    pieces = Material.parse(args.pair).pieces
    pair = next(p for p in planner.plan_pairs(pieces, min_pieces=pieces) if p.key == args.pair)
    deps = planner.dependency_materials(pair)
    contents = planner.contents_of(pair)
    link_tables(args.tables, args.work)
    try:
        made = time.perf_counter()
        tables, _, _ = pipeline.open_on_disk(args.work, pair, deps, contents, load=False)
        made = time.perf_counter() - made
        waves = dependency_load.dependency_parts(args.work, list(tables.dependencies))
        if args.parts:  # the tables of fewer pieces whole: the captures of the last wave read them
            waves[-1] = waves[-1][:args.parts]
        positions = sum(part.last - part.first for wave in waves for part in wave)
        extra = sum(count_positions(m) for m in tables.dependencies if m not in deps)
        print(f"load average {os.getloadavg()[0]:.2f}; {pair.key}: files made in {made:.1f} s; "
              f"{positions:,} positions in {sum(map(len, waves))} parts, {len(waves)} waves "
              f"({extra:,} of them of the compact-native tables the captures reach)")
        figures = {}
        del tables
        for jobs in (1, args.jobs):
            wall, cpu = run(args.work, pair, deps, contents, waves, jobs)
            figures[jobs] = wall
            print(f"{jobs} process(es): {wall:.1f} s wall, {cpu:.1f} CPU s, {cpu / positions * 1e9:.1f} CPU ns "
                  f"a position, crc {rdep_crc(args.work, pair, deps, contents):08x}")
        print(f"wall ratio 1 -> {args.jobs}: {figures[1] / figures[args.jobs]:.2f}x")
    finally:
        scratch.remove_scratch(scratch.scratch_dir(args.work, pair.key))


if __name__ == "__main__":
    main()
