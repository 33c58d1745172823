"""The CheckerBoard engine interface (issue 13), with a small C engine compiled here by the system compiler."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from egtb.rules.board import BLACK, WHITE, Board
from tournament.engines.checkerboard import CB_BLACK, CB_KING, CB_MAN, board_to_cb, cb_square, square_coords
from tournament.engines.registry import make_engine
from tournament.result import GameTermination
from tournament.schedule import GameSettings, run_tournament

SOURCE = Path(__file__).parent / "cb_engine" / "tiny_cb.c"
SHORT = GameSettings(max_plies=60)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc or clang) to build the test CheckerBoard engine: install one, "
                    "e.g. apt-get install gcc")
    target = tmp_path_factory.mktemp("cb") / "tiny_cb.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(target), str(SOURCE)], check=True)
    return target


def test_coordinates_follow_checkerboard() -> None:
    # square 1 is (6, 0) and its forward neighbours are 5 and 6; square 4's only one is 8
    x, y = square_coords(1)
    assert {cb_square(x - 1, y + 1), cb_square(x + 1, y + 1)} == {5, 6}
    x, y = square_coords(4)
    assert (x, y) == (0, 0) and cb_square(x + 1, y + 1) == 8
    assert sorted(cb_square(x, y) for x in range(8) for y in range(8) if cb_square(x, y)) == list(range(1, 33))
    cb = board_to_cb(Board("B:W5:BK32"))
    assert cb[7][1] == 1 | CB_MAN and cb[1][7] == CB_BLACK | CB_KING


def test_games_against_our_engines_replay_legally(library: Path, tmp_path: Path) -> None:
    spec = f"name=tiny spec=cb:{library} option.mode=random option.seed=7"
    from tournament.engines.config import parse_engine

    result = run_tournament([parse_engine(spec), "random", "depth=1"], out_dir=tmp_path, games=6, concurrency=1,
                            settings=SHORT, progress=False)
    assert len(result.records) == 6 and not any(r.result.is_fault for r in result.records)
    for record in result.records:
        board = Board(record.result.start_fen)
        for text in record.result.moves:
            board.push_pdn(text)  # raises on an illegal move
    tiny = [r for r in result.records if "tiny" in (r.black, r.white)]
    assert len(tiny) == 4 and any(m.count("x") for r in tiny for m in r.result.moves)  # captures were played
    assert "Ratings: maximum likelihood" in result.standings


def test_name_and_reported_result(library: Path) -> None:
    with make_engine(f"cb:{library}") as engine:
        assert engine.name == "Tiny CB"
        from tournament.engines.base import GameState, Limit

        move = engine.play(GameState.from_board(Board("B:W30:B1,K25")), Limit(time=5.0))
        assert str(move) in ("25-21", "25-22", "25-29", "1-5", "1-6")
        assert engine.reported_score() is None  # several moves: UNKNOWN


@pytest.mark.parametrize("mode,termination,text", [
    ("crash", GameTermination.CRASH, "crashed"),
    ("illegal", GameTermination.ILLEGAL_MOVE, "not legal"),
    ("same", GameTermination.CRASH, "done move=none"),
])
def test_a_faulty_library_loses_with_the_right_reason(library: Path, tmp_path: Path, mode: str,
                                                      termination: GameTermination, text: str) -> None:
    from tournament.engines.config import EngineConfig

    faulty = EngineConfig(f"cb:{library}", name="faulty", options=(("mode", mode),))
    result = run_tournament([faulty, "random"], out_dir=tmp_path, games=2, concurrency=1, settings=SHORT,
                            progress=False)
    for record in result.records:
        faulty_colour = BLACK if record.black == "faulty" else WHITE
        assert record.result.termination is termination, record.result.reason
        assert record.result.winner == 1 - faulty_colour and text in record.result.reason


def test_a_missing_library_stops_the_run(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such engine library"):
        run_tournament([f"cb:{tmp_path / 'none.so'}", "random"], out_dir=tmp_path / "run", games=2,
                       concurrency=1, progress=False)
