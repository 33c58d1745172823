"""Tests of the table builder: counts, golden values, parallel determinism, resume, kills."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from egtb.builder.config import BuildConfig
from egtb.builder.contents import contents_for
from egtb.builder import dependency_load, driver as builder, pipeline, plan as planner
from egtb.errors import BuildRunningError, MissingTableError
from egtb.formats import master
from egtb.formats.values import DRAW, LOSS, NO_MAX_DTW, WIN
from egtb.positions.index import global_rank, global_unrank, position_index
from egtb.positions.material import Material, all_materials, count_positions, normalise
from egtb.rules.notation import parse_fen
from egtb.builder.reference import (REFERENCE_PATH, RULE_REFERENCE_PATH, compare_with_reference,
                                  load_reference, load_rule_reference, reference_lines)
from egtb.builder.stats import (PUBLISHED_PLACEMENTS, PUBLISHED_POSITIONS, directory_stats,
                              one_colour_placements)

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden" / "positions.txt"
CODE_OF_NAME = {"win": WIN, "loss": LOSS, "draw": DRAW}


@pytest.fixture(scope="module")
def tables4(built_tables) -> Path:
    """Every table up to 4 pieces, built with two workers (the session's shared set: read only)."""
    return built_tables(4)


def crcs(directory: Path, *, max_pieces: int = 4) -> dict[str, int]:
    """Content checksum of every table up to max_pieces in a directory."""
    return {m.name: int(master.read_attrs(master.table_path(directory, m))["checksum_crc32"])
            for m in all_materials(max_pieces)}


def probe(directory: Path, fen: str) -> tuple[int, int]:
    """(value code, DTW) of a FEN from the built files (colour-normalised)."""
    p = parse_fen(fen)
    bm, bk, wm, wk = normalise(p.black_men, p.black_kings, p.white_men, p.white_kings, p.turn)
    material = Material(bm.bit_count(), bk.bit_count(), wm.bit_count(), wk.bit_count())
    wdl, dtw = master.load_material(directory, material)
    i = global_rank(material, bm, bk, wm, wk)
    return int(wdl[i]), int(dtw[i])


def test_plan_is_a_dag_in_order():
    seen = set()
    for pair in planner.plan_pairs(5):
        assert pair.depends <= seen, pair.key
        seen.add(pair.key)
    assert sum(p.positions for p in planner.plan_pairs(5, min_pieces=5)) == PUBLISHED_POSITIONS[5]


def test_counts_match_published(tables4):
    _, totals = directory_stats(tables4)
    assert {t.pieces: t.positions for t in totals} == {n: PUBLISHED_POSITIONS[n] for n in (2, 3, 4)}
    for t in totals:
        assert t.wins + t.losses + t.draws == t.positions


def test_golden_positions(tables4):
    lines = [line.split() for line in GOLDEN.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert len(lines) >= 50
    for fen, value, dtw in lines:
        assert probe(tables4, fen) == (CODE_OF_NAME[value], int(dtw)), fen


@pytest.mark.parametrize("fen, expected", [
    ("B:W8,11:B4", (LOSS, 0)),  # no legal move: lost in 0
    ("B:W10:BK6", (WIN, 1)),  # captures the last piece
    ("B:WK32:BK1", (DRAW, 0)),  # lone king against lone king
])
def test_classics(tables4, fen, expected):
    assert probe(tables4, fen) == expected


def test_two_kings_beat_one_far_away(tables4):
    assert probe(tables4, "B:WK16:BK1,K2")[0] == WIN
    assert probe(tables4, "W:WK16:BK1,K2")[0] == LOSS


def test_worker_count_does_not_change_files(tables4, tmp_path):
    builder.build(3, directory=tmp_path, jobs=1, progress=False)
    assert crcs(tmp_path, max_pieces=3) == crcs(tables4, max_pieces=3)


def test_rerun_skips_complete_and_rebuilds_corrupted(tables4, tmp_path):
    for m in all_materials(3):
        src = master.table_path(tables4, m)
        master.table_path(tmp_path, m).write_bytes(src.read_bytes())
    victim = master.table_path(tmp_path, Material.parse("2k-1k"))
    victim.write_bytes(victim.read_bytes()[:-500])  # truncated
    report = builder.build(3, directory=tmp_path, jobs=1, progress=False)
    assert report.rebuilt == ["2k-1k"]
    assert set(report.built) == {"2k-1k", "1k-2k"}
    assert crcs(tmp_path, max_pieces=3) == crcs(tables4, max_pieces=3)
    again = builder.build(3, directory=tmp_path, jobs=1, progress=False)
    assert again.built == [] and len(again.skipped) == len(all_materials(3))


def test_materials_build_only_their_pairs_and_name_a_missing_dependency(tables4, tmp_path):
    for m in all_materials(2):
        master.table_path(tmp_path, m).write_bytes(master.table_path(tables4, m).read_bytes())
    with pytest.raises(MissingTableError, match=r"not built: \['1k-2k'\].*--materials"):
        builder.build(3, directory=tmp_path, jobs=1, progress=False, materials=["2k-1m"])
    report = builder.build(3, directory=tmp_path, jobs=1, progress=False, materials=["2k-1k"])
    assert sorted(report.built) == ["1k-2k", "2k-1k"]  # the pair, its mirror with it
    assert not master.table_path(tmp_path, Material.parse("1m-2k")).exists()
    for name in ("1k-2k", "2k-1k"):
        built, reference = (master.read_attrs(master.table_path(d, Material.parse(name)))["checksum_crc32"]
                            for d in (tmp_path, tables4))
        assert built == reference


def test_a_second_build_of_a_directory_is_refused_and_a_plan_changes_nothing(tmp_path):
    leftover = tmp_path / "1k-1k.h5.999999.tmp"  # as if a running build were writing it
    leftover.write_bytes(b"half")
    plans = []
    builder.build(3, directory=tmp_path, jobs=1, progress=False, plan_only=True, on_plan=plans.append)
    assert plans and leftover.exists()
    with builder.directory_lock(tmp_path):  # a build running in another process holds it
        with pytest.raises(BuildRunningError, match=f"pid {os.getpid()}"):
            builder.build(2, directory=tmp_path, jobs=1, progress=False)
        assert leftover.exists() and not list(tmp_path.glob("*.h5"))
    assert builder.build(2, directory=tmp_path, jobs=1, progress=False).built  # released
    assert not leftover.exists()


# SIGTERM has no handler here: it ends the build as SIGKILL does (the forked workers die with it);
# SIGINT goes through the build's KeyboardInterrupt handling. Both are slow checks (a 4-piece build
# twice each); SIGKILL, the hardest, is the default run's.
@pytest.mark.parametrize("sig", [signal.SIGKILL, pytest.param(signal.SIGINT, marks=pytest.mark.slow),
                                 pytest.param(signal.SIGTERM, marks=pytest.mark.slow)])
def test_killed_build_resumes_to_identical_files(tables4, tmp_path, sig):
    command = [sys.executable, "-m", "egtb.cli", "build", "--pieces", "4", "--jobs", "2",
               "--quiet", "--tables", str(tmp_path)]
    # default signal handling even when the test runner was started with SIGINT ignored (a background job)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    # the 17th file is the first 4-piece table: most of the work (the large 4-piece tables) is still ahead
    while len(list(tmp_path.glob("*.h5"))) < 17 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(sig)
    assert process.wait(timeout=60) != 0
    written = len(list(tmp_path.glob("*.h5")))
    assert written < len(all_materials(4)), "the build finished before it could be killed"
    for path in tmp_path.glob("*.h5"):
        master.open_table(path)  # every complete file is valid
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert not list(tmp_path.glob(master.TMP_GLOB))
    assert crcs(tmp_path) == crcs(tables4)
    for m in (Material.parse("2k-2k"), Material.parse("1m1k-2m")):
        a, b = master.load_material(tmp_path, m), master.load_material(tables4, m)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_log_file_has_worker_records(tables4):
    text = (tables4 / builder.LOG_NAME).read_text()
    assert "ForkProcess" in text and "solved 2k-2k" in text


def test_fen_of_max_dtw_position_is_in_its_material(tables4):
    attrs = master.read_attrs(master.table_path(tables4, Material.parse("2k-1k")))
    assert probe(tables4, str(attrs["max_dtw_fen"])) == (WIN, int(attrs["max_dtw"]))


def test_position_index_kernel_matches_global_rank():
    m = Material.parse("1m1k-1m")
    for i in (0, 17, count_positions(m) - 1):
        bm, bk, wm, wk = global_unrank(m, i)
        assert position_index(bm, bk, wm, wk) == i == global_rank(m, bm, bk, wm, wk)


@pytest.mark.slow
def test_five_pieces_counts_and_verify(built_tables):
    from egtb.builder.verify import verify_directory
    tables5 = built_tables(5)  # the session's shared set: read only
    _, totals = directory_stats(tables5)
    assert {t.pieces: t.positions for t in totals} == {n: PUBLISHED_POSITIONS[n] for n in range(2, 6)}
    report = verify_directory(tables5, jobs=os.cpu_count() or 1)
    assert report.ok, report.messages


def test_tables_match_the_reference_figures(tables4):
    materials = all_materials(4)
    reference = load_reference()
    assert all(m.name in reference for m in materials)
    assert compare_with_reference(tables4, materials, reference=reference) == []


def test_reference_comparison_names_a_differing_table(tables4):
    reference = load_reference()
    entry = reference["2k-1k"]
    reference["2k-1k"] = dataclasses.replace(entry, checksum_crc32=entry.checksum_crc32 ^ 1)
    problems = compare_with_reference(tables4, all_materials(4), reference=reference)
    assert len(problems) == 1 and "2k-1k.h5" in problems[0] and "checksum_crc32" in problems[0]


def _shipped_lines(path: Path, names: set[str]) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.split("\t")[0] in names]


def test_reference_lines_recomputed_from_the_files_are_the_shipped_ones(tables4):
    """The lines bench/make_reference.py adds for new tables, made from tables already listed."""
    materials = all_materials(4)
    names = {m.name for m in materials}
    tables, layers = reference_lines(tables4, materials)
    assert sorted(tables) == sorted(_shipped_lines(REFERENCE_PATH, names))
    assert sorted(layers) == sorted(_shipped_lines(RULE_REFERENCE_PATH, names))


def test_reference_file_covers_seven_pieces_with_published_totals():
    reference = load_reference()
    totals = {}
    for name, entry in reference.items():
        pieces = Material.parse(name).pieces
        totals[pieces] = totals.get(pieces, 0) + entry.positions
    assert {n: totals[n] for n in range(2, 7)} == PUBLISHED_POSITIONS
    # 7 pieces: published as placements of any colours, ours hold both colours
    assert totals[7] + one_colour_placements(7) == PUBLISHED_PLACEMENTS[7]
    seven = [e for name, e in reference.items() if Material.parse(name).pieces == 7]
    assert len(seven) == 104 and all(e.max_dtw == NO_MAX_DTW for e in seven)  # lean files: no DTW
    layers = load_rule_reference()
    assert {preset for (name, preset) in layers if Material.parse(name).pieces == 7} == {"wcdf"}
    assert sum(Material.parse(name).pieces == 7 for name, _ in layers) == 104


def test_the_eight_piece_rows_count_the_positions_of_their_materials():
    # the 8-piece tables verified so far (issue 31): each row's counts add up to its material's
    # positions, so that the rows of any subset add up to its share of the published placements
    reference, layers = load_reference(), load_rule_reference()
    eight = {name: entry for name, entry in reference.items() if Material.parse(name).pieces == 8}
    assert "4k-4k" in eight
    for name, entry in eight.items():
        assert entry.positions == count_positions(Material.parse(name)) == entry.wins + entry.draws + entry.losses
        assert entry.max_dtw == NO_MAX_DTW and (name, "wcdf") in layers
    everything = sum(count_positions(m) for m in all_materials(8, min_pieces=8))
    assert everything + one_colour_placements(8) == PUBLISHED_PLACEMENTS[8]


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_counters_reach_every_position_and_unit(tmp_path, jobs):
    pairs = planner.plan_pairs(3)
    seen = []

    def record(positions, units):
        seen.append((positions, units))

    results = list(builder.run_pairs(pairs, tmp_path, BuildConfig(rules="wcdf"), jobs=jobs,
                                     on_progress=record))
    assert seen[-1] == (sum(p.positions for p in pairs), sum(r.units for r in results))
    assert seen == sorted(seen)  # counters only rise


def test_solve_pair_counts_a_single_unit_in_full(tables4):
    pair = planner.Pair(planner.pair_of(Material.parse("2k-2k")))  # one unit of 215,760
    tables = dependency_load.load_dependencies(tables4, planner.dependency_materials(pair),
                                       pair.materials, contents_for(4))
    counters = np.array([5, 1], dtype=np.int64)  # counting on from earlier pairs
    assert pipeline.solve_pair(pair.materials, tables, counters) == 1
    assert counters.tolist() == [5 + pair.positions, 2]
    part = tables.slice_of(pair.materials[0])
    assert np.array_equal(tables.wdl[part], master.load_material(tables4, pair.materials[0])[0])



# Two pairs in the default run (kings alone; men of both sides, crownings, captures), all 4-piece
# pairs as a slow check (5 CPU s)
@pytest.mark.parametrize("keys", [("2k-2k", "1m-2m1k"), pytest.param(None, marks=pytest.mark.slow)],
                         ids=["two-pairs", "every-pair"])
def test_generated_predecessor_lists_solve_as_the_inverted_ones(tables4, monkeypatch, keys):
    """4-piece pairs solved both ways (big units generate their predecessor lists, small ones
    invert their successor lists): the same values, DTW and every rule layer."""
    from egtb.builder import predecessors

    pairs = [pair for pair in planner.plan_pairs(4, min_pieces=4) if keys is None or pair.key in keys]
    assert len(pairs) == (len(keys) if keys else 14)
    solved = {}
    for threshold in (0, 1 << 62):  # every unit generates; none does
        monkeypatch.setattr(predecessors, "PREDECESSORS_GENERATED_FROM", threshold)
        for pair in pairs:
            tables = dependency_load.load_dependencies(tables4, planner.dependency_materials(pair),
                                                       pair.materials, contents_for(4))
            pipeline.solve_pair(pair.materials, tables)
            part = slice(0, pair.positions)
            solved.setdefault(pair.key, []).append(
                [np.asarray(a)[..., part].copy() for a in (tables.wdl, tables.dtw, tables.rcat, tables.rdtz)])
    for key, (generated, inverted) in solved.items():
        assert all(np.array_equal(a, b) for a, b in zip(generated, inverted)), key
    assert solved["2k-2k"][0][0].tolist() == master.load_material(tables4, Material.parse("2k-2k"))[0].tolist()


def test_the_move_generation_takes_one_type_for_a_one_and_a_two_byte_dtz():
    # numba compiles a kernel once for each tuple of argument types: what collect_moves reads of a
    # one-byte DTZ (wcdf alone, never read) and of a two-byte one has one type, so a process building
    # both (a test run, masters then compact-native) compiles the biggest kernel once
    import numba

    from egtb.builder.solve import quiet_dtz_of

    two = np.arange(6, dtype=np.uint16).reshape(2, 3)
    one = quiet_dtz_of(np.zeros((2, 3), dtype=np.uint8))
    assert quiet_dtz_of(two) is two and one.shape == (2, 0)
    assert numba.typeof(one) == numba.typeof(two)

# ------------------------------------------------------------------ without DTW (7 pieces' default)

def test_seven_pieces_hold_the_values_and_the_wcdf_layer_by_default():
    assert (contents_for(6).dtw, contents_for(6).names) == (True, ("wcdf", "crowning", "forty-plies"))
    assert (contents_for(7).dtw, contents_for(7).names) == (False, ("wcdf",))


# on disk without DTW is how the 7-piece tables are built: the default run's, the run's shared set
# (conftest's shared_lean_tables, which test_verify verifies); in memory, a slow check
@pytest.mark.parametrize("on_disk", [pytest.param(False, marks=pytest.mark.slow), True], ids=["in-memory", "on-disk"])
def test_a_build_without_dtw_gives_the_same_values_and_wcdf_layer(tables4, shared_lean_tables, tmp_path, on_disk):
    """The values are solved from the wcdf layer alone (its categories' signs)."""
    if on_disk:  # built so, with the same options: copied, as the builds below write into the directory
        for path in shared_lean_tables.glob("*.h5"):
            shutil.copy(path, tmp_path)
    else:
        builder.build(4, directory=tmp_path, jobs=2, rules="wcdf", dtw=False, progress=False, on_disk=False)
    for material in all_materials(4):
        lean = master.open_material(tmp_path, material)
        full = master.open_material(tables4, material)
        assert lean.dtw is None and list(lean.rules) == ["wcdf"], material.name
        assert int(lean.attrs["format_version"]) == master.FORMAT_VERSION_NO_DTW
        assert "max_dtw" not in lean.attrs
        assert np.array_equal(lean.wdl, full.wdl), material.name
        assert np.array_equal(lean.rules["wcdf"].category, full.rules["wcdf"].category)
        assert np.array_equal(lean.rules["wcdf"].dtz, full.rules["wcdf"].dtz), material.name
    tables, layers = reference_lines(tmp_path, [Material.parse("1k-1m2k")])
    shipped = _shipped_lines(REFERENCE_PATH, {"1k-1m2k"})[0].split("\t")
    assert tables[0].split("\t")[:6] == shipped[:5] + ["-"]  # the same counts, no DTW
    assert layers == [line for line in _shipped_lines(RULE_REFERENCE_PATH, {"1k-1m2k"})
                      if line.split("\t")[1] == "wcdf"]
    assert builder.build(4, directory=tmp_path, rules="wcdf", dtw=False,
                         progress=False).skipped  # complete as they are
    rebuilt = builder.build(3, directory=tmp_path, jobs=1, progress=False)  # asks for DTW now
    assert sorted(rebuilt.built) == sorted(m.name for m in all_materials(3))
