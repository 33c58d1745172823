"""The compact-native write of one material: CPU time a position, where it goes, and the files'
bytes (prints figures, asserts nothing).

The builder writes each solved material's ``.wld``, ``.wcdf``, ``.dtz`` and marks files
(:func:`egtb.builder.native.write_material`); at 8 pieces that write was 14-41% of a pair's
CPU. This bench writes a material from its master's ``wcdf`` layer (``--master``, a 6- or
7-piece ``.h5``), or from a compact-native table's files decoded into arrays (``--compact DIR
--material NAME``, e.g. an 8-piece one: its capture positions keep the files' filler, their DTZ
1 as the solver leaves it), into a temporary directory: once to compile, then ``--repeats`` times timed
(best CPU time kept), then once under cProfile for the top functions. It prints the CRC-32 of
each file written, so that two checkouts' output can be compared; ``--before DIR`` first runs
it with the code of checkout DIR, in the same run.

    .venv/bin/python bench/bench_native_write.py --master /work/egtb/1m2k-2m1k.h5 --before /work/headwt
    .venv/bin/python bench/bench_native_write.py --compact /work/egtb --material 4k-4k --repeats 0
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_probe import run_before  # noqa: E402

from egtb.builder import native  # noqa: E402
from egtb.formats import master  # noqa: E402
from egtb.positions.material import Material  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", help="a master table (.h5) with a wcdf layer")
    parser.add_argument("--compact", metavar="DIR", help="a directory of compact-native tables (with --material)")
    parser.add_argument("--material", help="the compact-native table of --compact to write again")
    parser.add_argument("--repeats", type=int, default=2, help="timed writes (the best is kept)")
    parser.add_argument("--top", type=int, default=12, help="functions of the profile printed")
    parser.add_argument("--before", default=None, metavar="DIR",
                        help="first run this bench with the code of checkout DIR, in the same run")
    args = parser.parse_args()
    if bool(args.master) == bool(args.compact) or bool(args.compact) != bool(args.material):
        parser.error("give --master, or --compact and --material")
    if args.master and not Path(args.master).is_file():
        parser.error(f"no master table {args.master}")
    if args.before:
        run_before(args.before)
    if args.master:
        material = Material.parse(Path(args.master).stem)
        layer = master.read_rule_layer(args.master, "wcdf")
        category, dtz = np.asarray(layer.category), np.asarray(layer.dtz)
    else:
        material = Material.parse(args.material)
        start = time.process_time()
        category, dtz = decoded_layer(args.compact, material)
        print(f"decoded {material.name} in {time.process_time() - start:.1f} CPU s")
    with tempfile.TemporaryDirectory(prefix="bench-native-write-") as directory:
        if args.repeats:  # (--repeats 0: a big material written once, under the profile alone)
            native.write_material(directory, material, category, dtz)  # compile
        best = float("inf")
        for _ in range(args.repeats):
            start = time.process_time()
            native.write_material(directory, material, category, dtz)
            best = min(best, time.process_time() - start)
        profile = cProfile.Profile()
        start = time.process_time()
        profile.runcall(native.write_material, directory, material, category, dtz)
        profiled = time.process_time() - start
        for seconds, words in ((best, f"best of {args.repeats}"), (profiled, "under cProfile")):
            if seconds < float("inf"):
                print(f"{material.name}: {len(category):,} positions; write {seconds:.2f} CPU s, "
                      f"{seconds / len(category) * 1e9:.1f} CPU ns a position ({words})")
        for written in sorted(Path(directory).iterdir()):
            if written.suffix != ".json":
                crc = zlib.crc32(written.read_bytes())
                print(f"  {written.name}: {written.stat().st_size:,} bytes, CRC-32 {crc:08x}")
    pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


def decoded_layer(directory: str, material: Material, *, chunk: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """A compact-native table's ``wcdf`` categories and DTZ, a position each, decoded from its files
    (a capture position keeps its filler category, DTZ 1 where it is not a draw)."""
    from egtb.builder.verify_compact import CompactProber, unranked_chunks
    from egtb.positions.material import count_positions

    layer = CompactProber(directory).table(material).layer(native.LEAN_RULES)
    category_of = np.array(layer.value_of, np.int8)
    dtz_of = np.asarray(layer.dtz_file.kind.value_of_code)
    positions = count_positions(material)
    category, dtz = np.empty(positions, np.int8), np.empty(positions, dtz_of.dtype)
    for lo, hi, _, cap in unranked_chunks(material, chunk):
        part = category_of[layer.codes(lo, hi)]
        category[lo:hi] = part
        dtz[lo:hi] = np.where(part == 0, 0, np.where(cap, 1, dtz_of[layer.dtz_file.codes(lo, hi)]))
    return category, dtz


if __name__ == "__main__":
    main()
