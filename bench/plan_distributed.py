"""Figures for the 7-, 8- and 10-piece plan in docs/distributed.md (counting only, no building).

For each piece count: positions (exactly n pieces, both colours, Black to move
after colour normalisation), the largest material pair and what the lean
builder (the values and the wcdf layer, no DTW: egtb/builder/contents.py) keeps
for it in its scratch files (a byte a position of the pair and every table its
exits reach, two more a position of the pair for its DTZ), the largest unit
(one men configuration pair) with the solver's work arrays (edge lists, or the
regenerating kernel's 10 bytes a node where those would not fit in 16 GiB),
and the files and core-hours at the rates measured on this machine (:data:`RATES`): up to 7
pieces those of the 7-piece masters (1.43 bits a position for the values and the wcdf layer;
0.24 CPU microseconds a position over the 47 pairs that ran without a restart,
``bench/seven_log.py``), from 8 pieces on those of the 8-piece tables built compact-native
(their compact and marks files; CPU as the build log's ``solved`` lines give it, putting the
dependencies in and writing the files included). With ``--max-per-side 5`` only materials
with at most five pieces a side count (the usual 10-piece scope).

    python bench/plan_distributed.py [--max-per-side K]
"""

from __future__ import annotations

import argparse

import numpy as np

from egtb.builder import budget, solve, solve_regen
from egtb.positions.material import pair_of, successor_materials
from egtb.positions.material import all_materials, count_king_placements, count_positions

#: (CPU seconds a position, bits of files a position) measured here, by piece count: the 7-piece
#: masters (the build's model for one table, :mod:`egtb.builder.budget`; the 104 files, values and
#: wcdf layer: 6.13 GB for 34.24 G positions), and the 8-piece tables built compact-native (the
#: build's own measured rate, ``budget.CPU_SECONDS_NATIVE``; the files of the 13 materials built
#: by Dec 7, 78.22 G positions, 7.84 GB of .wld, .wcdf and .dtz files and 0.70 GB of marks). A
#: piece count without its own takes the nearest.
RATES = {7: (budget.CPU_SECONDS_A_POSITION + budget.CPU_SECONDS_A_TABLE, 1.43),
         8: (budget.CPU_SECONDS_NATIVE[8], 0.874)}


def rates(n: int) -> tuple[float, float]:
    """(CPU seconds, bits of files) a position of n pieces, by :data:`RATES`."""
    return RATES[min(max(n, min(RATES)), max(RATES))]
BYTES_PER_POSITION = 1  #: a wcdf category a position of the pair and its dependencies
BYTES_PER_OWN_POSITION = 2  #: the pair's own DTZ (uint16)
#: Work arrays of a unit above which the regenerating kernel (10 bytes a node) runs instead.
EDGE_LIST_LIMIT = 16 << 30
WEEK_HOURS = 7 * 24
PUBLISHED = {7: 34_779_531_480}  #: any colours, DESIGN.md (checkers proof)


def scratch_bytes(material) -> int:
    """Bytes of egtb.builder.solve.Scratch for a unit of this material (two halves)."""
    unit = count_king_placements(material)
    nodes = 2 * unit
    edges = 4 * unit * (material.black_kings + material.white_kings)
    node_table = 5 * np.dtype(solve.NODE_DTYPE).itemsize
    edge_lists = nodes * (8 + 8 + 8 + node_table + 3 * 2 * 4) + nodes // 8 + edges * 4
    return edge_lists if edge_lists <= EDGE_LIST_LIMIT else nodes * solve_regen.node_bytes(1)


def plan(n: int, max_per_side: int) -> dict:
    materials = [m for m in all_materials(n, min_pieces=n) if max(m.black, m.white) <= max_per_side]
    positions = sum(count_positions(m) for m in materials)
    pairs = {pair_of(m) for m in materials}

    def pair_memory(pair) -> int:
        own = sum(count_positions(m) for m in pair)
        deps = {d for m in pair for d in successor_materials(m)}
        return (BYTES_PER_POSITION * (own + sum(count_positions(d) for d in deps))
                + BYTES_PER_OWN_POSITION * own)

    largest_pair = max(pairs, key=pair_memory)
    largest_unit = max(materials, key=count_king_placements)
    return {
        "n": n, "materials": len(materials), "pairs": len(pairs), "positions": positions,
        "largest_pair": "/".join(m.name for m in largest_pair), "pair_memory": pair_memory(largest_pair),
        "largest_unit": largest_unit.name, "unit_positions": 2 * count_king_placements(largest_unit),
        "unit_memory": scratch_bytes(largest_unit)
        + (BYTES_PER_POSITION + BYTES_PER_OWN_POSITION) * 2 * count_king_placements(largest_unit),
        "disk": positions * rates(n)[1] / 8, "core_hours": positions * rates(n)[0] / 3600,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-per-side", type=int, default=12)
    parser.add_argument("--pieces", type=int, nargs="+", default=[7, 8, 10])
    args = parser.parse_args()
    cumulative = {"positions": 0, "disk": 0.0, "core_hours": 0.0}
    rows = {n: plan(n, args.max_per_side) for n in range(2, max(args.pieces) + 1)}
    for n, row in rows.items():
        for key in cumulative:
            cumulative[key] += row[key]
        if n not in args.pieces:
            continue
        print(f"{n} pieces (max {args.max_per_side} a side): {row['materials']} materials, {row['pairs']} pairs, "
              f"{row['positions']:,} positions" + (f" (published, any colours: {PUBLISHED[n]:,})" if n in PUBLISHED else ""))
        print(f"  largest pair {row['largest_pair']}: {row['pair_memory'] / 2**30:,.1f} GiB of scratch (own + dependencies)")
        print(f"  largest unit {row['largest_unit']}: {row['unit_positions']:,} positions, "
              f"{row['unit_memory'] / 2**20:,.0f} MiB with scratch")
        print(f"  at {rates(n)[0] * 1e6:.3f} CPU us and {rates(n)[1]:.3f} bits a position: "
              f"disk {row['disk'] / 2**30:,.1f} GiB (up to {n}: {cumulative['disk'] / 2**30:,.1f} GiB); "
              f"{row['core_hours']:,.0f} core-hours (up to {n}: {cumulative['core_hours']:,.0f}); "
              f"cores for one week: {cumulative['core_hours'] / WEEK_HOURS:,.0f}")


if __name__ == "__main__":
    main()
