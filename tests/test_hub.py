"""Tests of the Hub protocol: encodings (checked against pydraughts), client, server, faults."""

from __future__ import annotations

import io
import shutil
import sys
import threading
import time
from functools import cache
from pathlib import Path

import pytest

from egtb import Board
from positions import random_game_boards
from egtb.errors import IllegalMoveError
from tournament.engines.base import EngineError, EngineTimeoutError, GameState, Limit
from tournament.engines.random import RandomEngine
from tournament.engines.hub import HubEngine, hub_move, hub_position, parse_hub_move, parse_hub_position, serve
from tournament.engines.hub.protocol import move_rule_param
from tournament.engines.hub.server import HubServer

draughts = pytest.importorskip("draughts")

FAKES = Path(__file__).parent / "fake_engines"
SERVER = [sys.executable, "-m", "tournament.cli", "hub-engine"]


def _fake(name: str, *args: str) -> list[str]:
    return [sys.executable, str(FAKES / f"{name}.py"), *args]


ENCODING_BOARDS = 12


@cache  # made when a test asks, not at collection: random play compiles the move generator
def encoding_boards() -> list[Board]:
    return random_game_boards(ENCODING_BOARDS, seed=3, start=(Board("B:W18,24,K27:B12,16,K22"),
                                                              Board("W:WK5,K13:B26,K28")))


@pytest.mark.parametrize("index", range(ENCODING_BOARDS))
def test_encodings_agree_with_pydraughts(index: int) -> None:
    board = encoding_boards()[index]
    theirs = draughts.Board("english", board.fen())
    assert hub_position(board) == theirs._game.initial_hub_fen
    assert parse_hub_position(hub_position(board)).key() == board.key()
    assert {hub_move(m) for m in board.legal_moves()} == {m.hub_move for m in theirs.legal_moves()}
    for move in board.legal_moves():
        assert parse_hub_move(hub_move(move), board) == move
        assert parse_hub_move(str(move), board) == move  # a PDN path is accepted too


def test_parse_hub_move_rejects_garbage_and_illegal_moves() -> None:
    for text in ["banana", "1-", "11-15-19x", "40-44", "22-17", "11x15"]:
        with pytest.raises(ValueError):
            parse_hub_move(text, Board())
    with pytest.raises(ValueError):
        parse_hub_position("Wbbbb")


def test_server_answers_in_process() -> None:
    commands = "\n".join([
        "hub", "init", "new-game", "pos pos=Wbbbbbbbbbbbbeeeeeeeewwwwwwwwwwww moves=\"11-15 23-19\"",
        "level depth=1", "go think", "pos pos=nonsense", "ping", "quit", "hub",
    ])
    out = io.StringIO()
    serve(RandomEngine(seed=1), io.StringIO(commands + "\n"), out)
    lines = out.getvalue().splitlines()
    assert lines[:4] == ['id name="random" version=0.1 author="draughts-egtb"',
                         'param name=variant value=english type=enum values="english"',
                         'param name=move-rule value=wcdf type=enum values="wcdf crowning forty-plies"', "wait"]
    assert lines[4] == "ready"
    board = Board()
    board.push_pdn("11-15")
    board.push_pdn("23-19")
    assert lines[5].startswith("done move=")
    parse_hub_move(lines[5].split("=", 1)[1], board)
    assert lines[6].startswith("error message=") and lines[7] == "pong" and len(lines) == 8


def test_our_client_drives_our_server() -> None:
    with HubEngine([*SERVER, "depth=2"]) as engine:
        assert engine.name == "depth:2"
        engine.new_game()
        board = Board()
        for _ in range(6):
            result = engine.play(GameState.from_board(board), Limit(depth=2, time=5))
            board.push(result.move)
        assert len(board.move_stack) == 6
    assert not engine.alive()


def test_pydraughts_client_drives_our_server() -> None:
    from draughts.engine import HubEngine as TheirHubEngine, Limit as TheirLimit

    # pydraughts resolves symlinks in the program path (which would leave the venv): start via env
    engine = TheirHubEngine([shutil.which("env"), *SERVER, "depth=3"])
    try:
        engine.init()
        assert engine.variants == {"english"}
        board = draughts.Board("english")
        for _ in range(8):
            result = engine.play(board, TheirLimit(depth=3), ponder=False)
            assert result.move.pdn_move in [m.pdn_move for m in board.legal_moves()]
            board.push(result.move)
    finally:
        engine.quit()
        engine.kill_process()


def test_client_sends_start_and_moves_and_reads_the_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    monkeypatch.setenv("FAKE_HUB_LOG", str(log))
    board = Board("B:W18,24,K27:B12,16,K22")
    board.push_pdn("22x15")
    with HubEngine(_fake("scripted", "24-20"), name="mine", options={"variant": "english"}) as engine:
        assert (engine.name, engine.reported_name) == ("mine", "scripted")  # our label, the program's own name
        result = engine.play(GameState.from_board(board), Limit(time=1.5))
        assert str(result.move) == "24-20" and result.info["depth"] == "1"
    sent = log.read_text().splitlines()
    assert sent[:3] == ["hub", "set-param name=variant value=english", "init"]
    assert sent[3:6] == ['pos pos=WeeeeeBeebeWeeebeweeeweeeeeeeeeee moves="22x15x18"', "level move-time=1.5", "go think"]


def test_client_sends_the_move_rule_only_to_an_engine_that_announced_it(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    monkeypatch.setenv("FAKE_HUB_LOG", str(log))
    monkeypatch.setenv("FAKE_HUB_HELLO", move_rule_param())
    state = GameState("B:WK30:BK3", ("3-7",), rule="crowning", start_quiet_plies=7)
    with HubEngine(_fake("scripted", "30-26")) as engine:
        assert str(engine.play(state, Limit(time=5)).move) == "30-26"
    sent = [line for line in log.read_text().splitlines() if line.startswith("pos")]
    assert sent == [f'pos pos={hub_position(Board("B:WK30:BK3"))} moves="3-7" rule=crowning counter=7']


def test_the_move_rule_and_counter_reach_the_engine_behind_our_server() -> None:
    """Through a real hub-engine process: the engine reports, in ``info source=``, what it was given."""
    state = GameState("B:WK30:BK3", ("3-7",), rule="forty-plies", start_quiet_plies=7)
    with HubEngine([*SERVER, "state_echo:StateEcho"], cwd=FAKES) as engine:
        assert engine.params["move-rule"]["values"] == "wcdf crowning forty-plies"
        result = engine.play(state, Limit(time=5))
        assert result.info["source"] == "forty-plies:7:8:1"  # rule, counter at the start, after the move, moves
        assert engine.play(GameState("B:WK30:BK3"), Limit(time=5)).info["source"] == "wcdf:0:0:0"


def test_our_server_takes_the_move_rule_in_pos_and_in_set_param() -> None:
    server = HubServer(RandomEngine(seed=1), io.StringIO())
    server.handle('pos pos=B:WK30:BK3 moves="3-7" rule=crowning counter=7')
    assert (server.board.rule.name, server.board.start_quiet_plies, server.board.quiet_plies) == ("crowning", 7, 8)
    server.handle("set-param name=move-rule value=forty-plies")
    server.handle("pos pos=B:WK30:BK3")
    assert (server.board.rule.name, server.board.quiet_plies) == ("forty-plies", 0)
    out = io.StringIO()
    serve(RandomEngine(seed=1), io.StringIO("pos pos=B:WK18:BK14 rule=fifty\npos pos=B:WK18:BK14 counter=-1\n"
                                            "set-param name=move-rule value=fifty\nping\n"), out)
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["error", "error", "error", "pong"]
    assert "unknown move rule 'fifty'" in lines[0] and "counter='-1'" in lines[1]


class Failing(RandomEngine):
    """Raises instead of moving."""

    def play(self, state: GameState, limit: Limit):
        raise EngineError("no idea")


def test_an_engine_that_raises_is_an_error_line_and_the_session_goes_on() -> None:
    out = io.StringIO()
    serve(Failing(seed=1), io.StringIO("pos pos=B:WK18:BK14\ngo think\nping\n"), out)
    assert out.getvalue().splitlines() == ['error message="EngineError: no idea"', "pong"]


def test_perfect_behind_our_server_says_where_its_moves_come_from(built_tables) -> None:
    """``hub-engine perfect --option fallback=SPEC``: table moves inside the tables, the fallback's outside."""
    tables = built_tables(3)
    command = [*SERVER, "perfect", "--tables", str(tables), "--option", "fallback=depth=2"]
    with HubEngine(command) as engine:
        inside = engine.play(GameState("W:WK10,K14:BK1"), Limit(time=5))
        outside = engine.play(GameState.from_board(Board()), Limit(time=5))
    assert (str(inside.move), inside.info["source"]) == ("14-9", "tables")
    assert outside.info["source"] == "fallback" and outside.info["depth"] == "2" and outside.score is not None
    assert outside.move in Board().legal_moves()


def test_an_engine_killed_from_another_thread_fails_its_move_and_starts_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log"
    monkeypatch.setenv("FAKE_HUB_LOG", str(log))
    engine = HubEngine(_fake("sleeping"))  # it sleeps 30 s on "go"
    failures: list[Exception] = []

    def ask() -> None:
        try:
            engine.play(GameState.from_board(Board()), Limit(time=60))
        except EngineError as error:
            failures.append(error)

    thinker = threading.Thread(target=ask)
    thinker.start()
    deadline = time.monotonic() + 30
    while "go think" not in log.read_text() and time.monotonic() < deadline:  # until it searches
        time.sleep(0.02)
    engine.kill()
    thinker.join(timeout=30)
    assert len(failures) == 1 and not isinstance(failures[0], EngineTimeoutError) and not engine.alive()
    engine.new_game()
    assert engine.alive()
    engine.close()


def test_crash_is_an_engine_error_and_new_game_restarts() -> None:
    engine = HubEngine(_fake("crashing"))
    with pytest.raises(EngineError, match="crashed") as caught:
        engine.play(GameState.from_board(Board()), Limit(time=5))
    assert not isinstance(caught.value, EngineTimeoutError)
    assert "exit code 3" in str(caught.value) and not engine.alive()
    with pytest.raises(EngineError):
        engine.play(GameState.from_board(Board()), Limit(time=5))
    engine.new_game()
    assert engine.alive()
    engine.close()


@pytest.mark.parametrize("fake, text, illegal", [("garbage", "banana", False), ("illegal", "22-17", True)])
def test_bad_answers_are_engine_errors(fake: str, text: str, illegal: bool) -> None:
    with HubEngine(_fake(fake)) as engine:
        with pytest.raises(EngineError, match=text) as caught:
            engine.play(GameState.from_board(Board()), Limit(time=5))
        assert not isinstance(caught.value, EngineTimeoutError)
        assert isinstance(caught.value, IllegalMoveError) == illegal


def test_no_answer_in_time_is_a_timeout() -> None:
    engine = HubEngine(_fake("sleeping"), time_margin=0.2)  # it sleeps 30 s: only the deadline ends the wait
    with pytest.raises(EngineTimeoutError, match="in time"):
        engine.play(GameState.from_board(Board()), Limit(time=0.2))
    assert not engine.alive()  # killed; the next new_game starts it again
    engine.new_game()
    assert engine.alive()
    engine.close()


def test_a_missing_program_is_an_engine_error(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="cannot start"):
        HubEngine([str(tmp_path / "no-such-engine")])
    with pytest.raises(EngineError, match="crashed"):
        HubEngine([sys.executable, "-c", "pass"])


def test_our_server_reports_the_search_score_and_the_client_reads_it() -> None:
    with HubEngine(SERVER + ["depth=3"]) as engine:
        result = engine.play(GameState.from_board(Board("B:W32:B1,K28")), Limit(depth=3))
        assert result.info.get("depth") == "3" and result.score > 100  # a man ahead
    with HubEngine(SERVER + ["random"]) as engine:
        result = engine.play(GameState.from_board(Board()), Limit())
        assert result.score is None  # the random mover has no opinion


class Picky(RandomEngine):
    """Takes the option "hash" and refuses any other."""

    def set_option(self, name: str, value: str) -> bool:
        return name == "hash"


def test_a_refused_option_is_an_error_line_and_the_client_warns_of_it() -> None:
    out = io.StringIO()
    serve(Picky(seed=1), io.StringIO("hub\nset-param name=hash value=64\nset-param name=colour value=red\n"
                                     "init\nquit\n"), out)
    lines = out.getvalue().splitlines()
    assert lines[4:] == ['error message="the engine refused the option colour=red"', "ready"]
    seen: list[str] = []
    script = ("import sys\nfor line in sys.stdin:\n"  # reads its input: a write to it never meets a closed pipe
              "    if line.startswith('hub'): print('id name=picky'); print('wait', flush=True)\n"
              "    if line.startswith('init'): print('error message=refused'); print('ready', flush=True)\n")
    with HubEngine([sys.executable, "-c", script], on_warning=seen.append) as engine:
        assert engine.warnings == seen == ["picky: refused"]
