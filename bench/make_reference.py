"""Add finished tables to the reference figures (egtb/data/reference/*.tsv), from their data.

Run it only on tables ``egtb verify`` passed. Each table's counts, longest DTW
and checksum, and each rule layer's figures, are recomputed from the stored
bytes (``egtb.builder.reference.reference_lines``), never taken from the files'
attributes; a compact-native table's (no master, 8 pieces on) from its compact files through
the compact prober (``egtb.builder.native_reference``), or taken from the figures a passed
``egtb verify`` of the same files counted (``verify_compact.passed_figures``): the verify
counts them from the same files as it checks them. Materials the reference already lists
are left as they are.

    .venv/bin/python bench/make_reference.py --tables /work/egtb --pieces 7 --write
    .venv/bin/python bench/make_reference.py --tables /work/egtb --materials 4k-4k --write

Without ``--write`` the new lines are printed only.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from egtb.builder.reference import (REFERENCE_PATH, RULE_REFERENCE_PATH, load_reference,
                                  reference_lines)
from egtb.builder.native_reference import native_reference_lines
from egtb.formats import master
from egtb.positions.material import Material


def new_materials(directory: Path, pieces: int | None) -> list[Material]:
    """Stored materials (of `pieces` pieces, when given) the reference does not list yet."""
    known = load_reference()
    stored = set(master.stored_materials(directory)) | set(master.stored_materials(directory, suffix=".wld"))
    return [m for m in sorted(stored, key=lambda m: (m.pieces, m.name))
            if m.name not in known and (pieces is None or m.pieces == pieces)]


def _lines_of(directory: Path, material: Material) -> tuple[list[str], list[str]]:
    if master.table_path(directory, material).exists():
        return reference_lines(directory, [material])
    return native_reference_lines(directory, [material])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", required=True, type=Path, help="directory of verified tables")
    parser.add_argument("--pieces", type=int, default=None, help="only materials of N pieces")
    parser.add_argument("--materials", default=None,
                        help="only these materials, comma-separated (those verify passed, of a piece "
                             "count built in part)")
    parser.add_argument("--jobs", type=int, default=2, help="processes reading files")
    parser.add_argument("--write", action="store_true", help="append the lines to the reference files")
    args = parser.parse_args()
    materials = new_materials(args.tables, args.pieces)
    if args.materials is not None:
        wanted = {Material.parse(name) for name in args.materials.split(",")}
        materials = [m for m in materials if m in wanted]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(_lines_of, [args.tables] * len(materials), materials))
    table_lines = [line for tables, _ in results for line in tables]
    layer_lines = [line for _, layers in results for line in layers]
    print("\n".join(table_lines + layer_lines))
    print(f"{len(table_lines)} tables, {len(layer_lines)} rule layers in "
          f"{time.perf_counter() - start:.1f}s")
    if args.write:
        for path, lines in ((REFERENCE_PATH, table_lines), (RULE_REFERENCE_PATH, layer_lines)):
            with open(path, "a") as out:
                out.writelines(line + "\n" for line in lines)
            print(f"appended {len(lines)} lines to {path}")


if __name__ == "__main__":
    main()
