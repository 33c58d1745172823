"""Write data/golden/positions.txt: values found by a plain forward search, not the builder.

The search collects every position reachable from a set of seeded random roots
(2 and 3 pieces, either side to move), then resolves values ply by ply with
forward passes: a position is a WIN in d when a successor is a LOSS in d - 1,
a LOSS in d when every successor is a WIN and the longest is d - 1 (no move:
LOSS in 0); what is never resolved is a DRAW. No index, no colour mirroring,
no retrograde lists: only the move generator is shared with the builder.

Usage: .venv/bin/python bench/make_golden.py [--out data/golden/positions.txt]

>>> value_of_roots(["B:W10:BK6"])["B:W10:BK6"]
('win', 1)
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from egtb.rules.movegen import M_BK, M_BM, M_WK, M_WM, generate_moves, new_move_buffer
from egtb.rules.notation import Placement, format_fen, parse_fen

SEED = 20240601
#: (black men, black kings, white men, white kings) of the random roots.
ROOT_MATERIALS = [(0, 1, 0, 1), (1, 0, 0, 1), (0, 1, 1, 0), (1, 0, 1, 0), (0, 2, 0, 1),
                  (0, 1, 0, 2), (2, 0, 1, 0), (1, 1, 0, 1), (0, 1, 2, 0), (1, 0, 1, 1),
                  (2, 0, 0, 1)]
ROOTS_PER_MATERIAL = 5
CLASSICS = ["B:W8,11:B4", "B:W10:BK6", "B:WK32:BK1", "W:WK32:BK1,K5", "B:WK14:BK1,K2"]


def random_root(rng: random.Random, counts: tuple[int, int, int, int]) -> str:
    """A random FEN with the given piece counts (men off their crowning rows)."""
    while True:
        squares = rng.sample(range(1, 33), sum(counts))
        bm, bk = squares[:counts[0]], squares[counts[0]:counts[0] + counts[1]]
        wm = squares[counts[0] + counts[1]:counts[0] + counts[1] + counts[2]]
        wk = squares[counts[0] + counts[1] + counts[2]:]
        if all(s <= 28 for s in bm) and all(s >= 5 for s in wm):
            bb = lambda xs: sum(1 << (s - 1) for s in xs)  # noqa: E731
            return format_fen(Placement(bb(bm), bb(bk), bb(wm), bb(wk), rng.randrange(2)))


def successors(state: tuple, buf) -> list[tuple]:
    bm, bk, wm, wk, turn = state
    n = generate_moves(bm, bk, wm, wk, turn, buf)
    return [(int(buf[i, M_BM]), int(buf[i, M_BK]), int(buf[i, M_WM]), int(buf[i, M_WK]),
             1 - turn) for i in range(n)]


def closure(roots: list[tuple]) -> dict[tuple, list[tuple]]:
    """Every position reachable from the roots, with its successor list."""
    buf = new_move_buffer()
    graph: dict[tuple, list[tuple]] = {}
    stack = list(roots)
    while stack:
        s = stack.pop()
        if s in graph:
            continue
        graph[s] = successors(s, buf)
        stack += [t for t in graph[s] if t not in graph]
    return graph


def solve(graph: dict[tuple, list[tuple]]) -> dict[tuple, tuple[str, int]]:
    """Forward passes, one ply depth at a time."""
    value: dict[tuple, tuple[str, int]] = {}
    depth = 0
    open_ = set(graph)
    while True:
        new = {}
        for s in open_:
            succ = [value.get(t) for t in graph[s]]
            if any(v == ("loss", depth - 1) for v in succ):
                new[s] = ("win", depth)
            elif all(v is not None and v[0] == "win" for v in succ) and \
                    max([v[1] for v in succ], default=-1) == depth - 1:
                new[s] = ("loss", depth)
        value.update(new)
        open_ -= set(new)
        if not new and not any(v[1] >= depth for v in value.values()):
            break
        depth += 1
    for s in open_:
        value[s] = ("draw", 0)
    return value


def value_of_roots(fens: list[str]) -> dict[str, tuple[str, int]]:
    """Value and DTW of each FEN by the plain search."""
    roots = {}
    for fen in fens:
        p = parse_fen(fen)
        roots[fen] = (p.black_men, p.black_kings, p.white_men, p.white_kings, p.turn)
    value = solve(closure(list(roots.values())))
    return {fen: value[state] for fen, state in roots.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/golden/positions.txt"))
    args = parser.parse_args()
    rng = random.Random(SEED)
    fens = CLASSICS + [random_root(rng, c) for c in ROOT_MATERIALS
                       for _ in range(ROOTS_PER_MATERIAL)]
    values = value_of_roots(fens)
    lines = ["# FEN value DTW (side to move; plies to the end, no move rule)",
             "# computed by bench/make_golden.py (plain forward search, independent of the builder)"]
    lines += [f"{fen} {v} {d}" for fen, (v, d) in values.items()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(values)} positions to {args.out}")


if __name__ == "__main__":
    main()
