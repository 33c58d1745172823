"""Benchmark the compact decoder on one file: sorted random lookups over the whole file and over
a window of it, and whole blocks decoded, CPU ns each (``time.process_time``).

Prints figures, never asserts. A random lookup in a large file decodes the tokens from the
mark before it (marks every 128 runs from 8 pieces), so the whole-file figure is the
decoder's speed a token times about 64; in a window the lookups are dense and decode little.
Run it with ``PYTHONPATH`` set to another checkout for that code's figures, alternating:

    .venv/bin/python bench/bench_decode.py --file /work/egtb/1m3k-1m3k.wld --repeats 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from egtb.builder.successor_check import read_ascending
from egtb.formats.compact import open_compact
from egtb.formats.compact.codec import decode_block
from egtb.formats.compact.layout import BLOCK_BYTES


def lookups_ns(table, lookups: int, span: int, rng: np.random.Generator) -> float:
    """CPU ns a lookup of ``lookups`` sorted random positions in the first ``span`` of a table (warm)."""
    indices = np.sort(rng.integers(0, span, lookups)).astype(np.int64)
    value_of = np.arange(8)
    read_ascending(table, indices, value_of)  # the blocks' marks, the pages
    started = time.process_time()
    read_ascending(table, indices, value_of)
    return (time.process_time() - started) / lookups * 1e9


def decode_ns(table, blocks: int) -> float:
    """CPU ns a run of ``blocks`` blocks from the middle of a table decoded whole."""
    ends, values = np.empty(table.max_runs, dtype=np.int64), np.empty(table.max_runs, dtype=np.uint8)
    lut, first = table.lut, max(0, table.n_blocks // 2 - blocks // 2)
    runs, started = 0, time.process_time()
    for block in range(first, min(first + blocks, table.n_blocks)):
        lo = block * BLOCK_BYTES
        count = int(table.starts[block + 1] - table.starts[block])
        runs += decode_block(table.data, lo, min(lo + BLOCK_BYTES, len(table.data)), count, int(table.ctx[block]),
                             lut, ends, values)
    return (time.process_time() - started) / max(runs, 1) * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", required=True, help="a compact file (.wld, .wcdf or .dtz)")
    parser.add_argument("--lookups", type=int, default=2_000_000)
    parser.add_argument("--window", type=int, default=20_000_000, help="positions of the dense lookups")
    parser.add_argument("--blocks", type=int, default=2_000, help="blocks decoded whole")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    table = open_compact(args.file)
    rng = np.random.default_rng(1)
    decode_ns(table, 2)  # compiles the kernels
    print(f"{args.file}: {table.positions:,} positions, {table.n_blocks:,} blocks")
    for _ in range(args.repeats):
        sparse = lookups_ns(table, args.lookups, table.positions, rng)
        dense = lookups_ns(table, args.lookups, min(args.window, table.positions), rng)
        print(f"lookups over the whole file {sparse:7.1f} CPU ns, over {args.window:,} positions {dense:6.1f}, "
              f"blocks decoded whole {decode_ns(table, args.blocks):5.2f} ns a run", flush=True)


if __name__ == "__main__":
    main()
