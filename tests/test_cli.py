"""Tests for egtb.cli: perft, moves, error reporting and optional subcommand modules."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from egtb import cli
from egtb.rules.board import Board


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_perft_prints_the_leaf_count(capsys):
    assert run(capsys, "perft", "--depth", "5") == (0, "7361\n", "")


def test_perft_from_a_fen(capsys):
    status, out, _ = run(capsys, "perft", "--depth", "1", "--fen", "B:W14,15,22,23:BK10")
    assert (status, out) == (0, "1\n")


def test_perft_divide(capsys):
    status, out, _ = run(capsys, "perft", "--depth", "3", "--divide")
    lines = out.splitlines()
    assert status == 0 and len(lines) == 8
    counts = dict(line.split(": ") for line in lines)
    assert counts["total"] == "302"
    assert sum(int(v) for k, v in counts.items() if k != "total") == 302
    assert counts["9-13"] == "48" and counts["11-16"] == "47"


def test_perft_divide_lists_captures_in_pdn(capsys):
    _, out, _ = run(capsys, "perft", "--depth", "2", "--divide", "--fen", "B:W14,23,32:B9")
    assert out.splitlines() == ["9x18x27: 1", "total: 1"]


def test_perft_with_a_hash_table(capsys):
    assert run(capsys, "perft", "--depth", "8", "--hash", "1") == (0, "845931\n", "")
    status, out, _ = run(capsys, "perft", "--depth", "5", "--divide", "--hash", "0.5", "--json")
    data = json.loads(out)
    assert (status, data["leaves"], data["hash_mb"], sum(data["divide"].values())) == (0, 7361, 0.5, 7361)


def test_perft_rejects_a_hash_without_room(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["perft", "--depth", "3", "--hash", "0"])
    assert exc.value.code == 2
    assert "--hash" in capsys.readouterr().err


def test_perft_rejects_negative_depth(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["perft", "--depth", "-1"])
    assert exc.value.code == 2
    assert "--depth: must be 0 or more, not -1" in capsys.readouterr().err


def test_moves_prints_move_and_resulting_fen(capsys):
    status, out, _ = run(capsys, "moves", "B:W26,27:B22,9")
    assert status == 0
    assert out.splitlines() == ["22x31 W:W27:B9,K31"]


def test_moves_from_start(capsys):
    _, out, _ = run(capsys, "moves", Board().fen())
    lines = out.splitlines()
    assert len(lines) == 7
    move, fen = lines[0].split(" ")
    board = Board()
    board.push_pdn(move)
    assert board.fen() == fen


@pytest.mark.parametrize("fen, fault", [
    ("B:W33:B1", "unknown square 33"),
    ("B:W10:B10", "two pieces on square 10"),
    ("Q:W10:B1", "side to move"),
    ("nonsense", "field"),
])
def test_malformed_fen_exits_2_with_the_fault(capsys, fen, fault):
    status, out, err = run(capsys, "moves", fen)
    assert status == 2 and out == ""
    assert fault in err and "Traceback" not in err


def test_console_script_reports_without_traceback():
    result = subprocess.run([sys.executable, "-m", "egtb.cli", "moves", "B:W10:B10"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "two pieces on square 10" in result.stderr and "Traceback" not in result.stderr


def test_missing_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2


def test_every_subcommand_is_registered():
    commands = cli.build_parser()._subparsers._group_actions[0].choices
    assert set(commands) == {"perft", "moves", "build", "compact", "stats", "verify", "probe"}


def test_every_printing_subcommand_speaks_json(capsys, tmp_path):
    import json
    assert cli.main(["perft", "--depth", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["leaves"] == 49
    assert cli.main(["moves", "--json", "B:W14,23:B9"]) == 0
    assert json.loads(capsys.readouterr().out)["moves"] == [{"move": "9x18x27", "fen": "W:W:B27"}]
    assert cli.main(["build", "--pieces", "2", "--jobs", "1", "--quiet", "--json", "--tables", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["positions"] == 3488 and len(summary["built"]) == 4
    assert cli.main(["verify", "--quiet", "--json", "--tables", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["positions"] == 3488 and report["reference_listed"] == 4
    assert cli.main(["verify", "--quiet", "--json", "--min-pieces", "3", "--tables", str(tmp_path)]) == 1
    assert json.loads(capsys.readouterr().out)["positions"] == 0  # no table of 3 pieces or more


@pytest.mark.parametrize("old", [["build", "--out"], ["stats", "--dir"], ["verify", "--concurrency"]])
def test_the_old_flag_aliases_are_gone(capsys, tmp_path, old):
    """``--dir``/``--out`` (now ``--tables``) and ``--concurrency`` (``--jobs``) were kept one release."""
    with pytest.raises(SystemExit) as caught:
        cli.main([*old, str(tmp_path)])
    assert caught.value.code == cli.EXIT_USAGE
    assert old[1] in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_missing_table_directory_is_bad_input(capsys, tmp_path):
    for command in (["stats"], ["verify", "--quiet"], ["probe", "B:WK10:BK1"]):
        assert cli.main([*command, "--tables", str(tmp_path / "no-such-dir")]) == cli.EXIT_USAGE
        assert "no-such-dir" in capsys.readouterr().err


def test_help_documents_the_exit_codes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["verify", "--help"])
    assert "130 interrupted" in " ".join(capsys.readouterr().out.split())


def test_version_is_the_package_version(capsys):
    from egtb import __version__
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out == f"egtb {__version__}\n"


@pytest.mark.parametrize("fen, said", [("B:WK10:B", "Black, to move, has no piece left and has lost"),
                                       ("B:W5,6,10:B1", "Black, to move, is blocked and has lost"),
                                       ("W:W:B27", "White, to move, has no piece left and has lost")])
def test_moves_of_a_position_without_a_legal_move_says_the_side_to_move_has_lost(capsys, fen, said):
    assert run(capsys, "moves", fen) == (0, f"no legal move: {said}\n", "")
    assert cli.main(["moves", "--json", fen]) == 0
    assert json.loads(capsys.readouterr().out) == {"fen": fen, "moves": [], "lost": True}


def test_moves_of_a_position_with_moves_does_not_say_lost(capsys):
    assert cli.main(["moves", "--json", "B:W14,23:B9"]) == 0
    assert "lost" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("argv", [["build", "-n", "2", "--quiet", "--tables"],
                                  ["compact", "--quiet", "--tables", "{tables}", "--out"]])
@pytest.mark.parametrize("where, said", [("/proc/nope", "cannot make this directory"),
                                         ("{file}", "is a file, not a directory")])
def test_an_output_directory_that_cannot_be_written_is_named_before_any_work(tmp_path, argv, where, said):
    tables = tmp_path / "tables"
    tables.mkdir()
    (tmp_path / "a-file").write_text("")
    target = where.format(file=tmp_path / "a-file")
    command = [a.format(tables=tables) for a in argv] + [target]
    result = subprocess.run([sys.executable, "-m", "egtb.cli", *command], capture_output=True, text=True)
    option = argv[-1]
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"egtb {argv[0]}: error: {option} {target}: {said}")
    assert result.stderr.count("\n") == 1
    assert list(tables.iterdir()) == []  # nothing built, nothing compacted


def test_a_table_directory_that_is_a_file_is_called_so(tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    status, out, err = run(capsys, "stats", "--tables", str(tmp_path / "a-file"))
    assert (status, out) == (2, "") and err == f"egtb stats: error: table directory {tmp_path / 'a-file'} is a file, not a directory\n"


def test_stats_of_a_compact_only_directory_lists_each_material_and_says_what_it_lacks(built_tables, tmp_path,
                                                                                        capsys):
    from egtb.builder.stats import PUBLISHED_POSITIONS
    compact = tmp_path / "compact"
    assert cli.main(["compact", "--tables", str(built_tables(2)), "--out", str(compact), "--quiet", "--jobs", "1"]) == 0
    capsys.readouterr()
    status, out, err = run(capsys, "stats", "--tables", str(compact))
    assert (status, err) == (0, "")
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:5]}
    assert set(rows) == {"1k-1k", "1k-1m", "1m-1k", "1m-1m"}
    assert rows["1k-1k"][1:5] == ["992", "-", "-", "-"]  # positions from the header; counts not stored
    assert out.count("compact files: no win/loss/draw counts stored") == 4
    assert f"2 pieces: {PUBLISHED_POSITIONS[2]} positions matches the published" in out
    assert cli.main(["stats", "--json", "--tables", str(compact)]) == 0
    report = json.loads(capsys.readouterr().out)
    first = report["materials"][0]
    assert first["compact_only"] and first["wins"] is None and first["positions"] == 992 and first["bytes"] > 0
    assert report["pieces"][0]["positions"] == PUBLISHED_POSITIONS[2] and report["pieces"][0]["wins"] is None


def test_verify_of_a_compact_only_directory_shows_its_progress_file_by_file(built_tables, tmp_path, capsys):
    compact = tmp_path / "compact"
    assert cli.main(["compact", "--tables", str(built_tables(2)), "--out", str(compact), "--quiet", "--jobs", "1"]) == 0
    capsys.readouterr()
    status, out, err = run(capsys, "verify", "--tables", str(compact), "--no-reference")
    assert status == 0 and "verified 4 tables, 3488 positions: OK" in out
    frames = err.replace("\r", "\n").split("\n")
    assert not any(frame.startswith("verify:") for frame in frames)  # no empty bar of the masters
    last = [frame for frame in frames if frame.startswith("verify compact")][-1]
    assert "100%" in last and "10.5k/10.5k" in last and "1m-1m.dtz" in last  # 3 files of 3488 positions
