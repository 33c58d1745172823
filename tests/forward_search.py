"""A plain forward solver for tiny positions, independent of the builder and the prober.

The tests use it as an oracle for table values: it collects every position
reachable from some roots and resolves them ply by ply with forward passes. A
position is a win in d plies when a successor is a loss in d - 1; a loss in d
when every successor is a win and the longest of them takes d - 1 (no legal
move: a loss in 0); what is never resolved is a draw. There is no index, no
colour mirroring (White to move stays White to move), no retrograde list, no
stored file: only the move generator (tested against pydraughts and the
published perft counts in tests/test_movegen.py) is shared with the builder.

>>> solve(["W:W18:B5"])["W:W18:B5"]
('win', 3)
"""

from __future__ import annotations

from egtb.rules.movegen import M_BK, M_BM, M_WK, M_WM, generate_moves, new_move_buffer
from egtb.rules.notation import parse_fen

State = tuple[int, int, int, int, int]


def state_of(fen: str) -> State:
    """(black men, black kings, white men, white kings, side to move) of a FEN."""
    p = parse_fen(fen)
    return (p.black_men, p.black_kings, p.white_men, p.white_kings, p.turn)


def reachable(roots: list[State]) -> dict[State, list[State]]:
    """Every position reachable from the roots, with the positions its legal moves lead to."""
    buffer = new_move_buffer()
    graph: dict[State, list[State]] = {}
    stack = list(roots)
    while stack:
        state = stack.pop()
        if state in graph:
            continue
        n = generate_moves(*state, buffer)
        graph[state] = [(int(buffer[i, M_BM]), int(buffer[i, M_BK]), int(buffer[i, M_WM]),
                         int(buffer[i, M_WK]), 1 - state[4]) for i in range(n)]
        stack.extend(graph[state])
    return graph


def solve_graph(graph: dict[State, list[State]]) -> dict[State, tuple[str, int]]:
    """('win' | 'loss' | 'draw', plies to the end with perfect play) of every position of graph.

    Pass d looks only at the positions with a move into one resolved at pass d - 1: a win in d
    needs a successor lost in d - 1, a loss in d a successor won in d - 1 (the longest)."""
    value: dict[State, tuple[str, int]] = {s: ("loss", 0) for s, succ in graph.items() if not succ}
    before: dict[State, list[State]] = {s: [] for s in graph}
    for s, succ in graph.items():
        for t in succ:
            before[t].append(s)
    last = list(value)
    depth = 1
    while last:  # nothing resolved at pass d: nothing can resolve at pass d + 1 either
        resolved = {}
        for s in {p for t in last for p in before[t] if p not in value}:
            after = [value.get(t) for t in graph[s]]
            if ("loss", depth - 1) in after:
                resolved[s] = ("win", depth)
            elif all(v is not None and v[0] == "win" for v in after):
                resolved[s] = ("loss", depth)  # the longest is d - 1: a successor was won at pass d - 1
        value.update(resolved)
        last = list(resolved)
        depth += 1
    value.update({s: ("draw", 0) for s in graph if s not in value})
    return value


def solve(fens: list[str]) -> dict[str, tuple[str, int]]:
    """(value, DTW) of each FEN by forward search over everything reachable from them."""
    roots = {fen: state_of(fen) for fen in fens}
    value = solve_graph(reachable(list(roots.values())))
    return {fen: value[state] for fen, state in roots.items()}


def move_values(fen: str) -> dict[str, tuple[str, int]]:
    """(value, DTW) for the side to move of each legal move of fen, by the move's PDN text."""
    from egtb.rules.board import Board
    board = Board(fen)
    after = {}
    for move in board.legal_moves():
        board.push(move)
        after[str(move)] = board.fen()
        board.pop()
    values = solve(list(after.values()))
    flip = {"win": "loss", "loss": "win", "draw": "draw"}
    return {text: (flip[values[f][0]], values[f][1] + 1 if values[f][0] != "draw" else 0)
            for text, f in after.items()}
