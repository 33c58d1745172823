"""Bytes a position of the lean builder, phase by phase, beside the anchors' (prints figures).

Builds one pair the way the 7-piece build does (the values and the wcdf layer,
no DTW, values on disk: egtb/builder/contents.py, egtb/formats/scratch.py) from a
directory of finished tables (read only: the pair's files go to a directory of
links), and prints for each phase the bytes a position in RAM (this process's
resident set at the end of the phase, over the pair's and its dependencies'
positions) and on disk (scratch, then files), next to what the builder held
before (12 bytes a position of the pair and its dependencies) and the anchors:
Chinook and KingsRow solve with about 2 bits a position (WDL) and about a byte
with a distance.

    .venv/bin/python bench/bench_lean.py --tables /work/egtb --pair 1m2k-1m2k

>>> rss_bytes() > 0
True
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from egtb.builder import pipeline, plan as planner
from egtb.builder.contents import contents_for
from egtb.formats import master, scratch
from egtb.positions.material import Material, count_positions

#: Bytes a position the builder held before (values, DTW, and a category and DTZ per layer,
#: for the pair and every table its exits reach; three layers).
BEFORE_BYTES = 12
ANCHORS = "Chinook/KingsRow: 0.25 B (2 bits, WDL), about 1 B with a distance"


def rss_bytes() -> int:
    """This process's resident set now."""
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def link_tables(source: Path, pair: planner.Pair) -> Path:
    """A directory of links to every table of `source` but the pair's own."""
    links = Path(tempfile.mkdtemp(prefix="egtb-lean-"))
    own = {m.name for m in pair.materials}
    for path in source.glob("*.h5"):
        if path.stem not in own:
            os.symlink(path.resolve(), links / path.name)
    return links


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, required=True, help="finished tables (read only)")
    parser.add_argument("--pair", required=True, help="a material of the pair to build")
    args = parser.parse_args()
    material = Material.parse(args.pair)
    pair = next(p for p in planner.plan_pairs(material.pieces) if material in p.materials)
    deps = planner.dependency_materials(pair)
    everything = pair.positions + sum(count_positions(m) for m in deps)
    directory = link_tables(args.tables, pair)
    contents = contents_for(7)  # what a 7-piece file holds
    base = rss_bytes()
    rows = []
    start = time.process_time()
    tables, layout, _ = pipeline.open_on_disk(directory, pair, deps, contents)
    path = scratch.scratch_dir(directory, pair.key)
    disk = scratch.bytes_in(directory, [pair.key])
    rows.append(("load dependencies", time.process_time() - start, rss_bytes() - base, disk))
    start = time.process_time()
    pipeline.solve_pair(pair.materials, tables)
    scratch.write_checkpoint(path, layout, len(pipeline.unit_order(pair.materials)),
                             [tables.wdl, tables.dtw, tables.rcat, tables.rdtz])
    rows.append(("solve (after its checkpoint)", time.process_time() - start,
                 rss_bytes() - base, scratch.bytes_in(directory, [pair.key])))
    start = time.process_time()
    pipeline.write_pair(directory, pair.materials, tables, seconds=0.0)
    files = sum(master.table_path(directory, m).stat().st_size for m in pair.materials)
    rows.append(("write files", time.process_time() - start, rss_bytes() - base, files))
    print(f"pair {pair.key}: {pair.positions:,} positions, {everything:,} with its "
          f"{len(deps)} dependencies; before: {BEFORE_BYTES} B a position in RAM; {ANCHORS}")
    print(f"{'phase':30} {'CPU s':>8} {'RAM B/pos':>10} {'disk B/pos':>11}")
    for name, cpu, ram, on_disk in rows:
        per = pair.positions if name == "write files" else everything
        print(f"{name:30} {cpu:8.1f} {ram / everything:10.3f} {on_disk / per:11.3f}")
    print(f"files: {8 * files / pair.positions:.2f} bits a position of the pair")
    scratch.remove_scratch(path)


if __name__ == "__main__":
    main()
