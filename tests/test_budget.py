"""Tests of the memory budget: 7-piece counts, plans, failing before any work."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import subprocess
import sys

import pytest

from egtb.builder import budget
from egtb.builder import driver as builder, plan as planner
from egtb.builder.stats import one_colour_placements
from egtb.builder.contents import contents_for
from egtb.formats import master, scratch
from egtb.positions.material import Material, all_materials, count_positions

#: Published number of placements of 7 pieces (any colours, side to move not counted).
PUBLISHED_PLACEMENTS_7 = 34_779_531_480


def pair_named(key: str) -> planner.Pair:
    return next(p for p in planner.plan_pairs(7, min_pieces=7) if p.key == key)


def test_seven_piece_positions_add_up_to_the_published_placements():
    pairs = planner.plan_pairs(7, min_pieces=7)
    both_colours = sum(p.positions for p in pairs)
    assert len(pairs) == 52
    assert both_colours == 34_243_113_624
    assert one_colour_placements(7) == 536_417_856
    assert both_colours + one_colour_placements(7) == PUBLISHED_PLACEMENTS_7


def test_seven_piece_pairs_are_planned_within_24_gb():
    memory = int(0.6 * 24 * budget.GB)
    plans = planner.plan_memory(planner.plan_pairs(7, min_pieces=7), memory)
    assert all(plan.bytes <= memory for plan in plans.values())
    # a pair of a billion positions or more runs on disk, checkpointed
    assert plans["1m2k-2m2k"].on_disk and plans["1m2k-2m2k"].per_pass == 0
    # the one unit of 3k-4k (235.6 M nodes): predecessor lists for two tables would take more than
    # the machine; its one table (the wcdf layer) keeps none, and its edge-list kernel fits in this
    # budget, not in 8 GB, where it regenerates its moves
    assert budget.edge_scratch_bytes(pair_named("3k-4k"), 2) > 24 * budget.GB
    assert plans["3k-4k"].per_pass == 0 and not plans["3k-4k"].on_disk
    assert planner.plan_memory([pair_named("3k-4k")], 8 * budget.GB)["3k-4k"].per_pass > 0


def test_a_unit_beyond_the_edge_list_entries_regenerates_whatever_the_budget():
    # 4k-4k's one unit (736,281,000 nodes) would overflow the edge-list kernel's int32 bucket
    # entries; 3k-1m4k's (184 M) fits them, and its one table keeps no predecessor list
    native = contents_for(8, native=True)
    plans = {}
    for key in ("4k-4k", "3k-1m4k"):
        pair = next(p for p in planner.plan_pairs(8, min_pieces=8) if p.key == key)
        plans[key] = budget.plan_pair(pair, planner.dependency_materials(pair), contents=native, budget=1 << 50)
    assert plans["4k-4k"].per_pass > 0 and plans["3k-1m4k"].per_pass == 0


def test_seven_piece_pairs_hold_two_bytes_of_their_own_and_a_third_of_their_dependencies():
    # by hand: the wcdf layer alone keeps a one-byte category and a one-byte DTZ for every
    # position of the pair (under wcdf alone no exit reads the DTZ), and its dependencies'
    # categories three to a byte; all three layers and DTW add a byte of value and two of DTW for
    # every position, three times the layer's bytes, and a two-byte DTZ (a quiet man move's exit
    # reads it)
    pair = pair_named("1m2k-2m2k")
    deps = planner.dependency_materials(pair)
    counts = [count_positions(m) for m in deps]
    packed = sum(-(-count // 3) for count in counts)  # each dependency from a byte of its own
    flat = scratch.flat_starts([pair.positions], counts)[1]
    assert 0 <= flat - pair.positions - sum(counts) < 2 * len(counts)  # at most 2 digits between two
    lean = budget.scratch_bytes(pair, deps, contents=contents_for(7))
    assert lean == 2 * pair.positions + packed
    full = budget.scratch_bytes(pair, deps, contents=contents_for(7, rules="all", dtw=True))
    assert full == (1 + 2) * flat + 3 * (1 + 2) * pair.positions + 3 * packed


@pytest.mark.parametrize("options", [{}, {"rules": "all", "dtw": True}], ids=["wcdf", "all-dtw"])
def test_the_scratch_estimate_is_the_size_of_the_files_the_builder_maps(tmp_path, options):
    """The estimate against the files scratch.map_arrays really creates for a 4-piece pair."""
    pair = next(p for p in planner.plan_pairs(4, min_pieces=4) if p.key == "1m1k-2m")
    deps = planner.dependency_materials(pair)
    contents = contents_for(4, **options)
    total = pair.positions + sum(count_positions(m) for m in deps)
    arrays = scratch.map_arrays(tmp_path / "pair", total, pair.positions, contents=contents, create=True)
    scratch.flush(arrays)
    on_disk = sum(path.stat().st_size for path in (tmp_path / "pair").iterdir())
    assert on_disk == sum(a.nbytes for a in arrays) == budget.scratch_bytes(pair, deps, contents=contents) > 0
    del arrays


def test_a_pair_that_fits_in_no_way_is_named():
    pair = pair_named("3k-4k")
    with pytest.raises(budget.MemoryBudgetError, match="3k-4k") as caught:
        budget.plan_pair(pair, planner.dependency_materials(pair),
                         contents=contents_for(7, rules="all", dtw=True), budget=budget.GB)
    assert isinstance(caught.value, MemoryError)


def test_small_pairs_keep_the_edge_list_solver_in_memory():
    for pair in planner.plan_pairs(5):
        plan = budget.plan_pair(pair, planner.dependency_materials(pair), contents=contents_for(5),
                                budget=budget.GB)
        assert (plan.on_disk, plan.per_pass) == (False, 0), pair.key


def test_too_small_a_budget_fails_before_any_work(tmp_path):
    command = [sys.executable, "-m", "egtb.cli", "build", "--pieces", "3", "--quiet",
               "--memory", "0.0001", "--tables", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 2
    assert "memory budget of 0.0 GB leaves nothing for the pairs of" in result.stderr
    assert not list(tmp_path.glob("*.h5"))


def test_a_build_too_big_for_its_disk_stops_before_any_work(tmp_path, monkeypatch):
    """The whole build's files and the scratch of the pairs solved together must fit."""
    free = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(builder.shutil, "disk_usage", lambda _: free._replace(free=100_000))
    with pytest.raises(budget.MemoryBudgetError, match=r"needs about .* of disk .*the largest, "
                                                       r"1k-1m1k, about"):
        builder.build(3, directory=tmp_path, jobs=1, progress=False)
    assert not list(tmp_path.glob("*.h5"))


def test_a_resumed_pair_on_disk_counts_its_own_scratch_as_room(tmp_path, monkeypatch):
    """A killed pair's scratch files hold most of what it needs: the disk may have less free."""
    pair = next(p for p in planner.plan_pairs(4, min_pieces=4) if p.key == "1m1k-1m1k")
    need = budget.scratch_bytes(pair, planner.dependency_materials(pair), contents=contents_for(4))
    free = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(planner.shutil, "disk_usage", lambda _: free._replace(free=need // 2))
    with pytest.raises(budget.MemoryBudgetError, match=r"pair 1m1k-1m1k needs .* of scratch files on disk"):
        planner.plan_memory([pair], 4 * budget.GB, on_disk=True, directory=tmp_path)
    held = scratch.scratch_dir(tmp_path, pair.key)
    held.mkdir()
    (held / "rcat.bin").write_bytes(bytes(need // 2 + 8192))  # blocks on disk, not a sparse file
    assert planner.plan_memory([pair], 4 * budget.GB, on_disk=True, directory=tmp_path)[pair.key].on_disk


def test_a_disk_budget_counts_what_the_directory_holds(tmp_path):
    builder.build(2, directory=tmp_path, jobs=1, progress=False)
    held = master.bytes_on_disk(tmp_path)
    plans = []
    builder.build(3, directory=tmp_path, jobs=1, progress=False, plan_only=True, on_plan=plans.append)
    need = plans[0].disk
    assert plans[0].held == held > 0
    assert "the directory then 8.00 GB, with the 5.00 GB it holds" in dataclasses.replace(
        plans[0], held=5 * budget.GB, disk=3 * budget.GB).text()
    with pytest.raises(budget.MemoryBudgetError, match=r"--disk budget of .* less the .* the directory holds"):
        builder.build(3, directory=tmp_path, jobs=1, progress=False, disk=held + need - 1)
    assert not master.table_path(tmp_path, Material.parse("2k-1k")).exists()  # refused before any work
    # the build's own log grows by a block or two before it plans: a little slack for it
    report = builder.build(3, directory=tmp_path, jobs=1, progress=False, disk=held + need + 64 * 1024)
    assert "2k-1k" in report.built  # (3-piece files are mostly HDF5 overhead: no size check here)


def test_the_seven_piece_build_is_estimated_within_forty_gb():
    pairs = planner.plan_pairs(7, min_pieces=7)
    memory = budget.pair_budget(budget.default_budget(), jobs=2, cache_bytes=budget.GB // 2)
    plans = planner.plan_memory(pairs, memory)
    contents = {p.key: contents_for(7) for p in pairs}
    need = budget.check_build_disk(pairs, plans, contents, jobs=2, free=40 * budget.GB,
                                   directory="here", bits=budget.DEFAULT_BITS)
    assert 15 * budget.GB < need < 40 * budget.GB - 3 * budget.GB  # the tables up to 6: 2.4 GB
    # with less room the two largest pairs on disk run one after the other (the local pool's disk
    # limit), down to the largest alone: refused only below that
    files = sum(budget.file_bytes(p.positions, contents[p.key], budget.DEFAULT_BITS) for p in pairs)
    scratch = sorted((plans[p.key].disk for p in pairs), reverse=True)
    assert need == files + scratch[0] + scratch[1]
    check = functools.partial(budget.check_build_disk, pairs, plans, contents, jobs=2, directory="here",
                              bits=budget.DEFAULT_BITS)
    alone = check(free=files + scratch[0])
    assert alone == files + scratch[0] < need
    # with still less, a pair whose scratch does not fit beside every file runs alone, beside the
    # files of the pairs that can be finished by then (not those that depend on it): refused only
    # below the most of those
    beside = budget.files_beside(pairs, {p.key: budget.pair_file_bytes(p, contents[p.key], budget.DEFAULT_BITS)
                                         for p in pairs})
    assert beside["1m2k-2m2k"] < files == max(beside.values())  # a pair of men alone: none depends on it
    least = max(beside[p.key] + plans[p.key].disk for p in pairs)
    assert files < least < alone
    assert check(free=least) == least
    with pytest.raises(budget.MemoryBudgetError, match="1m2k-2m2k"):
        check(free=least - 1)


def test_the_disk_check_counts_the_compact_files_a_build_writes_at_its_end(built_tables, compact_tables,
                                                                           tmp_path):
    """The compact files' rate is measured on real files: their bytes on disk, by the test itself."""
    for source in (built_tables(3), compact_tables(3)):
        for path in source.iterdir():
            if path.is_file() and path.suffix not in (".log", ".json", ".lock"):
                os.link(path, tmp_path / path.name)
    three = [m for m in all_materials(3) if m.pieces == 3]
    names = {m.name for m in all_materials(3)}
    compact_files = [path for path in tmp_path.iterdir() if path.suffix != ".h5"]
    assert compact_files and all(path.name.split(".")[0] in names for path in compact_files)
    measured = 8 * sum(path.stat().st_size for path in compact_files
                       if path.name.split(".")[0] in {m.name for m in three})
    bits = budget.stored_bits(tmp_path, three)
    assert bits["compact"] == pytest.approx(measured / sum(count_positions(m) for m in three))
    pairs = planner.plan_pairs(5, min_pieces=5)
    plans = planner.plan_memory(pairs, 16 * budget.GB)  # every pair in memory: no scratch files
    contents = {p.key: contents_for(5) for p in pairs}
    check = functools.partial(budget.check_build_disk, pairs, plans, contents, jobs=2,
                              directory="here", bits=bits)
    positions = sum(p.positions for p in pairs)
    without = check(free=budget.GB)
    with_compact = check(free=budget.GB, compact_positions=positions)
    rate = measured / sum(count_positions(m) for m in three)  # bits a position
    assert with_compact - without == int(1.5 * positions * rate / 8) > 0  # with the 50% margin
    with pytest.raises(budget.MemoryBudgetError, match=r"the compact files \d"):
        check(free=with_compact - 1, compact_positions=positions)


def test_compact_files_are_estimated_at_the_rate_of_their_side_split(compact_tables, tmp_path):
    """At 4 pieces 3 against 1 takes half the bits of 2 against 2 (at 7 pieces 5-2 a sixteenth of
    4-3): one split's rate must not stand for another's, as the 8-piece 4-4 files' 1 bit a
    position did for the 5-3 ones."""
    for path in compact_tables(4).iterdir():
        if path.is_file() and path.suffix not in (".log", ".json", ".lock"):
            os.link(path, tmp_path / path.name)
    four = [m for m in all_materials(4) if m.pieces == 4]
    rates = {}
    for split in ("2-2", "3-1"):
        members = [m for m in four if budget.side_split(m) == split]
        measured = 8 * sum(path.stat().st_size for path in tmp_path.iterdir()
                           if Material.parse(path.name.split(".")[0]) in members)
        rates[split] = measured / sum(count_positions(m) for m in members)
    bits = budget.stored_bits(tmp_path, four)
    assert bits["compact 2-2"] == pytest.approx(rates["2-2"]) and bits["compact 3-1"] == pytest.approx(rates["3-1"])
    assert rates["3-1"] < bits["compact"] < rates["2-2"]
    native = contents_for(8)
    for name, split in (("5k-3k", None), ("4k-4k", None), ("3k-1k", "3-1"), ("2m-2k", "2-2")):
        rate = rates[split] if split else bits["compact"]  # a split without files: the overall rate
        assert budget.file_bytes(10**9, native, bits, material=Material.parse(name)) == int(1.5 * 10**9 * rate / 8)
