"""Per-engine settings (issue 13): parsing, --each, names, time odds, options to plug-ins and Hub engines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tournament.cli import main
from tournament.engines.base import EngineSetupError, GameState, Limit
from tournament.engines.config import EngineConfig, parse_engine, parse_settings, parse_time_control
from tournament.engines.random import RandomEngine
from tournament.config import TournamentConfig
from tournament.pairings import make_players
from tournament.schedule import run_tournament

FAKES = Path(__file__).parent / "fake_engines"


class LimitSpy(RandomEngine):
    """Records the Limit of every move it is asked for, and the options it was built with."""

    seen: list[tuple[str, Limit]] = []

    def __init__(self, seed: int | None = None, style: str = "plain", level: int = 0) -> None:
        super().__init__(seed=seed, name=f"spy-{style}-{level}")

    def play(self, state: GameState, limit: Limit):
        LimitSpy.seen.append((self.name, limit))
        return super().play(state, limit)


def test_time_controls() -> None:
    assert parse_time_control("0.1") == Limit(time=0.1)
    assert parse_time_control("60+0.5") == Limit(clock=60.0, increment=0.5)
    assert parse_time_control("40/120") == Limit(clock=120.0, moves=40)
    assert parse_time_control("40/120+1") == Limit(clock=120.0, increment=1.0, moves=40)
    for bad in ["", "x", "0", "-1", "0/10", "10+-1", "40/"]:
        with pytest.raises(ValueError, match="time control"):
            parse_time_control(bad)


def test_settings_form_and_bare_specs() -> None:
    config = parse_engine("name=fast spec='hub:./engine --x' tc=10+0.1 depth=4 nodes=500 option.Hash=64 tables=t")
    assert config == EngineConfig("hub:./engine --x", name="fast", tc="10+0.1", depth=4, nodes=500,
                                  options=(("Hash", "64"),), tables="t")
    assert config.limit(Limit(time=1.0)) == Limit(clock=10.0, increment=0.1, depth=4, nodes=500)
    for bare in ["easy", "depth=3", "depth=8,time=0.5", "hub:python engine.py --level 3", "pkg.mod:Engine"]:
        assert parse_engine(bare) == EngineConfig(bare) and parse_engine(bare).is_bare
    assert parse_engine("easy").to_json() == "easy"
    assert parse_engine("spec=easy name=e").to_json() == {"name": "e", "spec": "easy"}


@pytest.mark.parametrize("text,message", [
    ("spec=easy colour=red", "unknown key 'colour'"),
    ("spec=easy depth=0", "depth needs a positive integer"),
    ("spec=easy nodes=many", "nodes needs a positive integer"),
    ("spec=easy tc=soon", "time control 'soon'"),
    ("name=x tc=1", "spec= is missing"),
    ("spec=easy stray", "'stray' is not KEY=VALUE"),
    ("spec='easy", "No closing quotation"),
])
def test_bad_settings_name_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(EngineSetupError, match=message):
        parse_engine(text)


def test_each_gives_defaults_that_an_engine_overrides() -> None:
    config = parse_engine("spec=easy tc=0.5 option.noise=5", each="tc=40/60 option.noise=10 option.tt_bits=12")
    assert config.tc == "0.5" and config.option_kwargs() == {"noise": 5, "tt_bits": 12}
    assert parse_settings("option.a=1 option.b=x") == {"options": {"a": "1", "b": "x"}}


def test_names_must_differ() -> None:
    with pytest.raises(EngineSetupError, match="two engines are named 'x'"):
        make_players([EngineConfig("easy", name="x"), EngineConfig("random", name="x")])


def test_same_spec_with_other_names_and_options_plays_itself_with_time_odds(tmp_path: Path) -> None:
    LimitSpy.seen.clear()
    spy = "test_engine_config:LimitSpy"
    engines = [EngineConfig(spy, name="quick", tc="0.5", options=(("style", "quick"),)),
               EngineConfig(spy, name="slow", tc="60+1", depth=3, options=(("style", "slow"), ("level", "2")))]
    result = run_tournament(TournamentConfig(engines, games=2), out_dir=tmp_path, concurrency=1, progress=False)
    assert result.players == ["quick", "slow"] and len(result.records) == 2
    limits = {name: {limit for n, limit in LimitSpy.seen if n == name} for name in ("spy-quick-0", "spy-slow-2")}
    assert limits["spy-quick-0"] == {Limit(time=0.5)}  # options reached the class: style and level
    assert limits["spy-slow-2"] and all(l.clock is not None and l.clock > 59 and l.increment == 1 and l.depth == 3
                                        for l in limits["spy-slow-2"])
    assert max(l.clock for l in limits["spy-slow-2"]) > 60  # the increment came back each move
    stored = json.loads((tmp_path / "settings.json").read_text())["engines"]
    assert stored[1] == {"name": "slow", "spec": spy, "tc": "60+1", "depth": 3,
                         "options": {"style": "slow", "level": "2"}}


def test_options_reach_a_hub_engine_as_set_param(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "hub.log"
    monkeypatch.setenv("FAKE_HUB_LOG", str(log))
    spec = f"hub:{sys.executable} {FAKES / 'scripted.py'} 11-15 9-13"
    engines = [EngineConfig(spec, name="scripted", options=(("Hash", "64"), ("book", "my book.txt"))),
               EngineConfig("random")]
    run_tournament(TournamentConfig(engines, games=1), out_dir=tmp_path / "run", concurrency=1, progress=False)
    sent = log.read_text().splitlines()
    assert "set-param name=Hash value=64" in sent and 'set-param name=book value="my book.txt"' in sent
    assert sent.index("set-param name=Hash value=64") < sent.index("init")


def test_unknown_option_of_a_built_in_stops_the_run(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["run", "--engine", "spec=easy option.colour=red", "--engine", "random", "--games", "2",
            "--jobs", "1", "--quiet", "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    assert "unknown option 'colour'" in capsys.readouterr().err and not (tmp_path / "run" / "games.jsonl").exists()
    assert main(["run", "--engine", "spec=easy bogus=1", "--engine", "random", "--out", str(tmp_path / "r2")]) == 2
    assert "unknown key 'bogus'" in capsys.readouterr().err


def test_cli_each_and_named_copies(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["run", "--engine", "name=a spec=easy option.noise=0", "--engine", "name=b spec=easy",
            "--each", "depth=1 tc=5", "--games", "2", "--jobs", "1", "--quiet", "--max-plies", "30",
            "--out", str(tmp_path), "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {row["engine"] for row in summary["standings"]} == {"a", "b"}
    engines = summary["settings"]["engines"]
    assert engines[0] == {"name": "a", "spec": "easy", "tc": "5", "depth": 1, "options": {"noise": "0"}}
    assert engines[1]["depth"] == 1 and "options" not in engines[1]
