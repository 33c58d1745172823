"""A build's figures from its log, per pair of one piece count (7 by default, or 8), and the
plan of a larger piece count projected from them (prints them; reads files only).

Per pair, from the ``solved`` lines of ``<tables>/build.log``: wall seconds,
CPU seconds, the worker's peak RSS and the table directory's size (or, in older logs, the file system's use) when it finished; then
the totals, and (with ``--monitor``, lines ``<time> rss_mb=N disk_used_gb=G
egtb_dir_gb=D ...`` sampled every 30 s while the build ran) the peaks of the
build's resident memory summed over its processes and of the disk in use.

    .venv/bin/python bench/seven_log.py --tables /work/egtb [--monitor monitor.log] [--pieces 7]
    .venv/bin/python bench/seven_log.py --tables /work/egtb --pieces 8 --project 10 --max-per-side 5

With ``--project N`` it prints, for every piece count above ``--pieces`` up to N (within
``--max-per-side``), the positions and what they would take at the measured CPU microseconds a
position and compact bytes a position of the pairs logged (their files in the directory).

>>> parse_line("2026-12-01 16:00:10,690 ForkProcess-1 INFO solved 3k-4k: 1 units, 235609920 positions "
...            "in 1100.72s (load 3.01s, solve 1083.61s, write 14.10s); 322.2 CPU s, worker peak RSS "
...            "3341 MB, disk in use 27.34 GB")["cpu"]
322.2
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from egtb.positions.material import Material

SOLVED = re.compile(r"^(\S+ \S+) \S+ INFO solved (\S+): (\d+) units, (\d+) positions in ([\d.]+)s "
                    r".*?; ([\d.]+) CPU s(?: \([^)]*\))?, worker peak RSS (\d+) MB, (?:disk in use|table directory) ([\d.]+) GB")
SAMPLE = re.compile(r"rss_mb=(\d+) disk_used_gb=([\d.]+) egtb_dir_gb=([\d.]+)")


def parse_line(line: str) -> dict | None:
    """The figures of one ``solved`` line, or None."""
    match = SOLVED.match(line)
    if not match:
        return None
    when, key, units, positions, wall, cpu, rss, disk = match.groups()
    return {"when": when, "key": key, "units": int(units), "positions": int(positions),
            "wall": float(wall), "cpu": float(cpu), "rss_mb": int(rss), "disk_gb": float(disk)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=Path, required=True)
    parser.add_argument("--monitor", type=Path, default=None)
    parser.add_argument("--pieces", type=int, default=7)
    parser.add_argument("--project", type=int, default=None, metavar="N",
                        help="project the plan of every piece count up to N from these rates")
    parser.add_argument("--max-per-side", type=int, default=None, metavar="S")
    parser.add_argument("--jobs", type=int, default=2, help="cores of the projected wall time")
    args = parser.parse_args()
    rows = {}
    for line in (args.tables / "build.log").read_text().splitlines():
        row = parse_line(line)
        if row and Material.parse(row["key"]).pieces == args.pieces:
            rows[row["key"]] = row  # a pair solved again (after an interruption): the last time
    print(f"{'pair':12} {'positions':>14} {'wall s':>8} {'CPU s':>8} {'CPU us/pos':>10} "
          f"{'peak RSS MB':>11} {'disk GB':>8}  finished")
    for row in sorted(rows.values(), key=lambda r: r["when"]):
        print(f"{row['key']:12} {row['positions']:>14,} {row['wall']:8.0f} {row['cpu']:8.0f} "
              f"{1e6 * row['cpu'] / row['positions']:10.2f} {row['rss_mb']:11,} "
              f"{row['disk_gb']:8.2f}  {row['when']}")
    positions = sum(r["positions"] for r in rows.values())
    cpu = sum(r["cpu"] for r in rows.values())
    print(f"{len(rows)} pairs, {positions:,} positions, {cpu / 3600:.2f} CPU hours "
          f"({1e6 * cpu / max(positions, 1):.2f} us a position)")
    if args.project:
        project(args.tables, rows, upto=args.project, above=args.pieces, max_per_side=args.max_per_side,
                jobs=args.jobs)
    if args.monitor:
        samples = [SAMPLE.search(line) for line in args.monitor.read_text().splitlines()]
        samples = [(int(m.group(1)), float(m.group(2)), float(m.group(3))) for m in samples if m]
        print(f"peaks over {len(samples)} samples: resident memory summed over the build's "
              f"processes {max(s[0] for s in samples):,} MB, the table directory (files and "
              f"scratch) {max(s[2] for s in samples):.2f} GB, the whole file system "
              f"{max(s[1] for s in samples):.2f} GB")


def project(directory: Path, rows: dict, *, upto: int, above: int, max_per_side: int | None,
            jobs: int) -> None:
    """The positions of each piece count above `above` up to `upto`, and their CPU hours and
    compact gigabytes at the rates of the pairs in `rows`."""
    from egtb.builder.budget import compact_bytes
    from egtb.builder.plan import pieces_a_side
    from egtb.positions.material import all_materials, count_positions
    materials = [m for key in rows for m in {Material.parse(key), Material.parse(key).mirrored()}]
    positions = sum(count_positions(m) for m in materials)
    cpu_rate = sum(r["cpu"] for r in rows.values()) / max(sum(r["positions"] for r in rows.values()), 1)
    byte_rate = sum(compact_bytes(directory, m) for m in materials) / max(positions, 1)
    print(f"projected at {1e6 * cpu_rate:.3f} CPU us and {8 * byte_rate:.3f} compact bits a position "
          f"(the {len(rows)} pairs above):")
    for pieces in range(above + 1, upto + 1):
        count = sum(count_positions(m) for m in all_materials(pieces, min_pieces=pieces)
                    if max_per_side is None or pieces_a_side(m) <= max_per_side)
        print(f"  {pieces} pieces{'' if max_per_side is None else f' (at most {max_per_side} a side)'}: "
              f"{count:,} positions, {count * cpu_rate / 3600:,.0f} CPU hours ({count * cpu_rate / 3600 / jobs:,.0f} h "
              f"wall on {jobs} cores), {count * byte_rate / 1e9:,.0f} GB of compact files")


if __name__ == "__main__":
    main()
