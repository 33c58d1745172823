"""Tests of tournament.schedule: schedule, full tournaments, faults, resume, SPRT, table adjudication."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import draughts
import pytest

from egtb.executor import LocalPool
from egtb.formats.values import Category, Wdl
from egtb.probe import moves
from egtb.probe.tablebase import ProbeResult
from egtb.rules.board import BLACK, WHITE, Board, Move
from egtb.rules.pdn import read_games
from tournament.engines.base import Engine, EngineError, EngineSetupError, GameState, Limit
from tournament.engines.random import RandomEngine
from tournament.result import GameTermination
from tournament.openings import Opening, load_ballots
from tournament.records import pair_counts
from tournament.config import GameSettings, SprtSettings, TournamentConfig
from tournament.pairings import Player, gauntlet, player_labels, round_robin, schedule
from tournament.run_directory import load_records
from tournament.schedule import play_job, run_tournament

OPENINGS = load_ballots("3-move")[:4]


# --- fake engines, built by the workers from "test_schedule:Class" specs ----------------


class IllegalEngine(Engine):
    """Plays a backward man move: never legal."""

    def __init__(self, seed: int | None = None) -> None:
        self.name = "illegal"

    def play(self, state: GameState, limit: Limit) -> str:
        return "22-26" if state.board().turn == WHITE else "11-7"


class SleepyEngine(RandomEngine):
    """Sleeps past any short move time (and its margin)."""

    def play(self, state: GameState, limit: Limit) -> Move:
        time.sleep(1.0)
        return super().play(state, limit)


class CrashEngine(Engine):
    def __init__(self, seed: int | None = None) -> None:
        self.name = "crash"

    def play(self, state: GameState, limit: Limit) -> Move:
        raise EngineError("engine process died")


class GarbageEngine(Engine):
    def __init__(self, seed: int | None = None) -> None:
        self.name = "garbage"

    def play(self, state: GameState, limit: Limit) -> str:
        return "?? no idea"


class BrokenStartEngine(Engine):
    def __init__(self, seed: int | None = None) -> None:
        raise EngineError("cannot start")

    def play(self, state: GameState, limit: Limit) -> Move:  # pragma: no cover
        raise AssertionError


# --- schedule ------------------------------------------------------------------------


def test_pairings() -> None:
    assert list(round_robin(4)) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert list(gauntlet(4)) == [(0, 1), (0, 2), (0, 3)]


def test_schedule_plays_each_opening_twice_with_colours_reversed() -> None:
    players = [Player(label, "random") for label in ("a", "b", "c")]
    jobs = schedule(players, OPENINGS, rounds=2, seed=3)
    assert len(jobs) == 2 * len(OPENINGS) * 3 * 2
    assert len({j.game_id for j in jobs}) == len(jobs) and [j.index for j in jobs] == list(range(len(jobs)))
    by_pair: dict[str, list] = {}
    for job in jobs:
        by_pair.setdefault(job.pair_id, []).append(job)
    for first, second in by_pair.values():
        assert (first.black, first.white) == (second.white, second.black) and first.opening == second.opening
    assert jobs == schedule(players, OPENINGS, rounds=2, seed=3)
    assert [j.seed for j in jobs] != [j.seed for j in schedule(players, OPENINGS, rounds=2, seed=4)]


def test_schedule_games_cycles_openings() -> None:
    players = [Player("a", "random"), Player("b", "random")]
    jobs = schedule(players, OPENINGS, games=11)
    assert len(jobs) == 11 and jobs[-1].round == 2 and jobs[8].opening == OPENINGS[0]


def test_labels_are_unique() -> None:
    assert player_labels(["random", "random", "random"]) == ["random", "random#2", "random#3"]


# --- a full tournament, checked against pydraughts and the rules ---------------------


def _pydraughts_push(board: draughts.Board, text: str) -> None:
    """Play our move text on a pydraughts board, checking it is one of its legal moves."""
    path = [int(s) for s in text.replace("x", "-").split("-")]
    legal = board.legal_moves()
    match = [m for m in legal if m.steps_move == path]
    match = match or [m for m in legal if m.steps_move[0] == path[0] and m.steps_move[-1] == path[-1]]
    assert match, f"pydraughts rejects {text} in {board.fen}"
    board.push(match[0])


def test_full_tournament_replays_with_pydraughts(tmp_path: Path) -> None:
    result = run_tournament(TournamentConfig(["random", "depth=1"],
                                             openings=OPENINGS, seed=1, game=GameSettings(max_plies=300)),
                            out_dir=tmp_path, concurrency=2, progress=False)
    assert len(result.records) == result.scheduled == 8 and result.complete
    games = read_games(result.pdn_path.read_text())
    assert len(games) == 8
    for game, record in zip(games, result.records):
        assert game.headers["Black"] == record.black and game.result == record.result.result
        assert game.headers["Termination"] == record.result.termination.value
        pyd = draughts.Board(variant="english", fen=game.fen)
        ours = Board(game.fen)
        for text in game.moves:
            _pydraughts_push(pyd, text)
            ours.push_pdn(text)
        if record.result.termination is GameTermination.NORMAL:
            assert ours.outcome() is not None and ours.outcome().result() == game.result
            if game.result != "1/2-1/2":
                expected = draughts.BLACK if game.result == "1-0" else draughts.WHITE
                assert pyd.is_over() and pyd.winner() == expected
        else:
            assert ours.outcome() is None
    totals = {row["engine"]: row["score"] for row in json.loads(result.summary_path.read_text())["standings"]}
    assert totals["random"] + totals["depth=1"] == 8
    assert sum(pair_counts(result.records, "random").as_list()) == 4


FAKE_HUB_ENGINES = Path(__file__).parent / "fake_engines"


def _hub(script: str) -> str:
    """Spec of a fake external Hub engine from tests/fake_engines."""
    return f"hub:{sys.executable} {FAKE_HUB_ENGINES / script}"


@pytest.mark.parametrize("fault,termination,text", [
    ("test_schedule:IllegalEngine", GameTermination.ILLEGAL_MOVE, "illegal move"),
    ("test_schedule:SleepyEngine", GameTermination.TIME_FORFEIT, "lost on time"),
    ("test_schedule:CrashEngine", GameTermination.CRASH, "crashed: EngineError: engine process died"),
    ("test_schedule:GarbageEngine", GameTermination.CRASH, "answered garbage"),
    (_hub("illegal.py"), GameTermination.ILLEGAL_MOVE, "illegal move"),
    pytest.param(_hub("sleeping.py"), GameTermination.TIME_FORFEIT, "did not answer in time",
                 marks=pytest.mark.slow),  # waits out its time as SleepyEngine does above
    (_hub("crashing.py"), GameTermination.CRASH, "crashed"),
    (_hub("garbage.py"), GameTermination.CRASH, "answered 'done move=banana'"),
])
def test_faulty_engine_loses_and_the_tournament_goes_on(tmp_path: Path, fault: str, termination: GameTermination,
                                                         text: str) -> None:
    # a margin a random mover cannot overrun on a loaded machine; the sleepers overrun it by far
    settings = GameSettings(limit=Limit(time=0.05), time_margin=0.45)
    result = run_tournament(TournamentConfig(["random", fault], openings=OPENINGS[:2], game=settings),
                            out_dir=tmp_path, concurrency=2, progress=False)
    assert len(result.records) == 4
    for record in result.records:
        faulty_colour = BLACK if record.black == fault else WHITE
        assert record.result.termination is termination, record.result.reason
        assert record.result.winner == 1 - faulty_colour and text in record.result.reason
    rows = {row["engine"]: row for row in json.loads(result.summary_path.read_text())["standings"]}
    assert (rows["random"]["wins"], rows[fault]["losses"]) == (4, 4)


def test_an_engine_that_cannot_start_stops_the_run_before_any_game(tmp_path: Path) -> None:
    with pytest.raises(EngineSetupError, match="test_schedule:BrokenStartEngine.*cannot start"):
        run_tournament(TournamentConfig(["random", "test_schedule:BrokenStartEngine"], games=2),
                       out_dir=tmp_path / "run", concurrency=1, progress=False)
    assert not (tmp_path / "run").exists()


# --- resume -------------------------------------------------------------------------


def _without_clocks(pdn: Path) -> str:
    """PDN text without its move comments (clocks and move times differ from run to run) and line breaks."""
    return " ".join(re.sub(r"\{[^}]*\}", " ", pdn.read_text()).split())


def _totals(records: list) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(r.game_id, r.result.result, r.result.moves) for r in records]


class StopAfter:
    """An executor that plays in this process and stops after ``games`` games (an interrupted run)."""

    remote = False

    def __init__(self, games: int) -> None:
        self.games = games

    def run(self, tasks, **options):
        left = self.games
        for done in LocalPool(1).run(tasks, **options):
            records = done.result["records"][:left]
            left -= len(records)
            yield done._replace(result=dict(done.result, records=records))
            if left == 0:
                return


def test_interrupted_and_resumed_run_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    config = TournamentConfig(("random", "random", "random"), openings=OPENINGS, rounds=1, seed=7)
    full = run_tournament(config, out_dir=tmp_path / "full", concurrency=2, progress=False)
    part = run_tournament(config, out_dir=tmp_path / "part", executor=StopAfter(5), progress=False)
    assert len(part.records) == 5 and not part.complete
    with open(tmp_path / "part" / "games.jsonl", "a") as handle:  # a kill in the middle of a write
        handle.write('{"game_id": "r1-o003-1v2-b", "index": 23, "rou')
    resumed = run_tournament(config, out_dir=tmp_path / "part", concurrency=1, progress=False)
    assert resumed.complete and _totals(resumed.records) == _totals(full.records)
    assert resumed.standings == full.standings
    assert _without_clocks(tmp_path / "part" / "games.pdn") == _without_clocks(tmp_path / "full" / "games.pdn")
    again = run_tournament(config, out_dir=tmp_path / "part", concurrency=2, progress=False)
    assert _totals(again.records) == _totals(full.records)
    lines = (tmp_path / "part" / "games.jsonl").read_text().splitlines()
    assert len(lines) == 24 and all(json.loads(line) for line in lines)


def test_load_records_drops_a_half_written_line(tmp_path: Path) -> None:
    run = run_tournament(TournamentConfig(["random", "random"], games=2),
                         out_dir=tmp_path, progress=False, concurrency=1)
    path = tmp_path / "games.jsonl"
    good = path.read_bytes()
    path.write_bytes(good + good[:30])
    assert len(load_records(path)) == 2 and path.read_bytes() == good
    path.write_bytes(good.replace(b'"round"', b'"rou', 1))
    with pytest.raises(ValueError, match="games.jsonl:1"):
        load_records(path)
    assert len(run.records) == 2


def test_other_settings_refuse_to_resume(tmp_path: Path) -> None:
    run_tournament(TournamentConfig(["random", "random"], games=2),
                   out_dir=tmp_path, progress=False, concurrency=1)
    with pytest.raises(ValueError, match="other settings"):
        run_tournament(TournamentConfig(["random", "random"], games=2, seed=9),
                       out_dir=tmp_path, progress=False, concurrency=1)


# --- SPRT, tables, gauntlet ------------------------------------------------------------


def test_sprt_stops_a_decided_match(tmp_path: Path) -> None:
    result = run_tournament(TournamentConfig(["depth=2", "test_schedule:IllegalEngine"],
                                             games=200, openings=OPENINGS, sprt=SprtSettings(0, 10, 0.05, 0.05)),
                            out_dir=tmp_path, concurrency=1, progress=False)
    assert result.sprt is not None and result.sprt.decision == "H1"
    assert len(result.records) < 200 and result.complete
    assert "SPRT" in result.standings


class FakeTablebase:
    """Answers as Tablebase.probe does: every position is a draw."""

    largest_pieces = 24

    def probe(self, board: Board, *, rule_free: bool = False) -> ProbeResult:
        if rule_free:
            return ProbeResult(Wdl.DRAW, 0)
        return ProbeResult(Wdl.DRAW, 0, Wdl.DRAW, Category.DRAW, 0, board.rule.name, board.quiet_plies)


def test_table_adjudication_in_a_tournament(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    monkeypatch.setitem(moves._TABLEBASES, tables.resolve(), FakeTablebase())  # what tablebase_for gives
    settings = GameSettings(tables_dir=str(tables), adjudicate_pieces=20)
    result = run_tournament(TournamentConfig(["random", "random"], openings=OPENINGS[:2], game=settings),
                            out_dir=tmp_path / "run", concurrency=1, progress=False)
    assert len(result.records) == 4  # 2 openings, each played with both colours: the loop checks something
    for record in result.records:
        assert record.result.termination is GameTermination.ADJUDICATION and record.result.result == "1/2-1/2"
        board = Board(record.result.start_fen)
        for text in record.result.moves:
            board.push_pdn(text)
        assert board.piece_count() <= 20
        board.pop()
        assert board.piece_count() > 20  # adjudicated as soon as the table had the position


def test_gauntlet_pairs_the_first_engine_only(tmp_path: Path) -> None:
    result = run_tournament(TournamentConfig(["random", "random", "random"], gauntlet=True, games=8),
                            out_dir=tmp_path, progress=False, concurrency=1)
    assert all("random" in (r.black, r.white) for r in result.records)


def test_play_job_from_a_fen_opening() -> None:
    job = schedule([Player("a", "random"), Player("b", "random")], [Opening("fen", (), "W:W18:B14")])[0]
    record = play_job(job, GameSettings())
    assert record.result.moves == ("18x9",) and record.result.result == "0-1" and record.opening == "fen"


class SlowRandomEngine(RandomEngine):
    """A random mover that takes a few milliseconds per move."""

    def play(self, state: GameState, limit: Limit) -> Move:
        time.sleep(0.003)
        return super().play(state, limit)


# slow: the default run resumes an interrupted run (test_interrupted_and_resumed_run_equals_an_uninterrupted_one)
@pytest.mark.slow
def test_killed_process_resumes_to_the_same_totals(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    specs = ["random", "test_schedule:SlowRandomEngine"]
    argv = [sys.executable, "-m", "tournament.cli", "run", "--engine", specs[0], "--engine", specs[1],
            "--openings", "2-move", "--games", "24", "--jobs", "2", "--seed", "5", "--quiet",
            "--out", str(tmp_path / "killed")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    records = tmp_path / "killed" / "games.jsonl"
    deadline = time.monotonic() + 300  # a bound for a loaded machine; the loop ends at the third record
    while time.monotonic() < deadline and (not records.exists() or records.read_text().count("\n") < 3):
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    interrupted = len(load_records(records))
    assert 3 <= interrupted < 24
    config = TournamentConfig(tuple(specs), openings=load_ballots("2-move"), games=24, seed=5)
    resumed = run_tournament(config, out_dir=tmp_path / "killed", progress=False, concurrency=2)
    full = run_tournament(config, out_dir=tmp_path / "full", progress=False, concurrency=2)
    assert _totals(resumed.records) == _totals(full.records) and resumed.standings == full.standings



@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_writes_the_pdn_summary_and_standings_of_the_finished_games(tmp_path: Path, jobs: str) -> None:
    import os
    import signal
    import subprocess

    out = tmp_path / "run"
    argv = [sys.executable, "-m", "tournament.cli", "run", "--engine", "random", "--engine",
            "test_schedule:SlowRandomEngine", "--openings", "2-move", "--games", "200", "--jobs", jobs,
            "--seed", "5", "--quiet", "--out", str(out)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    # default signal handling even when the test runner was started with SIGINT ignored (a background job)
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    records = out / "games.jsonl"
    deadline = time.monotonic() + 300  # a bound for a loaded machine; the loop ends at the third record
    while time.monotonic() < deadline and (not records.exists() or records.read_text().count("\n") < 3):
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground group
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and "Traceback" not in err, err
    finished = load_records(records)
    assert 3 <= len(finished) < 200
    assert len(read_games(out / "games.pdn")) == len(finished)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["games"] == len(finished) and summary["scheduled"] == 200 and not summary["complete"]
    assert "Rank  Engine" in (out / "standings.txt").read_text()
    # the run resumes: asked for one game past the last it finished (with 2 jobs an earlier one may still
    # have been playing at Ctrl-C), it plays the missing ones alone and keeps the finished ones
    games = max(record.index for record in finished) + 2
    config = TournamentConfig(("random", "test_schedule:SlowRandomEngine"), openings=load_ballots("2-move"),
                              games=games, seed=5)
    resumed = run_tournament(config, out_dir=out, progress=False, concurrency=1)
    assert resumed.complete and len(resumed.records) == games
    assert load_records(records)[:len(finished)] == finished


def test_a_finished_run_is_extended_by_its_new_games_only_and_never_shortened(tmp_path: Path) -> None:
    config = TournamentConfig(("random", "random"), openings=OPENINGS, games=4, seed=3)
    four = run_tournament(config, out_dir=tmp_path / "run", concurrency=1, progress=False)
    six = run_tournament(config.replace(games=6), out_dir=tmp_path / "run", concurrency=1, progress=False)
    assert six.complete and len(six.records) == 6 and six.records[:4] == four.records
    assert len(read_games(tmp_path / "run" / "games.pdn")) == 6
    assert json.loads((tmp_path / "run" / "settings.json").read_text())["games"] == 6
    alone = run_tournament(config.replace(games=6), out_dir=tmp_path / "alone", concurrency=1, progress=False)
    assert _totals(alone.records) == _totals(six.records)  # as if it had been asked for at once
    with pytest.raises(ValueError, match="extended, not shortened"):
        run_tournament(config.replace(games=5), out_dir=tmp_path / "run", concurrency=1, progress=False)
    with pytest.raises(ValueError, match=r"other settings \(games, seed\)"):
        run_tournament(config.replace(games=8, seed=4), out_dir=tmp_path / "run", concurrency=1, progress=False)
