"""Tests of ``egtb probe``: text and JSON output, stdin, malformed lines, exit status."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from egtb.formats import master
from egtb.probe.tablebase import Tablebase
from egtb.cli import main
from egtb.positions.material import all_materials

WIN_FEN = "W:W18:B5"  # 18-14 5-9 14x5: win in 3
NO_MOVE_FEN = "B:W5,6,10:B1"


@pytest.fixture(scope="session")
def tables_dir(built_tables) -> Path:
    """Every table up to 3 pieces."""
    return built_tables(3)


def run(argv: list[str], capsys, monkeypatch, stdin: str | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_text_mode(tables_dir, capsys, monkeypatch):
    status, out, err = run(["probe", "--tables", str(tables_dir), WIN_FEN], capsys, monkeypatch)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"{WIN_FEN}  win  dtw 3  wcdf counter 0: win  category win  dtz 1"
    assert lines[1].split() == ["18-14", "win", "dtw", "3", "win", "category", "win", "dtz", "1"]
    assert lines[2].split() == ["18-15", "draw", "dtw", "0", "draw", "category", "draw", "dtz", "0"]


def test_json_mode_arguments(tables_dir, capsys, monkeypatch):
    status, out, _ = run(["probe", "--tables", str(tables_dir), "--json", WIN_FEN, NO_MOVE_FEN],
                         capsys, monkeypatch)
    assert status == 0
    first, second = (json.loads(line) for line in out.splitlines())
    rule = {"rule": "wcdf", "counter": 0}
    assert first == {"fen": WIN_FEN, "value": "win", "dtw": 3, **rule, "outcome": "win", "category": "win",
                     "dtz": 1,
                     "moves": [{"move": "18-14", "value": "win", "dtw": 3, "outcome": "win", "category": "win",
                                "dtz": 1},
                               {"move": "18-15", "value": "draw", "dtw": 0, "outcome": "draw",
                                "category": "draw", "dtz": 0}]}
    assert second == {"fen": NO_MOVE_FEN, "value": "loss", "dtw": 0, **rule, "outcome": "loss",
                      "category": "loss", "dtz": 0, "moves": []}


def test_stdin_with_malformed_line_json(tables_dir, capsys, monkeypatch):
    stdin = f"{WIN_FEN}\n\n# comment\nB:W99:B1\nB:WK10:BK1\n"
    status, out, _ = run(["probe", "--tables", str(tables_dir), "--json"], capsys, monkeypatch, stdin)
    assert status == 1
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["fen"] for r in records] == [WIN_FEN, "B:W99:B1", "B:WK10:BK1"]
    assert "error" in records[1] and "99" in records[1]["error"]
    assert records[2]["value"] == "draw"


def test_malformed_line_text_goes_to_stderr(tables_dir, capsys, monkeypatch):
    status, out, err = run(["probe", "--tables", str(tables_dir), "garbage", WIN_FEN],
                           capsys, monkeypatch)
    assert status == 1
    assert "garbage" in err
    assert out.startswith(f"{WIN_FEN}  win")


def test_missing_table_fails_the_line(tables_dir, tmp_path, capsys, monkeypatch):
    for material in all_materials(2):
        shutil.copy(master.table_path(tables_dir, material), tmp_path)
    status, out, err = run(["probe", "--tables", str(tmp_path), "--json", "B:WK10,K14:BK1",
                            "B:WK10:BK1"], capsys, monkeypatch)
    assert status == 1
    first, second = (json.loads(line) for line in out.splitlines())
    assert "1k-2k" in first["error"] and str(tmp_path) in first["error"]
    assert second["value"] == "draw"


def test_default_directory_from_environment(tables_dir, capsys, monkeypatch):
    monkeypatch.setenv(master.ENV_DIR, str(tables_dir))
    status, out, _ = run(["probe", "--json", WIN_FEN], capsys, monkeypatch)
    assert status == 0 and json.loads(out)["dtw"] == 3


def test_an_internal_error_on_one_line_does_not_cost_the_lines_after_it(tables_dir, capsys, monkeypatch):
    real_probe = Tablebase.probe

    def probe(self, board, **options):
        if board.fen() == WIN_FEN:
            raise TypeError("a defect on this line")
        return real_probe(self, board, **options)

    monkeypatch.setattr(Tablebase, "probe", probe)
    stdin = f"B:WK10:BK1\n{WIN_FEN}\n{NO_MOVE_FEN}\n"
    status, out, _ = run(["probe", "--tables", str(tables_dir), "--json"], capsys, monkeypatch, stdin)
    assert status == 1
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["fen"] for r in records] == ["B:WK10:BK1", WIN_FEN, NO_MOVE_FEN]
    assert records[1]["error"] == "internal error: TypeError: a defect on this line"
    assert records[0]["value"] == "draw" and records[2]["value"] == "loss"


def test_an_internal_error_in_text_mode_names_the_line_on_stderr(tables_dir, capsys, monkeypatch):
    monkeypatch.setattr("egtb.probe.results.best_moves", lambda tablebase, board, **options: [][1])
    status, out, err = run(["probe", "--tables", str(tables_dir), WIN_FEN, NO_MOVE_FEN], capsys, monkeypatch)
    assert status == 1 and out == ""
    assert err.splitlines() == [f"egtb probe: {fen!r}: internal error: IndexError: list index out of range"
                                for fen in (WIN_FEN, NO_MOVE_FEN)]


def test_a_byte_order_mark_before_the_first_line_of_stdin_is_not_part_of_its_fen(tables_dir):
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-m", "egtb.cli", "probe", "--tables", str(tables_dir), "--json"],
                            input=f"\ufeff{WIN_FEN}\n{NO_MOVE_FEN}\n".encode("utf-8"), capture_output=True,
                            check=False)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [(r["fen"], r["value"]) for r in records] == [(WIN_FEN, "win"), (NO_MOVE_FEN, "loss")]
