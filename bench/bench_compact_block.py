"""Decoding one compact block: CPU time a run, and the marks a lookup decodes from (prints figures,
asserts nothing).

Random blocks of a compact file (default: the largest ``.wld`` of ``--tables``) are decoded
whole (``decode_block``, the code before and after use it alike); with the marks
(:func:`egtb.formats.compact.codec.mark_block`, when the checkout has them) the bench also
prints, for 16, 32, 64 and 128 runs a mark, the time to mark a block, the marks' bytes and the CPU
time of one lookup from Python (``CompactTable.value``); with a marks file beside the compact
file, the cost of a block's first lookup from it (its CRC-32 and its marks'). ``--before DIR``
first runs it with the code of checkout DIR.

    .venv/bin/python bench/bench_compact_block.py --tables /work/egtb --before /tmp/base
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_probe import run_before  # noqa: E402

from egtb.formats import compact  # noqa: E402
from egtb.formats.cache import TableCache  # noqa: E402
from egtb.formats.compact import codec  # noqa: E402


def decode_rate(table: compact.CompactTable, blocks: np.ndarray) -> tuple[float, float]:
    """(CPU ms a block, ns a run) of decode_block over the blocks."""
    lut = table.lut
    ends, vals = np.empty(table.max_runs, dtype=np.int64), np.empty(table.max_runs, dtype=np.uint8)
    runs, start = 0, time.process_time()
    for block in blocks.tolist():
        lo, count = block * compact.BLOCK_BYTES, int(table.starts[block + 1] - table.starts[block])
        runs += codec.decode_block(table.data, lo, min(lo + compact.BLOCK_BYTES, len(table.data)), count,
                                   table.ctx[block], lut, ends, vals)
    spent = time.process_time() - start
    return spent / len(blocks) * 1e3, spent / runs * 1e9


def mark_figures(path: Path, blocks: np.ndarray, every: int, rng: np.random.Generator) -> str:
    """Marking and lookup figures with a mark every ``every`` runs."""
    try:  # marks made in memory, not read from a marks file
        table = compact.CompactTable(path, cache=TableCache(), mark_every=every, use_marks_file=False)
    except TypeError:  # the code before the marks files
        table = compact.CompactTable(path, cache=TableCache(), mark_every=every)
    start = time.process_time()
    marks = [table.block_marks(block) for block in blocks.tolist()]
    marking = (time.process_time() - start) / len(blocks)
    indices = [int(table.starts[b]) + int(rng.integers(0, table.starts[b + 1] - table.starts[b]))
               for b in blocks.tolist() for _ in range(50)]
    start = time.process_time()
    for index in indices:
        table.value(index)
    lookup = (time.process_time() - start) / len(indices)
    size = sum(m.marks.nbytes for m in marks) / len(marks)
    return (f"{every} runs a mark: {marking * 1e6:,.0f} CPU us to mark a block, {size:,.0f} B of marks a block "
            f"(+{compact.reader.MARK_ENTRY_BYTES} B counted for the entry), {lookup * 1e9:,.0f} CPU ns a lookup "
            f"(CompactTable.value)")


def marks_file_figures(path: Path, blocks: np.ndarray) -> str | None:
    """The first lookup's cost of a block whose marks come from the marks file (the CRC-32 of the
    block and of its marks), one block at a time and for a sorted batch's blocks in one call;
    None without a marks file."""
    table = compact.CompactTable(path, cache=TableCache())
    if getattr(table, "marks_file", None) is None:
        return None
    blocks = np.unique(blocks)
    table.load_blocks(np.array([int(table.starts[b]) for b in blocks[:2].tolist()]))  # compile
    table = compact.CompactTable(path, cache=TableCache())
    half = len(blocks) // 2
    start = time.process_time()
    for block in blocks[:half].tolist():
        table.load_block(block)
    one = (time.process_time() - start) / max(half, 1)
    start = time.process_time()
    table.load_blocks(table.starts[blocks[half:]])
    many = (time.process_time() - start) / max(len(blocks) - half, 1)
    return (f"from its marks file ({table.marks_file.path.name}): {one * 1e6:,.1f} CPU us a block's first lookup "
            f"(load_block), {many * 1e6:,.1f} CPU us a block of a sorted batch (load_blocks)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="data/egtb", help="directory of compact files")
    parser.add_argument("--file", default=None, help="one compact file (default: the largest .wld)")
    parser.add_argument("--blocks", type=int, default=200, help="random blocks")
    parser.add_argument("--before", default=None, metavar="DIR",
                        help="first run this bench with the code of checkout DIR, in the same run")
    args = parser.parse_args()
    found = [Path(args.file)] if args.file else list(Path(args.tables).glob("*.wld"))
    if not found or not all(path.is_file() for path in found):
        parser.error(f"no compact file {args.file}" if args.file else f"no .wld file in {args.tables}")
    if args.before:
        run_before(args.before)
    path = max(found, key=lambda p: p.stat().st_size)
    table = compact.CompactTable(path)
    rng = np.random.default_rng(1)
    blocks = rng.integers(0, table.n_blocks, args.blocks)
    decode_rate(table, blocks[:2])  # compile
    ms, ns = decode_rate(table, blocks)
    runs = int(np.mean([len(table.decode(b)[0]) for b in blocks[:20].tolist()]))
    print(f"{path.name}: {table.n_blocks:,} blocks; {args.blocks} random blocks of about {runs:,} runs")
    print(f"decode_block: {ms:.3f} CPU ms a block, {ns:.1f} CPU ns a run")
    if hasattr(codec, "mark_block"):
        for every in (16, 32, 64, 128):
            mark_figures(path, blocks[:2], every, rng)  # compile
            print(mark_figures(path, blocks, every, rng))
    if hasattr(compact, "marks_path"):
        line = marks_file_figures(path, blocks)
        print(line or f"no marks file beside {path.name}")


if __name__ == "__main__":
    main()
