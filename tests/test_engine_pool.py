"""Persistent external engines (issue 13): started once per worker, restarted only after a fault."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from tournament.engines.pool import EnginePool
from tournament.engines.random import RandomEngine
from tournament.result import GameTermination
from tournament.config import GameSettings, TournamentConfig
from tournament.schedule import run_tournament

FAKES = Path(__file__).parent / "fake_engines"
SHORT = GameSettings(max_plies=40)


def _crasher(game: int, starts: Path) -> str:
    return f"hub:{sys.executable} {FAKES / 'crash_in_game.py'} {game} {starts}"


def _starts(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


def test_an_external_engine_is_started_once_and_restarted_after_its_crash(tmp_path: Path,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    starts = tmp_path / "starts"
    spec = _crasher(3, starts)
    with caplog.at_level(logging.WARNING, logger="tournament.engines.pool"):
        result = run_tournament(TournamentConfig([spec, "random"], games=4, game=SHORT),
                                out_dir=tmp_path / "run", concurrency=1, progress=False)
    terminations = [r.result.termination for r in result.records]
    assert terminations[2] is GameTermination.CRASH and result.records[2].result.winner is not None
    assert "crashed" in result.records[2].result.reason
    assert GameTermination.CRASH not in terminations[:2] + terminations[3:]  # game 4 played by a new process
    assert _starts(starts) == 2  # one start for the setup check and games 1-3, the restart for game 4
    restarts = [r.getMessage() for r in caplog.records if "restarted after a fault" in r.getMessage()]
    assert len(restarts) == 1 and "crashed" in restarts[0]


def _running(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


def test_the_setup_checks_engine_plays_the_games_here_and_is_closed_with_the_run(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    config = TournamentConfig([_crasher(0, starts), "random"], games=2, game=SHORT)
    run_tournament(config, out_dir=tmp_path / "run", concurrency=1, progress=False)
    assert _starts(starts) == 1  # the process the setup check started played both games
    run_tournament(config, out_dir=tmp_path / "run", concurrency=1, progress=False)  # complete: no game
    pids = [int(pid) for pid in starts.read_text().split()]
    assert len(pids) == 2 and not any(_running(pid) for pid in pids)  # each closed with its run


@pytest.mark.slow  # two workers over six games; the reuse within one worker is checked above
def test_each_worker_keeps_its_own_engine(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    result = run_tournament(TournamentConfig([_crasher(0, starts), "random"], games=6, game=SHORT),
                            out_dir=tmp_path / "run", concurrency=2, progress=False)
    assert len(result.records) == 6 and not any(r.result.is_fault for r in result.records)
    assert 2 <= _starts(starts) <= 3  # the setup check plus at most one per worker, not one per game


@pytest.mark.slow  # one engine process a game
def test_fresh_engines_when_asked(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    run_tournament(TournamentConfig([_crasher(0, starts), "random"], games=2, game=SHORT),
                   out_dir=tmp_path / "run", concurrency=1, progress=False, reuse_engines=False)
    assert _starts(starts) == 1 + 2  # the setup check, then one process a game


class Persistent(RandomEngine):
    persistent = True
    closed = 0

    def close(self) -> None:
        Persistent.closed += 1


def test_pool_keeps_persistent_engines_and_drops_them_after_a_fault() -> None:
    pool = EnginePool()
    first = pool.acquire("x", lambda: Persistent(seed=1))
    pool.release("x", first, fault=None)
    assert pool.acquire("x", lambda: Persistent(seed=2)) is first
    pool.release("x", first, fault=GameTermination.ILLEGAL_MOVE)  # a working process: kept
    assert pool.acquire("x", lambda: Persistent(seed=2)) is first
    pool.release("x", first, fault=GameTermination.TIME_FORFEIT, reason="too slow")
    second = pool.acquire("x", lambda: Persistent(seed=3))
    assert second is not first and pool.restarts == 1 and pool.starts == 2 and Persistent.closed == 1
    pool.release("x", second, fault=None)
    pool.close()
    assert len(pool) == 0 and Persistent.closed == 2


def test_a_plug_in_a_built_in_and_an_external_engine_play_a_round_robin_with_a_crosstable(tmp_path: Path) -> None:
    external = f"hub:{sys.executable} {FAKES / 'crash_in_game.py'} 0"
    result = run_tournament(TournamentConfig(["tournament.engines.random:RandomEngine", "depth=1", external],
                                             games=6, game=SHORT, anchor="depth=1"),
                            out_dir=tmp_path / "run", concurrency=1, progress=False)
    assert len(result.records) == 6 and not any(r.result.is_fault for r in result.records)
    assert "Ratings: maximum likelihood over all games, 95% intervals, anchored at depth=1 = 0." in result.standings
    headers = [line for line in result.standings.splitlines() if "Games  Score" in line]
    assert len(headers) == 1 and all(name in headers[0] for name in result.players)  # the crosstable's columns
    summary = json.loads(result.summary_path.read_text())
    assert {r["engine"] for r in summary["ratings"]} == set(result.players)
    assert sum(c["games"] for row in summary["crosstable"].values() for c in row.values()) == 12
