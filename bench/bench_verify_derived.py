"""Benchmark the check of a pair whose DTZ is kept on one side: the kept side deriving its
successors' DTZ from their moves, against reading what the derived side's check found
(egtb.builder.verify_derived), in one run.

A directory of links to ``--tables`` is made with the larger ``.dtz`` of the pair ``--pair``
(and its marks) left out, as the 8-piece build leaves it. Then, CPU seconds of this process
(``time.process_time``), each run over the whole materials, ``--rounds`` alternated rounds:

- the derived side alone (its categories checked against the kept side's);
- the kept side alone (its successors' DTZ derived one ply into its own file: the old way);
- both in one check (the derived side first, its DTZ kept a byte a position for the kept
  side's check).

The kept side's cost the new way is the pair's less the derived side's. The reports must
agree (the same counts, no error). Prints figures, never asserts.

    .venv/bin/python bench/bench_verify_derived.py --tables /work/egtb --pair 2k-5k
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from egtb.builder.verify_compact import verify_compact
from egtb.formats.compact import DTZ_KINDS, compact_path
from egtb.positions.material import Material, count_positions


def linked_without(tables: Path, dropped: Material, into: Path) -> None:
    """Links in ``into`` to every file of ``tables`` but ``dropped``'s ``.dtz`` and its marks."""
    path = compact_path(tables, dropped, kind=DTZ_KINDS["wcdf"])
    for found in tables.iterdir():
        if found.is_file() and found.name not in (path.name, f"{path.name}.marks"):
            (into / found.name).symlink_to(found)


def timed(directory: Path, materials: list[Material]) -> tuple[float, object]:
    """(CPU seconds, report) of one check of ``materials``, nothing recorded."""
    start = time.process_time()
    report = verify_compact(directory, materials=materials, resume=False)
    return time.process_time() - start, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=Path, required=True, help="a compact-native directory")
    parser.add_argument("--pair", default="2k-5k", help="one material of the pair (its mirror the other)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    one = Material.parse(args.pair)
    sizes = {m: compact_path(args.tables, m, kind=DTZ_KINDS["wcdf"]).stat().st_size for m in (one, one.mirrored())}
    derived = max(sizes, key=sizes.get)  # the larger file goes, as the build drops it
    kept = derived.mirrored()
    positions = count_positions(derived)
    with tempfile.TemporaryDirectory(prefix="bench-verify-derived-", dir=args.tables.parent) as tmp:
        linked_without(args.tables, derived, Path(tmp))
        timed(Path(tmp), [Material.parse("1k-2k"), Material.parse("2k-1k")])  # compiles the kernels
        print(f"{kept.name} kept ({sizes[kept]:,} B of .dtz), {derived.name} derived; {positions:,} positions each;"
              f" load average {os.getloadavg()[0]:.1f}")
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            for label, materials in (("derived side alone", [derived]), ("kept side alone (derives)", [kept]),
                                     ("both: the kept side reads", [kept, derived])):
                seconds, report = timed(Path(tmp), materials)
                assert report.ok, report.messages[:3]
                best[label] = min(best.get(label, seconds), seconds)
                print(f"  {label:28} {seconds:8.1f} CPU s  dtz_checked {report.dtz_checked:,}", flush=True)
    old = best["kept side alone (derives)"]
    new = best["both: the kept side reads"] - best["derived side alone"]
    print(f"kept side: {positions / old:,.0f} positions a CPU second deriving, {positions / new:,.0f} reading"
          f" ({old / new:.2f}x); the pair {best['derived side alone'] + old:.1f} -> "
          f"{best['both: the kept side reads']:.1f} CPU s")


if __name__ == "__main__":
    main()
