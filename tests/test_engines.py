"""Tests of the engine registry: built-in specs, plug-ins by path and entry point, hub specs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from egtb import Board, Move
from tournament.engines.base import Engine, GameState, Limit
from tournament.engines.random import RandomEngine
from tournament.engines.registry import ENTRY_POINT_GROUP, make_engine
from tournament.engines.hub import HubEngine
from tournament.engines.search import SearchEngine


class FirstMoveEngine(Engine):
    """A plug-in for the tests: plays the first legal move; remembers its options."""

    name = "first"

    def __init__(self, *, seed: int | None = None, tables_dir: str | None = None) -> None:
        self.seed = seed
        self.tables_dir = tables_dir

    def play(self, state: GameState, limit: Limit) -> Move:
        return state.board().legal_moves()[0]


class NotAnEngine:
    """Something importable that is not an Engine."""


def test_builtin_specs() -> None:
    assert isinstance(make_engine("random", seed=3), RandomEngine)
    for spec, depth in [("easy", 2), ("medium", 6), ("hard", 10), ("depth=7", 7)]:
        engine = make_engine(spec)
        assert isinstance(engine, SearchEngine) and engine.depth == depth and engine.name == spec
    assert make_engine("easy").noise > 0
    timed = make_engine("time=0.5")
    assert timed.time == 0.5 and timed.depth is None
    both = make_engine("depth=8,time=0.25,noise=10")
    assert (both.depth, both.time, both.noise) == (8, 0.25, 10)


@pytest.mark.parametrize("spec", ["strong", "depth=x", "speed=3", "nosuchmodule:Engine",
                                  "test_engines:Missing", "test_engines:NotAnEngine", "hub:",
                                  "entrypoint:nobody"])
def test_bad_specs_say_what_is_wrong(spec: str) -> None:
    with pytest.raises(ValueError):
        make_engine(spec)


def test_perfect_needs_tables() -> None:
    with pytest.raises(ValueError, match="tables"):
        make_engine("perfect")


def test_plugin_by_module_path_gets_its_options() -> None:
    engine = make_engine("test_engines:FirstMoveEngine", seed=5, tables_dir="tb")
    assert isinstance(engine, FirstMoveEngine) and (engine.seed, engine.tables_dir) == (5, "tb")
    assert engine.play(GameState.from_board(Board()), Limit()) == Board().legal_moves()[0]


def test_plugin_by_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "fake_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nfirst = test_engines:FirstMoveEngine\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    engine = make_engine("entrypoint:first", seed=9)
    assert isinstance(engine, FirstMoveEngine) and engine.seed == 9


def test_hub_spec_starts_an_external_engine() -> None:
    script = Path(__file__).parent / "fake_engines" / "scripted.py"
    with make_engine(f"hub:{sys.executable} {script} 11-15") as engine:
        assert isinstance(engine, HubEngine) and engine.name == "scripted"
        assert str(engine.play(GameState.from_board(Board()), Limit(time=2))) == "11-15"
