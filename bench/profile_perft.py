"""Where perft's time goes: move generation, last-ply counting (simple moves / captures), recursion.

Prints figures; asserts nothing. Run: ``.venv/bin/python bench/profile_perft.py [--depth 10]``

Both kernels are profiled in the same run: the previous one (``egtb/movegen.py``
of the untouched baseline clone, ``--baseline DIR``, default /work/baseline)
and :mod:`egtb.rules.perft`. The tree of perft(depth) from the start is walked
once to collect its positions: the frontier (depth - 1 plies deep, where the
last ply is counted) and the interior (where moves are generated and made).
Each part is then timed alone over those arrays, and the rest of the measured
perft time is the recursion and move-making overhead. CPU time of this process
(``time.process_time``) is used, so other load on the machine matters less.
"""

from __future__ import annotations

import argparse
import sys
import time
import types
from pathlib import Path

import numpy as np
from numba import njit

from egtb.rules import perft as fast

BASELINE_DIR = Path("/work/baseline")


def load_baseline(directory: Path):
    """The old movegen module of the baseline clone under a distinct name, or None.

    Its source is compiled without numba's cache (the clone's cache belongs to
    its own module name), against the same square tables.
    """
    path = directory / "egtb" / "movegen.py"
    if not path.exists():
        return None
    source = path.read_text().replace("cache=True", "cache=False")
    source = source.replace("from egtb.squares import", "from egtb.rules.squares import")
    module = types.ModuleType("baseline_movegen")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


@njit(cache=True)
def collect_tree(depth, frontier_size, interior_size):
    """Positions (bm, bk, wm, wk, turn) at depth - 1 (frontier) and above (interior)."""
    frontier = np.zeros((frontier_size, 5), dtype=np.int64)
    interior = np.zeros((interior_size, 5), dtype=np.int64)
    scratch = np.zeros((fast.CAPTURE_ROWS + fast.MAX_JUMPS + 1, 4), dtype=np.int64)
    level = np.zeros((1, 5), dtype=np.int64)
    level[0, 0] = fast.START_BM
    level[0, 2] = fast.START_WM
    out = np.zeros((fast.MAX_CHILDREN, 4), dtype=np.int64)
    ni = 0
    for ply in range(depth - 1):
        count = 0
        for i in range(level.shape[0]):
            interior[ni] = level[i]
            ni += 1
            turn = level[i, 4]
            if turn == 0:
                pm, pk, om, ok = level[i, 0], level[i, 1], level[i, 2], level[i, 3]
            else:
                pm, pk, om, ok = level[i, 2], level[i, 3], level[i, 0], level[i, 1]
            count += fast._children(pm, pk, om, ok, turn, out, 0, scratch)
        nxt = np.zeros((count, 5), dtype=np.int64)
        j = 0
        for i in range(level.shape[0]):
            turn = level[i, 4]
            if turn == 0:
                pm, pk, om, ok = level[i, 0], level[i, 1], level[i, 2], level[i, 3]
            else:
                pm, pk, om, ok = level[i, 2], level[i, 3], level[i, 0], level[i, 1]
            n = fast._children(pm, pk, om, ok, turn, out, 0, scratch)
            for k in range(n):
                # child rows are side-relative: the child's side to move first
                if turn == 0:
                    nxt[j, 0], nxt[j, 1], nxt[j, 2], nxt[j, 3] = out[k, 2], out[k, 3], out[k, 0], out[k, 1]
                else:
                    nxt[j, 0], nxt[j, 1], nxt[j, 2], nxt[j, 3] = out[k, 0], out[k, 1], out[k, 2], out[k, 3]
                nxt[j, 4] = 1 - turn
                j += 1
        level = nxt
    frontier[:level.shape[0]] = level
    return frontier[:level.shape[0]], interior[:ni]


@njit(cache=True)
def split_by_capture(positions):
    """(positions where the side to move must capture, the others)."""
    caps = np.zeros(positions.shape[0], dtype=np.bool_)
    for i in range(positions.shape[0]):
        bm, bk, wm, wk, turn = positions[i, 0], positions[i, 1], positions[i, 2], positions[i, 3], positions[i, 4]
        pm, pk, opp = (bm, bk, wm | wk) if turn == 0 else (wm, wk, bm | bk)
        empty = fast.ALL_SQUARES & ~(bm | bk | wm | wk)
        caps[i] = fast.jumping_pieces(pm, pk, opp, empty, turn) != 0
    return positions[caps], positions[~caps]


# --- the new kernel, part by part --------------------------------------------------


@njit(cache=True)
def fast_count(positions):
    scratch = np.zeros((fast.CAPTURE_ROWS + fast.MAX_JUMPS + 1, 4), dtype=np.int64)
    total = 0
    for i in range(positions.shape[0]):
        bm, bk, wm, wk, turn = positions[i, 0], positions[i, 1], positions[i, 2], positions[i, 3], positions[i, 4]
        if turn == 0:
            total += fast._count_moves(bm, bk, wm, wk, 0, scratch)
        else:
            total += fast._count_moves(wm, wk, bm, bk, 1, scratch)
    return total


@njit(cache=True)
def fast_generate(positions):
    scratch = np.zeros((fast.CAPTURE_ROWS + fast.MAX_JUMPS + 1, 4), dtype=np.int64)
    out = np.zeros((fast.MAX_CHILDREN, 4), dtype=np.int64)
    total = 0
    for i in range(positions.shape[0]):
        bm, bk, wm, wk, turn = positions[i, 0], positions[i, 1], positions[i, 2], positions[i, 3], positions[i, 4]
        if turn == 0:
            total += fast._children(bm, bk, wm, wk, 0, out, 0, scratch)
        else:
            total += fast._children(wm, wk, bm, bk, 1, out, 0, scratch)
    return total


# --- the baseline kernel, part by part ---------------------------------------------


def baseline_parts(module):
    """njit loops over the baseline's count_moves and generate_moves."""
    shape = (module.MAX_MOVES, module.MOVE_WIDTH)
    return _summed_over_positions(module.count_moves, shape), _summed_over_positions(module.generate_moves, shape)


def _summed_over_positions(kernel, shape):
    """An njit loop adding up ``kernel(bm, bk, wm, wk, turn, buffer)`` over rows of positions."""

    @njit
    def summed(positions):
        buffer = np.zeros(shape, dtype=np.int64)
        total = 0
        for i in range(positions.shape[0]):
            total += kernel(positions[i, 0], positions[i, 1], positions[i, 2], positions[i, 3], positions[i, 4],
                            buffer)
        return total

    return summed


def cpu_seconds(function, *args, repeats: int = 3) -> float:
    """Best CPU time of a few calls (the first call compiles)."""
    function(*args)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        function(*args)
        best = min(best, time.process_time() - start)
    return best


def profile(name: str, perft, count, generate, tree, depth: int) -> list[tuple]:
    """Rows (part, seconds, share) for one kernel."""
    frontier, interior = tree
    caps, quiet = split_by_capture(frontier)
    total = cpu_seconds(perft, fast.START_BM, 0, fast.START_WM, 0, 0, depth, repeats=2)
    parts = [
        ("generate + make (interior nodes)", cpu_seconds(generate, interior)),
        ("count last ply, simple moves", cpu_seconds(count, quiet)),
        ("count last ply, captures", cpu_seconds(count, caps)),
    ]
    rest = total - sum(seconds for _, seconds in parts)
    parts.append(("recursion, buffers, calls (the rest)", rest))
    leaves = int(perft(fast.START_BM, 0, fast.START_WM, 0, 0, depth))
    rows = [(name, f"perft({depth})", f"{total:.3f}", "100%", f"{leaves / total / 1e6:.1f} Mleaves/s")]
    for part, seconds in parts:
        rows.append(("", part, f"{seconds:.3f}", f"{100 * seconds / total:.0f}%", ""))
    return rows


def print_table(header: tuple[str, ...], rows: list[tuple]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=10, help="perft depth to profile (8-11)")
    parser.add_argument("--baseline", type=Path, default=BASELINE_DIR, help="untouched clone of the previous main")
    args = parser.parse_args()

    sizes = {d: n for d, n in enumerate([1, 7, 49, 302, 1469, 7361, 36768, 179740, 845931, 3963680, 18391564])}
    frontier_size = sizes[args.depth - 1]
    interior_size = sum(sizes[d] for d in range(args.depth - 1))
    tree = collect_tree(args.depth, frontier_size, interior_size)
    caps, _ = split_by_capture(tree[0])
    print(f"perft({args.depth}) from the start: {tree[1].shape[0]:,} interior nodes, {tree[0].shape[0]:,} "
          f"frontier nodes ({100 * caps.shape[0] / tree[0].shape[0]:.0f}% must capture); CPU seconds, best of 2-3\n")
    rows = []
    old = load_baseline(args.baseline)
    if old is None:
        print(f"no baseline at {args.baseline}: the previous kernel is not profiled")
    else:
        count, generate = baseline_parts(old)
        rows += profile("before (baseline movegen)", old.perft, count, generate, tree, args.depth)
    rows += profile("after (egtb.rules.perft)", fast.perft, fast_count, fast_generate, tree, args.depth)
    print_table(("kernel", "part", "seconds", "share", "rate"), rows)


if __name__ == "__main__":
    main()
