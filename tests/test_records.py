"""Tests of tournament.records: JSON lines, PDN tags, standings and pentanomial counts."""

from __future__ import annotations

import io
import json
from pathlib import Path

from egtb.rules.board import BLACK, WHITE
from egtb.rules.notation import START_FEN
from egtb.rules.pdn import read_games
from tournament.result import GameResult, GameTermination
from tournament.records import (
    GameRecord, game_to_pdn, head_to_head, pair_counts, pdn_date, standings_text, summarize, write_pdn,
)


def _record(index: int, black: str, white: str, winner: int | None, *, pair: str | None = None,
            termination: GameTermination = GameTermination.NORMAL, fen: str = START_FEN,
            moves: tuple[str, ...] = ("11-15",)) -> GameRecord:
    result = GameResult(winner, termination, "reason text", moves=moves, start_fen=fen)
    return GameRecord(f"g{index}", index, 1, pair or f"p{index // 2}", "ACF 001", black, white, index, result)


def test_json_round_trip() -> None:
    record = _record(0, "a", "b", BLACK, termination=GameTermination.TIME_FORFEIT)
    assert GameRecord.from_json(record.to_json()) == record
    assert "\n" not in record.to_json()


def test_pdn_tags_and_black_wins_is_1_0() -> None:
    text = game_to_pdn(_record(2, "alpha", "beta", BLACK, termination=GameTermination.ILLEGAL_MOVE), event="E")
    (game,) = read_games(text)
    assert game.result == "1-0"
    assert game.headers["Event"] == "E" and game.headers["Round"] == "1.3"
    assert (game.headers["Black"], game.headers["White"]) == ("alpha", "beta")
    assert game.headers["Termination"] == "illegal move" and game.headers["TerminationDetails"] == "reason text"
    assert '[GameType "21"]' in text and "FEN" not in text
    assert read_games(game_to_pdn(_record(1, "a", "b", WHITE)))[0].result == "0-1"
    assert read_games(game_to_pdn(_record(1, "a", "b", None)))[0].result == "1/2-1/2"


def test_fen_tag_for_a_non_standard_start() -> None:
    text = game_to_pdn(_record(0, "a", "b", WHITE, fen="W:W18:B14", moves=("18x9",)))
    assert '[FEN "W:W18:B14"]' in text
    assert read_games(text)[0].fen == "W:W18:B14"


def test_write_pdn_orders_by_schedule(tmp_path: Path) -> None:
    path = write_pdn([_record(1, "b", "a", None), _record(0, "a", "b", BLACK)], tmp_path / "g.pdn")
    assert [g.headers["GameId"] for g in read_games(path.read_text())] == ["g0", "g1"]
    assert not (tmp_path / "g.pdn.tmp").exists()


def test_pentanomial_over_colour_reversed_pairs() -> None:
    records = [
        _record(0, "a", "b", BLACK), _record(1, "b", "a", WHITE),   # a wins both: WW
        _record(2, "a", "b", BLACK), _record(3, "b", "a", BLACK),   # win + loss: DD/WL
        _record(4, "a", "b", None), _record(5, "b", "a", None),     # two draws: DD/WL
        _record(6, "a", "b", WHITE), _record(7, "b", "a", None),    # loss + draw: LD
        _record(8, "a", "b", BLACK),                                # unpaired: not counted
    ]
    assert pair_counts(records, "a").as_list() == [0, 1, 2, 0, 1]
    assert pair_counts(records, "b").as_list() == [1, 0, 2, 1, 0]
    match = head_to_head(records, "a", "b")
    assert (match["wins"], match["losses"], match["draws"]) == (4, 2, 3)
    assert match["pentanomial"] == [0, 1, 2, 0, 1]


def test_standings_and_summary() -> None:
    records = [_record(0, "a", "b", BLACK), _record(1, "b", "a", None),
               _record(2, "a", "c", WHITE), _record(3, "c", "a", BLACK)]
    text = standings_text(records, players=["a", "b", "c"])
    assert text.splitlines()[0].endswith("Pairs [LL LD DD/WL WD WW]")
    assert "a vs b: 2 games, +1 -0 =1" in text and "b vs c" not in text
    summary = summarize(records, players=["a", "b", "c"], settings={"seed": 1})
    json.dumps(summary)  # JSON-ready: no NaN, no infinities
    assert summary["games"] == 4 and summary["terminations"] == {"normal": 4}
    rows = {row["engine"]: row for row in summary["standings"]}
    assert rows["c"]["score"] == 2.0 and rows["a"]["pentanomial"] == [1, 0, 0, 1, 0]


def test_a_whitewash_summary_is_strict_json_with_a_bound() -> None:
    records = [_record(i, "a" if i % 2 == 0 else "b", "b" if i % 2 == 0 else "a", BLACK if i % 2 == 0 else WHITE)
               for i in range(12)]  # a wins all 12
    summary = summarize(records, players=["a", "b"])
    text = json.dumps(summary, allow_nan=False)  # raises on NaN or infinity
    assert "Infinity" not in text and "NaN" not in text
    match = summary["head_to_head"][0]
    assert match["elo"] is None and match["elo_text"] == "> +218.9" and match["elo_high"] is None
    assert round(match["elo_low"], 1) == 218.9
    printed = standings_text(records, players=["a", "b"])
    assert "inf" not in printed and "nan" not in printed and "+/- -" not in printed
    assert "Elo > +218.9 (95% lower bound)" in printed


def test_a_four_nil_match_says_what_its_elo_bound_is() -> None:
    records = [_record(i, "a" if i % 2 == 0 else "b", "b" if i % 2 == 0 else "a", BLACK if i % 2 == 0 else WHITE)
               for i in range(4)]  # a wins all 4: 2 pairs won 2-0
    *_, line, note = standings_text(records, players=["a", "b"]).splitlines()
    assert "Elo > -18.9 (95% lower bound)" in line
    assert "pentanomial Elo > " in line and line.endswith("(95% lower bound)") and "+/- -" not in line
    assert "LOS 97.7% (normal approximation)" in line  # each figure says what it is ...
    assert note.startswith("A perfect score has no Elo estimate") and "exact binomial" in note  # ... and why they differ


def test_a_match_without_a_perfect_score_has_no_note_on_bounds() -> None:
    records = [_record(i, "a" if i % 2 == 0 else "b", "b" if i % 2 == 0 else "a", BLACK) for i in range(4)]
    printed = standings_text(records, players=["a", "b"])
    assert "LOS 50.0% (normal approximation)" in printed and "perfect score" not in printed


def test_clocks_go_into_the_jsonl_and_the_pdn() -> None:
    result = GameResult(BLACK, GameTermination.TIME_FORFEIT, "White lost on time",
                        moves=("11-15", "23-19", "8-11"), move_times=(0.5, 1.25, 0.05), clocks=(59.5, 58.75, 59.45),
                        scores=(12, None, -3000), final_clocks=(59.45, -0.1))
    record = GameRecord("g1", 0, 1, "p0", "x", "a", "b", 1, result)
    line = json.loads(record.to_json())
    assert line["result"]["clocks"] == [59.5, 58.75, 59.45] and line["result"]["final_clocks"] == [59.45, -0.1]
    assert GameRecord.from_json(record.to_json()) == record
    text = game_to_pdn(record)
    flat = " ".join(text.split())
    assert "11-15 {[%clock 0:00:59.5] [%emt 0:00:00.5] [%eval 0.12]}" in text
    assert "23-19 {[%clock 0:00:58.8] [%emt 0:00:01.2]}" in flat and "[%eval -30.00]" in flat
    assert read_games(text)[0].moves == ["11-15", "23-19", "8-11"]  # readers skip the comments
    old = json.loads(record.to_json())
    for key in ("move_times", "clocks", "scores", "final_clocks"):
        del old["result"][key]
    assert GameRecord.from_json(json.dumps(old)).result.clocks == ()  # records written before still read


def test_the_pdn_has_site_and_date_tags_and_the_date_survives_the_jsonl() -> None:
    import re
    from egtb.rules.pdn import read_games
    dated = GameRecord(**{**_record(0, "a", "b", BLACK).__dict__, "date": "2026.12.03"})
    assert GameRecord.from_json(dated.to_json()).date == "2026.12.03"
    old = GameRecord.from_json(_record(1, "b", "a", WHITE).to_json())  # a record from before dates: none
    games = read_games(io.StringIO(game_to_pdn(dated) + "\n" + game_to_pdn(old)))
    assert [(g.headers["Site"], g.headers["Date"]) for g in games] == [("?", "2026.12.03"), ("?", "????.??.??")]
    assert re.fullmatch(r"\d{4}\.\d{2}\.\d{2}", pdn_date())
