"""Single probes of random 7-piece positions, pass after pass over the same Boards: the warm rate
once their blocks are in the cache (prints figures, asserts nothing).

Set $EGTB_CACHE_BYTES above the Boards' working set (about 0.85 GB of decoded
``.wld`` blocks for 20,000 Boards) to see the warm rate; at the default 2 GiB
budget with other blocks cached the passes miss.

    EGTB_CACHE_BYTES=6000000000 .venv/bin/python bench/probe_warm_seven.py --tables /work/egtb
"""

from __future__ import annotations

import argparse
import time

from bench_probe import boards_of, random_positions, rss_bytes
from egtb.formats.cache import process_cache
from egtb.probe.tablebase import Tablebase


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default=None, help="table directory (default $EGTB_DIR or data/egtb)")
    parser.add_argument("--boards", type=int, default=20_000, help="random 7-piece positions")
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    tb = Tablebase(args.tables, max_open=1 << 20)
    materials = [m for m in tb.materials() if m.pieces == 7]
    if not materials:
        parser.error(f"no 7-piece tables in {tb.directory}")
    boards = boards_of(random_positions(materials, args.boards), args.boards)
    for number in range(1, args.passes + 1):
        start = time.process_time()
        for board in boards:
            tb.probe_wdl(board)
        print(f"probe_wdl pass {number}: {len(boards) / (time.process_time() - start):,.0f}/s (CPU)",
              flush=True)
    print(f"cache {process_cache().nbytes / 1e6:,.0f} MB, {len(process_cache())} entries; "
          f"RSS {rss_bytes() / 1e6:,.0f} MB")


if __name__ == "__main__":
    main()
