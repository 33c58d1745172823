"""Tests of the alpha-beta searcher: kernel scores, limits, randomness, table probing."""

from __future__ import annotations

import os
from functools import cache

import pytest

import draughts

from egtb.formats.values import Wdl
from egtb.probe.moves import best_moves
from egtb import Board, Move
from egtb.probe.tablebase import Tablebase
from positions import pydraughts_replay, random_game_boards
from tournament.engines.base import GameState, Limit
from tournament.engines.random import RandomEngine
from tournament.engines.registry import make_engine
from tournament.engines.search import (
    MATE, MATE_BOUND, PV_PLIES, S_TB_MISSES, TB_WIN, SearchEngine, _history_keys, _Tables, _TableProbe, evaluate,
    search_position,
)


def _mirror(bits: int) -> int:
    """Square s -> 33 - s on a bitboard."""
    return int(f"{bits:032b}"[::-1], 2)


def _reference(board: Board, depth: int, ply: int = 0) -> int:
    """Plain negamax with the kernel's conventions (captures extend past depth 0)."""
    moves = board.legal_moves()
    if not moves:
        return -(MATE - ply)
    if depth <= 0 and not moves[0].is_capture:
        return int(evaluate(*board.key()))
    best = -10**9
    for move in moves:
        board.push(move)
        best = max(best, -_reference(board, depth - 1, ply + 1))
        board.pop()
    return best


SYMMETRY_BOARDS = 6


@cache  # made when a test asks, not at collection: random play compiles the move generator
def symmetry_boards() -> list[Board]:
    return random_game_boards(SYMMETRY_BOARDS, seed=7, min_plies=4, max_plies=30)


@pytest.mark.parametrize("index", range(SYMMETRY_BOARDS))
def test_evaluation_is_colour_symmetric(index: int) -> None:
    board = symmetry_boards()[index]
    bm, bk, wm, wk, turn = board.key()
    mirrored = (_mirror(wm), _mirror(wk), _mirror(bm), _mirror(bk), 1 - turn)
    assert evaluate(bm, bk, wm, wk, turn) == evaluate(*mirrored)


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_alpha_beta_matches_plain_negamax(depth: int) -> None:
    tables = _Tables(14)
    for board in [Board(), *random_game_boards(4, seed=depth, min_plies=4, max_plies=30)]:
        score, best, _, aborted = search_position(board, depth, tables=tables)
        assert not aborted
        assert score == _reference(board, depth)
        board.push(board.legal_moves()[best])
        assert -_reference(board, depth - 1, 1) == score


def test_scores_wins_and_losses_by_distance() -> None:
    assert search_position(Board("B:W5,6,10:B1"), 3)[0] == -MATE  # no legal move: lost now
    assert search_position(Board("B:W18:BK14"), 3)[0] == MATE - 1  # takes the last piece


#: Black to move has 4 quiet moves: one wins in 5 plies, one draws, two lose (the 4-piece tables
#: and tests/forward_search.py agree; pydraughts lists the same 4 moves).
ONE_WINNING_MOVE = "B:W14,31:B19,6"


def test_finds_the_only_winning_move_among_four(built_tables) -> None:
    board = Board(ONE_WINNING_MOVE)
    moves = board.legal_moves()
    oracle = draughts.Board(variant="english", fen=ONE_WINNING_MOVE)
    assert len(moves) == 4 and sorted(map(str, moves)) == sorted(m.pdn_move for m in oracle.legal_moves())
    with Tablebase(built_tables(4)) as tb:
        ranked = best_moves(tb, board, rule_free=True).moves
    assert [m.value for m in ranked].count(Wdl.WIN) == 1 and ranked[0].dtw == 5
    score, best, _, _ = search_position(board, 6)
    assert moves[best] == ranked[0].move and score >= MATE - 6


def test_history_keys_cover_king_moves_since_the_last_man_move() -> None:
    board = Board("B:WK32:BK1,5")
    for text in ["5-9", "32-27", "1-6", "27-32", "6-1"]:
        board.push_pdn(text)
    assert len(_history_keys(board)) == 4  # the man move 5-9 cuts the history


def test_node_limit_and_time_limit_are_respected() -> None:
    engine = SearchEngine(depth=40)
    engine.play(GameState.from_board(Board()), Limit(nodes=20_000))
    assert engine.last_info is not None and engine.last_info.nodes <= 20_000
    timed = SearchEngine(time=0.2)  # depth 40 from the start would take hours: only the clock stops it
    timed.play(GameState.from_board(Board()), Limit())
    assert timed.last_info is not None and 1 <= timed.last_info.depth < 40  # bench_search.py measures the overrun


def test_easy_is_seeded() -> None:
    def game(seed: int) -> list[str]:
        engine, board, played = SearchEngine(depth=2, noise=60, seed=seed), Board(), []
        for _ in range(16):
            move = engine.play(GameState.from_board(board), Limit()).move
            board.push(move)
            played.append(str(move))
        return played

    assert game(1) == game(1)
    assert len({tuple(game(s)) for s in range(4)}) > 1


def test_plays_a_full_game_against_random() -> None:
    engine, opponent, board = SearchEngine(depth=4), RandomEngine(seed=2), Board()
    while board.outcome() is None and len(board.move_stack) < 300:
        player = engine if board.turn == 0 else opponent
        board.push(player.play(GameState.from_board(board), Limit()).move)
    assert board.outcome() is not None and board.outcome().winner != 1


class _CountingTablebase(Tablebase):
    """A Tablebase that counts its probes."""

    probed = 0

    def probe(self, board, **options):
        self.probed += 1
        return super().probe(board, **options)


def test_probes_tables_within_their_piece_count(built_tables, tmp_path) -> None:
    os.link(built_tables(3) / "1k-1k.h5", tmp_path / "1k-1k.h5")  # two kings only
    tb = _CountingTablebase(tmp_path)
    engine = SearchEngine(depth=3, tablebase=tb)
    assert engine.play(GameState("B:WK29:BK1"), Limit()).move == best_moves(tb, "B:WK29:BK1").moves[0].move
    assert engine.last_info is not None and engine.last_info.source == "tables"
    engine.play(GameState("B:W32:BK1"), Limit())  # missing table: searches instead
    assert engine.last_info.source == "search"
    probed = tb.probed
    engine.play(GameState("B:WK29,K30:BK1"), Limit())  # three pieces: never probed
    assert engine.last_info.source == "search" and tb.probed == probed


def test_plays_the_real_tables_best_move(built_tables) -> None:
    tables = built_tables(3)  # the session's shared set: read only
    engine = SearchEngine(depth=4, tables_dir=tables)
    for fen in ["B:WK32:BK1,K10", "W:WK32:BK1,K10", "B:W18:B5,K1"]:
        move = engine.play(GameState(fen), Limit()).move
        assert engine.last_info.source == "tables"
        best = best_moves(Tablebase(tables), fen).moves
        assert move == best[0].move
    engine.close()


#: White to move must capture, with 3 pieces left either way: 3x10 leaves a position the 3-piece
#: tables hold as a win, 17x10 lets Black recapture into a drawn king against man. A depth-1
#: search (captures extended, then the static evaluation) prefers 17x10.
WIN_BY_CAPTURE = "W:WK3,K17:B7,K14"


def test_tables_inside_the_search_find_a_capture_into_a_won_ending(built_tables) -> None:
    tables = built_tables(3)  # the session's shared set: read only
    board = Board(WIN_BY_CAPTURE)
    inside = SearchEngine(depth=1, tables_dir=tables)
    assert str(inside.choose(board)) == "3x10"
    assert inside.last_info.score == TB_WIN - 1 and inside.last_info.table_hits > 0
    root = SearchEngine(depth=1, tables_dir=tables, tables="root")
    assert str(root.choose(board)) == "17x10"
    assert root.last_info.score < MATE_BOUND and root.last_info.table_hits == 0
    with Tablebase(built_tables(4)) as tb:  # the 4-piece tables agree
        assert {str(mv.move): mv.value for mv in best_moves(tb, board).moves} == {"3x10": Wdl.WIN, "17x10": Wdl.DRAW}
    inside.close()
    root.close()


def test_root_only_tables_search_as_without_tables(built_tables) -> None:
    boards = [Board(WIN_BY_CAPTURE), *random_game_boards(3, seed=11, min_plies=10, max_plies=40)]
    for board in boards:
        assert board.piece_count() > 3
        plain = SearchEngine(depth=5)
        root = SearchEngine(depth=5, tables_dir=built_tables(3), tables="root")
        assert root.choose(board) == plain.choose(board)
        assert (root.last_info.nodes, root.last_info.score) == (plain.last_info.nodes, plain.last_info.score)
        root.close()


def test_a_material_without_a_table_is_searched_and_not_asked_again(built_tables, tmp_path) -> None:
    source = built_tables(3)
    for name in ("1k-1k.h5", "2k-1k.h5", "1k-2k.h5"):  # no table with a man: 1m-2k and 2k-1m are absent
        (tmp_path / name).symlink_to(source / name)
    engine = SearchEngine(depth=3, tables_dir=tmp_path)
    board = Board(WIN_BY_CAPTURE)
    assert engine.choose(board) in board.legal_moves()
    tables = _Tables(12)
    search_position(board, 3, tables=tables, probe=engine._probe)
    assert tables.stats[S_TB_MISSES] == 0
    engine.close()


def test_the_tables_option_of_the_searcher() -> None:
    assert make_engine("hard").tables == "search"
    assert make_engine("hard", options={"tables": "root"}).tables == "root"
    with pytest.raises(ValueError, match="tables='everywhere'"):
        make_engine("hard", options={"tables": "everywhere"})


@pytest.mark.parametrize("fen", ["W:WK25,7:BK21,K10", "W:WK23,K1,K28:BK31,K20"])
def test_the_first_search_to_read_the_tables_answers_as_a_later_one(built_tables, fen: str) -> None:
    # the first search meets tables not read yet and searches again once they are: the bounds its
    # first pass stored (without them) must not settle the nodes above the tables then
    board = Board(fen)
    with Tablebase(built_tables(3)) as tb:
        probe = _TableProbe.of(tb)
        first = search_position(board, 2, tables=_Tables(12), probe=probe)
        later = search_position(board, 2, tables=_Tables(12), probe=probe)
    assert abs(later[0]) > TB_WIN - 10
    assert first[0] == later[0]  # (equal moves may tie)


# --- issue 32: the principal variation ------------------------------------------------------------


def test_the_principal_variation_is_a_legal_line_that_starts_with_the_move_played() -> None:
    engine = SearchEngine(depth=8)
    board = Board()
    result = engine.play(GameState.from_board(board), Limit())
    line = list(result.info["pv"])
    assert line == list(engine.last_info.pv) and line[0] == str(result.move)
    assert len(line) >= 6  # the table keeps the exact line of a fresh depth-8 search
    replay = board.copy()
    for text in line:
        replay.push_pdn(text)  # IllegalMoveError if not legal
    assert Board(pydraughts_replay(board.fen(), line).fen).key() == replay.key()


def test_the_principal_variation_of_a_found_win_ends_in_it() -> None:
    engine = SearchEngine(depth=8)
    board = Board("B:W32:B1,K28")
    engine.choose(board)
    info = engine.last_info
    assert info.score > MATE_BOUND
    line = list(info.pv)
    assert len(line) == MATE - info.score  # a win in n plies: n moves, the last one wins
    oracle = pydraughts_replay(board.fen(), line)
    assert oracle.is_over() and oracle.winner() == draughts.BLACK


def test_the_principal_variation_goes_on_with_the_tables_best_moves(built_tables) -> None:
    engine = SearchEngine(depth=1, tables_dir=built_tables(3))
    board = Board(WIN_BY_CAPTURE)  # 4 pieces; after 3x10 the 3-piece tables hold a win
    engine.choose(board)
    line = list(engine.last_info.pv)
    assert line[0] == "3x10" and len(line) > 2  # past the depth of 1: the tables' moves
    replay = board.copy()
    replay.push_pdn(line[0])
    with Tablebase(built_tables(3)) as tb:
        for text in line[1:]:
            assert text == str(best_moves(tb, replay).moves[0].move)
            replay.push_pdn(text)
    assert replay.is_game_over() or len(line) == PV_PLIES
    pydraughts_replay(board.fen(), line)


def test_only_an_engine_given_pv_fill_searches_more_for_its_line() -> None:
    plain, filling = SearchEngine(depth=9), SearchEngine(depth=9, pv_fill=200_000)
    board = Board()
    assert str(plain.choose(board)) == str(filling.choose(board))  # the fill comes after the move
    assert plain.last_info.nodes == filling.last_info.nodes  # and the move's search is the same
    assert len(filling.last_info.pv) >= len(plain.last_info.pv) >= 1
    replay = board.copy()
    for text in filling.last_info.pv:
        replay.push_pdn(text)
    assert make_engine("depth=9,pv_fill=5000").pv_fill == 5000 and make_engine("hard").pv_fill == 0


def test_a_fill_budget_too_small_for_the_full_depth_still_fills_the_line_with_shallower_searches() -> None:
    # a loaded machine gives the search fewer nodes, and the fill a tenth of them: a full-depth
    # search of the rest of the line no longer fits, and the line used to end at its first move
    engine = SearchEngine(depth=9)
    board = Board()
    first = engine.choose(board)
    engine.new_game()  # nothing of the line is left in the transposition table
    line = engine.principal_variation(board, first, depth=9, fill_nodes=3000)
    assert str(line[0]) == str(first) and len(line) >= 4
    pydraughts_replay(board.fen(), [str(move) for move in line])
