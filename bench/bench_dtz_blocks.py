"""What smaller DTZ blocks would cost and give: a 7-piece master's DTZ chunks (2**18 positions)
cut into blocks of 2**12..2**18 positions, each deflated as the master's chunks are (prints
figures, asserts nothing; writes no file).

For each block size: the stored bytes against the chunks as they are, and the CPU time to
inflate one block (what a DTZ miss of a single probe costs, beside the HDF5 chunk read of
today's files, timed the same way).

    .venv/bin/python bench/bench_dtz_blocks.py --tables /work/egtb --chunks 40
"""

from __future__ import annotations

import argparse
import time
import zlib
from pathlib import Path

import numpy as np

from egtb.formats import master
from egtb.positions.material import Material


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="data/egtb", help="directory of master files")
    parser.add_argument("--rule", default="wcdf", help="the layer whose DTZ is cut")
    parser.add_argument("--chunks", type=int, default=40, help="random chunks read (over the 7-piece masters)")
    args = parser.parse_args()
    paths = sorted(p for p in Path(args.tables).glob("*.h5") if Material.parse(p.stem).pieces == 7)
    if not paths:
        parser.error(f"no 7-piece master file in {args.tables}")
    rng = np.random.default_rng(3)
    chunks, read_seconds = [], 0.0
    for k in range(args.chunks):
        path = paths[int(rng.integers(0, len(paths)))]
        f, attrs = master.open_blocks(path)
        with f:
            name = f"{master.RULES_GROUP}/{args.rule}/dtz"
            blocks = -(-int(attrs["positions"]) // master.BLOCK_POSITIONS)
            block = int(rng.integers(0, blocks))
            start = time.process_time()
            chunks.append(np.ascontiguousarray(master.read_block(f, name, block, int(attrs["positions"]))))
            read_seconds += time.process_time() - start
    whole = sum(len(zlib.compress(c.tobytes(), master.COMPRESSION_LEVEL)) for c in chunks)
    print(f"{len(chunks)} DTZ chunks of {master.BLOCK_POSITIONS:,} positions from {len(paths)} 7-piece masters: "
          f"{read_seconds / len(chunks) * 1e3:.2f} CPU ms a chunk read (HDF5 file, today's miss), "
          f"{sum(c.nbytes for c in chunks) / whole:.1f} positions a stored byte")
    for bits in range(12, 19, 2):
        size = 1 << bits
        pieces = [c[i:i + size].tobytes() for c in chunks for i in range(0, len(c), size)]
        stored = [zlib.compress(p, master.COMPRESSION_LEVEL) for p in pieces]
        start = time.process_time()
        for blob in stored:
            zlib.decompress(blob)
        inflate = (time.process_time() - start) / len(stored)
        print(f"blocks of 2**{bits} positions: {sum(map(len, stored)) / whole:.3f}x the stored bytes, "
              f"{np.mean([len(s) for s in stored]):,.0f} B a block, {inflate * 1e6:,.1f} CPU us to inflate one")


if __name__ == "__main__":
    main()
