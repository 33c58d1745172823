"""The searcher's kernel as it was before it was split into named steps (issue 8), kept to compare speed.

bench/bench_search.py runs this copy and the current kernel on the same positions in the
same run; both must visit the same nodes. Not used by the package.
"""

from __future__ import annotations

from numba import njit

from egtb.rules.movegen import M_BK, M_BM, M_CAPTURED, M_CROWNS, M_FROM, M_MAN, M_TO, M_WK, M_WM, generate_moves
from tournament.engines.search import (
    FLAG_EXACT, FLAG_LOWER, FLAG_UPPER, INF, MATE, MATE_BOUND, MAX_PLY, NO_MOVE, S_ABORTED, S_BEST, S_MAX_NODES,
    S_NODES, S_SELDEPTH, T_DEPTH, T_FLAG, T_KEY, T_MOVE, T_SCORE, _is_repetition, _move_key, _order, _pick,
    evaluate, zobrist_hash,
)

@njit(cache=True)
def negamax_baseline(bm, bk, wm, wk, turn, depth, alpha, beta, ply, quiet, rev, pidx,
            rule_limit, man_resets, moves, scores, orders, tt, killers, history, path, zob, stats):
    """Score of a position for the side to move, searched ``depth`` plies (plus captures).

    ``quiet`` counts plies toward the move rule (``rule_limit``; ``man_resets``
    says whether a man move resets it), ``rev`` the plies since the last
    irreversible move; ``path[:pidx]`` holds the keys of earlier positions.
    At ply 0 the index of the best root move goes to ``stats[S_BEST]``.
    """
    stats[S_NODES] += 1
    if stats[S_NODES] >= stats[S_MAX_NODES]:
        stats[S_ABORTED] = 1
    if stats[S_ABORTED]:
        return 0
    if ply > stats[S_SELDEPTH]:
        stats[S_SELDEPTH] = ply
    h = zobrist_hash(bm, bk, wm, wk, turn, zob)
    path[pidx] = h
    if ply > 0 and _is_repetition(path, pidx, h, rev):
        return 0
    mv = moves[ply]
    n = generate_moves(bm, bk, wm, wk, turn, mv)
    if n == 0:
        return -(MATE - ply)
    if ply > 0 and quiet >= rule_limit:
        return 0
    capturing = mv[0, M_CAPTURED] != 0
    if ply >= MAX_PLY - 1 or (depth <= 0 and not capturing):
        return evaluate(bm, bk, wm, wk, turn)
    if depth < 0:
        depth = 0
    # transposition table
    slot = h & (tt.shape[0] - 1)
    tt_move = NO_MOVE
    if tt[slot, T_KEY] == h:
        tt_move = tt[slot, T_MOVE]
        if ply > 0 and tt[slot, T_DEPTH] >= depth:
            s = tt[slot, T_SCORE]
            if s > MATE_BOUND:
                s -= ply
            elif s < -MATE_BOUND:
                s += ply
            flag = tt[slot, T_FLAG]
            if flag == FLAG_EXACT or (flag == FLAG_LOWER and s >= beta) or (flag == FLAG_UPPER and s <= alpha):
                return s
    sc = scores[ply]
    order = orders[ply]
    _order(mv, n, sc, tt_move, killers, history, ply)
    for i in range(n):
        order[i] = i
    alpha0 = alpha
    best = -INF
    best_i = 0
    for k in range(n):
        i = _pick(sc, n, k, order)
        captured = mv[i, M_CAPTURED]
        man = mv[i, M_MAN]
        new_rev = 0 if (captured or man) else rev + 1
        new_quiet = 0 if (captured or mv[i, M_CROWNS] or (man_resets and man)) else quiet + 1
        child_depth = depth - 1
        if k == 0:
            s = -negamax_baseline(mv[i, M_BM], mv[i, M_BK], mv[i, M_WM], mv[i, M_WK], 1 - turn, child_depth, -beta, -alpha,
                         ply + 1, new_quiet, new_rev, pidx + 1, rule_limit, man_resets,
                         moves, scores, orders, tt, killers, history, path, zob, stats)
        else:
            s = -negamax_baseline(mv[i, M_BM], mv[i, M_BK], mv[i, M_WM], mv[i, M_WK], 1 - turn, child_depth, -alpha - 1, -alpha,
                         ply + 1, new_quiet, new_rev, pidx + 1, rule_limit, man_resets,
                         moves, scores, orders, tt, killers, history, path, zob, stats)
            if alpha < s < beta and not stats[S_ABORTED]:
                s = -negamax_baseline(mv[i, M_BM], mv[i, M_BK], mv[i, M_WM], mv[i, M_WK], 1 - turn, child_depth, -beta, -alpha,
                             ply + 1, new_quiet, new_rev, pidx + 1, rule_limit, man_resets,
                             moves, scores, orders, tt, killers, history, path, zob, stats)
        if stats[S_ABORTED]:
            return 0
        if s > best:
            best = s
            best_i = i
            if s > alpha:
                alpha = s
                if s >= beta:
                    if not captured:
                        key = _move_key(mv, i)
                        if killers[ply, 0] != key:
                            killers[ply, 1] = killers[ply, 0]
                            killers[ply, 0] = key
                        history[mv[i, M_FROM], mv[i, M_TO]] += depth * depth
                    break
    if ply == 0:
        stats[S_BEST] = best_i
    stored = best
    if stored > MATE_BOUND:
        stored += ply
    elif stored < -MATE_BOUND:
        stored -= ply
    if best <= alpha0:
        flag = FLAG_UPPER
    elif best >= beta:
        flag = FLAG_LOWER
    else:
        flag = FLAG_EXACT
    if tt[slot, T_KEY] != h or depth >= tt[slot, T_DEPTH] or flag == FLAG_EXACT:
        tt[slot, T_KEY] = h
        tt[slot, T_MOVE] = _move_key(mv, best_i)
        tt[slot, T_SCORE] = stored
        tt[slot, T_DEPTH] = depth
        tt[slot, T_FLAG] = flag
    return best


