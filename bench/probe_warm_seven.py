"""Single probes of random 7-piece positions, pass after pass over the same Boards: the warm rate
once their blocks are in the cache (set $EGTB_CACHE_BYTES above their working set).

    EGTB_CACHE_BYTES=6000000000 .venv/bin/python bench/probe_warm_seven.py [DIR]
"""
import os, sys, time
sys.path.insert(0, os.path.dirname(__file__))
from bench_probe import random_positions, boards_of, rss_bytes
from egtb.probe.tablebase import Tablebase
from egtb.formats.cache import process_cache
tb = Tablebase(sys.argv[1] if len(sys.argv) > 1 else None, max_open=1 << 20)
mats = [m for m in tb.materials() if m.pieces == 7]
arrays = random_positions(mats, 20_000)
boards = boards_of(arrays, 20_000)
for label in ("first pass", "second pass", "third pass"):
    t0 = time.process_time()
    for b in boards: tb.probe_wdl(b)
    print(f"probe_wdl {label}: {len(boards) / (time.process_time() - t0):,.0f}/s (CPU)", flush=True)
print(f"cache {process_cache().nbytes / 1e6:,.0f} MB, {len(process_cache())} entries; RSS {rss_bytes() / 1e6:,.0f} MB")
