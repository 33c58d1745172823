"""The CheckerBoard engine interface (issue 13), with a small C engine compiled here by the system compiler."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from egtb.rules.board import BLACK, WHITE, Board
from egtb.rules.pdn import read_games
from tournament.engines.base import EngineSetupError, GameState, Limit
from tournament.engines.checkerboard import (CB_BLACK, CB_KING, CB_MAN, board_to_cb, cb_square, game_history,
                                             incremental_share, pack_incremental_time, square_coords, time_arguments)
from tournament.engines.config import EngineConfig
from tournament.engines.registry import make_engine
from tournament.result import GameTermination
from tournament.config import GameSettings, TournamentConfig
from tournament.schedule import run_tournament

SOURCE = Path(__file__).parent / "cb_engine" / "tiny_cb.c"
SHORT = GameSettings(max_plies=60)


def _compile(directory: Path, name: str, *defines: str) -> Path:
    """tiny_cb.c built as a shared library by the system compiler (skip without one)."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc or clang) to build the test CheckerBoard engine: install one, "
                    "e.g. apt-get install gcc")
    target = directory / name
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", *defines, "-o", str(target), str(SOURCE)], check=True)
    return target


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _compile(tmp_path_factory.mktemp("cb"), "tiny_cb.so")


def test_coordinates_follow_checkerboard() -> None:
    # square 1 is (6, 0) and its forward neighbours are 5 and 6; square 4's only one is 8
    x, y = square_coords(1)
    assert {cb_square(x - 1, y + 1), cb_square(x + 1, y + 1)} == {5, 6}
    x, y = square_coords(4)
    assert (x, y) == (0, 0) and cb_square(x + 1, y + 1) == 8
    assert sorted(cb_square(x, y) for x in range(8) for y in range(8) if cb_square(x, y)) == list(range(1, 33))
    cb = board_to_cb(Board("B:W5:BK32"))
    assert cb[7][1] == 1 | CB_MAN and cb[1][7] == CB_BLACK | CB_KING


@pytest.mark.slow  # six whole games (13 s); the default run has the library play in the tests below
def test_games_against_our_engines_replay_legally(library: Path, tmp_path: Path) -> None:
    spec = f"name=tiny spec=cb:{library} option.mode=random option.seed=7"
    from tournament.engines.config import parse_engine

    result = run_tournament(TournamentConfig([parse_engine(spec), "random", "depth=1"], games=6, game=SHORT),
                            out_dir=tmp_path, concurrency=1, progress=False)
    assert len(result.records) == 6 and not any(r.result.is_fault for r in result.records)
    for record in result.records:
        board = Board(record.result.start_fen)
        for text in record.result.moves:
            board.push_pdn(text)  # raises on an illegal move
    tiny = [r for r in result.records if "tiny" in (r.black, r.white)]
    assert len(tiny) == 4 and any(m.count("x") for r in tiny for m in r.result.moves)  # captures were played
    assert "Ratings: maximum likelihood" in result.standings


def test_name_and_reported_result(library: Path) -> None:
    with make_engine(f"cb:{library}") as engine:
        assert engine.name == "Tiny CB"
        result = engine.play(GameState.from_board(Board("B:W30:B1,K25")), Limit(time=5.0))
        assert str(result.move) in ("25-21", "25-22", "25-29", "1-5", "1-6")
        assert result.score is None  # several moves: UNKNOWN


@pytest.mark.parametrize("mode,termination,text", [
    ("crash", GameTermination.CRASH, "crashed"),
    pytest.param("illegal", GameTermination.ILLEGAL_MOVE, "not legal", marks=pytest.mark.slow),
    pytest.param("same", GameTermination.CRASH, "done move=none", marks=pytest.mark.slow),
])
def test_a_faulty_library_loses_with_the_right_reason(library: Path, tmp_path: Path, mode: str,
                                                      termination: GameTermination, text: str) -> None:
    faulty = EngineConfig(f"cb:{library}", name="faulty", options=(("mode", mode),))
    result = run_tournament(TournamentConfig([faulty, "random"], games=2, game=SHORT),
                            out_dir=tmp_path, concurrency=1, progress=False)
    for record in result.records:
        faulty_colour = BLACK if record.black == "faulty" else WHITE
        assert record.result.termination is termination, record.result.reason
        assert record.result.winner == 1 - faulty_colour and text in record.result.reason


def test_a_missing_library_stops_the_run(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such engine library"):
        run_tournament(TournamentConfig([f"cb:{tmp_path / 'none.so'}", "random"], games=2),
                       out_dir=tmp_path / "run", concurrency=1, progress=False)


# --- time, game history and commands exactly as CheckerBoard sends them (docs/checkerboard.md) ---

@pytest.mark.parametrize("increment,remaining,bits,moreinfo", [
    (0.5, 60.0, 1 << 2, 60000 << 16 | 500),  # unit 1 ms while the larger time fits 65.535 s
    (0.7, 10.0, 1 << 2, 10000 << 16 | 699),  # truncated as C's (uint16_t)(0.7 / 0.001) is
    (0.0, 120.0, 2 << 2, 12000 << 16),  # unit 10 ms up to 655.35 s
    (2.0, 1000.0, 3 << 2, 10000 << 16 | 20),  # unit 100 ms beyond
    (0.0, 9000.0, 3 << 2, 0xFFFF << 16),  # capped at 6553.5 s
    (1.0, -3.0, 1 << 2, 5 << 16 | 1000),  # never less than 5 ms left
])
def test_clock_packing_follows_checkerboard(increment: float, remaining: float, bits: int, moreinfo: int) -> None:
    assert pack_incremental_time(increment, remaining) == (bits, moreinfo)


@pytest.mark.parametrize("remaining,increment,initial,maxtime", [
    (60.0, 1.0, 60.0, 1.0 + 60 / 10),  # base/increment >= 50: a tenth of the clock
    (60.0, 2.0, 60.0, 2.0 + 60 / 9),  # >= 20
    (60.0, 5.0, 60.0, 5.0 + 60 / 7),  # >= 10
    (60.0, 10.0, 60.0, 10.0 + 60 / 5),  # >= 5
    (60.0, 20.0, 60.0, 20.0 + 60 / 4),  # below 5
    (60.0, 0.0, 60.0, 60 / 11),  # no increment
    (3.0, 5.0, 60.0, 3.0),  # less than the increment left: all of it
    (1.0, 5.0, 60.0, 1.0),  # CheckerBoard's 40% of the increment, capped at the clock the runner enforces
])
def test_maxtime_under_a_clock_is_checkerboards_share(remaining: float, increment: float, initial: float,
                                                      maxtime: float) -> None:
    assert incremental_share(remaining, increment, initial) == pytest.approx(maxtime, abs=1e-12)


def test_time_arguments_of_each_control() -> None:
    assert time_arguments(Limit(time=0.25)) == (0.2, 2, 0)  # per move: maxtime less the hand-off, exact bit
    assert time_arguments(Limit(time=0.1)) == (0.075, 2, 0)  # the reserve is at most a quarter of the time
    assert time_arguments(Limit(clock=30.0, increment=0.5), initial=60.0) == (0.5 + 30 / 10, 4, 30000 << 16 | 500)
    assert time_arguments(Limit(clock=100.0, moves=20)) == (5.0, 8, 10000 << 16)  # 40/120 style: clock / moves left
    assert time_arguments(Limit(depth=6)) == (1.0, 0, 0)


def test_game_history_lists_the_reversible_moves_since_the_last_irreversible_one() -> None:
    start = "B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12"
    assert game_history(GameState.from_board(Board())) == f"set gamehist {start}"
    assert game_history(GameState(Board().fen(), ("11-15", "23-19"))) == (
        "set gamehist B:W19,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15")
    kings = GameState("W:WK29,K31:BK12,1", ("29-25", "12-16", "31-27", "16-19"))
    assert game_history(kings) == "set gamehist W:WK29,K31:B1,K12 29-25 12-16 31-27 16-19"
    captured = GameState("W:WK32,K10:BK27,1", ("32x23", "1-5", "10-14"))  # a capture, a man move, a king move
    assert game_history(captured) == "set gamehist W:WK10,K23:B5 10-14"


def _getmove_lines(log: Path) -> list[dict[str, str]]:
    return [dict(field.split("=", 1) for field in line.split()[1:])
            for line in log.read_text().splitlines() if line.startswith("getmove ")]


@pytest.mark.parametrize("tc,first,later", [
    ("5", "maxtime=4.950000 info=3 moreinfo=0 reset=1 exact=1 unit=0 remaining=0.000 increment=0.000",
     "maxtime=4.950000 info=2 moreinfo=0 reset=0 exact=1 unit=0 remaining=0.000 increment=0.000"),
    pytest.param("60+0.5", "maxtime=6.500000 info=5 moreinfo=3932160500 reset=1 exact=0 unit=1 remaining=60.000 "
                 "increment=0.500", None, marks=pytest.mark.slow),
    pytest.param("40/120", "maxtime=3.000000 info=9 moreinfo=786432000 reset=1 exact=0 unit=2 remaining=120.000 "
                 "increment=0.000", None, marks=pytest.mark.slow),
])  # each plays a tournament (two engine processes): the clocks' packing is unit-tested above
def test_the_engines_time_control_reaches_the_library_as_checkerboard_sends_it(
        library: Path, tmp_path: Path, tc: str, first: str, later: str | None) -> None:
    log = tmp_path / "tiny.log"
    tiny = EngineConfig(f"cb:{library}", name="tiny", tc=tc, options=(("mode", "random"), ("logfile", str(log))))
    result = run_tournament(TournamentConfig([tiny, "random"],
                                             games=2, game=GameSettings(max_plies=30, time_margin=5.0)),
                            out_dir=tmp_path / "run", concurrency=1, progress=False)
    assert not any(r.result.is_fault for r in result.records)  # generous times: the tiny engine answers at once
    calls = _getmove_lines(log)
    expected_first = dict(field.split("=", 1) for field in first.split())
    firsts = [c for c in calls if c["reset"] == "1"]
    assert len(firsts) == 2 and all({k: c[k] for k in expected_first} == expected_first for c in firsts)
    rest = [c for c in calls if c["reset"] == "0"]
    assert len(rest) >= 10
    for call in rest:
        if later is not None:
            assert " ".join(f"{k}={call[k]}" for k in expected_first) == later
        else:  # the clock as it runs: the same increment; the unit grows past 65.535 s (ms) and 655.35 s (cs)
            left = float(call["remaining"])
            unit = 1 if left <= 65.535 else 2 if left <= 655.35 else 3
            assert call["increment"] == expected_first["increment"]
            assert (call["unit"], call["info"]) == (str(unit), str(unit << 2))
            assert 0 < float(call["remaining"]) <= float(expected_first["remaining"]) + 15 * float(call["increment"])
            assert 0 < float(call["maxtime"]) <= float(call["remaining"]) + 0.001
    lines = log.read_text().splitlines()
    for index, line in enumerate(lines):  # CheckerBoard sends the game history before every search
        if line.startswith("getmove "):
            assert lines[index - 1].startswith("command set gamehist ")
    assert not any(line.startswith("islegal") for line in lines)  # English: CheckerBoard never asks the engine


def test_a_library_playing_another_game_is_refused_before_the_first_game(tmp_path: Path) -> None:
    italian = _compile(tmp_path, "italian.so", "-DTINY_GAMETYPE=22")
    with pytest.raises(EngineSetupError, match=r"game type '22' \(Italian draughts\), not English checkers \(21\)"):
        run_tournament(TournamentConfig([f"cb:{italian}", "random"], games=2),
                       out_dir=tmp_path / "run", concurrency=1, progress=False)
    assert not (tmp_path / "run" / "games.jsonl").exists()


def test_an_old_library_names_itself_through_enginename(tmp_path: Path) -> None:
    old = _compile(tmp_path, "old.so", "-DTINY_LEGACY_NAME")
    with make_engine(f"cb:{old}") as engine:
        assert engine.name == "Tiny legacy"


# --- options, names and the time an engine is told (issue 21, items 13-15) ---------------------

def test_an_option_is_judged_by_enginecommands_return_value_not_its_reply(library: Path) -> None:
    from tournament.engines.checkerboard import CheckerBoardLibrary

    engine = CheckerBoardLibrary(library)
    assert engine.call("set hashsize 64") == (True, "")  # a real engine's answer: 1 and an empty reply
    assert engine.set_option("hashsize", 64) is True
    assert engine.set_option("nosuch", 1) is False


@pytest.mark.slow  # a whole `tournament run`; the option's refusal itself is checked just above
def test_a_refused_option_reaches_the_runs_output_and_log_and_the_engines_name_its_records(
        library: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    spec = f"name=tiny spec=cb:{library} option.hashsize=64 option.nosuch=1"
    run = subprocess.run([sys.executable, "-m", "tournament.cli", "run", "--engine", spec, "--engine", "random",
                          "--games", "2", "--jobs", "1", "--max-plies", "20", "--quiet", "--out", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    refusal = "the engine refused the option nosuch=1"
    assert refusal in run.stderr and "hashsize" not in run.stderr
    log = (out / "run.log").read_text()
    assert refusal in log and "hashsize" not in log
    summary = json.loads((out / "summary.json").read_text())
    assert {row["engine"]: row["engine_name"] for row in summary["standings"]} == {"tiny": "Tiny CB",
                                                                                  "random": "random"}
    games = read_games(out / "games.pdn")
    assert {g.headers.get("BlackEngine") for g in games} == {"Tiny CB", "random"}
    assert all(g.headers[f"{colour}Engine"] == ("Tiny CB" if g.headers[colour] == "tiny" else "random")
               for g in games for colour in ("Black", "White"))


def test_a_per_move_limit_is_told_less_the_hand_off_reserve(library: Path, tmp_path: Path) -> None:
    log = tmp_path / "tiny.log"
    tiny = EngineConfig(f"cb:{library}", name="tiny", tc="0.1", options=(("logfile", str(log)),))
    run_tournament(TournamentConfig([tiny, "random"], games=1, game=GameSettings(max_plies=10, time_margin=5.0)),
                   out_dir=tmp_path / "run", concurrency=1, progress=False)
    told = {float(call["maxtime"]) for call in _getmove_lines(log)}
    assert told == {0.075}  # 0.1 s less a quarter (the reserve is 50 ms at most)
