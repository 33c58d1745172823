"""Benchmark of the alpha-beta searcher: nodes per second, and its score in short matches.

Run: ``.venv/bin/python bench/bench_search.py [--games 10] [--depth 14] [--speed-only]``. Prints
two tables: the searcher's speed from a few positions at a fixed depth (the current kernel
against the kernel before it was split into named steps, bench/baseline_negamax.py), and
the scores of easy / medium / hard against the random mover, of medium
against easy and of hard against medium (each opening played twice with colours reversed; games longer
than --max-plies are scored as draws).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from egtb import BLACK, Board
from tournament.engines.base import Engine, GameState, Limit
from tournament.engines.registry import make_engine
from tournament.engines.search import INF, S_MAX_NODES, S_NODES, ZOBRIST, _NO_PROBE, _history_keys, _Tables, negamax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline_negamax import negamax_baseline  # noqa: E402 - the kernel before the split, beside this file

POSITIONS = {
    "start": None,
    "opening (11-15 23-19 8-11 22-17)": "W:W17,19,21,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,9,10,11,12,15",
    "middlegame (20 pieces)": "B:W17,19,20,21,22,23,25,28,29,32:B1,2,6,7,8,9,10,12,13,16",
    "late middlegame (11 pieces)": "B:W13,14,20,28,29:B6,7,8,12,18,22",
    "kings endgame (10 pieces)": "B:WK1,K5,9,20:B7,11,15,K23,K26,K32",
}


def _kernel_search(kernel, board: Board, depth: int) -> tuple[int, float]:
    """(nodes, CPU seconds) of one fixed-depth search by ``kernel`` with a fresh hash table (as search_position)."""
    tables = _Tables(20)
    history = _history_keys(board)
    tables.path[:len(history)] = history
    tables.stats[:] = 0
    tables.stats[S_MAX_NODES] = 2**62
    started = time.process_time()
    kernel(board.black_men, board.black_kings, board.white_men, board.white_kings, board.turn,
           depth, -INF, INF, 0, board.quiet_plies, len(history), len(history),
           board.rule.limit_plies, board.rule.man_move_resets,
           tables.moves, tables.scores, tables.orders, tables.tt, tables.killers,
           tables.history, tables.path, ZOBRIST, tables.stats, *(_NO_PROBE if kernel is negamax else ()))
    return int(tables.stats[S_NODES]), time.process_time() - started


def bench_speed(depth: int, repeats: int) -> None:
    """Nodes per CPU second of the current kernel and of the kernel before the split
    (bench/baseline_negamax.py), in the same run.

    Every position is searched ``repeats`` times by each kernel, alternating which goes first. Per kernel the
    median rate over the repeats (of all positions together) is printed with its spread
    (lowest-highest), and the ratio of the medians. Both kernels must visit the same nodes
    (the split changed no decision).
    """
    kernels = {"current": negamax, "baseline": negamax_baseline}
    for kernel in kernels.values():
        _kernel_search(kernel, Board(), 2)  # compile / load both first
    boards = {name: Board(fen) for name, fen in POSITIONS.items()}
    seconds = {k: [[0.0] * repeats for _ in boards] for k in kernels}  # [position][repeat]
    nodes: dict[str, int] = {}
    for r in range(repeats):
        for p, (name, board) in enumerate(boards.items()):
            # the order alternates (ABBA): the kernel searching second was measured ~3% faster
            for k, kernel in (list(kernels.items()) if r % 2 == 0 else list(kernels.items())[::-1]):
                n, cpu = _kernel_search(kernel, board, depth)
                if nodes.setdefault(name, n) != n:
                    raise SystemExit(f"{name}: the kernels disagree: {nodes[name]} vs {n} nodes")
                seconds[k][p][r] = cpu
    print(f"\nSearch speed at depth {depth} (fresh hash table each; nodes per CPU second, "
          f"median of {repeats} and lowest-highest):")
    print(f"{'position':34} {'nodes':>10} {'current n/s':>12} {'baseline n/s':>13} {'ratio':>6}")

    def rates(rows: list[list[float]], count: int) -> list[float]:
        return [count / max(sum(row[r] for row in rows), 1e-9) for r in range(repeats)]

    for p, name in enumerate(boards):
        cur, base = (statistics.median(rates([seconds[k][p]], nodes[name])) for k in ("current", "baseline"))
        print(f"{name:34} {nodes[name]:>10,} {cur:>12,.0f} {base:>13,.0f} {cur / base:>6.3f}")
    total = sum(nodes.values())
    summary = {k: rates(seconds[k], total) for k in kernels}
    cur, base = (statistics.median(summary[k]) for k in ("current", "baseline"))
    print(f"{'total':34} {total:>10,} {cur:>12,.0f} {base:>13,.0f} {cur / base:>6.3f}")
    for k in kernels:
        print(f"  {k:9} median {statistics.median(summary[k]):>12,.0f} n/s, "
              f"spread {min(summary[k]):,.0f}-{max(summary[k]):,.0f}")
    per_repeat = [c / b for c, b in zip(summary["current"], summary["baseline"])]
    print(f"  ratio current/baseline per repeat: median {statistics.median(per_repeat):.3f}, "
          f"spread {min(per_repeat):.3f}-{max(per_repeat):.3f}")


def play_game(black: Engine, white: Engine, opening: list[str], max_plies: int) -> float:
    """Black's score (1, 0.5, 0) in one game from an opening."""
    board = Board()
    for text in opening:
        board.push_pdn(text)
    for engine in (black, white):
        engine.new_game()
    while (outcome := board.outcome()) is None:
        if len(board.move_stack) >= max_plies:
            return 0.5
        engine = black if board.turn == BLACK else white
        board.push(engine.play(GameState.from_board(board), Limit()).move)
    return 0.5 if outcome.winner is None else float(outcome.winner == BLACK)


def match(first: str, second: str, games: int, max_plies: int, seed: int) -> tuple[int, int, int, float]:
    """(wins, draws, losses, seconds) of ``first`` against ``second``, colours alternating."""
    rng = random.Random(seed)
    wins = draws = losses = 0
    started = time.perf_counter()
    for pair in range((games + 1) // 2):
        opening = _random_opening(rng, 3)
        a = make_engine(first, seed=seed + pair)
        b = make_engine(second, seed=seed + 1000 + pair)
        for a_is_black in (True, False):
            if wins + draws + losses >= games:
                break
            black, white = (a, b) if a_is_black else (b, a)
            score = play_game(black, white, opening, max_plies)
            mine = score if a_is_black else 1 - score
            wins, draws, losses = wins + (mine == 1), draws + (mine == 0.5), losses + (mine == 0)
    return wins, draws, losses, time.perf_counter() - started


def _random_opening(rng: random.Random, plies: int) -> list[str]:
    board = Board()
    for _ in range(plies):
        board.push(rng.choice(board.legal_moves()))
    return [str(m) for m in board.move_stack]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10, help="games per match")
    parser.add_argument("--depth", type=int, default=14, help="depth of the speed test")
    parser.add_argument("--max-plies", type=int, default=200, help="longer games are draws")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=6, help="searches per position and kernel (median counts)")
    parser.add_argument("--speed-only", action="store_true", help="skip the matches")
    args = parser.parse_args()
    bench_speed(args.depth, args.repeats)
    if args.speed_only:
        return
    print(f"\nMatches ({args.games} games each, 3-ply random openings played with both colours):")
    print(f"{'match':22} {'W':>3} {'D':>3} {'L':>3} {'score':>7} {'seconds':>8}")
    for first, second in [("easy", "random"), ("medium", "random"), ("hard", "random"), ("medium", "easy"), ("hard", "medium")]:
        w, d, l, seconds = match(first, second, args.games, args.max_plies, args.seed)
        score = (w + d / 2) / max(1, w + d + l)
        print(f"{first + ' vs ' + second:22} {w:>3} {d:>3} {l:>3} {score:>7.0%} {seconds:>8.1f}")


if __name__ == "__main__":
    main()
