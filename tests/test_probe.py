"""Tests of egtb.probe.tablebase: golden values, agreement with the stored arrays, best moves, errors."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

import forward_search
from egtb.probe.moves import best_moves
from egtb.formats import master
from egtb.rules.board import Board
from egtb.positions.index import global_unrank
from egtb.positions.material import Material, all_materials, count_positions, mirror
from egtb.rules.notation import Placement, format_fen, parse_fen
from egtb.probe.moves import MoveValue, move_order
from egtb.probe.tablebase import MissingTableError, ProbeResult, Tablebase, TableError
from egtb.formats.values import DRAW, LOSS, WIN, Category, Wdl

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "data" / "golden"
#: A regression snapshot of the tables' own output (a few rows worked by hand; the rows of up to
#: 3 pieces also solved below by tests/forward_search.py), and bench/make_golden.py's forward search.
GOLDEN_FILES = ("probe_golden.txt", "positions.txt")
NAME_OF_CODE = {WIN: "win", DRAW: "draw", LOSS: "loss"}
MAX_PIECES = 4


@pytest.fixture(scope="session")
def tables_dir(built_tables) -> Path:
    """Every table up to 4 pieces."""
    return built_tables(MAX_PIECES)


def fen_of(material: Material, index: int, *, white_to_move: bool = False) -> str:
    """FEN of a stored position; with white_to_move, its colour-mirrored twin."""
    bm, bk, wm, wk = global_unrank(material, index)
    if white_to_move:
        return format_fen(Placement(mirror(wm), mirror(wk), mirror(bm), mirror(bk), 1))
    return format_fen(Placement(bm, bk, wm, wk, 0))


def read_golden() -> list[tuple[str, str, int]]:
    """(FEN, value, DTW) of every line of the golden files that exist."""
    rows = []
    lines = [line for name in GOLDEN_FILES if (GOLDEN_DIR / name).exists()
             for line in (GOLDEN_DIR / name).read_text().splitlines()]
    for line in lines:
        if line.strip() and not line.startswith("#"):
            fen, value, dtw = line.split("#")[0].split()[:3]
            rows.append((fen, value, int(dtw)))
    return rows


# --- golden -------------------------------------------------------------------

def test_golden_file_has_positions():
    assert len(read_golden()) >= 100


@pytest.mark.parametrize("fen, value, dtw", read_golden())
def test_golden(tb, fen, value, dtw):
    """A regression snapshot: probe_golden.txt's values were written from the tables themselves, so
    this row alone catches a change, not an error; the forward-search tests below are the check."""
    if Board(fen).piece_count() > MAX_PIECES:
        pytest.skip(f"{fen} has more than {MAX_PIECES} pieces")
    assert tb.probe(fen, rule_free=True) == ProbeResult(Wdl.parse(value), dtw)
    full = tb.probe(fen)
    assert (full.value, full.dtw, full.rule, full.counter) == (Wdl.parse(value), dtw, "wcdf", 0)
    assert full.category.wdl == full.wdl  # the category keeps the rule-free sign
    assert tb.probe_wdl(Board(fen)) == {"win": 1, "draw": 0, "loss": -1}[value]
    assert tb.probe_dtw(fen) == dtw


def golden_rows_up_to(pieces: int) -> list[tuple[str, str, int]]:
    """The golden rows of at most ``pieces`` pieces."""
    return [row for row in read_golden() if Board(row[0]).piece_count() <= pieces]


def only_kings(fen: str) -> bool:
    placement = parse_fen(fen)
    return placement.black_men == placement.white_men == 0


def assert_rows_match_forward_search(rows: list[tuple[str, str, int]], tb: Tablebase) -> None:
    """Each row's value and DTW equal the forward solver's, and the prober's equal both."""
    assert rows, "no golden rows to check"
    solved = forward_search.solve([fen for fen, _, _ in rows])
    for fen, value, dtw in rows:
        assert solved[fen] == (value, dtw), fen
        assert tb.probe(fen, rule_free=True) == ProbeResult(Wdl.parse(solved[fen][0]), solved[fen][1]), fen


def test_golden_rows_of_two_pieces_and_three_kings_match_a_forward_search(tb):
    rows = golden_rows_up_to(2) + [row for row in golden_rows_up_to(3) if only_kings(row[0]) and row not in golden_rows_up_to(2)]
    assert len(rows) >= 50
    assert_rows_match_forward_search(rows, tb)


@pytest.mark.slow
def test_every_golden_row_of_up_to_three_pieces_matches_a_forward_search(tb):
    rows = golden_rows_up_to(3)
    assert len(rows) >= 100
    assert_rows_match_forward_search(rows, tb)


def test_forward_search_values_of_positions_worked_by_hand():
    """The oracle itself, on positions whose values are worked out by hand in the comments."""
    assert forward_search.solve(["B:W14,23:B9"])["B:W14,23:B9"] == ("win", 1)  # 9x18x27 takes both
    assert forward_search.solve(["B:W5,6,10:B1"])["B:W5,6,10:B1"] == ("loss", 0)  # Black cannot move
    assert forward_search.solve(["W:W18:B5"])["W:W18:B5"] == ("win", 3)  # 18-14 5-9 14x5
    assert forward_search.solve(["B:WK10:BK1"])["B:WK10:BK1"] == ("draw", 0)  # one king each


# --- agreement with the stored arrays ----------------------------------------

@pytest.mark.parametrize("material", all_materials(2) + [Material.parse("2k-1k"),
                                                         Material.parse("1m-1m1k")],
                         ids=str)
def test_every_position_through_fen_matches_table(tb, tables_dir, material):
    data = master.open_table(master.table_path(tables_dir, material))
    white = random.Random(material.name)
    for index in range(count_positions(material)):
        fen = fen_of(material, index, white_to_move=white.random() < 0.5)
        result = tb.probe(Board(fen))
        assert str(result.value) == NAME_OF_CODE[int(data.wdl[index])], fen
        assert result.dtw == (int(data.dtw[index]) if data.wdl[index] != DRAW else 0), fen


@pytest.mark.parametrize("material", all_materials(3), ids=str)
def test_batch_matches_table_for_every_position(tb, tables_dir, material):
    data = master.open_table(master.table_path(tables_dir, material))
    n = count_positions(material)
    boards = np.array([global_unrank(material, i) for i in range(n)], dtype=np.int64)
    wdl, dtw = tb.probe_batch(*boards.T, 0)
    expected = np.array([{WIN: 1, DRAW: 0, LOSS: -1}[c] for c in range(1, 4)])[data.wdl - 1]
    assert np.array_equal(wdl, expected)
    assert np.array_equal(dtw[wdl != 0], data.dtw[wdl != 0])
    assert not dtw[wdl == 0].any()


def test_batch_agrees_with_single_probes_both_sides(tb):
    rng = random.Random(7)
    fens = []
    for _ in range(400):
        material = rng.choice(all_materials(MAX_PIECES))
        index = rng.randrange(count_positions(material))
        fens.append(fen_of(material, index, white_to_move=rng.random() < 0.5))
    boards = [Board(f) for f in fens]
    arrays = [np.array([getattr(b, a) for b in boards]) for a in
              ("black_men", "black_kings", "white_men", "white_kings", "turn")]
    wdl, dtw = tb.probe_batch(*arrays)
    for fen, w, d in zip(fens, wdl.tolist(), dtw.tolist()):
        assert (tb.probe_wdl(fen), tb.probe_dtw(fen)) == (w, d), fen


def test_batch_terminal_and_invalid(tb):
    one = np.array([1 << 4])
    zero = np.array([0])
    wdl, dtw = tb.probe_batch(one, zero, zero, zero, 1)  # White to move has no pieces
    assert (wdl.tolist(), dtw.tolist()) == ([-1], [0])
    wdl, dtw = tb.probe_batch(one, zero, zero, zero, 0)  # only Black: one move wins
    assert (wdl.tolist(), dtw.tolist()) == ([1], [1])
    with pytest.raises(ValueError, match="invalid position at 0"):
        tb.probe_batch(one, one, zero, zero, 0)  # man and king on one square
    with pytest.raises(ValueError, match="invalid position"):
        tb.probe_batch(np.array([1 << 30]), zero, np.array([1]), zero, 0)  # black man on 31


# --- best moves ----------------------------------------------------------------

def expected_from_moves(moves: list[MoveValue]) -> ProbeResult:
    """The value a position must have, given the values of its moves."""
    wins = [m.dtw for m in moves if m.value == Wdl.WIN]
    if wins:
        return ProbeResult(Wdl.WIN, min(wins))
    if any(m.value == Wdl.DRAW for m in moves):
        return ProbeResult(Wdl.DRAW, 0)
    return ProbeResult(Wdl.LOSS, max((m.dtw for m in moves), default=0))


def test_best_moves_agree_with_successors(tb):
    rng = random.Random(11)
    for material in all_materials(MAX_PIECES):
        for _ in range(15):
            fen = fen_of(material, rng.randrange(count_positions(material)),
                         white_to_move=rng.random() < 0.5)
            board = Board(fen)
            moves = best_moves(tb, board).moves
            assert {m.move for m in moves} == set(board.legal_moves())
            assert tb.probe(board, rule_free=True) == expected_from_moves(moves), fen
            for mv in moves:
                board.push(mv.move)
                after = tb.probe(board)
                board.pop()
                assert mv.dtw == (after.dtw + 1 if after.value != Wdl.DRAW else 0)
                assert Wdl(-after.value) == mv.value


def test_best_moves_order():
    win, draw, loss = Wdl.WIN, Wdl.DRAW, Wdl.LOSS
    moves = [MoveValue(None, loss, 3), MoveValue(None, win, 5), MoveValue(None, draw, 0),
             MoveValue(None, win, 1), MoveValue(None, loss, 9)]
    ranked = sorted(moves, key=move_order)
    assert [(m.value, m.dtw) for m in ranked] == [(win, 1), (win, 5), (draw, 0), (loss, 9), (loss, 3)]
    assert all(a.value >= b.value for a, b in zip(ranked, ranked[1:]))


def test_best_moves_of_a_known_win(tb):
    moves = best_moves(tb, "W:W18:B5").moves
    assert [(str(m.move), str(m.value), m.dtw) for m in moves] == [("18-14", "win", 3),
                                                                  ("18-15", "draw", 0)]


# --- terminal positions, errors, cache ------------------------------------------

def test_terminal_positions_need_no_table(tmp_path):
    tb = Tablebase(tmp_path)
    assert tb.probe("B:W5,6,10:B1", rule_free=True) == ProbeResult(Wdl.LOSS, 0)  # no legal move
    assert tb.probe("W:W5:B1,2", rule_free=True) == ProbeResult(Wdl.LOSS, 0)
    assert tb.probe("W:B1,2:W", rule_free=True) == ProbeResult(Wdl.LOSS, 0)  # no pieces
    lost = tb.probe("W:B1,2:W", counter=80)  # lost even at the limit
    assert (lost.outcome, lost.category, lost.dtz) == (Wdl.LOSS, Category.LOSS, 0)
    assert best_moves(tb, "B:W5,6,10:B1").moves == []


def test_missing_table(tables_dir, tmp_path):
    for material in all_materials(2):
        shutil.copy(master.table_path(tables_dir, material), tmp_path)
    tb = Tablebase(tmp_path)
    assert tb.max_pieces == 2
    assert tb.probe_wdl("B:WK10:BK1") == 0
    with pytest.raises(MissingTableError) as info:
        tb.probe("B:WK10,K14:BK1")
    assert isinstance(info.value, KeyError)
    assert "1k-2k" in str(info.value) and str(tmp_path) in str(info.value)
    assert tb.get_wdl("B:WK10,K14:BK1") is None
    assert tb.get_wdl("B:WK10,K14:BK1", default=7) == 7
    assert tb.get_wdl("B:WK10:BK1", default=7) == 0
    assert tb.get_dtw("B:WK10,K14:BK1", default=-1) == -1


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_damaged_file_names_it(tables_dir, tmp_path, damage):
    name = "1k-2k.h5"
    shutil.copy(tables_dir / name, tmp_path / name)
    raw = bytearray((tmp_path / name).read_bytes())
    if damage == "flip":
        with h5py.File(tmp_path / name, "r") as f:
            chunk = f["dtw"].id.get_chunk_info(0)
        for k in range(chunk.byte_offset, chunk.byte_offset + min(chunk.size, 64)):
            raw[k] ^= 0xFF
    else:
        raw = raw[:len(raw) // 2]
    (tmp_path / name).write_bytes(bytes(raw))
    with pytest.raises(TableError, match=str(tmp_path / name).replace("\\", "\\\\")):
        Tablebase(tmp_path).probe("B:WK10,K14:BK1")


def test_a_rebuilt_file_is_read_again(tables_dir, tmp_path, monkeypatch):
    """A table file replaced while loaded is read again once its recheck time is up."""
    monkeypatch.setattr("egtb.probe.tablebase.RECHECK_SECONDS", 0.0)
    name = "1k-2k.h5"
    shutil.copy(tables_dir / name, tmp_path / name)
    tb = Tablebase(tmp_path)
    assert tb.probe_wdl("B:WK10,K14:BK1") == Wdl.LOSS  # two kings against one win
    (tmp_path / name).write_bytes((tmp_path / name).read_bytes()[:1000])  # "rebuilt": now broken
    with pytest.raises(TableError, match="1k-2k"):
        tb.probe_wdl("B:WK10,K14:BK1")
    shutil.copy(tables_dir / name, tmp_path / name)
    assert tb.probe_wdl("B:WK10,K14:BK1") == Wdl.LOSS


def test_bad_inputs(tb):
    with pytest.raises(ValueError, match="FEN"):
        tb.probe("no fen here")
    with pytest.raises(TypeError):
        tb.probe(42)


def test_lru_cache_bounds(tables_dir):
    tb = Tablebase(tables_dir, max_open=2)
    for fen in ("B:WK10:BK1", "B:W18:B5", "B:WK10,K14:BK1", "B:W18,K3:B5"):
        tb.probe(fen)
    assert [m.name for m in tb.loaded_materials] == ["1k-2k", "1m-1m1k"]
    small = Tablebase(tables_dir, memory_limit_bytes=1)
    small.probe("B:WK10:BK1")
    small.probe("B:WK10,K14:BK1")
    assert [m.name for m in small.loaded_materials] == ["1k-2k"]
    with small:
        pass
    assert small.loaded_bytes == 0 and small.loaded_materials == []


def test_max_pieces_and_materials(tb):
    assert tb.max_pieces == MAX_PIECES
    assert len(tb.materials()) == len(all_materials(MAX_PIECES))
    tb.load("1k-1k")
    assert [m.name for m in tb.loaded_materials] == ["1k-1k"]


def test_default_directory_from_environment(tables_dir, monkeypatch):
    monkeypatch.setenv(master.ENV_DIR, str(tables_dir))
    assert Tablebase().directory == Path(tables_dir)


def test_files_without_dtw_answer_dtw_none_and_the_rule_as_the_full_files(tables_dir, tmp_path):
    """Format version 3 (values and the wcdf layer, no dtw dataset), as the 7-piece build writes."""
    from egtb.builder.driver import build
    from egtb.probe.kernels import NO_DTW
    build(3, directory=tmp_path, jobs=1, rules="wcdf", dtw=False, progress=False)
    assert not master.has_dtw(master.table_path(tmp_path, Material.parse("1m-1m1k")))
    rng = np.random.default_rng(5)
    with Tablebase(tables_dir) as full, Tablebase(tmp_path) as lean:
        for material in all_materials(3):
            indices = rng.integers(0, count_positions(material), 25).tolist()
            for index in indices:
                fen = fen_of(material, index, white_to_move=index % 2 == 1)
                want, got = full.probe(fen), lean.probe(fen)
                assert got.dtw is None and (got.value, got.outcome, got.category, got.dtz) == (
                    want.value, want.outcome, want.category, want.dtz), fen
                want_moves = {str(m.move): m for m in best_moves(full, fen).moves}
                got_moves = best_moves(lean, fen).moves
                assert sorted(want_moves) == sorted(str(m.move) for m in got_moves), fen
                for m in got_moves:  # a move that takes the last piece needs no table: its DTW is known
                    expected = want_moves[str(m.move)]
                    assert (m.value, m.outcome, m.category, m.dtz) == (
                        expected.value, expected.outcome, expected.category, expected.dtz), (fen, str(m.move))
                    assert m.dtw in (None, expected.dtw), (fen, str(m.move))
            rows = [global_unrank(material, i) for i in indices]
            arrays = [np.array([r[k] for r in rows], dtype=np.int64) for k in range(4)]
            want_wdl, _ = full.probe_batch(*arrays, 0)
            got_wdl, got_dtw = lean.probe_batch(*arrays, 0)
            assert got_wdl.tolist() == want_wdl.tolist()
            assert set(got_dtw.tolist()) == {NO_DTW}  # for draws too, as from a compact file
            assert [a.tolist() for a in lean.probe_batch_rule(*arrays, 0, 7)] == [
                a.tolist() for a in full.probe_batch_rule(*arrays, 0, 7)]


def _random_arrays(materials, n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        material = materials[int(rng.integers(0, len(materials)))]
        rows.append(global_unrank(material, int(rng.integers(0, count_positions(material)))))
    return tuple(np.array([r[k] for r in rows], dtype=np.int64) for k in range(4)) + (rng.integers(0, 2, n),)


def test_a_master_table_is_read_a_block_at_a_time(tables_dir):
    from egtb.formats.master import BLOCK_POSITIONS
    material = max(all_materials(MAX_PIECES), key=count_positions)
    size = count_positions(material)
    assert size > 2 * BLOCK_POSITIONS
    with Tablebase(tables_dir, memory_limit_bytes=1 << 30) as tb:
        tb.probe(fen_of(material, size - 1))
        # one block of values with DTW and one of the wcdf layer, not the table's 8 bytes a position
        assert [m.name for m in tb.loaded_materials] == [material.name]
        assert 0 < tb.loaded_bytes <= 2 * 3 * BLOCK_POSITIONS < 8 * size


def test_a_budget_of_one_block_answers_as_an_unbounded_prober(tables_dir):
    from egtb.formats.master import BLOCK_POSITIONS
    arrays = _random_arrays(all_materials(MAX_PIECES), 3000, seed=8)
    counters = np.random.default_rng(9).integers(0, 81, len(arrays[0]))
    with Tablebase(tables_dir) as full, Tablebase(tables_dir, memory_limit_bytes=1) as tight:
        want = full.probe_batch(*arrays)
        got = tight.probe_batch(*arrays)
        assert [a.tolist() for a in got] == [a.tolist() for a in want]
        assert tight.loaded_bytes <= 3 * BLOCK_POSITIONS  # the block read last stays, alone
        want_rule = full.probe_batch_rule(*arrays, counters)
        assert [a.tolist() for a in tight.probe_batch_rule(*arrays, counters)] == [a.tolist() for a in want_rule]
        for i in range(0, len(arrays[0]), 60):
            board = Board(format_fen(Placement(*(int(a[i]) for a in arrays))), quiet_plies=int(counters[i]))
            assert tight.probe(board) == full.probe(board), board.fen()
            assert best_moves(tight, board).moves == best_moves(full, board).moves, board.fen()
        assert tight.loaded_bytes <= 3 * BLOCK_POSITIONS
