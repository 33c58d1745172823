"""Time and memory of building the tables (prints figures, asserts nothing).

Usage:
    .venv/bin/python bench/bench_build.py [--pieces 5] [--jobs 2] [--dir DIR] [--rules all]
    .venv/bin/python bench/bench_build.py --pieces 5 --baseline   # none, then all layers
    .venv/bin/python bench/bench_build.py --six-pairs 3 --dir DIR   # after --pieces 5

``--before DIR --six-tables T --six PAIR,PAIR`` compares this code with an untouched
checkout (DIR, e.g. ``git archive main | tar -x -C DIR``) in the same run: each
side runs in its own subprocess (``PYTHONPATH`` pointing at its code, numba
kernels compiled before the clock starts) and reports CPU seconds (its own and
its workers') per million positions, for everything up to ``--pieces`` and for
each named six-piece pair, built from the tables in T (read only, through a
directory of links; the pair's files are written next to the links), with
``--rules none`` and with the chosen layers.

``--six-pairs K`` then builds the first K six-piece material pairs of the plan
(the kings-only ones come first: the largest units, so the worst memory) and
extrapolates the time of all 2.4 billion six-piece positions. ``--baseline``
first builds without rule layers (``--rules none``, what the builder did before
the layers) into another fresh directory, then with the chosen layers, and
prints the ratio of the two wall and CPU times measured in the same run, with
the bytes on disk per layer.

>>> peak_mb() > 0
True
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from egtb.builder import driver as builder, pipeline, plan as planner
from egtb.builder.stats import PUBLISHED_POSITIONS


def peak_mb() -> float:
    """Peak resident memory (MB) of this process and of its largest child."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (own + children) / 1024


def bench_all(max_pieces: int, *, directory: Path, jobs: int, rules: str = "all"
              ) -> tuple[float, float]:
    """Build everything up to max_pieces, print the figures; return (wall, CPU) seconds."""
    start = time.perf_counter()
    cpu0 = _cpu()
    report = builder.build(max_pieces, directory=directory, jobs=jobs, rules=rules,
                           progress=False)
    wall = time.perf_counter() - start
    cpu = _cpu() - cpu0
    print(f"up to {max_pieces} pieces, {jobs} jobs, rules {rules}: {len(report.built)} tables, "
          f"{report.positions:,} positions in {wall:.1f}s wall, {cpu:.1f}s CPU; "
          f"{report.positions / max(wall, 1e-9) / jobs:,.0f} positions/s per core; "
          f"peak memory (parent + largest worker) {peak_mb():.0f} MB")
    return wall, cpu


def disk_sizes(directory: Path) -> dict[str, int]:
    """Bytes of the stored datasets: 'wld+dtw' and one entry per rule layer."""
    import h5py
    sizes: dict[str, int] = {}
    for path in sorted(directory.glob("*.h5")):
        with h5py.File(path, "r") as f:
            sizes["wld+dtw"] = sizes.get("wld+dtw", 0) + sum(
                f[name].id.get_storage_size() for name in ("wld", "dtw"))
            for preset, group in (f["rules"].items() if "rules" in f else []):
                sizes[preset] = sizes.get(preset, 0) + sum(
                    group[name].id.get_storage_size() for name in group)
    return sizes


def bench_six(count: int, *, directory: Path, jobs: int, rules: str = "all") -> None:
    """Build the first `count` six-piece pairs (needs five pieces) and extrapolate."""
    pairs = [p for p in planner.plan_pairs(6) if p.materials[0].pieces == 6][:count]
    start = time.perf_counter()
    done = 0
    for pair in pairs:
        t = time.perf_counter()
        result = pipeline.build_pair(directory, pair, planner.dependency_materials(pair),
                                    contents=planner.contents_of(pair, rules=rules))
        done += result.positions
        print(f"  {pair.key}: {result.positions:,} positions, {result.units} units, "
              f"{time.perf_counter() - t:.1f}s, peak {peak_mb():.0f} MB")
    seconds = time.perf_counter() - start
    rate = done / seconds
    total = PUBLISHED_POSITIONS[6]
    print(f"six pieces: {done:,} positions in {seconds:.1f}s ({rate:,.0f}/s on one core); "
          f"all {total:,} would take about {total / rate / jobs / 60:.0f} min on {jobs} cores")


def measure(pieces: int, six: list[str], six_tables: Path | None, *, jobs: int,
            rules: str) -> dict:
    """CPU seconds and positions of building up to `pieces` and each pair of `six` (fresh dirs)."""
    import os
    warm = Path(tempfile.mkdtemp(prefix="egtb-bench-warm-"))
    builder.build(3, directory=warm, jobs=1, rules=rules, progress=False)  # compile first
    out = {}
    cpu0, start = _cpu(), time.perf_counter()
    report = builder.build(pieces, directory=Path(tempfile.mkdtemp(prefix="egtb-bench-")),
                           jobs=jobs, rules=rules, progress=False)
    out[f"up to {pieces}"] = (_cpu() - cpu0, time.perf_counter() - start, report.positions)
    for key in six:
        pair = next(p for p in planner.plan_pairs(6) if key in (m.name for m in p.materials))
        links = Path(tempfile.mkdtemp(prefix="egtb-bench-six-"))
        own = {m.name for m in pair.materials}
        for path in six_tables.glob("*.h5"):
            if path.stem not in own:
                os.symlink(path.resolve(), links / path.name)
        cpu0, start = _cpu(), time.perf_counter()
        pipeline.build_pair(links, pair, planner.dependency_materials(pair),
                            contents=planner.contents_of(pair, rules=rules))
        out[pair.key] = (_cpu() - cpu0, time.perf_counter() - start, pair.positions)
    return out


def compare(before: Path, pieces: int, six: list[str], six_tables: Path | None, *, jobs: int,
            rules: str) -> None:
    """Print before/after CPU seconds per million positions, both measured in this run."""
    import json
    import os
    import subprocess
    import sys
    here = Path(__file__).resolve().parents[1]
    for layers in dict.fromkeys(("none", rules)):  # once when rules is "none"
        results = {}
        for name, source in (("before", before), ("after", here)):
            env = dict(os.environ, PYTHONPATH=str(source))
            script = source / "bench" / "bench_build.py"  # each side's own (module paths moved)
            command = [sys.executable, str(script), "--measure", "--pieces", str(pieces),
                       "--jobs", str(jobs), "--rules", layers, "--six", ",".join(six)]
            if six_tables:
                command += ["--six-tables", str(six_tables)]
            line = subprocess.run(command, env=env, check=True, capture_output=True,
                                  text=True).stdout.strip().splitlines()[-1]
            results[name] = json.loads(line)
        print(f"rules {layers}: CPU s per million positions (wall s in brackets)")
        for key, (cpu, wall, positions) in results["after"].items():
            old_cpu, old_wall, _ = results["before"][key]
            print(f"  {key:12} {positions:>13,} positions  before {1e6 * old_cpu / positions:6.3f} "
                  f"({old_wall:6.1f})  after {1e6 * cpu / positions:6.3f} ({wall:6.1f})  "
                  f"speed-up {old_cpu / cpu:.2f}x CPU")


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark the table builder.")
    parser.add_argument("--pieces", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=None,
                        help="table directory (default: a fresh temporary one)")
    parser.add_argument("--six-pairs", type=int, default=0,
                        help="then build this many six-piece pairs and extrapolate")
    parser.add_argument("--rules", default="all", help="rule layers to build (default all)")
    parser.add_argument("--baseline", action="store_true",
                        help="first build without rule layers and print the ratio")
    parser.add_argument("--before", type=Path, default=None,
                        help="checkout of the code to compare with (CPU s per million positions)")
    parser.add_argument("--six", default="", help="six-piece pairs to time with --before, comma list")
    parser.add_argument("--six-tables", type=Path, default=None,
                        help="complete tables up to 6 pieces the --six pairs read (read only)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    six = [key for key in args.six.split(",") if key]
    if args.measure:
        import json
        print(json.dumps(measure(args.pieces, six, args.six_tables, jobs=args.jobs,
                                 rules=args.rules)))
        return
    if args.before:
        compare(args.before, args.pieces, six, args.six_tables, jobs=args.jobs, rules=args.rules)
        return
    directory = args.dir or Path(tempfile.mkdtemp(prefix="egtb-bench-"))
    if args.baseline:
        base_wall, base_cpu = bench_all(args.pieces, jobs=args.jobs, rules="none",
                                        directory=Path(tempfile.mkdtemp(prefix="egtb-bench-")))
    wall, cpu = bench_all(args.pieces, directory=directory, jobs=args.jobs, rules=args.rules)
    if args.baseline:
        print(f"rules {args.rules} / none: {wall / base_wall:.2f}x wall, {cpu / base_cpu:.2f}x CPU")
    sizes = disk_sizes(directory)
    print("bytes on disk: " + ", ".join(f"{name} {size:,}" for name, size in sizes.items()))
    if args.six_pairs:
        bench_six(args.six_pairs, directory=directory, jobs=args.jobs, rules=args.rules)


if __name__ == "__main__":
    main()
