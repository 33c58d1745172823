"""Tests of the independent table checker and the build/stats/verify commands."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from egtb.builder import driver as builder
from egtb.formats import master
from egtb.formats.values import DRAW, WIN
from egtb.cli import main
from egtb.exit_status import EXIT_FAILED
from egtb.positions.material import Material
from egtb.builder.verify import verify_directory


@pytest.fixture(scope="module")
def tables(built_tables):
    return built_tables(4)  # the session's shared set: read only


def test_verify_passes_up_to_three_pieces(tables, capsys):
    assert main(["verify", "--pieces", "3", "--again", "--quiet", "--tables", str(tables)]) == 0
    out = capsys.readouterr().out
    assert "verified 16 tables, 199520 positions: OK" in out
    assert "reference: 16 of 16 listed tables identical" in out


@pytest.mark.slow  # 6.4 M positions: the 3-piece check above is the default run's
def test_verify_passes_up_to_four_pieces(tables, capsys):
    assert main(["verify", "--again", "--quiet", "--tables", str(tables)]) == 0
    out = capsys.readouterr().out
    assert "verified 41 tables, 6408836 positions: OK" in out
    assert "reference: 41 of 41 listed tables identical" in out


def tamper(directory, name: str, index: int, *, value: int | None = None, delta: int = 0):
    material = Material.parse(name)
    path = master.table_path(directory, material)
    data = master.open_table(path)
    wdl, dtw = data.wdl.copy(), data.dtw.astype(np.uint16)
    wdl[index] = wdl[index] if value is None else value
    dtw[index] += delta
    master.write_table(path, material, wdl, dtw, attrs=dict(master.read_attrs(path)), rules=data.rules)


@pytest.mark.parametrize("change", [{"delta": 1}, {"value": DRAW}])
def test_verify_reports_a_wrong_value(tables, tmp_path, capsys, change):
    for path in tables.glob("*.h5"):
        if Material.parse(path.stem).pieces <= 3:
            (tmp_path / path.name).write_bytes(path.read_bytes())
    wdl, _ = master.load_material(tmp_path, Material.parse("2k-1k"))
    index = int(np.flatnonzero(wdl == WIN)[5])
    tamper(tmp_path, "2k-1k", index, **change)
    report = verify_directory(tmp_path, materials=[Material.parse("2k-1k")])
    assert not report.ok and report.errors >= 1
    assert any("2k-1k #%d" % index in m for m in report.messages)
    assert main(["verify", "--quiet", "--materials", "2k-1k", "--tables", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("B:W") and "verified 1 tables" in out and "ERRORS" in out


def test_verify_of_named_materials_checks_those_alone_and_refuses_one_without_a_table(tables, tmp_path, capsys):
    for path in tables.glob("*.h5"):
        if Material.parse(path.stem).pieces <= 3:
            os.link(path, tmp_path / path.name)
    assert main(["verify", "--quiet", "--no-reference", "--materials", "2k-1k,1m-2k", "--tables", str(tmp_path)]) == 0
    assert "verified 2 tables, 27900 positions: OK" in capsys.readouterr().out
    record = (tmp_path / "verified.json").read_text()
    assert "2k-1k" in record and "1m-2k" in record and "2m-1k" not in record
    refused = main(["verify", "--quiet", "--again", "--materials", "2k-1k,2k-2k", "--tables", str(tmp_path)])
    assert refused == EXIT_FAILED
    assert "no table of 2k-2k in" in capsys.readouterr().err
    assert (tmp_path / "verified.json").read_text() == record  # refused before any check


def test_a_resumed_verify_skips_what_passed_with_the_same_files(tables, tmp_path, capsys):
    """A killed verify (hours at 7 pieces) goes on where it stopped; a changed file is checked again."""
    for path in tables.glob("*.h5"):
        if Material.parse(path.stem).pieces <= 3:
            (tmp_path / path.name).write_bytes(path.read_bytes())
    three = [Material.parse(p.stem) for p in tmp_path.glob("*.h5") if Material.parse(p.stem).pieces == 3]
    assert verify_directory(tmp_path, materials=three, resume=True).ok
    again = verify_directory(tmp_path, materials=three, resume=True)
    assert again.ok and again.tables == 0 and sorted(again.skipped) == sorted(m.name for m in three)
    wdl, _ = master.load_material(tmp_path, Material.parse("2k-1k"))
    tamper(tmp_path, "2k-1k", int(np.flatnonzero(wdl == WIN)[5]), value=DRAW)
    changed = verify_directory(tmp_path, materials=three, resume=True)
    assert not changed.ok and "2k-1k" not in changed.skipped
    # 1k-2k reads 2k-1k (its mirror): checked again too; 2m-1k's files did not change
    assert {"2k-1k", "1k-2k"} <= {m.name for m in three} - set(changed.skipped)
    assert "2m-1k" in changed.skipped
    assert main(["verify", "--quiet", "--again", "--min-pieces", "3", "--tables", str(tmp_path)]) == 1
    assert "ERRORS" in capsys.readouterr().out


def test_verify_empty_directory_fails(tmp_path):
    assert main(["verify", "--quiet", "--tables", str(tmp_path)]) == 1


def test_stats_json(tables, capsys):
    assert main(["stats", "--json", "--tables", str(tables)]) == 0
    data = json.loads(capsys.readouterr().out)
    pieces = {p["pieces"]: p for p in data["pieces"]}
    assert all(p["positions"] == p["published"] for p in pieces.values())
    one = next(m for m in data["materials"] if m["material"] == "2k-1k")
    assert one["wins"] + one["losses"] + one["draws"] == one["positions"] == 14880
    assert one["bits_per_position"] > 0 and one["max_dtw_fen"].startswith("B:")


def test_stats_text(tables, capsys):
    assert main(["stats", "--tables", str(tables)]) == 0
    assert "4 pieces: 6209316 positions matches the published 6209316" in capsys.readouterr().out


def test_build_command_skips_complete(tables, tmp_path, capsys):
    copy = shutil.copytree(tables, tmp_path / "tables")  # the build writes its log: not into the shared set
    (copy / builder.LOG_NAME).unlink()
    assert main(["build", "--pieces", "4", "--quiet", "--tables", str(copy)]) == 0
    assert "built 0 tables" in capsys.readouterr().out
    assert (copy / builder.LOG_NAME).exists()


def test_reference_comparison_reads_the_data_not_the_attributes(tables, tmp_path, capsys):
    import h5py

    for path in tables.glob("*.h5"):
        if Material.parse(path.stem).pieces <= 2:
            (tmp_path / path.name).write_bytes(path.read_bytes())
    target = tmp_path / "1k-1k.h5"
    with h5py.File(target, "r+") as f:  # change the data, keep the attributes (and their checksum)
        f["dtw"][7] = f["dtw"][7] + 3
    from egtb.builder.reference import compare_with_reference
    problems = compare_with_reference(tmp_path, [Material.parse("1k-1k"), Material.parse("1m-1k")])
    assert len(problems) == 1 and "1k-1k" in problems[0] and "checksum_crc32" in problems[0]
    assert main(["verify", "--quiet", "--tables", str(tmp_path)]) != 0
    captured = capsys.readouterr()
    assert "1k-1k" in captured.out + captured.err
    assert "reference: 4 of 4 listed tables identical" not in captured.out


@pytest.fixture(scope="module")
def lean_tables(shared_lean_tables, tmp_path_factory):
    """Every table up to 4 pieces as 7-piece files are stored: values and the wcdf layer (the files of
    the run's shared set, linked: verify writes its record beside them)."""
    directory = tmp_path_factory.mktemp("lean")
    for path in shared_lean_tables.glob("*.h5"):
        os.link(path, directory / path.name)
    return directory


# 6.4 M positions, as test_verify_passes_up_to_four_pieces: the wrong-category check below is the default run's
@pytest.mark.slow
def test_tables_without_dtw_are_verified_and_match_the_reference(lean_tables, capsys):
    assert main(["verify", "--quiet", "--tables", str(lean_tables)]) == 0
    out = capsys.readouterr().out
    assert "verified 41 tables, 6408836 positions: OK" in out
    assert "reference: 41 of 41 listed tables identical" in out


def test_a_wrong_category_without_dtw_is_found(lean_tables, tmp_path):
    for path in lean_tables.glob("*.h5"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    material = Material.parse("2k-1k")
    path = master.table_path(tmp_path, material)
    data = master.open_table(path)
    layer = data.rules["wcdf"]
    index = int(np.flatnonzero(layer.category == 2)[3])
    category = layer.category.copy()
    category[index] = 0  # a win stored as a draw, its value too: only the successors tell
    wdl = data.wdl.copy()
    wdl[index] = DRAW
    master.write_table(path, material, wdl, None, attrs=dict(master.read_attrs(path)),
                       rules={"wcdf": master.RuleLayer(category, layer.dtz, layer.attrs)})
    report = verify_directory(tmp_path, materials=[material])
    assert not report.ok
    assert any(f"2k-1k #{index}, wcdf" in m for m in report.messages)
    wdl[index] = WIN  # now the value disagrees with the category
    master.write_table(path, material, wdl, None, attrs=dict(master.read_attrs(path)),
                       rules={"wcdf": master.RuleLayer(category, layer.dtz, layer.attrs)})
    report = verify_directory(tmp_path, materials=[material])
    assert any("category disagrees" in m for m in report.messages)


def test_stats_of_tables_without_dtw(lean_tables, capsys):
    assert main(["stats", "--tables", str(lean_tables)]) == 0
    out = capsys.readouterr().out
    assert "4 pieces: 6209316 positions matches the published 6209316" in out
    row = next(line for line in out.splitlines() if line.startswith("2k-1k "))
    assert row.split()[5] == "-"  # no longest DTW
    assert main(["stats", "--json", "--tables", str(lean_tables)]) == 0
    assert json.loads(capsys.readouterr().out)["pieces"][-1]["max_dtw"] is None
