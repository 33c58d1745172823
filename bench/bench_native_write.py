"""The compact-native write of one material: CPU time a position, where it goes, and the files'
bytes (prints figures, asserts nothing).

The builder writes each solved material's ``.wld``, ``.wcdf``, ``.dtz`` and marks files
(:func:`egtb.builder.native.write_material`); at 8 pieces that write was 14-41% of a pair's
CPU. This bench writes a material from its master's ``wcdf`` layer (``--master``, a 6- or
7-piece ``.h5``) into a temporary directory: once to compile, then ``--repeats`` times timed
(best CPU time kept), then once under cProfile for the top functions. It prints the CRC-32 of
each file written, so that two checkouts' output can be compared; ``--before DIR`` first runs
it with the code of checkout DIR, in the same run.

    .venv/bin/python bench/bench_native_write.py --master /work/egtb/1m2k-2m1k.h5 --before /work/headwt
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
    parser.add_argument("--master", required=True, help="a master table (.h5) with a wcdf layer")
    parser.add_argument("--repeats", type=int, default=2, help="timed writes (the best is kept)")
    parser.add_argument("--top", type=int, default=12, help="functions of the profile printed")
    parser.add_argument("--before", default=None, metavar="DIR",
                        help="first run this bench with the code of checkout DIR, in the same run")
    args = parser.parse_args()
    path = Path(args.master)
    if not path.is_file():
        parser.error(f"no master table {path}")
    if args.before:
        run_before(args.before)
    material = Material.parse(path.stem)
    layer = master.read_rule_layer(path, "wcdf")
    category, dtz = np.asarray(layer.category), np.asarray(layer.dtz)
    with tempfile.TemporaryDirectory(prefix="bench-native-write-") as directory:
        native.write_material(directory, material, category, dtz)  # compile
        best = float("inf")
        for _ in range(args.repeats):
            start = time.process_time()
            native.write_material(directory, material, category, dtz)
            best = min(best, time.process_time() - start)
        print(f"{material.name}: {len(category):,} positions; write {best:.2f} CPU s, "
              f"{best / len(category) * 1e9:.1f} CPU ns a position (best of {args.repeats})")
        for written in sorted(Path(directory).iterdir()):
            if written.suffix != ".json":
                crc = zlib.crc32(written.read_bytes())
                print(f"  {written.name}: {written.stat().st_size:,} bytes, CRC-32 {crc:08x}")
        profile = cProfile.Profile()
        profile.runcall(native.write_material, directory, material, category, dtz)
    pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
