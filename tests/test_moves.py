"""Tests of egtb.probe.moves: one ranking for master and compact files, the rule-free fallback,
moves outside the tables, and the process's one Tablebase per directory."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from egtb.cli import main
from egtb.formats.values import Category, Wdl
from egtb.positions.index import global_unrank
from egtb.positions.material import all_materials, count_positions
from egtb.probe.moves import Ranking, best_moves, probe_position, tablebase_for
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import Board
from egtb.rules.notation import Placement, format_fen

PIECES = 3
#: Issue 32 defect 4: at counter 75 every move draws and keeps the loss category; the masters put
#: 20-24 (DTZ 24, the longer resistance) first, the compact files put 20-16 (DTZ 10) first.
DRAWN_LOSS = "B:WK14,K26:BK20"
#: Issue 32 defect 3: won without the rule, drawn under forty-plies from counter 39.
LATE_WIN = "W:WK10,K14:BK1"


@pytest.fixture(scope="module")
def masters(built_tables) -> Path:
    return built_tables(PIECES)


@pytest.fixture(scope="module")
def compacts(compact_tables) -> Path:
    return compact_tables(PIECES)


def ranked_texts(directory: Path, board: Board) -> list[str]:
    with Tablebase(directory) as tb:
        return [str(m.move) for m in best_moves(tb, board).moves]


def test_masters_and_compact_files_rank_the_drawn_loss_alike(masters, compacts):
    board = Board(DRAWN_LOSS, quiet_plies=75)
    assert ranked_texts(masters, board) == ranked_texts(compacts, board) == ["20-24", "20-16"]


def test_masters_and_compact_files_rank_every_sampled_position_alike(masters, compacts):
    rng = random.Random(32)
    checked = 0
    with Tablebase(masters) as tm, Tablebase(compacts) as tc:
        for material in all_materials(PIECES):
            for _ in range(12):
                fen = format_fen(Placement(*global_unrank(material, rng.randrange(count_positions(material))),
                                           rng.randrange(2)))
                board = Board(fen, quiet_plies=rng.choice((0, 40, 70, 79)))
                want, got = best_moves(tm, board), best_moves(tc, board)
                assert [str(m.move) for m in want.moves] == [str(m.move) for m in got.moves], board.fen()
                checked += 1
    assert checked == 12 * len(all_materials(PIECES))


def test_compact_files_have_no_layer_for_the_other_presets(compacts):
    with Tablebase(compacts) as tb:
        board = Board(LATE_WIN, rule="forty-plies", quiet_plies=39)
        result = probe_position(tb, board)
        ranking = best_moves(tb, board)
    assert result.value is Wdl.WIN and result.rule is None and result.outcome is None
    assert ranking.rule_free and ranking.rule == "forty-plies" and ranking.counter == 39
    assert all(m.outcome is None and m.category is None for m in ranking.moves)


def test_masters_rank_under_the_rule(masters):
    with Tablebase(masters) as tb:
        ranking = best_moves(tb, Board(LATE_WIN, rule="forty-plies", quiet_plies=39))
    assert not ranking.rule_free
    assert ranking.moves[0].outcome is Wdl.DRAW and ranking.moves[0].category is Category.WIN


def test_cli_text_and_json_say_the_answer_ignores_the_rule(compacts, masters, capsys):
    """Issue 32 defect 3: `egtb probe` printed a plain `win` where the masters say draw."""
    argv = ["probe", "--rule", "forty-plies", "--counter", "39", LATE_WIN]
    assert main([*argv[:1], "--tables", str(masters), *argv[1:]]) == 0
    assert "forty-plies counter 39: draw" in capsys.readouterr().out.splitlines()[0]
    assert main([*argv[:1], "--tables", str(compacts), *argv[1:]]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.startswith(f"{LATE_WIN}  win  forty-plies counter 39: ?")
    assert "no forty-plies layer" in header and "ignore the move rule" in header
    assert main([*argv[:1], "--tables", str(compacts), "--json", *argv[1:]]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["rule"], record["counter"], record["outcome"]) == ("forty-plies", 39, None)
    assert record["rule_layer_missing"] is True and "forty-plies" in record["note"]


def test_moves_outside_the_tables_are_listed_apart(tmp_path):
    ranking = best_moves(Tablebase(tmp_path), "B:W14,K30:B9,K1", partial=True)  # 9x18 leaves 3 pieces
    assert ranking.moves == [] and [str(m) for m in ranking.outside] == ["9x18"]
    with pytest.raises(KeyError):
        best_moves(Tablebase(tmp_path), "B:W14,K30:B9,K1")


def test_a_counter_beyond_the_limit_is_refused(tmp_path):
    with pytest.raises(ValueError, match="outside 0..40"):
        best_moves(Tablebase(tmp_path), Board(LATE_WIN), rule="forty-plies", counter=41)


def test_one_tablebase_per_directory_in_a_process(masters):
    tb = tablebase_for(masters)
    assert tablebase_for(str(masters) + "/.") is tb and tablebase_for(masters.parent / masters.name) is tb
    assert isinstance(best_moves(tb, LATE_WIN), Ranking)
