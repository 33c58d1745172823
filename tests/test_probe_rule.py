"""Tests of probing under the move rule: exact outcomes at every counter, best moves, the CLI.

The oracle here is independent of the builder: it solves the game over states
(position, counter) by value iteration, straight from the move generator and the
rules of DESIGN.md (a quiet ply adds 1, a zeroing ply resets to 0, a side with no
legal move has lost even at the limit, otherwise a counter at the limit draws).
The state graph has no cycles (a quiet ply raises the counter, a zeroing ply is
irreversible), so the values are unique and the tables must match them at every
counter.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from egtb.probe.moves import best_moves
from egtb.cli import main
from egtb.errors import MissingRuleLayerError, MissingTableError
from egtb.probe.locate import CODE_NO_PIECES, locate
from egtb.probe.moves import MoveValue, move_order
from egtb.probe.tablebase import ProbeResult, Tablebase
from egtb.rules.board import DRAW_RULES, Board, Move
from egtb.rules.movegen import M_BK, M_BM, M_CAPTURED, M_CROWNS, M_MAN, M_WK, M_WM, generate_moves, new_move_buffer
from egtb.formats import master
from egtb.positions.index import NUM_CODES, code_of_material, unrank_positions
from egtb.positions.material import all_materials, count_positions
from egtb.formats.values import Category, Wdl

MAX_PIECES = 3
PRESETS = tuple(DRAW_RULES)


@pytest.fixture(scope="session")
def tables_dir(built_tables) -> Path:
    """Every table up to 3 pieces, with all rule layers."""
    return built_tables(MAX_PIECES)


# --- the oracle ---------------------------------------------------------------

@njit(cache=True)
def _edges(bm, bk, wm, wk, offsets, man_move_resets, terminal, buffer, src, dst, zeroing, has_move):
    """Every move of every position (Black to move) as an edge; return the edge count.

    dst is the global index of the position after the move (White to move,
    colour-normalised), or ``terminal`` when White has no pieces left.
    """
    n_edges = 0
    for i in range(bm.shape[0]):
        n = generate_moves(bm[i], bk[i], wm[i], wk[i], 0, buffer)
        has_move[i] = n > 0
        for k in range(n):
            code, index = locate(buffer[k, M_BM], buffer[k, M_BK], buffer[k, M_WM], buffer[k, M_WK], 1)
            src[n_edges] = i
            dst[n_edges] = terminal if code == CODE_NO_PIECES else offsets[code] + index
            zeroing[n_edges] = (buffer[k, M_CAPTURED] != 0 or buffer[k, M_CROWNS] != 0
                                or (man_move_resets and buffer[k, M_MAN] != 0))
            n_edges += 1
    return n_edges


class Oracle:
    """Values (+1/0/-1, side to move) of every (position, counter) state up to ``pieces`` pieces."""

    def __init__(self, pieces: int, rule: str) -> None:
        self.rule = DRAW_RULES[rule]
        self.materials = all_materials(pieces)
        self.offsets = np.full(NUM_CODES, -1, dtype=np.int64)
        parts, total = [], 0
        for material in self.materials:
            count = count_positions(material)
            self.offsets[code_of_material(material)] = total
            boards = [np.empty(count, dtype=np.int64) for _ in range(4)]
            unrank_positions(np.arange(count, dtype=np.int64), material.black_men, material.black_kings,
                             material.white_men, material.white_kings, *boards)
            parts.append(boards)
            total += count
        self.bm, self.bk, self.wm, self.wk = (np.concatenate(a) for a in zip(*parts))
        self.sweeps = 0
        """Sweeps that changed something (one, thanks to the level order)."""
        self.values = self._solve(total)

    def _solve(self, total: int) -> np.ndarray:
        """values[c, i]: the value of position i at counter c, by iteration to the fixpoint."""
        cap = 64 * total
        src, dst = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
        zeroing, has_move = np.empty(cap, dtype=np.bool_), np.empty(total, dtype=np.bool_)
        n = _edges(self.bm, self.bk, self.wm, self.wk, self.offsets, self.rule.man_move_resets, total,
                   new_move_buffer(), src, dst, zeroing, has_move)
        src, dst, zeroing = src[:n], dst[:n], zeroing[:n]
        limit = self.rule.limit_plies
        values = np.zeros((limit + 1, total + 1), dtype=np.int8)
        values[:, total] = -1  # the terminal: White to move without pieces has lost
        values[limit, :total] = np.where(has_move, 0, -1)
        first_edge = np.searchsorted(src, np.arange(total + 1))
        order, level_starts = self._levels()
        sweeps = 0
        while _sweep(values, first_edge, dst, zeroing, order, level_starts, limit):
            sweeps += 1
        self.sweeps = sweeps
        return values[:, :total]

    def _levels(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions ordered so that a zeroing move leads to an earlier level, and the level bounds.

        A capture lowers the piece count, a crowning the men count, any other
        man move raises the men's total advance; king moves keep all three.
        Ordering by (pieces, men, -advance) lets one sweep settle everything,
        and the sweep after it (changing nothing) proves the fixpoint.
        """
        rows = np.arange(32) // 4
        advance = np.zeros(len(self.bm), dtype=np.int64)
        for square in range(32):
            bit = np.int64(1) << square
            advance += ((self.bm & bit) != 0) * rows[square] + ((self.wm & bit) != 0) * (7 - rows[square])
        pieces = sum(_popcounts(a) for a in (self.bm, self.bk, self.wm, self.wk))
        men = _popcounts(self.bm) + _popcounts(self.wm)
        key = (pieces * 64 + men) * 256 + (255 - advance)
        order = np.argsort(key, kind="stable")
        bounds = np.flatnonzero(np.diff(key[order])) + 1
        return order, np.concatenate(([0], bounds, [len(order)])).astype(np.int64)


def _popcounts(bits: np.ndarray) -> np.ndarray:
    """Bits set in each 32-bit value."""
    return np.unpackbits(bits.astype("<u4").view(np.uint8)).reshape(-1, 32).sum(axis=1).astype(np.int64)


@njit(cache=True)
def _sweep(values, first_edge, dst, zeroing, order, level_starts, limit):
    """One pass, level by level and in each from counter limit-1 down to 0; return whether anything changed.

    A position's value at counter c is the best, over its moves, of minus the
    value after the move (at counter 0 after a zeroing move, else c + 1); no
    move loses.
    """
    changed = False
    for level in range(level_starts.shape[0] - 1):
        for c in range(limit - 1, -1, -1):
            for k in range(level_starts[level], level_starts[level + 1]):
                i = order[k]
                best = -1  # no move: lost
                for e in range(first_edge[i], first_edge[i + 1]):
                    value = -(values[0, dst[e]] if zeroing[e] else values[c + 1, dst[e]])
                    if value > best:
                        best = value
                if values[c, i] != best:
                    values[c, i] = best
                    changed = True
    return changed


@pytest.fixture(scope="session")
def oracles() -> dict[str, Oracle]:
    return {rule: Oracle(MAX_PIECES, rule) for rule in PRESETS}


@pytest.mark.parametrize("rule", PRESETS)
def test_every_state_agrees_with_the_oracle(tb, oracles, rule):
    oracle = oracles[rule]
    limit = oracle.rule.limit_plies
    for counter in range(limit + 1):
        outcome, category, dtz = tb.probe_batch_rule(oracle.bm, oracle.bk, oracle.wm, oracle.wk, 0, counter,
                                                     rule=rule)
        wrong = np.flatnonzero(outcome != oracle.values[counter])
        assert not len(wrong), (rule, counter, wrong[:5])
    wdl, _ = tb.probe_batch(oracle.bm, oracle.bk, oracle.wm, oracle.wk, 0)
    at_zero = oracle.values[0]
    expected = np.where(at_zero != 0, 2 * at_zero, wdl)  # cursed win / blessed loss: rule-free sign
    assert np.array_equal(category, expected)


@pytest.mark.parametrize("rule", PRESETS)
def test_single_probes_agree_with_batch_both_colours(tb, oracles, rule):
    oracle, rng = oracles[rule], random.Random(7)
    limit = oracle.rule.limit_plies
    for _ in range(300):
        i, counter = rng.randrange(len(oracle.bm)), rng.choice([0, 1, limit // 2, limit - 1, limit])
        board = Board(_fen(oracle, i), rule=rule, quiet_plies=counter)
        result = tb.probe(board)
        assert int(result.outcome) == oracle.values[counter, i]
        assert result.rule == rule and result.counter == counter
        assert tb.probe_outcome(board) == result.outcome
        assert tb.probe_category(board) == result.category and tb.probe_dtz(board) == result.dtz
        mirrored = Board(_fen(oracle, i, white_to_move=True), rule=rule, quiet_plies=counter)
        assert tb.probe(mirrored) == result


def _fen(oracle: Oracle, i: int, *, white_to_move: bool = False) -> str:
    from egtb.rules.notation import Placement, format_fen
    from egtb.positions.material import mirror

    bm, bk, wm, wk = (int(a[i]) for a in (oracle.bm, oracle.bk, oracle.wm, oracle.wk))
    if white_to_move:
        return format_fen(Placement(mirror(wm), mirror(wk), mirror(bm), mirror(bk), 1))
    return format_fen(Placement(bm, bk, wm, wk, 0))


# --- best moves -------------------------------------------------------------

@pytest.mark.parametrize("rule", PRESETS)
def test_best_moves_carry_each_successor_under_the_rule(tb, oracles, rule):
    oracle, rng = oracles[rule], random.Random(3)
    limit = oracle.rule.limit_plies
    for _ in range(150):
        i, counter = rng.randrange(len(oracle.bm)), rng.choice([0, 3, limit - 2, limit - 1])
        board = Board(_fen(oracle, i), rule=rule, quiet_plies=counter)
        moves = best_moves(tb, board).moves
        assert {m.move for m in moves} == set(board.legal_moves())
        here = tb.probe(board)
        if moves:
            assert max(int(m.outcome) for m in moves) == int(here.outcome)
            assert int(moves[0].outcome) == int(here.outcome)
        for mv in moves:
            board.push(mv.move)
            after = tb.probe(board)
            zeroing = board.quiet_plies == 0
            board.pop()
            assert mv.counter == (0 if zeroing else counter + 1)
            assert mv.outcome == Wdl(-after.outcome) and mv.category == Category(-after.category)
            assert mv.value is Wdl(-after.value)
            assert mv.dtz == (0 if after.category == 0 else 1 if zeroing else after.dtz + 1)


def test_best_move_dtz_is_the_position_dtz(tb, oracles):
    oracle, rng = oracles["wcdf"], random.Random(5)
    checked = 0
    while checked < 100:
        i = rng.randrange(len(oracle.bm))
        board = Board(_fen(oracle, i))
        here = tb.probe(board)
        if here.category not in (Category.WIN, Category.LOSS) or not board.legal_moves():
            continue
        moves = best_moves(tb, board).moves
        assert moves[0].dtz == here.dtz, board.fen()
        checked += 1


def test_move_order_under_the_rule():
    win = Wdl.WIN
    moves = [MoveValue(Move((1, 5)), win, 9, Wdl.LOSS, Category.LOSS, 4, 1),
             MoveValue(Move((1, 6)), win, 7, Wdl.DRAW, Category.CURSED_WIN, 90, 1),
             MoveValue(Move((2, 6)), win, 9, win, Category.WIN, 3, 1),
             MoveValue(Move((2, 7)), win, 5, win, Category.WIN, 5, 1),
             MoveValue(Move((3, 7)), Wdl.DRAW, 0, Wdl.DRAW, Category.DRAW, 0, 0),
             MoveValue(Move((3, 8)), Wdl.LOSS, 8, Wdl.LOSS, Category.LOSS, 6, 1)]
    ranked = [str(m.move) for m in sorted(moves, key=move_order)]
    # wins by DTZ (3 before 5, though its DTW is longer); draws cursed-win first; losses longest DTZ
    assert ranked == ["2-6", "2-7", "1-6", "3-7", "3-8", "1-5"]


# --- hand-made positions ----------------------------------------------------

def _states(tb: Tablebase, fen: str, rule: str) -> list[int]:
    """Outcome at every counter 0..limit."""
    return [int(tb.probe_outcome(fen, rule=rule, counter=c)) for c in range(DRAW_RULES[rule].limit_plies + 1)]


def test_kings_only_win_becomes_a_draw_when_the_counter_runs_out(tb):
    fen = "B:WK29:BK22,K27"  # two kings against one: won, by king moves only
    result = tb.probe(fen)
    assert result.value is Wdl.WIN and result.category is Category.WIN
    limit = 80
    outcomes = _states(tb, fen, "wcdf")
    assert outcomes == [1] * (limit - result.dtz + 1) + [0] * result.dtz
    near = Board(fen, quiet_plies=limit - result.dtz + 1)
    assert tb.probe(near).outcome is Wdl.DRAW and tb.probe(near).value is Wdl.WIN
    assert result.dtz <= result.dtw


def test_no_legal_move_is_a_loss_even_at_the_limit(tb):
    fen = "B:W5,6,10:B1"  # Black's man on 1 is blocked
    for rule in PRESETS:
        limit = DRAW_RULES[rule].limit_plies
        result = tb.probe(fen, rule=rule, counter=limit)
        assert (result.outcome, result.category, result.dtz) == (Wdl.LOSS, Category.LOSS, 0)


def test_counter_outside_the_rule_is_refused(tb):
    with pytest.raises(ValueError, match="0..40"):
        tb.probe("B:WK29:BK22,K27", rule="forty-plies", counter=41)
    with pytest.raises(ValueError, match="unknown draw rule"):
        tb.probe("B:WK29:BK22,K27", rule="fifty-moves")


def test_rule_free_probe_needs_no_layer(tables_dir, tmp_path):
    for path in tables_dir.glob("*.h5"):  # the same tables without their rule layers
        data = master.open_table(path)
        master.write_table(tmp_path / path.name, data.material, data.wdl, data.dtw, attrs={})
    name = "1k-2k.h5"
    tb = Tablebase(tmp_path)
    fen = "B:WK10,K14:BK1"
    with pytest.raises(MissingRuleLayerError) as info:
        tb.probe(fen)
    assert isinstance(info.value, MissingTableError) and isinstance(info.value, KeyError)
    assert name in str(info.value) and "'wcdf'" in str(info.value)
    assert tb.probe(fen, rule_free=True) == ProbeResult(Wdl.LOSS, tb.probe_dtw(fen))
    assert tb.get_outcome(fen, default=7) == 7
    assert [m.outcome for m in best_moves(tb, fen, rule_free=True).moves] == [None] * len(Board(fen).legal_moves())


# --- the command line -------------------------------------------------------

def test_cli_json_under_each_rule(tables_dir, tb, capsys):
    fen = "B:WK29:BK22,K27"
    dtz = tb.probe_dtz(fen)
    for rule, counter in (("wcdf", 0), ("forty-plies", 40 - dtz + 1)):
        assert main(["probe", "--tables", str(tables_dir), "--json", "--rule", rule, "--counter",
                     str(counter), fen]) == 0
        record = json.loads(capsys.readouterr().out)
        assert {k: record[k] for k in ("fen", "value", "rule", "counter")} == {
            "fen": fen, "value": "win", "rule": rule, "counter": counter}
        assert record["outcome"] == ("win" if rule == "wcdf" else "draw")
        assert record["category"] == str(tb.probe_category(fen, rule=rule))
        assert record["dtz"] == tb.probe_dtz(fen, rule=rule)
        assert set(record["moves"][0]) == {"move", "value", "dtw", "outcome", "category", "dtz"}


def test_cli_counter_beyond_the_limit_is_bad_usage(tables_dir, capsys):
    assert main(["probe", "--tables", str(tables_dir), "--rule", "forty-plies", "--counter", "41",
                 "B:WK29:BK22,K27"]) == 2
    assert "41" in capsys.readouterr().err


# --- cache, keywords, the limit ---------------------------------------------

def test_evicted_tables_are_reloaded_under_the_rule(tables_dir, tb):
    small = Tablebase(tables_dir, max_open=1)
    fens = ["B:WK29:BK22,K27", "W:W18:B5", "B:WK10,K14:BK1", "B:W18,K3:B5"] * 3
    for k, fen in enumerate(fens):
        board = Board(fen, quiet_plies=k)
        assert small.probe_outcome(board) == tb.probe_outcome(board)
        assert small.probe(board) == tb.probe(board)
        assert len(small.loaded_materials) == 1
    small.close()
    assert small.probe_outcome(Board(fens[0])) == tb.probe_outcome(Board(fens[0]))
    batch = small.probe_batch_rule(*(np.array([v]) for v in Board(fens[2]).key()[:4]), 1, 79)
    assert int(batch[0][0]) == int(tb.probe_outcome(fens[2], counter=79))


def test_keywords_override_the_board(tb):
    board = Board("B:WK29:BK22,K27", rule="forty-plies", quiet_plies=39)
    assert tb.probe(board, rule="wcdf", counter=0) == tb.probe("B:WK29:BK22,K27")
    assert tb.probe(board).rule == "forty-plies" and tb.probe(board).counter == 39
    assert tb.probe_outcome(board, counter=0) == tb.probe_outcome("B:WK29:BK22,K27", rule="forty-plies")
    assert tb.get_outcome(board, default=9) == tb.probe_outcome(board)


def test_every_move_draws_at_the_limit(tb):
    board = Board("B:WK29:BK22,K27", quiet_plies=80)
    moves = best_moves(tb, board).moves
    assert moves and all(m.outcome is Wdl.DRAW for m in moves)
    assert tb.probe(board).outcome is Wdl.DRAW and tb.probe(board).value is Wdl.WIN


def test_only_the_chosen_layers_are_kept(tables_dir, tb):
    fen = "B:WK29:BK22,K27"
    one = Tablebase(tables_dir, rules=("forty-plies",))
    assert one.probe(fen, rule="forty-plies") == tb.probe(fen, rule="forty-plies")
    tb.probe(fen)  # reads a block of the wcdf layer, which `one` never reads
    assert one.loaded_materials == tb.loaded_materials and one.loaded_bytes < tb.loaded_bytes
    with pytest.raises(MissingRuleLayerError, match="'wcdf' is not loaded"):
        one.probe(fen)
    assert one.probe(fen, rule_free=True) == tb.probe(fen, rule_free=True)
