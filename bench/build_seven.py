"""Build chosen 7-piece pairs and extrapolate the whole 7-piece build from their rates.

Usage (the directory must hold every table the pairs need, e.g. the 6-piece
files symlinked from a finished build; the builder writes its files there):

    nice -n 19 /usr/bin/time -v .venv/bin/python bench/build_seven.py \\
        --tables /tmp/seven/t7 --memory 14 --log seven.jsonl 3k-4k 3k-1m3k

A pair whose files are complete is skipped, so a killed run resumes (a pair on
disk from its last checkpoint). With `--log`, each pair's figures are appended
to that JSON-lines file and the extrapolation uses every pair in it, so pairs
measured by separate runs (one process per pair: its own peak RSS) add up.
`--extrapolate` only prints the extrapolation of the log.

Prints per pair: positions, units, how it ran (in memory or on disk, kernel),
wall and CPU seconds, positions per CPU second, the worker's peak RSS and the
size of its master files; with `--compact`, the size of its compact files and
the time to write them. Then the whole 7-piece build extrapolated per kind of
pair (kings only, with men) from the measured pairs: CPU hours, wall hours on
`--cores` idle cores and at the measured wall over CPU, master and compact
gigabytes, and the disk peak. Rates are in CPU seconds of this process, so
they hold on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from egtb.builder.contents import contents_for  # noqa: E402
from egtb.builder import budget
from egtb.builder import pipeline, plan as planner
from egtb.builder import compaction
from egtb.formats import compact
from egtb.formats import master
from egtb.positions.material import Material


#: What this bench builds: the three rule layers and DTW (not the 7-piece default).
FULL = contents_for(7, rules="all", dtw=True)

def kind_of(pair: planner.Pair) -> str:
    """'kings' for a pair without men, else 'men'."""
    return "kings" if pair.materials[0].men == 0 else "men"


def build_one(directory: Path, pair: planner.Pair, memory: int, checkpoint: float) -> dict:
    """Build one pair, return its figures."""
    deps = planner.dependency_materials(pair)
    plan = budget.plan_pair(pair, deps, contents=FULL, budget=memory)
    wall, cpu = time.perf_counter(), time.process_time()
    record = pipeline.build_pair(directory, pair, deps, contents=FULL, plan=plan,
                                checkpoint_seconds=checkpoint)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    size = sum(master.table_path(directory, m).stat().st_size for m in pair.materials)
    return {"pair": pair.key, "kind": kind_of(pair), "positions": pair.positions,
            "units": record.units, "on_disk": plan.on_disk, "per_pass": plan.per_pass,
            "estimated_gb": round(plan.bytes / budget.GB, 2), "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1), "positions_per_cpu_s": round(pair.positions / cpu),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            "master_bytes": size, "bits_per_position": round(8 * size / pair.positions, 2)}


def is_complete(directory: Path, pair: planner.Pair) -> bool:
    """Whether every file of `pair` passes its checksum and holds all rule layers."""
    return pair.key in planner.find_complete([pair], directory, rules="all", dtw=True).done


def add_row(rows: list[dict], row: dict, log: Path | None) -> None:
    """Print a row of figures and append it to the rows and the log."""
    rows.append(row)
    print(json.dumps(row), flush=True)
    if log:
        with log.open("a") as out:
            out.write(json.dumps(row) + "\n")


def read_log(path: Path | None) -> list[dict]:
    """The rows of a JSON-lines log (empty when there is none)."""
    if path is None or not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def compact_one(directory: Path, pair: planner.Pair) -> dict:
    """Compact the pair's master files (WLD and wcdf files next to them), return their figures."""
    wall, cpu = time.perf_counter(), time.process_time()
    report = compaction.compact_directory(directory, materials=list(pair.materials))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"pair": pair.key, "compact_bytes": report.bytes, "wcdf_bytes": report.rule_bytes,
            "compact_bits_per_position": round(8 * report.bytes / pair.positions, 4),
            "positions_per_byte": round(pair.positions / report.bytes, 1),
            "captures": report.captures, "compact_wall_s": round(wall, 1),
            "compact_cpu_s": round(cpu, 1)}


def weighted(rows: list[dict], field: str, per: str = "positions") -> float:
    """Sum of `field` over sum of `per` in the rows (a rate or a size per position)."""
    return sum(r[field] for r in rows) / sum(r[per] for r in rows)


def scratch_of(pair: planner.Pair, memory: int) -> int:
    """Bytes of the pair's scratch files when `memory` puts it on disk, else 0."""
    deps = planner.dependency_materials(pair)
    plan = budget.plan_pair(pair, deps, contents=FULL, budget=memory)
    return budget.scratch_bytes(pair, deps, contents=FULL) if plan.on_disk else 0


def extrapolate(rows: list[dict], cores: int, *, memory: int, smaller: int = 0) -> dict:
    """CPU hours, wall hours and disk of every 7-piece pair from the measured pairs of its kind.

    The disk peak: the files of up to 6 pieces (`smaller` bytes), the 7-piece
    master files of the pairs before, and the scratch files of the pair on disk
    (pairs one after the other in the build's order, planned within `memory`).
    Rates are positions per CPU second; master and compact sizes bytes per
    position; the wall factor is wall over CPU seconds of the measured pairs
    (above 1 where a pair waited on its disk or shared its core: on a busy
    machine it measures the load too). A kind not measured takes the
    other kind's figures.
    """
    built = [r for r in rows if "cpu_s" in r]
    compacted = {r["pair"]: r for r in rows if "compact_bytes" in r}
    if not built:
        return {}
    figures = {}
    for kind in ("kings", "men"):
        measured = [r for r in built if r["kind"] == kind]
        if not measured:
            continue
        sized = [dict(r, **compacted[r["pair"]]) for r in measured if r["pair"] in compacted]
        figures[kind] = {"rate": weighted(measured, "positions", "cpu_s"),
                         "wall_per_cpu": weighted(measured, "wall_s", "cpu_s"),
                         "master_bytes": weighted(measured, "master_bytes"),
                         "compact_bytes": weighted(sized, "compact_bytes") if sized else None}
    pairs = planner.plan_pairs(7, min_pieces=7)
    cpu = wall = master = compact_bytes = disk_peak = 0.0
    totals = {}
    for pair in pairs:
        kind = kind_of(pair)
        f = figures.get(kind) or next(iter(figures.values()))
        cpu += pair.positions / f["rate"]
        wall += pair.positions / f["rate"] * f["wall_per_cpu"] / cores
        master += pair.positions * f["master_bytes"]
        compact_bytes += pair.positions * (f["compact_bytes"] or 0)
        totals[kind] = totals.get(kind, 0) + pair.positions
        disk_peak = max(disk_peak, master + scratch_of(pair, memory))
    return {"rates_positions_per_cpu_s": {k: round(f["rate"]) for k, f in figures.items()},
            "wall_per_cpu": {k: round(f["wall_per_cpu"], 2) for k, f in figures.items()},
            "positions_by_kind": totals, "cpu_hours": round(cpu / 3600, 2),
            f"wall_hours_on_{cores}_idle_cores": round(cpu / 3600 / cores, 2),
            f"wall_hours_on_{cores}_cores_at_measured_wall_per_cpu": round(wall / 3600, 2),
            "master_gb_estimate": round(master / budget.GB, 1),
            "disk_peak_gb_estimate": round((disk_peak + smaller) / budget.GB, 1),
            "compact_gb_estimate": round(compact_bytes / budget.GB, 2)
            if all(f["compact_bytes"] for f in figures.values()) else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="*", help="pair keys (first material), in order")
    parser.add_argument("--tables", type=Path, required=True,
                        help="tables up to 6 pieces; the 7-piece files are written here")
    parser.add_argument("--memory", type=float, default=None, help="GB (default 60%% of RAM)")
    parser.add_argument("--checkpoint-minutes", type=float, default=5.0)
    parser.add_argument("--cores", type=int, default=2, help="cores of the extrapolated build")
    parser.add_argument("--log", type=Path, default=None, help="JSON-lines file of measured pairs")
    parser.add_argument("--extrapolate", action="store_true", help="only extrapolate the log")
    parser.add_argument("--compact", action="store_true",
                        help="also compact each pair (built now or before) that has no .wld files")
    args = parser.parse_args()
    memory = int(args.memory * budget.GB) if args.memory else budget.default_budget()
    by_key = {p.key: p for p in planner.plan_pairs(7, min_pieces=7)}
    unknown = [key for key in args.pairs if key not in by_key]
    if unknown:
        parser.error(f"not 7-piece pairs: {', '.join(unknown)} (a pair is named by its first "
                     f"material, e.g. {next(iter(by_key))})")
    if not args.tables.is_dir():
        parser.error(f"table directory {args.tables} does not exist")
    rows = read_log(args.log)
    for key in [] if args.extrapolate else args.pairs:
        if is_complete(args.tables, by_key[key]):
            print(json.dumps({"pair": key, "skipped": "complete"}), flush=True)
        else:
            add_row(rows, build_one(args.tables, by_key[key], memory, 60 * args.checkpoint_minutes),
                    args.log)
        pair = by_key[key]
        if args.compact and not all(compact.compact_path(args.tables, m).exists() for m in pair.materials):
            add_row(rows, compact_one(args.tables, pair), args.log)
    smaller = sum(path.stat().st_size for path in args.tables.glob("*.h5")  # symlinks followed
                  if Material.parse(path.stem).pieces < 7)
    print(json.dumps({"extrapolation": extrapolate(rows, args.cores, memory=memory, smaller=smaller)},
                     indent=1))


if __name__ == "__main__":
    main()
