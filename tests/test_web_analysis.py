"""The explorer's engine analysis (POST /api/analysis, issue 32) through a real uvicorn server.

Outside the tables the page asks the ``hard`` engine for its score and principal variation. The
line is replayed by our rules and by pydraughts (an independent oracle); the score's sign is held
to the 4-piece tables' value of a position the 3-piece tables served here do not hold.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("starlette", reason="the web extras are missing: pip install -e '.[web]'")

from egtb.formats.values import Wdl  # noqa: E402
from egtb.probe.tablebase import Tablebase  # noqa: E402
from egtb.rules.board import Board  # noqa: E402
from egtb.rules.notation import START_FEN  # noqa: E402
from positions import pydraughts_replay  # noqa: E402
from tournament.web.app import create_app  # noqa: E402
from tournament.web.engines import EngineService  # noqa: E402
from tournament.web.server import bind_socket  # noqa: E402

TABLE_PIECES = 3
#: White to move, 4 pieces: 3x10 wins (the 4-piece tables), 17x10 draws.
WIN_BY_CAPTURE = "W:WK3,K17:B7,K14"
#: White to move wins, 3 pieces: the tables hold it.
WON_FEN = "W:WK10,K14:BK1"
#: Black's only move is a capture that takes White's last pieces.
FORCED_WIN = "B:W14,23:B9,1"


@pytest.fixture(scope="module")
def tables(built_tables):
    return built_tables(TABLE_PIECES)


@pytest.fixture(scope="module")
def url(tables):
    import uvicorn

    engines = EngineService(tables_dir=tables)
    sock = bind_socket(0)
    server = uvicorn.Server(uvicorn.Config(create_app(tables_dir=tables, engines=engines), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    with engines:
        thread.start()
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "uvicorn did not start"
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()


def post(url: str, body: object, *, headers: dict[str, str] | None = None, raw: bytes | None = None):
    """(status, JSON answer) of a POST to /api/analysis."""
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}/api/analysis", data=data, method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=240) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_start_gets_a_score_and_a_legal_principal_variation(url):
    status, answer = post(url, {"fen": START_FEN, "time": 1})
    assert status == 200, answer
    assert answer["source"] == "search" and answer["depth"] >= 4 and answer["forced"] == 0
    assert isinstance(answer["score"], int) and abs(answer["score"]) < 300  # no side is a man up at the start
    assert answer["score_text"].endswith(("for Black", "for White", "even"))
    line = answer["pv"]
    assert len(line) >= 4
    board = Board(START_FEN)
    for text in line:
        board.push_pdn(text)  # IllegalMoveError if the line is not legal
    assert Board(pydraughts_replay(START_FEN, line).fen).key() == board.key()
    assert answer["pv_text"].startswith(f"1. {line[0]} {line[1]} 2. {line[2]}")


def test_a_win_outside_the_tables_is_scored_for_the_winner(url, built_tables):
    with Tablebase(built_tables(4)) as tb:  # the larger tables: an oracle the server does not have
        assert tb.probe(WIN_BY_CAPTURE).value == Wdl.WIN  # for White, to move
    status, answer = post(url, {"fen": WIN_BY_CAPTURE, "time": 1})
    assert status == 200, answer
    assert answer["turn"] == "white" and answer["score"] > 0 and answer["black_score"] < 0
    assert answer["winner"] == "white" and answer["score_text"].startswith("White wins")
    assert answer["pv"][0] == "3x10"
    oracle = pydraughts_replay(WIN_BY_CAPTURE, answer["pv"])
    board = Board(WIN_BY_CAPTURE)
    for text in answer["pv"]:
        board.push_pdn(text)
    assert Board(oracle.fen).key() == board.key()


def test_a_forced_move_is_played_before_the_search_and_counted(url):
    status, answer = post(url, {"fen": FORCED_WIN})
    assert status == 200, answer
    assert answer["pv"] == ["9x18x27"] and answer["forced"] == 1
    assert answer["winner"] == "black" and answer["score_text"] == "Black wins in 1 ply"


def test_a_position_the_tables_hold_is_left_to_the_probe_with_409(url):
    status, answer = post(url, {"fen": WON_FEN})
    assert status == 409 and answer["in_tables"] is True and "/api/probe" in answer["error"]


@pytest.mark.parametrize("body, words", [
    ({"fen": "X:W1:B2"}, "side to move"),
    ({"fen": "B:W21:B40"}, "unknown square 40"),
    ({"fen": START_FEN, "time": -1}, "more than 0"),
    ({"fen": START_FEN, "rule": "fifty"}, "unknown move rule"),
    ({"fen": "B:W5,6,10:B1"}, "the game is over"),
])
def test_bad_analysis_requests_get_400_with_a_message(url, body, words):
    status, answer = post(url, body)
    assert status == 400 and words in answer["error"], answer


def test_a_foreign_origin_and_a_body_not_declared_json_are_refused(url):
    status, answer = post(url, {"fen": START_FEN}, headers={"Origin": "http://evil.com"})
    assert status == 403 and "evil.com" in answer["error"]
    status, answer = post(url, None, raw=b'{"fen": "B:W18:B14"}', headers={"Content-Type": "text/plain"})
    assert status == 415 and "application/json" in answer["error"]
    status, answer = post(url, None, raw=b"[1, 2")
    assert status == 400 and "not JSON" in answer["error"]


def test_other_requests_are_answered_while_a_search_runs(url):
    result: dict[str, object] = {}
    thinker = threading.Thread(target=lambda: result.update(answer=post(url, {"fen": START_FEN, "time": 4})))
    thinker.start()
    time.sleep(1.0)
    started = time.monotonic()
    with urllib.request.urlopen(f"{url}/api/moves?fen={WON_FEN}", timeout=60) as response:
        assert json.load(response)["fen"] == WON_FEN
    took = time.monotonic() - started
    assert thinker.is_alive(), "the search ended before the other request was asked"
    thinker.join(timeout=120)
    assert took < 1.5, f"/api/moves waited {took:.1f} s behind the search"
    assert result["answer"][0] == 200
