"""Compact-native builds (egtb.builder.native): tables written as their compact files alone.

What must hold (issue 31 item 2): the files equal byte for byte those that ``egtb compact``
writes from a master build of the same tables, whose checksums the reference rows hold; a
directory whose smaller tables are compact files alone (their masters deleted) feeds the next
piece count with the same result; a broken or unfinished table is rebuilt, the rest skipped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from egtb import MissingTableError
from egtb.builder import native, plan as planner
from egtb.builder.contents import contents_for
from egtb.builder.driver import build
from egtb.builder.plan import pieces_a_side
from egtb.builder.dependency_load import capture_tables, load_dependencies
from egtb.builder.native_reference import native_figures, native_reference_lines
from egtb.builder.reference import load_reference, load_rule_reference
from egtb.errors import SolverError, TableError
from egtb.formats import master
from egtb.cli import main
from egtb.formats.compact.layout import DTZ_KINDS, compact_path, material_counts
from egtb.formats.master import stored_checksums, stored_materials
from egtb.positions.index import code_of_material
from egtb.positions.material import Material, all_materials, count_positions
from egtb.positions.walk import unrank_range
from egtb.probe.locate import locate
from egtb.probe.tablebase import Tablebase
from egtb.rules.movegen import M_BK, M_BM, M_CROWNS, M_NJUMPS, M_WK, M_WM, generate_moves, new_move_buffer


def compact_files(directory: Path, pieces: int | None = None) -> dict[str, bytes]:
    """Every compact file and marks file of a directory (of one piece count), by name."""
    files = {}
    for path in sorted(directory.iterdir()):
        if path.suffix in (".wld", ".wcdf", ".dtz", ".marks"):
            if pieces is None or Material.parse(path.name.split(".")[0]).pieces == pieces:
                files[path.name] = path.read_bytes()
    return files


def assert_stamps_equal_the_reference(directory: Path, materials: list[Material]) -> None:
    tables, layers = load_reference(), load_rule_reference()
    assert materials
    for material in materials:
        summary = native.read_summary(directory, material)
        table, layer = tables[material.name], layers[material.name, "wcdf"]
        stamped = summary["rules"]["wcdf"]
        assert (summary["positions"], summary["wins"], summary["draws"], summary["losses"]) == (
            table.positions, table.wins, table.draws, table.losses), material.name
        assert (stamped["wins"], stamped["cursed_wins"], stamped["draws"], stamped["blessed_losses"],
                stamped["losses"], stamped["max_dtz"], stamped["checksum_crc32"]) == (
            layer.wins, layer.cursed_wins, layer.draws, layer.blessed_losses, layer.losses,
            layer.max_dtz, layer.checksum_crc32), material.name


def test_a_native_build_writes_no_master_and_the_files_egtb_compact_writes(native_dir, compact_tables):
    expected = compact_files(compact_tables(4))
    assert len(expected) == 41 * 6  # three files and three marks files for each of the 41 tables
    assert compact_files(native_dir) == expected
    assert stored_materials(native_dir) == []  # no .h5 file



def test_the_plan_of_split_pairs_counts_every_worker_on_them(tmp_path, capsys):
    plans = []
    for extra in ([], ["--split-pairs", "1"]):
        assert main(["build", "-n", "4", "--jobs", "2", "--plan", "--json", "--tables", str(tmp_path)] + extra) == 0
        plans.append(json.loads(capsys.readouterr().out))
    assert plans[0]["cpu_seconds"] == plans[1]["cpu_seconds"] > 0
    assert plans[1]["wall_seconds"] == pytest.approx(plans[0]["wall_seconds"] / 2)  # every pair split over 2


@pytest.mark.parametrize("count", ["0", "1.5", "many", "inf", "nan"])
def test_split_pairs_takes_a_count_of_positions(count, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["build", "-n", "4", "--split-pairs", count, "--plan", "--tables", str(tmp_path)])
    assert "--split-pairs: not a count of positions" in capsys.readouterr().err


def test_the_stamps_equal_the_reference_rows(native_dir):
    materials = [m for m in all_materials(4, min_pieces=2)]
    assert_stamps_equal_the_reference(native_dir, [m for m in materials
                                                   if native.summary_path(native_dir, m).exists()])
    assert all(native.is_complete(native_dir, m) for m in materials)


# the default run's: a kings-only pair and one with a man which reads it (its captures read four
# of the 3-piece tables); every 4-piece pair (a 4-piece build more, 4-5 CPU s) is a slow check
@pytest.mark.parametrize("materials", [("2k-2k", "2k-1m1k"), pytest.param((), marks=pytest.mark.slow)],
                         ids=["two-pairs", "every-pair"])
def test_compact_only_smaller_tables_feed_the_next_piece_count(compact_tables, tmp_path, materials):
    # the 3-piece tables as compact files alone: a master build compacted, its masters deleted
    shutil.copytree(compact_tables(3), tmp_path, dirs_exist_ok=True)
    assert stored_materials(tmp_path) == []
    report = build(4, min_pieces=4, directory=tmp_path, jobs=1, progress=False, native=True, materials=materials)
    wanted = {"2k-2k", "2k-1m1k", "1m1k-2k"} if materials else {m.name for m in all_materials(4, min_pieces=4)}
    assert set(report.built) == wanted
    expected = {name: data for name, data in compact_files(compact_tables(4), 4).items()
                if name.split(".")[0] in wanted}
    assert len(expected) == 6 * len(wanted)
    assert compact_files(tmp_path, 4) == expected


def test_a_dependencys_captures_are_answered_from_the_masters_loaded_beside_it(built_tables, native_dir,
                                                                               tmp_path, monkeypatch):
    # masters up to 3 pieces and the 4-piece tables compact-native: what a 5-piece pair reads (the
    # 4-piece files linked from the shared native set: a build of them here repeated it, 4-6 CPU s)
    for material in all_materials(3):
        shutil.copy(master.table_path(built_tables(3), material), tmp_path)
    for path in native_dir.iterdir():
        if "-" in path.name and Material.parse(path.name.split(".")[0]).pieces == 4:
            os.link(path, tmp_path / path.name)
    natives = set(all_materials(4, min_pieces=4))
    lean = contents_for(4, rules="wcdf", dtw=False, native=False)
    loaded = capture_tables(tmp_path, dataclasses.replace(load_dependencies(tmp_path, [], (), lean),
                                                          dependencies=tuple(sorted(natives))))
    beside = planner.beside_materials(tmp_path, sorted(natives))  # what the plan counts: what was loaded
    assert beside and beside == sorted((m for m in all_materials(3) if loaded.below_offsets[code_of_material(m)] >= 0),
                                       key=lambda m: (m.pieces, m.name))
    pair = max(planner.plan_pairs(5, min_pieces=5), key=lambda p: p.positions)
    planned = [planner.plan_memory([pair], 1 << 40, native=True, directory=directory)[pair.key].bytes
               for directory in (tmp_path, None)]
    assert planned[0] - planned[1] == planner.beside_bytes(tmp_path, planner.dependency_materials(pair)) > 0
    searched = []  # positions the prober's capture search answered
    search = Tablebase.probe_batch_rule
    monkeypatch.setattr(Tablebase, "probe_batch_rule", lambda tb, bm, *args, **options:
                        searched.append(len(bm)) or search(tb, bm, *args, **options))
    captures = 0
    for material in sorted(natives):
        answered = np.empty(count_positions(material), dtype=np.int8)
        native.read_categories(tmp_path, material, answered, loaded=loaded)
        assert not searched, material.name
        by_search = np.empty_like(answered)
        native.read_categories(tmp_path, material, by_search)
        assert np.array_equal(answered, by_search), material.name
        at = native.capture_positions(material_counts(material), 0, len(answered))[0]
        assert sum(searched) == len(at), material.name  # the search answered every capture position
        searched.clear()
        captures += len(at)
    assert captures > 100_000


def crowning_exits(material: Material) -> dict[int, set[int]]:
    """The positions (by material code, their indices) that the crowning moves of a material's
    positions (Black to move) lead to, as the solver's exits read them."""
    counts = material_counts(material)
    boards = [np.empty(count_positions(material), dtype=np.int64) for _ in range(4)]
    unrank_range(counts, 0, count_positions(material), *boards, np.empty(len(boards[0]), dtype=np.bool_))
    moves, exits = new_move_buffer(), {}
    for bm, bk, wm, wk in zip(*(board.tolist() for board in boards)):
        if not bm & 0x0F000000:  # no black man on the row before its crowning row
            continue
        for move in moves[:generate_moves(bm, bk, wm, wk, 0, moves)]:
            if move[M_CROWNS] and not move[M_NJUMPS]:
                code, index = locate(*(int(move[k]) for k in (M_BM, M_BK, M_WM, M_WK)), 1)
                exits.setdefault(int(code), set()).add(int(index))
    return exits


def test_a_dependency_of_the_pairs_piece_count_is_answered_where_a_crowning_leads(compact_tables):
    # a pair reads a dependency of its own piece count only after a crowning: those positions,
    # a white king on White's crowning row, are all a crowned-only read answers
    directory = compact_tables(4)
    pair = next(p for p in planner.plan_pairs(4, min_pieces=4) if p.key == "2m-2m")
    crowned = {code: indices for m in pair.materials for code, indices in crowning_exits(m).items()}
    dependencies = [m for m in planner.dependency_materials(pair) if m.pieces == 4]
    assert sorted(code_of_material(m) for m in dependencies) == sorted(crowned)
    differing = 0
    for material in dependencies:
        every, only = (np.empty(count_positions(material), dtype=np.int8) for _ in range(2))
        native.read_categories(directory, material, every)
        native.read_categories(directory, material, only, crowned_only=True)
        reached = np.array(sorted(crowned[code_of_material(material)]))
        assert len(reached) > 1000, material.name
        assert np.array_equal(every[reached], only[reached]), material.name
        left = np.flatnonzero(every != only)  # capture positions no crowning reaches
        assert not np.isin(left, reached).any()
        differing += len(left)
    assert differing > 1000  # the filter saved searches


@pytest.mark.slow  # a build or two of 4 pieces more: keeps make test under 3 minutes
def test_a_broken_or_unstamped_table_is_rebuilt_and_the_rest_skipped(native_dir, tmp_path):
    shutil.copytree(native_dir, tmp_path, dirs_exist_ok=True)
    before = compact_files(tmp_path)
    cut = compact_path(tmp_path, Material.parse("2k-2k"))
    cut.write_bytes(cut.read_bytes()[:-100])  # a truncated file: its stamp no longer names it
    native.summary_path(tmp_path, Material.parse("1m1k-2k")).unlink()  # killed before its stamp
    assert not native.is_complete(tmp_path, Material.parse("2k-2k"))
    report = build(4, directory=tmp_path, jobs=1, progress=False, native=True)
    assert sorted(report.built) == ["1m1k-2k", "2k-1m1k", "2k-2k"]  # the two pairs, nothing else
    assert compact_files(tmp_path) == before


def test_a_build_that_needs_what_compact_files_do_not_hold_is_refused_before_any_work(compact_tables,
                                                                                      tmp_path):
    shutil.copytree(compact_tables(3), tmp_path, dirs_exist_ok=True)
    with pytest.raises(MissingTableError, match="needs DTW.*of 1k-1k.*compact files alone"):
        build(4, min_pieces=4, directory=tmp_path, jobs=1, progress=False)  # DTW and all layers
    assert not list(tmp_path.glob("*-*.native.json")) and stored_materials(tmp_path) == []


def test_native_contents_hold_the_values_and_wcdf_only():
    assert contents_for(8).native and not contents_for(7).native
    assert (contents_for(8).dtw, contents_for(8).names) == (False, ("wcdf",))
    with pytest.raises(ValueError, match="compact-native"):
        contents_for(5, native=True, dtw=True)
    with pytest.raises(ValueError, match="compact-native"):
        contents_for(8, rules="all")


@pytest.mark.slow  # a build or two of 4 pieces more: keeps make test under 3 minutes
def test_max_per_side_builds_the_cut_and_the_prober_reads_it(tmp_path, capsys):
    assert main(["build", "-n", "4", "--max-per-side", "2", "--compact-native", "--jobs", "1",
                 "--quiet", "--tables", str(tmp_path)]) == 0
    built = {Material.parse(p.name.split(".")[0]) for p in tmp_path.glob("*.native.json")}
    wanted = {m for m in all_materials(4, min_pieces=2) if pieces_a_side(m) <= 2}
    assert built == wanted and Material.parse("3k-1k") not in built
    assert sum(map(count_positions, built)) < sum(map(count_positions, all_materials(4, min_pieces=2)))
    with Tablebase(tmp_path) as tables:
        assert str(tables.probe_wdl("W:WK10,K14:BK1,K3")) in ("win", "draw", "loss")
        with pytest.raises(MissingTableError):
            tables.probe_wdl("W:WK10,K14,K18:BK1")
    assert main(["build", "-n", "4", "--max-per-side", "0", "--tables", str(tmp_path)]) == 2
    assert "--max-per-side" in capsys.readouterr().err


@pytest.mark.parametrize("argv, named", [(["--disk", "0"], "--disk"), (["--memory", "-1"], "--memory"),
                                         (["--materials", "9k-2"], "material"),
                                         (["--materials", "5k-3k", "--max-per-side", "4"], "5k-3k")])
def test_bad_build_limits_are_named_before_any_work(tmp_path, capsys, argv, named):
    try:
        status = main(["build", "-n", "8", *argv, "--tables", str(tmp_path)])
    except SystemExit as exc:  # argparse's own refusal of a bad value
        status = exc.code
    assert status == 2
    assert named in capsys.readouterr().err and not list(tmp_path.glob("*.wld"))


@pytest.mark.slow
def test_a_native_build_of_every_table_up_to_5_pieces_equals_the_reference(tmp_path):
    build(5, directory=tmp_path, jobs=2, progress=False, native=True)
    materials = all_materials(5, min_pieces=2)
    assert_stamps_equal_the_reference(tmp_path, materials)
    assert stored_materials(tmp_path) == []


@pytest.mark.slow  # another build or a verify: keeps make test under 3 minutes
def test_verify_checks_a_native_directory_and_compares_its_stamps_with_the_reference(native_dir, tmp_path,
                                                                                   capsys):
    shutil.copytree(native_dir, tmp_path, dirs_exist_ok=True)
    assert main(["verify", "--tables", str(tmp_path), "--quiet", "--pieces", "3"]) == 0
    out = capsys.readouterr().out
    tables = len(all_materials(3, min_pieces=2))
    assert tables == 16
    assert f"verified {tables} tables" in out
    assert f"reference: {tables} of {tables} listed tables identical; {tables} of {tables}" in out
    stamp = native.summary_path(tmp_path, Material.parse("2k-1k"))
    summary = json.loads(stamp.read_text())
    stamp.write_text(json.dumps(dict(summary, wins=summary["wins"] + 1)))  # a count changed
    assert main(["verify", "--tables", str(tmp_path), "--quiet", "--pieces", "3", "--again"]) == 1
    assert (f"2k-1k.native.json: differs from the reference: wins {summary['wins'] + 1} "
            f"(reference {summary['wins']})") in capsys.readouterr().out


@pytest.mark.parametrize("cut, pairs, positions", [
    # the published counts of 8-piece positions with both colours present (one side to move):
    # at most 4 a side (25 materials), at most 5 a side (73), all 147 materials
    (["--max-per-side", "4"], 15, 111_378_534_401),
    (["--max-per-side", "5"], None, 289_360_991_121),
    ([], None, 403_190_250_561),
])
def test_the_8_piece_plan_counts_the_published_positions_before_any_work(tmp_path, capsys, cut, pairs,
                                                                        positions):
    status = main(["build", "-n", "8", "--min-pieces", "8", "--plan", "--json", "--tables", str(tmp_path)] + cut)
    plan = json.loads(capsys.readouterr().out)
    assert plan["positions"] == positions
    assert pairs is None or plan["pairs"] == pairs
    assert plan["cpu_seconds"] > 0 and plan["disk"] > 0 and plan["memory"] > 0
    assert status == (2 if plan["refused"] else 0)  # refused: said why, and nothing was built
    assert not [p for p in tmp_path.iterdir() if p.name != "checked.json"]  # no build.log: a plan writes nothing


def test_the_plan_is_printed_and_nothing_built(tmp_path, capsys):
    assert main(["build", "-n", "4", "--plan", "--tables", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("plan: 23 pairs, 6,408,836 positions")  # 3,488 + 196,032 + 6,209,316
    assert "refused" not in out and stored_materials(tmp_path) == []
    assert not (tmp_path / "build.log").exists()  # another build of the directory may be logging there


@pytest.mark.slow  # another build or a verify: keeps make test under 3 minutes
def test_the_adjudicator_judges_a_piece_count_held_in_part(tmp_path):
    from tournament.adjudicate import TablebaseAdjudicator, build_adjudicators
    from egtb import Board
    build(4, directory=tmp_path, jobs=1, progress=False, native=True, max_per_side=2)  # 2-2, no 3-1
    with Tablebase(tmp_path) as tables:
        assert (tables.max_pieces, tables.largest_pieces) == (3, 4)
        judge = next(a for a in build_adjudicators(tablebase=tables) if isinstance(a, TablebaseAdjudicator))
        won = Board("B:WK32,K28:BK1,K2,K3", rule="wcdf")  # not held: three a side
        judge.update(won)
        assert judge.adjudicatable() is None  # played on, no error
        held = Board("B:W29,K32:BK19,K23", rule="wcdf")  # 2k-1m1k: held
        expected = tables.probe(held).outcome
        judge.update(held)
        verdict = judge.adjudicatable()
        assert verdict is not None and str(expected) in verdict.reason


@pytest.mark.slow  # a build or two of 4 pieces more: keeps make test under 3 minutes
def test_a_killed_native_build_resumes_to_identical_files(native_dir, tmp_path):
    import signal
    import subprocess
    import sys
    import time
    command = [sys.executable, "-m", "egtb.cli", "build", "--pieces", "4", "--jobs", "2", "--compact-native",
               "--quiet", "--tables", str(tmp_path)]
    # its own process group, killed whole: the workers die with the build, none finishing a file late
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    # the 17th stamp is the first 4-piece table's: most of the work is still ahead
    while len(list(tmp_path.glob("*.native.json"))) < 17 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    assert process.wait(timeout=60) != 0
    assert len(list(tmp_path.glob("*.native.json"))) < 41, "the build finished before it could be killed"
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert not list(tmp_path.glob("*.tmp"))
    assert compact_files(tmp_path) == compact_files(native_dir)


@pytest.mark.slow  # another build or a verify: keeps make test under 3 minutes
def test_stats_give_a_native_directorys_counts_and_say_when_a_piece_count_is_held_in_part(native_dir, tmp_path,
                                                                                        capsys):
    assert main(["stats", "--tables", str(native_dir), "--json"]) == 0
    stats = {t["material"]: t for t in json.loads(capsys.readouterr().out)["materials"]}
    reference = load_reference()
    assert stats["2k-2k"]["wins"] == reference["2k-2k"].wins  # from the stamp: compact files hold no counts
    assert stats["2k-2k"]["rules"]["wcdf"]["max_dtz"] == load_rule_reference()["2k-2k", "wcdf"].max_dtz
    build(4, directory=tmp_path, jobs=1, progress=False, native=True, max_per_side=2)
    assert main(["stats", "--tables", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "4 pieces, held in part: 9 of 25 materials" in out and "3 pieces: 196032 positions matches" in out


# every 4-piece table is a slow check (their figures took 4 of the test's 5 CPU s); the default run
# recomputes two of them beside the 16 tables of up to 3 pieces
@pytest.mark.parametrize("four", [("2k-2k", "1m1k-2m"), pytest.param(None, marks=pytest.mark.slow)])
def test_the_reference_rows_recomputed_from_the_compact_files_equal_the_masters(native_dir, tmp_path, four):
    # the values' checksum against masters built alike (no DTW, the wcdf layer): those of up to 3 pieces
    # (16 tables), which a 4-piece master build repeated in 19 s more
    masters = tmp_path / "masters"
    build(3, directory=masters, jobs=1, progress=False, dtw=False, rules=("wcdf",))
    tables, layers = load_reference(), load_rule_reference()
    materials = stored_materials(native_dir, suffix=".wld")
    assert len(materials) == 41 and len(stored_materials(masters)) == 16
    if four is not None:
        materials = [m for m in materials if m.pieces <= 3 or m.name in four]
        assert len(materials) == 18
    for material in materials:
        values, layer = native_figures(native_dir, material)
        expected = tables[material.name]
        assert (values.positions, values.wins, values.losses, values.draws) == (
            expected.positions, expected.wins, expected.losses, expected.draws), material.name
        if material.pieces <= 3:
            assert values.checksum_crc32 == stored_checksums(master.table_path(masters, material))[0], material.name
        assert layer == layers[material.name, "wcdf"], material.name
    table_lines, layer_lines = native_reference_lines(native_dir, [Material.parse("2k-1k")])
    assert table_lines[0].split("\t")[:5] == ["2k-1k", str(tables["2k-1k"].positions), str(tables["2k-1k"].wins),
                                              str(tables["2k-1k"].losses), str(tables["2k-1k"].draws)]
    assert layer_lines[0].split("\t")[:2] == ["2k-1k", "wcdf"]


def test_a_changed_dtz_byte_is_refused_not_counted(native_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(native_dir, copy)
    material = Material.parse("2k-1k")
    before = native_figures(copy, material)[1]
    path = compact_path(copy, material, kind=DTZ_KINDS["wcdf"])
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # the last block's last byte: its CRC no longer holds
    path.write_bytes(bytes(data))
    with pytest.raises(TableError):
        native_figures(copy, material)
    assert before == load_rule_reference()["2k-1k", "wcdf"]


def test_verify_reports_its_progress_chunk_by_chunk(native_dir):
    from egtb.builder.verify_compact import verify_compact
    calls: list[tuple[str, int]] = []
    material = Material.parse("2k-2k")
    report = verify_compact(native_dir, materials=[material], chunk=1 << 12,
                            progress=lambda name, positions: calls.append((name, positions)))
    assert report.ok
    for suffix in (".wld", ".wcdf", ".dtz"):
        steps = [positions for name, positions in calls if name == f"2k-2k{suffix}"]
        assert steps[0] == 0 and sum(steps) == count_positions(material), suffix
        assert len(steps) > count_positions(material) // (1 << 12)  # one a chunk, not one at the end


def test_the_disk_plan_counts_a_compact_native_pair_once(tmp_path):
    # a compact-native pair's compact files are its table (counted with the table files); only
    # the pairs that get a master have compact files written again at the end of the build
    from egtb.builder import driver
    eight = planner.plan_pairs(8, min_pieces=8, max_per_side=4)
    seven = planner.plan_pairs(7, min_pieces=7, max_per_side=4)
    contents = {p.key: planner.contents_of(p) for p in eight + seven}
    assert all(contents[p.key].native for p in eight) and not any(contents[p.key].native for p in seven)
    assert driver._compact_positions(tmp_path, eight, contents) == 0
    assert driver._compact_positions(tmp_path, eight + seven, contents) == sum(p.positions for p in seven) > 0


def test_the_disk_plan_estimates_compact_native_files_at_the_rate_of_those_of_the_most_pieces(
        native_dir, built_tables, tmp_path):
    # smaller masters beside (their compact files hold other DTZ) must not set the rate of the
    # compact-native tables of the most pieces
    from egtb.builder import budget
    for path in native_dir.iterdir():
        os.link(path, tmp_path / path.name)
    for material in all_materials(3):
        os.link(master.table_path(built_tables(3), material), master.table_path(tmp_path, material))
    four = [m for m in all_materials(4) if m.pieces == 4]
    measured = 8 * sum(budget.compact_bytes(tmp_path, m) for m in four) / sum(count_positions(m) for m in four)
    bits = budget.stored_bits(tmp_path, all_materials(4))
    assert bits["compact"] == pytest.approx(measured)
    three = [m for m in all_materials(3) if m.pieces == 3]
    assert bits["compact"] != pytest.approx(  # what the 3-piece files alone would give
        8 * sum(budget.compact_bytes(tmp_path, m) for m in three) / sum(count_positions(m) for m in three))


def test_the_plan_counts_the_captured_natives_of_dependencies_the_same_run_builds(native_dir, tmp_path):
    # a pair's plan holds the tables its dependencies' captures reach, whether those dependencies
    # are built already or come first in the same run (the 8-piece plans missed the latter)
    built, planned = tmp_path / "built", tmp_path / "planned"
    for directory, pieces in ((built, 4), (planned, 3)):
        directory.mkdir()
        for path in native_dir.iterdir():
            if "-" in path.name and Material.parse(path.name.split(".")[0]).pieces <= pieces:
                os.link(path, directory / path.name)
    five = planner.plan_pairs(5, min_pieces=5)
    four = planner.plan_pairs(4, min_pieces=4)
    after_built = planner.plan_memory(five, 8 << 30, native=True, directory=built)
    after_planned = planner.plan_memory(four + five, 8 << 30, native=True, directory=planned)
    assert after_planned.keys() - after_built.keys() == {p.key for p in four}
    assert {key: after_planned[key] for key in after_built} == after_built
    assert planner.captured_natives(planned, planner.dependency_materials(five[0])) == []  # none built yet


def test_a_dtz_never_written_is_refused_and_the_table_left_incomplete(native_dir, tmp_path):
    # a win's DTZ read back as 0 (a unit's DTZ lost from the scratch) must not be stamped complete
    material = Material.parse("1m1k-2k")
    layer = native.CompactTable(compact_path(native_dir, material)).layer("wcdf")
    category = np.asarray(layer.kind.value_of_code, dtype=np.int8)[layer.codes(0, count_positions(material))]
    assert (category == 2).any()
    with pytest.raises(SolverError, match=r"1m1k-2k: [\d,]+ wins? with DTZ 0 from position \d+ on"):
        native.write_material(tmp_path, material, category, np.zeros(len(category), dtype=np.uint8))
    assert not native.is_complete(tmp_path, material) and not native.summary_path(tmp_path, material).exists()


def test_a_pairs_dtz_kept_on_one_side_leaves_complete_tables_that_verify(native_dir, tmp_path):
    directory = tmp_path / "one-sided"
    shutil.copytree(native_dir, directory)  # a copy: files are deleted
    sizes = {path.name: path.stat().st_size for path in directory.glob("*.dtz")}
    dropped = native.keep_dtz_on_one_side_in(directory, min_pieces=3)
    pairs = {tuple(sorted((m, m.mirrored()))) for m in all_materials(4) if m.pieces >= 3 and m.mirrored() != m}
    assert len(dropped) == len(pairs) > 10
    for path in dropped:  # the larger of the two went, the other stayed
        kept = f"{Material.parse(path.stem).mirrored().name}.dtz"
        assert not path.exists() and (directory / kept).exists() and sizes[path.name] >= sizes[kept]
    assert all((directory / f"{name}.dtz").exists() for name in ("1k-1k", "1k-1m", "1m-1k"))  # own mirror; 2 pieces
    assert all(native.is_complete(directory, m) for m in all_materials(4))
    assert native.keep_dtz_on_one_side_in(directory, min_pieces=3) == []  # done once
    # killed between the stamp and the delete: the file no stamp names goes on the next call
    shutil.copy(native_dir / dropped[0].name, dropped[0])
    assert native.keep_dtz_on_one_side_in(directory, min_pieces=3) == [dropped[0]] and not dropped[0].exists()
    # the kept file is what the derived side's stamp names: changed, that table is no longer complete
    kept = directory / f"{Material.parse(dropped[1].stem).mirrored().name}.dtz"
    pair = f"{dropped[1].stem},{kept.stem}"
    assert main(["verify", "--tables", str(directory), "--materials", pair, "--quiet"]) == 0
    derived = Material.parse(dropped[1].stem)  # its reference rows from the DTZ derived: the same
    assert native_figures(directory, derived) == native_figures(native_dir, derived)
    kept.rename(tmp_path / kept.name)
    assert not native.is_complete(directory, Material.parse(dropped[1].stem))


def test_the_build_keeps_a_pairs_dtz_on_one_side_from_its_piece_count_on(native_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(native, "ONE_SIDED_DTZ_PIECES", 3)
    build(3, directory=tmp_path, jobs=1, progress=False, native=True)  # in this process: the patch holds
    files = compact_files(tmp_path)
    both = compact_files(native_dir, 3) | compact_files(native_dir, 2)
    gone = set(both) - set(files)
    assert gone and all(Material.parse(name.split(".")[0]).pieces == 3 and ".dtz" in name for name in gone)
    assert all(files[name] == both[name] for name in files)  # every file kept: the same bytes
    dtz = {name for name in both if name.endswith(".dtz") and Material.parse(name[:-4]).pieces == 3}
    assert len(gone) == 2 * len(dtz - set(files)) and len(dtz - set(files)) == len(
        {tuple(sorted((m, m.mirrored()))) for m in all_materials(3) if m.pieces == 3 and m.mirrored() != m})


def test_egtb_compact_keeps_each_pairs_dtz_on_one_side(native_dir, tmp_path, monkeypatch, capsys):
    directory = tmp_path / "tables"
    shutil.copytree(native_dir, directory)
    assert main(["compact", "--one-sided-dtz", "--tables", str(directory)]) == 0  # 8 pieces on: none here
    assert capsys.readouterr().out == "kept 0 pairs' DTZ on one side: 0 bytes freed\n"
    monkeypatch.setattr(native, "ONE_SIDED_DTZ_PIECES", 4)
    before = sum(path.stat().st_size for path in directory.glob("*.dtz*"))
    assert main(["compact", "--one-sided-dtz", "--tables", str(directory)]) == 0
    out = capsys.readouterr().out.splitlines()
    freed = before - sum(path.stat().st_size for path in directory.glob("*.dtz*"))
    assert out[-1] == f"kept {len(out) - 1} pairs' DTZ on one side: {freed:,} bytes freed" and freed > 0
    assert "deleted 1m1k-2k.dtz: 1m1k-2k's DTZ derived from its moves into 2k-1m1k.dtz" in out or \
        "deleted 2k-1m1k.dtz: 2k-1m1k's DTZ derived from its moves into 1m1k-2k.dtz" in out
