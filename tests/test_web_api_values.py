"""The play page's /api/probe against values known independently of the tables and of ``answer()``.

tests/test_web_api.py checks that the API answers as ``egtb probe --json`` does; both call the
same ``answer()``, so that checks the wiring. Here the expected values come from
tests/forward_search.py (a forward search sharing only the move generator with the builder)
and from positions worked by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extras are missing: pip install -e '.[web]'")
from starlette.testclient import TestClient  # noqa: E402

import forward_search  # noqa: E402
from tournament.web.app import create_app  # noqa: E402

TABLE_PIECES = 3
#: The page answers only requests addressed to this machine.
LOCAL = "http://127.0.0.1"
#: White to move wins with two kings against one (6 moves, one of them losing at once).
WON_FEN = "W:WK10,K14:BK1"


@pytest.fixture(scope="module")
def client(built_tables):
    tables: Path = built_tables(TABLE_PIECES)
    with TestClient(create_app(tables_dir=tables, engines=None), base_url=LOCAL) as client:
        yield client


def test_the_value_and_every_move_are_the_forward_search_s(client):
    answer = client.get("/api/probe", params={"fen": WON_FEN}).json()
    assert (answer["value"], answer["dtw"]) == forward_search.solve([WON_FEN])[WON_FEN] == ("win", 15)
    by_move = forward_search.move_values(WON_FEN)
    assert len(by_move) == 6
    assert {m["move"]: (m["value"], m["dtw"]) for m in answer["moves"]} == by_move
    assert answer["moves"][0]["move"] == "14-9"  # the one fastest win (15 plies; the others 19 or 23)


@pytest.mark.parametrize("fen, value, dtw", [
    ("B:W14,23:B9", "win", 1),   # by hand: 9x18x27 takes White's last two pieces
    ("B:W5,6,10:B1", "loss", 0),  # by hand: the man on 1 is blocked, and no capture
    ("W:W18:B5", "win", 3),       # by hand: 18-14 5-9 14x5
    ("B:WK10:BK1", "draw", 0),    # by hand: one king each
])
def test_positions_worked_by_hand(client, fen, value, dtw):
    answer = client.get("/api/probe", params={"fen": fen}).json()
    assert (answer["value"], answer["dtw"]) == (value, dtw)
