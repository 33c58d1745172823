"""The page's review and replay API (/api/review, /api/pdn) through Starlette's test client."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette", reason="the web extras are missing: pip install -e '.[web]'")
from starlette.testclient import TestClient  # noqa: E402

from tournament.web.app import create_app  # noqa: E402

TABLE_PIECES = 3
LOCAL = "http://127.0.0.1"
JSON = {"Content-Type": "application/json"}
WON = "W:WK10,K14:BK1"


@pytest.fixture(scope="module")
def client(built_tables) -> TestClient:
    with TestClient(create_app(tables_dir=built_tables(TABLE_PIECES), engines=None), base_url=LOCAL) as client:
        yield client


def test_review_marks_the_thrown_win_with_the_best_move(client: TestClient) -> None:
    review = client.get("/api/review", params={"fen": WON, "moves": "10-6 1x10x17"}).json()
    assert review["entered"] == 0 and review["entered_value"] == "win"
    assert [(m["ply"], m["move"], m["before"], m["after"], m["best"]) for m in review["mistakes"]] == [
        (1, "10-6", "win", "loss", "14-9")]


def test_review_counts_from_the_start_counter(client: TestClient) -> None:
    # at counter 79 of 80 every quiet move draws: 14-9 loses nothing, since the win is already gone
    review = client.get("/api/review", params={"fen": WON, "moves": "14-9", "counter": "79"}).json()
    assert review["mistakes"] == []
    review = client.get("/api/review", params={"fen": WON, "moves": "14-9", "counter": "0"}).json()
    assert review["mistakes"] == [] and review["entered_value"] == "win"
    review = client.get("/api/review", params={"fen": WON, "counter": "79"}).json()
    assert review["entered_value"] == "draw"


def test_review_outside_the_tables_and_bad_input(client: TestClient) -> None:
    review = client.get("/api/review", params={"moves": "11-15 23-19"}).json()
    assert review["entered"] is None and review["mistakes"] == []
    answer = client.get("/api/review", params={"moves": "11-15 11-16"})
    assert answer.status_code == 400 and "11-16 is illegal" in answer.json()["error"]


def test_pasted_pdn_and_move_lists(client: TestClient) -> None:
    text = '[Event "club"]\n[FEN "W:WK10,K14:BK1"]\n[SetUp "1"]\n1... 14-9 {good} 1-5 *\n'
    game = client.post("/api/pdn", json={"text": text}, headers=JSON).json()
    assert (game["fen"], game["moves"], game["headers"]) == (WON, ["14-9", "1-5"], {"Event": "club"})
    game = client.post("/api/pdn", json={"text": "1. 11-15 23-19 2. 8-11"}, headers=JSON).json()
    assert game["moves"] == ["11-15", "23-19", "8-11"]


@pytest.mark.parametrize("text, named", [
    ("", "paste a PDN game"), ("11-15 11-16", "11-16 is illegal"), ("[Event", "not PDN"), (7, "paste a PDN game")])
def test_bad_pastes_are_named(client: TestClient, text: object, named: str) -> None:
    answer = client.post("/api/pdn", json={"text": text}, headers=JSON)
    assert answer.status_code == 400 and named in answer.json()["error"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=st.dictionaries(st.sampled_from(["fen", "moves", "rule", "counter"]),
                              st.sampled_from(["", "W:WK10,K14:BK1", "10-6", "10-6 1x10x17", "79", "80", "-1",
                                               "forty-plies", "x", "B:W5:B1,2"]) | st.text(max_size=12),
                              max_size=4),
       text=st.text(max_size=40))
def test_fuzz_review_and_paste_never_answer_5xx(client: TestClient, params: dict, text: str) -> None:
    assert client.get("/api/review", params=params).status_code < 500
    assert client.post("/api/pdn", json={"text": text}, headers=JSON).status_code < 500
