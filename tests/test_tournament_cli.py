"""Tests of the `tournament` command line."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from egtb.rules.board import Board
from egtb.rules.pdn import read_games
from egtb.cli import EXIT_CODES_HELP
from tournament.cli import main, parse_time_control
from tournament.engines.base import Limit
from tournament.records import pdn_date


def test_time_controls() -> None:
    assert parse_time_control("0.1") == Limit(time=0.1)
    assert parse_time_control("10+0.1") == Limit(clock=10.0, increment=0.1)


def test_run_prints_standings_and_pdn_path_and_resumes(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["run", "--engine", "random", "--engine", "depth=1", "--openings", "2-move", "--games", "6",
            "--jobs", "2", "--tc", "1", "--max-plies", "200", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Rank  Engine" in out and f"PDN: {tmp_path / 'games.pdn'}" in out and "6/6 games" in out
    games = read_games(tmp_path / "games.pdn")
    assert len(games) == 6
    assert list(games[0].headers)[:3] == ["Event", "Site", "Date"] and games[0].headers["Site"] == "?"
    assert {game.headers["Date"] for game in games} <= {pdn_date(), pdn_date(datetime.now(timezone.utc) - timedelta(days=1))}
    settings = json.loads((tmp_path / "settings.json").read_text())
    assert settings["game"]["limit"]["time"] == 1.0 and settings["engines"] == ["random", "depth=1"]
    before = (tmp_path / "games.jsonl").read_text()
    assert main(argv) == 0
    assert (tmp_path / "games.jsonl").read_text() == before  # nothing left to play


def test_openings_file_and_gauntlet(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    openings = tmp_path / "openings.txt"
    openings.write_text("W:W18,K30:B14,K1\n9-14 22-17 11-15\n")
    argv = ["run", "--engine", "random", "--engine", "random", "--engine", "random", "--gauntlet",
            "--openings", str(openings), "--rule", "forty-plies", "--jobs", "1", "--out",
            str(tmp_path / "run"), "--quiet", "--seed", "3"]
    assert main(argv) == 0
    games = read_games(tmp_path / "run" / "games.pdn")
    assert len(games) == 2 * 2 * 2
    assert Board(games[0].fen).fen() == Board("W:W18,K30:B14,K1").fen() and games[4].moves[:3] == ["9-14", "22-17", "11-15"]
    assert "random#2 vs random#3" not in capsys.readouterr().out


def test_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["run", "--engine", "random", "--out", str(tmp_path)]) == 2
    assert main(["run", "--engine", "random", "--engine", "random", "--openings", "nofile",
                 "--out", str(tmp_path / "y")]) == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("bad,named", [
    (["--engine", "easy", "--engine", "nonsense"], "'nonsense'"),
    (["--engine", "easy", "--engine", "random", "--tables", "/no/such/dir"], "/no/such/dir"),
    (["--engine", "easy", "--engine", "perfect"], "--tables"),
])
def test_bad_setup_stops_before_the_first_game(tmp_path: Path, capsys: pytest.CaptureFixture, bad: list[str],
                                                named: str) -> None:
    out = tmp_path / "run"
    assert main(["run", *bad, "--games", "2", "--jobs", "1", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert named in err and "error" in err
    assert not (out / "games.jsonl").exists()  # no game was played


def test_json_summary_and_new_flag_names(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["run", "--engine", "random", "--engine", "depth=1", "--games", "2", "--jobs", "1", "--quiet",
            "--max-plies", "40", "--out", str(tmp_path), "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["games"] == 2 and {row["engine"] for row in summary["standings"]} == {"random", "depth=1"}
    assert summary == json.loads((tmp_path / "summary.json").read_text())


def test_help_lists_the_exit_codes(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = capsys.readouterr().out
    assert EXIT_CODES_HELP.split(",")[0] in help_text and "--jobs" in help_text and "--quiet" in help_text


def test_hub_engine_delegates(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO("hub\ninit\nquit\n"))
    assert main(["hub-engine", "random", "--seed", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ready"


def test_openings_order_and_start_pick_the_first_pair(tmp_path: Path) -> None:
    from tournament.openings import load_ballots, order_openings

    argv = ["run", "--engine", "random", "--engine", "random", "--games", "2", "--jobs", "1", "--quiet",
            "--max-plies", "10", "--openings", "3-move", "--openings-order", "random", "--openings-start", "2",
            "--seed", "4", "--out", str(tmp_path)]
    assert main(argv) == 0
    expected = order_openings(load_ballots("3-move"), order="random", seed=4)[1]
    games = read_games(tmp_path / "games.pdn")
    assert [g.headers["Opening"] for g in games] == [expected.name] * 2  # one opening, both colours
    assert games[0].moves[:3] == list(expected.moves) == games[1].moves[:3]


def test_score_adjudication_options(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["run", "--engine", "depth=2", "--engine", "depth=1", "--games", "2", "--jobs", "1", "--quiet",
            "--resign-adjudication", "movecount=1", "score=1", "--draw-adjudication", "movenumber=1", "movecount=50",
            "score=0", "--out", str(tmp_path)]
    assert main(argv) == 0
    settings = json.loads((tmp_path / "settings.json").read_text())["game"]
    assert settings["resign_adjudication"] == {"movecount": 1, "score": 1, "twosided": False}
    records = [json.loads(line) for line in (tmp_path / "games.jsonl").read_text().splitlines()]
    assert all(r["result"]["termination"] == "adjudication" for r in records)
    assert all(r["result"]["reason"].startswith(("resign adjudication", "draw adjudication")) for r in records)
    assert main(argv[:-1] + [str(tmp_path / "bad"), "--resign-adjudication", "often=1"]) == 2


@pytest.mark.parametrize("old", [["--concurrency", "1"], ["--no-progress"]])
def test_the_old_flag_aliases_are_gone(capsys: pytest.CaptureFixture, tmp_path: Path, old: list) -> None:
    """``--concurrency`` (now ``--jobs``) and ``--no-progress`` (``--quiet``) were kept one release."""
    with pytest.raises(SystemExit) as caught:
        main(["run", "--engine", "random", "--engine", "random", "--games", "1", *old, "--out", str(tmp_path)])
    assert caught.value.code == 2  # argparse's usage error
    assert old[0] in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("option", [["--games", "-3"], ["--games", "0"], ["--rounds", "0"], ["--jobs", "0"],
                                    ["--depth", "0"], ["--max-plies", "0"], ["--timemargin", "-1"],
                                    ["--adjudicate-pieces", "0"]])
def test_a_count_below_one_is_refused_before_any_game(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                      option: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "--engine", "random", "--engine", "random", "--out", str(tmp_path / "run"), "--quiet", *option])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and option[0] in err and option[1] in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("spec", ["time=-1", "depth=0", "time=0"])
def test_an_engine_without_a_positive_limit_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                       spec: str) -> None:
    status = main(["run", "--engine", "random", "--engine", spec, "--games", "1", "--out", str(tmp_path / "run"),
                   "--quiet"])
    err = capsys.readouterr().err
    assert status == 2 and spec in err and "must be positive" in err and "Traceback" not in err
    assert not (tmp_path / "run" / "games.jsonl").exists()
