"""The play page's JSON API (tournament.web) through Starlette's test client, and `tournament play`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette", reason="the web extras are missing: pip install -e '.[web]'")
from starlette.testclient import TestClient  # noqa: E402

from egtb.formats.values import Wdl
from egtb.probe.moves import best_moves
from egtb.cli import main as egtb_main  # noqa: E402
from egtb.probe.tablebase import Tablebase  # noqa: E402
from egtb.rules.board import Board  # noqa: E402
from egtb.rules.notation import START_FEN  # noqa: E402
from egtb.rules.pdn import read_games  # noqa: E402
from egtb.builder.driver import build  # noqa: E402
from tournament.cli import build_parser, main as tournament_main  # noqa: E402
from tournament.engines.base import EngineError  # noqa: E402
from tournament.web.app import create_app  # noqa: E402
from tournament.web.engines import EngineCancelled, EngineService  # noqa: E402

TABLE_PIECES = 3
#: Black to move must capture with the man on 2, by two routes that both end on 18.
ROUTE_FEN = "B:W6,7,14,15,31:B2,20,26,28"
#: White to move wins (3 pieces, in the tables).
WON_FEN = "W:WK10,K14:BK1"
#: A middle-game position where a deep search takes a while.
BUSY_FEN = "B:W17,19,21,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,9,10,11,12,15"
LONG_THINK = 30
#: The page answers only requests addressed to this machine.
LOCAL = "http://127.0.0.1"
#: The header the page's POSTs carry (a POST without it gets 415).
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def tables(built_tables) -> Path:
    return built_tables(TABLE_PIECES)


@pytest.fixture(scope="module")
def client(tables):
    # "hard" searches without a depth cap here, so that a test can catch it thinking
    engines = EngineService(tables_dir=tables, specs={"hard": f"depth=60,time={LONG_THINK}"})
    with engines, TestClient(create_app(tables_dir=tables, engines=engines), base_url=LOCAL) as client:
        yield client


def test_info_names_the_tables_rules_and_strengths(client, tables):
    info = client.get("/api/info").json()
    assert info["max_pieces"] == TABLE_PIECES
    assert info["tables"] == str(tables)
    assert info["rules"]["wcdf"] == {"limit": 80, "man_move_resets": True}
    assert info["rules"]["forty-plies"]["limit"] == 40
    assert info["strengths"] == ["easy", "medium", "hard", "perfect"]


def test_moves_from_the_start(client):
    record = client.get("/api/moves").json()
    assert record["fen"] == START_FEN and record["turn"] == "black"
    assert sorted(m["move"] for m in record["moves"]) == ["10-14", "10-15", "11-15", "11-16", "12-16", "9-13", "9-14"]
    assert record["capture"] is False and record["outcome"] is None
    assert record["counter"] == 0 and record["limit"] == 80
    assert record["pieces"]["black_men"] == list(range(1, 13))


def test_moves_give_full_paths_and_captured_squares_for_route_choice(client):
    record = client.get("/api/moves", params={"fen": ROUTE_FEN}).json()
    assert record["capture"] is True
    routes = {m["move"]: m for m in record["moves"]}
    assert set(routes) == {"2x9x18", "2x11x18"}
    assert routes["2x9x18"]["path"] == [2, 9, 18] and routes["2x9x18"]["captured"] == [6, 14]
    assert routes["2x11x18"]["captured"] == [7, 15]
    assert {m["from"] for m in routes.values()} == {2} and {m["to"] for m in routes.values()} == {18}
    assert routes["2x9x18"]["fen"] == "W:W7,15,31:B18,20,26,28"


def test_moves_replay_a_game_with_the_counter_and_the_pdn(client):
    played = ["11-15", "23-19", "8-11", "22-17"]
    record = client.get("/api/moves", params={"moves": " ".join(played), "rule": "crowning",
                                              "Event": "test", "Black": "A"}).json()
    board = Board(rule="crowning")
    for text in played:
        board.push_pdn(text)
    assert record["fen"] == board.fen() and record["played"] == played
    assert record["counter"] == 4  # man moves do not reset the counter under "crowning"
    game = read_games(record["pdn"])[0]
    assert game.moves == played and game.headers["Event"] == "test" and game.headers["Black"] == "A"


def test_moves_count_from_the_given_counter_and_report_the_move_rule_draw(client):
    record = client.get("/api/moves", params={"fen": "W:WK10,K14:BK1", "moves": "14-9", "counter": "79"}).json()
    assert record["counter"] == 80
    assert record["outcome"]["reason"] == "move rule" and record["outcome"]["result"] == "1/2-1/2"


def test_moves_report_the_end_of_the_game_with_its_reason(client):
    record = client.get("/api/moves", params={"fen": "B:W14,23:B9", "moves": "9x18x27"}).json()
    assert record["outcome"] == {"result": "1-0", "reason": "no pieces", "winner": "black",
                                 "text": "Black wins: White has no pieces left"}
    assert record["moves"] == []
    assert read_games(record["pdn"])[0].result == "1-0"


@pytest.mark.parametrize("params, words", [
    ({"fen": "X:W1:B2"}, "side to move"),
    ({"fen": "B:W21:B40"}, "unknown square 40"),
    ({"moves": "11-15 11-16"}, "move 2 (11-16)"),
    ({"moves": "11-15 banana"}, "move 2 (banana)"),
    ({"rule": "fifty"}, "unknown move rule 'fifty'"),
    ({"counter": "-1"}, "outside 0..80"),
    ({"counter": "ten"}, "not a whole number"),
    ({"fen": "B:W14,23:B9", "moves": "9x18x27 18-14"}, "the game is already over"),
])
def test_bad_moves_requests_get_400_with_a_message(client, params, words):
    response = client.get("/api/moves", params=params)
    assert response.status_code == 400
    assert words in response.json()["error"]


def test_probe_answers_as_egtb_probe_json(client, tables, capsys):
    egtb_main(["probe", "--json", "--tables", str(tables), WON_FEN])
    expected = json.loads(capsys.readouterr().out)
    answer = client.get("/api/probe", params={"fen": WON_FEN}).json()
    assert {k: answer[k] for k in expected} == expected
    assert answer["rule"] == "wcdf" and answer["counter"] == 0


def test_probe_best_move_and_value_match_the_tablebase(client, tables):
    answer = client.get("/api/probe", params={"fen": WON_FEN, "rule": "forty-plies", "counter": "3"}).json()
    with Tablebase(tables) as tb:
        result = tb.probe(WON_FEN)
        best = best_moves(tb, WON_FEN).moves
    assert (answer["value"], answer["dtw"]) == (str(result.value), result.dtw) == ("win", 15)
    assert [m["move"] for m in answer["moves"]] == [str(mv.move) for mv in best]
    assert answer["moves"][0] == {**answer["moves"][0], "move": str(best[0].move), "value": str(best[0].value),
                                  "dtw": best[0].dtw}
    assert answer["rule"] == "forty-plies" and answer["counter"] == 3
    with Tablebase(tables) as tb:
        ruled = tb.probe(WON_FEN, rule="forty-plies", counter=3)
    assert (answer["outcome"], answer["category"], answer["dtz"]) == (str(ruled.outcome), str(ruled.category),
                                                                       ruled.dtz)


def test_probe_without_the_rule_layer_asked_for_answers_rule_free_and_says_so(tmp_path):
    build(2, directory=tmp_path, jobs=1, progress=False, rules="wcdf")
    with TestClient(create_app(tables_dir=tmp_path, engines=None), base_url=LOCAL) as client:
        assert client.get("/api/probe", params={"fen": "B:WK10:BK1"}).status_code == 200
        response = client.get("/api/probe", params={"fen": "B:WK10:BK1", "rule": "crowning"})
    assert response.status_code == 200  # the rule-free answer, saying the layer is missing
    body = response.json()
    assert body["rule_layer_missing"] is True and body["value"] == "draw"
    assert body["outcome"] is None and body["category"] is None and body["dtz"] is None


def test_probe_outside_the_tables_says_so_with_404(client):
    response = client.get("/api/probe", params={"fen": "B:W18,24,27:B12,16"})
    assert response.status_code == 404
    body = response.json()
    assert body["outside_tables"] is True and body["piece_count"] == 5 and body["max_pieces"] == TABLE_PIECES
    assert "no table for material" in body["error"]


@pytest.mark.parametrize("params, words", [
    ({}, "needs a position"),
    ({"fen": "nonsense"}, "expected 'side:colour list:colour list'"),
    ({"fen": WON_FEN, "rule": "x"}, "unknown move rule"),
    ({"fen": WON_FEN, "counter": "99"}, "outside 0..80"),
])
def test_bad_probe_requests_get_400(client, params, words):
    response = client.get("/api/probe", params=params)
    assert response.status_code == 400 and words in response.json()["error"]


def test_ballots_are_the_shipped_decks(client):
    decks = client.get("/api/ballots").json()
    assert len(decks["3-move"]) == 156 and len(decks["2-move"]) == 43
    first = decks["3-move"][0]
    assert first["moves"] == ["9-13", "21-17", "5-9"] and first["name"].startswith("ACF 001")


def test_engine_move_at_easy_is_legal_and_recorded(client):
    history = ["11-15", "23-19"]
    reply = client.post("/api/engine-move", json={"history": history, "strength": "easy", "time": 0.2})
    assert reply.status_code == 200, reply.text
    move = reply.json()
    board = Board()
    for text in history:
        board.push_pdn(text)
    assert move["move"] in [str(m) for m in board.legal_moves()]
    board.push_pdn(move["move"])
    assert move["fen"] == board.fen() and move["strength"] == "easy"


def test_engine_move_from_a_fen_plays_the_only_move(client):
    reply = client.post("/api/engine-move", json={"fen": ROUTE_FEN, "history": ["2x9x18"], "strength": "medium"})
    assert reply.json()["move"] == "31x22" and reply.json()["source"] == "forced"


def test_perfect_engine_plays_the_tables_best_move(client, tables):
    reply = client.post("/api/engine-move", json={"fen": WON_FEN, "strength": "perfect"}).json()
    with Tablebase(tables) as tb:
        best = best_moves(tb, WON_FEN).moves[0]
    assert reply["move"] == str(best.move) and reply["source"] == "tables"


@pytest.mark.parametrize("body, words", [
    ({"strength": "expert"}, "unknown strength 'expert'"),
    ({}, "unknown strength None"),
    ({"strength": "easy", "time": -1}, "must be more than 0"),
    ({"strength": "easy", "time": "soon"}, "not a number of seconds"),
    ({"strength": "easy", "history": ["11-15", "11-16"]}, "move 2 (11-16)"),
    ({"strength": "easy", "history": 5}, "moves must be a list"),
    ({"strength": "easy", "history": [5]}, "PDN strings"),
    ({"strength": "easy", "fen": 7}, "fen must be a string"),
    ({"strength": "easy", "fen": "B:W14,23:B9", "history": ["9x18x27"]}, "the game is over"),
])
def test_bad_engine_requests_get_400(client, body, words):
    response = client.post("/api/engine-move", json=body)
    assert response.status_code == 400 and words in response.json()["error"]


def test_engine_move_body_must_be_a_json_object(client):
    assert client.post("/api/engine-move", content=b"{nope", headers=JSON).status_code == 400
    response = client.post("/api/engine-move", json=[1, 2])
    assert response.status_code == 400 and "JSON object" in response.json()["error"]


def test_cancel_stops_a_search_and_the_next_move_still_comes(client):
    answers = []
    thinker = threading.Thread(target=lambda: answers.append(client.post(
        "/api/engine-move", json={"fen": BUSY_FEN, "strength": "hard", "time": LONG_THINK})))
    thinker.start()
    engines = client.app.state.engines
    deadline = time.monotonic() + 60
    while not engines.busy and thinker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.post("/api/engine-cancel", json={}).json() == {"cancelled": True}
    thinker.join(timeout=30)
    assert answers and answers[0].status_code == 409 and answers[0].json()["cancelled"] is True
    assert client.post("/api/engine-cancel", json={}).json() == {"cancelled": False}
    again = client.post("/api/engine-move", json={"strength": "easy"})
    assert again.status_code == 200 and again.json()["move"] in [str(m) for m in Board().legal_moves()]


def test_the_page_and_its_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text and "/static/board.js" in page.text
    for name in ("app.js", "board.js", "style.css", "favicon.svg"):
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/static/nothing.js").status_code == 404


def test_without_engines_engine_moves_get_503(tables):
    with TestClient(create_app(tables_dir=tables, engines=None), base_url=LOCAL) as client:
        response = client.post("/api/engine-move", json={"strength": "easy"})
    assert response.status_code == 503


def test_play_options_parse():
    args = build_parser().parse_args(["play", "--tables", "t", "--port", "0", "--no-browser"])
    assert (args.tables, args.port, args.no_browser) == ("t", 0, True)


@pytest.fixture(scope="module")
def served_page(tables):
    """The real `tournament play` process: its first line and its URL (one process for the module)."""
    process = subprocess.Popen([sys.executable, "-m", "tournament.cli", "play", "--no-browser", "--port", "0",
                                "--tables", str(tables)], stdout=subprocess.PIPE, text=True)
    try:
        first = process.stdout.readline()
        url = process.stdout.readline().split()[2]
        yield first, url
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stdout.close()


def test_tournament_play_serves_the_page_and_prints_its_url(served_page):
    first, url = served_page
    assert f"complete up to {TABLE_PIECES} pieces" in first
    assert url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(url + "api/info", timeout=30) as response:
        assert json.load(response)["max_pieces"] == TABLE_PIECES
    with urllib.request.urlopen(url, timeout=30) as response:
        assert b"English draughts" in response.read()


def test_tournament_play_reports_a_taken_port(tables):
    from tournament.web.server import bind_socket
    taken = bind_socket(0)
    try:
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "tournament.cli", "play", "--no-browser", "--port",
                                 str(port), "--tables", str(tables)], capture_output=True, text=True, timeout=60)
    finally:
        taken.close()
    assert result.returncode == 2 and "tournament play: error:" in result.stderr




def test_engine_failures_are_errors_not_cancels(tables):
    engines = EngineService(tables_dir=tables, specs={"easy": "no.such.module:Engine", "hard": "depth=60,time=30"})
    with engines:
        with pytest.raises(EngineError, match="engine 'easy' .*no.such.module") as caught:
            engines.play(fen=START_FEN, moves=[], rule="wcdf", strength="easy")
        assert not isinstance(caught.value, EngineCancelled)
        errors = []

        def think() -> None:
            try:
                engines.play(fen=BUSY_FEN, moves=[], rule="wcdf", strength="hard", seconds=30)
            except Exception as exc:
                errors.append(exc)

        thinker = threading.Thread(target=think)
        thinker.start()
        deadline = time.monotonic() + 60
        while not engines.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        [running] = [search.engine for search in engines._searches if search.engine]  # noqa: SLF001
        running.kill()  # the process dies, nobody cancelled
        thinker.join(timeout=30)
    assert len(errors) == 1 and isinstance(errors[0], EngineError) and not isinstance(errors[0], EngineCancelled)
    assert "engine 'hard'" in str(errors[0]) and "exit code -9" in str(errors[0])  # killed


def test_tournament_play_refuses_a_missing_table_directory(tmp_path, capsys):
    assert tournament_main(["play", "--no-browser", "--port", "0", "--tables", str(tmp_path / "no-such")]) == 2
    out, err = capsys.readouterr()
    assert "no-such" in err and "serving" not in out


# --- issue 21: typed input, hostile requests, loopback hosts, scoped cancels, stale moves -----------------


class InstantEngines:
    """An EngineService stand-in answering the first legal move at once (for the fuzz tests)."""

    busy = False

    def start(self, *, strengths=None) -> None:
        pass

    def close(self) -> None:
        pass

    def ticket(self, *, game: str = ""):
        from tournament.web.engines import Search
        return Search(game)

    def stop(self, search) -> bool:
        return False

    def play(self, *, fen, moves, rule, strength, seconds, counter, game, search=None):
        from tournament.web.engines import EngineReply
        board = Board(fen, rule=rule, quiet_plies=counter)
        for text in moves:
            board.push_pdn(text)
        return EngineReply(str(board.legal_moves()[0]), 0.0, "search")

    def cancel(self, *, game: str = "") -> bool:
        return False


@pytest.fixture(scope="module")
def quick_client(tables):
    with TestClient(create_app(tables_dir=tables, engines=InstantEngines()), base_url=LOCAL,
                    raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize("body, words", [
    (b"[" * 100000, "nested too deeply"),
    (b'{"strength": "easy", "counter": Infinity}', "Infinity"),
    (b'{"strength": "easy", "counter": -Infinity}', "-Infinity"),
    (b'{"strength": "easy", "counter": 1e400}', "counter inf is not a whole number"),
    (b'{"strength": "easy", "counter": 2.5}', "counter 2.5 is not a whole number"),
    (b'{"strength": "easy", "counter": true}', "counter True is not a whole number"),
    (b'{"strength": ["easy"]}', "unknown strength ['easy']"),
    (b'{"strength": {"easy": 1}}', "unknown strength {'easy': 1}"),
    (b'{"strength": "easy", "rule": ["wcdf"]}', "rule must be a string"),
    (b'{"strength": "easy", "rule": {"wcdf": 1}}', "rule must be a string"),
    (b'{"strength": "easy", "time": NaN}', "NaN"),
    (b'{"strength": "easy", "game": ["g"]}', "not a game id"),
    (b'{"strength": "easy", "fen": "B:W18\\u0000:B14"}', "control character"),
])
def test_hostile_engine_move_bodies_get_400_with_a_message(quick_client, body, words):
    response = quick_client.post("/api/engine-move", content=body, headers=JSON)
    assert response.status_code == 400, response.text
    assert words in response.json()["error"]


@pytest.mark.parametrize("params, words", [
    ({"counter": "1e400"}, "not a whole number"),
    ({"counter": "99999999999999999999"}, "not a whole number"),
    ({"ply": "x"}, "ply 'x' is not a whole number"),
    ({"Event": "x" * 500}, "at most 200"),
    ({"fen": "B:W18:B14\x01"}, "control character"),
])
def test_hostile_moves_queries_get_400(quick_client, params, words):
    response = quick_client.get("/api/moves", params=params)
    assert response.status_code == 400 and words in response.json()["error"]


JSON_LEAVES = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
               | st.text(max_size=30) | st.sampled_from(["easy", "perfect", "wcdf", "crowning", "11-15", START_FEN,
                                                          ROUTE_FEN, "80", "-1", "1e400", "NaN"]))
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
BODY_KEYS = st.sampled_from(["fen", "history", "strength", "time", "rule", "counter", "game"]) | st.text(max_size=8)
QUERY_KEYS = st.sampled_from(["fen", "moves", "rule", "counter", "ply", "Event", "Black", "White"])
QUERY_TEXT = st.text(max_size=40) | st.sampled_from(["11-15", "11-15 23-19", "wcdf", "80", "-1", "1e400",
                                                       ROUTE_FEN, "2x9x18", "9x18x27", "1", "0"])
FUZZ = settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def assert_answered_without_a_server_error(response) -> None:
    assert response.status_code < 500, response.text
    assert isinstance(response.json(), dict)


@FUZZ
@given(body=st.dictionaries(BODY_KEYS, JSON_VALUES, max_size=7) | JSON_VALUES)
def test_fuzz_engine_move_never_answers_5xx(quick_client, body):
    raw = json.dumps(body, allow_nan=True).encode()
    assert_answered_without_a_server_error(quick_client.post("/api/engine-move", content=raw, headers=JSON))


@FUZZ
@given(body=st.dictionaries(BODY_KEYS, JSON_VALUES, max_size=3) | JSON_VALUES, raw=st.binary(max_size=64))
def test_fuzz_engine_cancel_never_answers_5xx(quick_client, body, raw):
    assert_answered_without_a_server_error(quick_client.post("/api/engine-cancel",
                                                             content=json.dumps(body).encode(), headers=JSON))
    assert_answered_without_a_server_error(quick_client.post("/api/engine-cancel", content=raw, headers=JSON))


@FUZZ
@given(path=st.sampled_from(["/api/moves", "/api/probe", "/api/info", "/api/ballots"]),
       params=st.dictionaries(QUERY_KEYS | st.text(max_size=6), QUERY_TEXT, max_size=6))
def test_fuzz_get_endpoints_never_answer_5xx(quick_client, path, params):
    assert_answered_without_a_server_error(quick_client.get(path, params=params))


@FUZZ
@given(raw=st.binary(max_size=200))
def test_fuzz_raw_engine_move_bodies_never_answer_5xx(quick_client, raw):
    assert_answered_without_a_server_error(quick_client.post("/api/engine-move", content=raw, headers=JSON))


def test_the_server_stays_up_after_hostile_requests(served_page):
    """The real `tournament play` process: hostile requests get 400 and it answers the next request."""
    _, url = served_page
    hostile = [b"[" * 100000, b'{"strength": "easy", "counter": 1e400}', b'{"strength": {"a": []}}',
               b'{"strength": "easy", "rule": ["wcdf"]}', b"\xff\xfe", b'{"strength": "easy", "time": -Infinity}']
    for body in hostile:
        request = urllib.request.Request(url + "api/engine-move", data=body, method="POST", headers=JSON)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 400 and "error" in json.load(refused.value)
    with urllib.request.urlopen(url + "api/info", timeout=30) as response:
        assert json.load(response)["max_pieces"] == TABLE_PIECES


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "127.0.0.2", "localhost.evil.example",
                                  "[::1]"])
def test_a_foreign_host_header_is_refused(quick_client, host):
    response = quick_client.get("/api/info", headers={"Host": host})
    assert response.status_code == 400 and "is not this machine" in response.json()["error"]
    assert quick_client.get("/", headers={"Host": host}).status_code == 400


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "localhost:8765", "127.0.0.1:41000", "LOCALHOST"])
def test_loopback_host_headers_are_answered(quick_client, host):
    assert quick_client.get("/api/info", headers={"Host": host}).status_code == 200


def test_a_cancel_stops_only_its_own_games_search(client):
    answers = []
    thinker = threading.Thread(target=lambda: answers.append(client.post(
        "/api/engine-move", json={"fen": BUSY_FEN, "strength": "hard", "time": 2, "game": "game-a"})))
    thinker.start()
    engines = client.app.state.engines
    deadline = time.monotonic() + 60
    while not engines.busy and thinker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.post("/api/engine-cancel", json={"game": "game-b"}).json() == {"cancelled": False}
    thinker.join(timeout=60)
    assert answers and answers[0].status_code == 200, answers[0].text
    assert answers[0].json()["move"] in [str(m) for m in Board(BUSY_FEN).legal_moves()]


def test_a_cancel_of_a_game_waiting_behind_another_stops_it_before_it_searches(tables):
    engines = EngineService(tables_dir=tables, specs={"hard": "depth=60,time=30"}, max_searches=1)
    results: dict[str, object] = {}

    def ask(game: str, seconds: float) -> None:
        try:
            results[game] = engines.play(fen=BUSY_FEN, moves=[], rule="wcdf", strength="hard", seconds=seconds,
                                         game=game)
        except Exception as exc:  # noqa: BLE001 - kept for the asserts
            results[game] = exc

    with engines:
        first = threading.Thread(target=ask, args=("a", 3))
        first.start()
        deadline = time.monotonic() + 60
        while not engines.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        second = threading.Thread(target=ask, args=("b", 3))
        second.start()
        while not engines.waiting("b") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert engines.cancel(game="b") is True
        first.join(timeout=60)
        second.join(timeout=60)
    assert isinstance(results["b"], EngineCancelled)
    assert results["a"].move in [str(m) for m in Board(BUSY_FEN).legal_moves()]


def test_a_move_chosen_on_a_stale_position_is_refused_with_409(client):
    response = client.get("/api/moves", params={"moves": "11-15 9-13", "ply": "0"})
    assert response.status_code == 409 and response.json()["stale"] is True
    assert "stale move 9-13" in response.json()["error"]
    fresh = client.get("/api/moves", params={"moves": "11-15 23-19", "ply": "1"})
    assert fresh.status_code == 200 and fresh.json()["played"] == ["11-15", "23-19"]


def test_without_tables_perfect_is_not_offered_and_refused(tmp_path):
    with TestClient(create_app(tables_dir=tmp_path, engines=InstantEngines()), base_url=LOCAL) as client:
        assert client.get("/api/info").json()["strengths"] == ["easy", "medium", "hard"]
        response = client.post("/api/engine-move", json={"strength": "perfect"})
        assert response.status_code == 400 and "endgame tables" in response.json()["error"]
        assert client.post("/api/engine-move", json={"strength": "hard"}).status_code == 200


def test_the_pdn_records_the_rule_counter_date_site_and_round(client):
    record = client.get("/api/moves", params={"fen": WON_FEN, "moves": "14-9", "rule": "forty-plies",
                                              "counter": "30", "Black": "You"}).json()
    game = read_games(record["pdn"])[0]
    assert game.headers["MoveRule"] == "forty-plies" and game.headers["MoveRuleCounter"] == "30"
    assert game.headers["Site"] == "tournament play (local)" and game.headers["Round"] == "-"
    assert len(game.headers["Date"]) == 10 and game.headers["Date"][4] == "." and game.headers["Black"] == "You"


#: Four pieces (outside 3-piece tables); Black must capture 9x18 into them.
CAPTURE_IN_FEN = "B:W14,K30:B9,K1"


def test_a_capture_into_the_tables_is_valued_though_the_position_is_outside(client, tables):
    response = client.get("/api/probe", params={"fen": CAPTURE_IN_FEN})
    assert response.status_code == 404
    moves = response.json()["moves"]
    assert [m["move"] for m in moves] == ["9x18"]
    board = Board(CAPTURE_IN_FEN)
    board.push_pdn("9x18")
    with Tablebase(tables) as tb:
        after = tb.probe(board)
    assert moves[0]["value"] == {"win": "loss", "loss": "win", "draw": "draw"}[str(after.value)]
    assert moves[0]["dtz"] == (0 if after.value == Wdl.DRAW else 1)


@pytest.mark.parametrize("port", ["-5", "65536", "http"])
def test_tournament_play_refuses_a_bad_port_with_exit_status_2(port, capsys):
    with pytest.raises(SystemExit) as refused:
        tournament_main(["play", "--no-browser", "--port", port])
    assert refused.value.code == 2 and "--port" in capsys.readouterr().err


def test_a_circular_king_capture_lists_both_routes(client):
    record = client.get("/api/moves", params={"fen": "W:WK10:B14,15,22,23"}).json()
    assert [m["move"] for m in record["moves"]] == ["10x17x26x19x10"]
    assert record["moves"][0]["routes"] == [[10, 17, 26, 19, 10], [10, 19, 26, 17, 10]]


@pytest.mark.parametrize("end, result, text", [
    ("black-resigns", "0-1", "White wins: Black resigns"),
    ("white-resigns", "1-0", "Black wins: White resigns"),
    ("draw-agreed", "1/2-1/2", "Draw agreed"),
])
def test_a_game_ended_by_the_players_is_recorded(client, end, result, text):
    record = client.get("/api/moves", params={"moves": "11-15", "end": end}).json()
    assert record["outcome"]["result"] == result and record["outcome"]["text"] == text
    assert record["moves"] == [] and read_games(record["pdn"])[0].result == result
    assert client.get("/api/moves", params={"end": "surrender"}).status_code == 400


# --- issue 32: cross-site requests, aborted requests, concurrent searches ---------------------------------


@pytest.mark.parametrize("origin", ["http://evil.com", "https://127.0.0.1", "http://localhost", "null",
                                    "http://127.0.0.1:1"])
def test_a_foreign_origin_is_refused_with_403_naming_it(quick_client, origin):
    response = quick_client.post("/api/engine-move", json={"strength": "easy"}, headers={"Origin": origin})
    assert response.status_code == 403 and repr(origin) in response.json()["error"]
    response = quick_client.post("/api/engine-cancel", content=b'{"game": "g"}',
                                 headers={"Origin": origin, "Content-Type": "text/plain"})
    assert response.status_code == 403
    assert quick_client.get("/api/info", headers={"Origin": origin}).status_code == 403


def test_the_pages_own_origin_is_answered(quick_client):
    own = {"Origin": LOCAL, "Host": "127.0.0.1"}
    assert quick_client.post("/api/engine-move", json={"strength": "easy"}, headers=own).status_code == 200
    assert quick_client.get("/api/info", headers=own).status_code == 200
    port = {"Origin": "http://localhost:8765", "Host": "localhost:8765"}
    assert quick_client.post("/api/engine-cancel", json={"game": "g"}, headers=port).status_code == 200


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/jsonp"])
def test_a_post_not_declared_json_gets_415(quick_client, content_type):
    headers = {} if content_type is None else {"Content-Type": content_type}
    for path in ("/api/engine-move", "/api/engine-cancel"):
        response = quick_client.post(path, content=b'{"strength": "easy", "game": "g"}', headers=headers)
        assert response.status_code == 415, response.text
        assert "application/json" in response.json()["error"]
    charset = {"Content-Type": "application/json; charset=utf-8"}
    assert quick_client.post("/api/engine-move", content=b'{"strength": "easy"}', headers=charset).status_code == 200


def test_info_gives_the_longest_thinking_time(quick_client):
    from tournament.web.inputs import MAX_SECONDS
    assert quick_client.get("/api/info").json()["max_seconds"] == MAX_SECONDS


def test_an_aborted_request_is_logged_in_one_line(tables, caplog):
    """A client gone before its body arrived: no traceback, and nothing raised into the server."""
    import asyncio
    app = create_app(tables_dir=tables, engines=InstantEngines())
    sent = []

    async def receive():
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/api/engine-move", "raw_path": b"/api/engine-move", "query_string": b"",
             "root_path": "", "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80)}
    with caplog.at_level("DEBUG"):
        asyncio.run(app(scope, receive, send))  # raises the ClientDisconnect when the app lets it through
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    assert [r.getMessage() for r in caplog.records if "went away" in r.getMessage()]


def test_searches_run_side_by_side_up_to_the_limit(tables):
    engines = EngineService(tables_dir=tables, specs={"hard": "depth=60,time=30"}, max_searches=2)
    results: dict[str, object] = {}

    def think() -> None:
        try:
            results["hard"] = engines.play(fen=BUSY_FEN, moves=[], rule="wcdf", strength="hard", seconds=20, game="a")
        except Exception as exc:  # noqa: BLE001 - kept for the asserts
            results["hard"] = exc

    with engines:
        engines.play(fen=START_FEN, moves=[], rule="wcdf", strength="easy", game="b")  # its process is started
        thinker = threading.Thread(target=think)
        thinker.start()
        deadline = time.monotonic() + 60
        while not engines.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        reply = engines.play(fen=START_FEN, moves=[], rule="wcdf", strength="easy", game="b")
        took = time.monotonic() - started
        assert thinker.is_alive()  # the hard search still runs
        assert engines.cancel(game="a") is True
        thinker.join(timeout=30)
    assert took < 5, f"the easy move waited {took:.1f} s behind the hard search"
    assert reply.move in [str(m) for m in Board(START_FEN).legal_moves()]
    assert isinstance(results["hard"], EngineCancelled)


def test_a_search_whose_client_has_gone_is_stopped(tables):
    import socket

    import uvicorn

    from tournament.web.server import bind_socket

    engines = EngineService(tables_dir=tables, specs={"hard": "depth=60,time=30"})
    sock = bind_socket(0)
    server = uvicorn.Server(uvicorn.Config(create_app(tables_dir=tables, engines=engines), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    with engines:
        thread.start()
        try:
            deadline = time.monotonic() + 60
            while not server.started and time.monotonic() < deadline:
                time.sleep(0.05)
            body = json.dumps({"fen": BUSY_FEN, "strength": "hard", "time": LONG_THINK, "game": "gone"}).encode()
            client = socket.create_connection(sock.getsockname())
            client.sendall(b"POST /api/engine-move HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            while not engines.busy and time.monotonic() < deadline:
                time.sleep(0.05)
            assert engines.busy
            client.close()  # the page was closed while the computer thought
            gone = time.monotonic()
            while engines.busy and time.monotonic() < gone + 10:
                time.sleep(0.05)
            assert not engines.busy, "the search went on after its client left"
            assert time.monotonic() - gone < 5
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()


def start_tournament_play(tables) -> tuple[subprocess.Popen, str]:
    import signal
    # default signal handling even when the test runner was started with SIGINT ignored (a background job)
    process = subprocess.Popen([sys.executable, "-m", "tournament.cli", "play", "--no-browser", "--port", "0",
                                "--tables", str(tables)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    process.stdout.readline()
    return process, process.stdout.readline().split()[2]


@pytest.mark.slow  # a `tournament play` process and its engines; the next test interrupts one searching
def test_ctrl_c_stops_tournament_play_with_exit_status_130(tables):
    import signal
    process, url = start_tournament_play(tables)
    with urllib.request.urlopen(url + "api/info", timeout=30):
        pass
    process.send_signal(signal.SIGINT)
    try:
        assert process.wait(timeout=30) == 130
    finally:
        process.kill()
        process.communicate()


@pytest.mark.slow
def test_ctrl_c_during_a_search_stops_tournament_play_at_once(tables):
    import signal
    process, url = start_tournament_play(tables)
    answers = []

    def ask() -> None:
        body = json.dumps({"fen": BUSY_FEN, "strength": "hard", "time": 40, "game": "g"}).encode()
        request = urllib.request.Request(url + "api/engine-move", data=body, method="POST", headers=JSON)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                answers.append(response.status)
        except (urllib.error.URLError, ConnectionError) as exc:
            answers.append(exc)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        time.sleep(8)  # the server has warmed its engines meanwhile: the hard one is searching
        assert asker.is_alive() and not answers
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
        assert time.monotonic() - interrupted < 10, "Ctrl-C waited for the search"
    finally:
        process.kill()
        process.communicate()
        asker.join(timeout=60)
