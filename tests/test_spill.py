"""A compact-native pair's DTZ spilled while it is solved on disk (egtb.formats.spill,
egtb.builder.spilling): the finished pages leave the disk, come back whole, a killed spill is
cut to its index, and the files written are the same as without it (issue 31 item 3: the
largest 8-piece pair's scratch held 23.6 GB of DTZ)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from egtb.builder import budget, pipeline, split
from egtb.builder.contents import contents_for
from egtb.builder.driver import build
from egtb.builder.plan import dependency_materials, plan_pairs
from egtb.errors import TableError
from egtb.formats import scratch
from egtb.formats import spill as spill_files
from egtb.formats.spill import INDEX_NAME, PAGE, RELEASE_LAG_POSITIONS, SPILL_NAME, DtzSpill, SpilledRow
from egtb.positions.material import count_positions

from test_native import compact_files


def mapped_dtz(path: Path, values: np.ndarray) -> np.ndarray:
    """`values` in a mapped file of their own, as a pair's scratch DTZ is."""
    array = np.memmap(path, dtype=np.uint8, mode="w+", shape=values.shape)
    array[:] = values
    array.flush()
    return array


def spilled_pages(ranges: list[tuple[int, int]], positions: int) -> np.ndarray:
    """By page, whether the position ranges cover it."""
    pages = np.zeros(-(-positions // PAGE), dtype=np.bool_)
    for start, stop in ranges:
        pages[start // PAGE:stop // PAGE] = True
    return pages


def test_spilled_pages_give_their_disk_blocks_back_and_read_back_whole(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    size = 192 * PAGE
    values = (rng.random(size) < 0.1).astype(np.uint8) * rng.integers(1, 90, size, dtype=np.uint8)
    dtz = mapped_dtz(tmp_path / "rdtz", values)
    before = os.stat(tmp_path / "rdtz").st_blocks
    spill = DtzSpill.open(tmp_path)
    ranges = [(8 * PAGE, 72 * PAGE), (80 * PAGE, 112 * PAGE), (120 * PAGE, 134 * PAGE)]
    spill.spill(dtz, ranges)
    assert os.stat(tmp_path / "rdtz").st_blocks == before  # spilled, not yet given back
    # no block of 64 pages is wholly spilled (0-63 lacks 0-7, 64-127 lacks 72-79, 128-191 lacks
    # 134 on), and the 110 spilled pages are within the lag: none is given back
    assert spill.release(dtz, spilled_pages(ranges, size)) == 0
    ranges.append((0, 8 * PAGE))  # pages 0-63 now whole
    spill.spill(dtz, ranges[-1:])
    assert spill.release(dtz, spilled_pages(ranges, size)) == 1
    assert (before - os.stat(tmp_path / "rdtz").st_blocks) * 512 == 64 * PAGE
    assert not dtz[:64 * PAGE].any() and dtz[64 * PAGE:72 * PAGE].any()  # a punched page reads as 0
    # past the lag, the runs holding the most pages go first, until half the lag is left
    monkeypatch.setattr(spill_files, "RELEASE_LAG_POSITIONS", 30 * PAGE)
    # held: pages 64-71 (8), 80-111 (32), 120-133 (14); 54 > 30: 32 go (22 left), then 14 (8 left)
    assert spill.release(dtz, spilled_pages(ranges, size)) == 2
    assert not dtz[80 * PAGE:112 * PAGE].any() and not dtz[120 * PAGE:134 * PAGE].any() and dtz[64 * PAGE:72 * PAGE].any()
    assert DtzSpill.open(tmp_path).release(dtz, spilled_pages(ranges, size)) == 0  # recorded
    again = DtzSpill.open(tmp_path)  # the values come back from the chunks
    assert again.positions == 118 * PAGE
    assert np.array_equal(SpilledRow(dtz, again)[:], values)
    assert np.array_equal(SpilledRow(dtz[PAGE:], again, offset=PAGE)[7 * PAGE + 5:52 * PAGE], values[8 * PAGE + 5:53 * PAGE])


def test_a_killed_spill_is_cut_to_its_index_and_a_short_file_is_named(tmp_path):
    dtz = mapped_dtz(tmp_path / "rdtz", np.arange(4 * PAGE, dtype=np.uint8))
    DtzSpill.open(tmp_path).spill(dtz, [(0, 2 * PAGE)])
    size = (tmp_path / SPILL_NAME).stat().st_size
    with open(tmp_path / SPILL_NAME, "ab") as out:  # a chunk written, its index not
        out.write(b"half a chunk")
    assert DtzSpill.open(tmp_path).file_bytes == size == (tmp_path / SPILL_NAME).stat().st_size
    os.truncate(tmp_path / SPILL_NAME, size - 1)
    with pytest.raises(TableError, match=SPILL_NAME):
        DtzSpill.open(tmp_path)
    (tmp_path / INDEX_NAME).write_text("{broken")
    with pytest.raises(TableError, match=INDEX_NAME):
        DtzSpill.open(tmp_path)


@pytest.fixture(scope="module")
def native3(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("native3")
    build(3, directory=directory, jobs=1, progress=False, native=True)
    return directory


def test_a_pair_solved_on_disk_spills_its_whole_dtz(native3, tmp_path):
    for path in native3.iterdir():
        shutil.copy(path, tmp_path)
    # the 3-piece pair of most positions with men: several units, its dependencies in native3
    pair = max((p for p in plan_pairs(3, min_pieces=3) if p.materials[0].men), key=lambda p: p.positions)
    contents = contents_for(3, native=True)
    tables, units, _ = pipeline.solve_on_disk(tmp_path, pair, dependency_materials(pair), contents,
                                              per_pass=0, progress=None, checkpoint_seconds=0)
    assert tables.spiller is not None and tables.spiller.spill.positions == pair.positions
    assert units > 1
    path = scratch.scratch_dir(tmp_path, pair.key)
    spilled = (path / SPILL_NAME).stat().st_size
    assert spilled < pair.positions / 2  # compressed
    rows = [tables.spiller.row(tables.slice_of(m)) for m in pair.materials]
    assert sum(len(r) for r in rows) == pair.positions and all(r[:].dtype == np.uint8 for r in rows)


@pytest.mark.slow  # two 4-piece builds: keeps make test under 3 minutes
def test_a_native_build_on_disk_with_its_dtz_spilled_writes_the_same_files(native3, tmp_path):
    reference = tmp_path / "in-memory"
    spilled = tmp_path / "on-disk"
    for directory in (reference, spilled):
        shutil.copytree(native3, directory)
    build(4, directory=reference, jobs=1, progress=False, native=True)
    build(4, directory=spilled, jobs=1, progress=False, native=True, on_disk=True, checkpoint_seconds=0)
    assert compact_files(spilled, 4) == compact_files(reference, 4) != {}
    assert not list(spilled.glob(f"*{scratch.SCRATCH_SUFFIX}"))


def test_the_plan_counts_a_spilled_dtz_at_a_fraction_of_a_byte():
    pair = max(plan_pairs(8, min_pieces=8, max_per_side=4), key=lambda p: p.positions)
    deps = dependency_materials(pair)
    native = contents_for(8, native=True)
    flat = scratch.flat_starts([pair.positions], [count_positions(m) for m in deps])[1]
    whole = scratch.scratch_bytes(flat, pair.positions, dtw=False, presets=native.presets)
    assert pair.key == "1m3k-2m2k"
    assert budget.scratch_bytes(pair, deps, contents=native) == (
        whole - pair.positions + int(pair.positions * 0.25) + budget.SPILL_LAG_POSITIONS + RELEASE_LAG_POSITIONS)


def test_a_split_pair_spills_the_dtz_of_each_wave_before_the_next_and_writes_the_same_files(native3, tmp_path, caplog):
    # the split pair's tasks run here in order (a task's `after` gets the results it waits for);
    # the first task of each wave spills the waves before it, and the files written read the
    # spill back: the same bytes as the pair solved whole
    directory = tmp_path / "split"
    shutil.copytree(native3, directory)
    pair = max((p for p in plan_pairs(3, min_pieces=3) if p.materials[0].men), key=lambda p: p.positions)
    deps, contents = dependency_materials(pair), contents_for(3, native=True)
    path = scratch.scratch_dir(directory, pair.key)
    tasks = split.pair_tasks(directory, pair, deps, contents, per_pass=0, after=(), priority=0, positions=200)
    killed = next(i for i, task in enumerate(tasks) if task.function is split.write)  # its units solved
    caplog.set_level("INFO", logger="egtb")
    runs, spilled = [], []
    for run in (tasks[:killed], tasks):  # a run killed before its writes, then the whole pair again
        results = {}
        for task in run:
            if task.function is split.write and not spilled:
                spilled.append(DtzSpill.open(path).positions)
            results[task.key] = task.function(*task.args, **task.kwargs,
                                              after=[results[key] for key in task.after])
        runs.append(sum(r["cpu_seconds"] for r in results.values() if isinstance(r, dict)))
    assert 0 < spilled[0] < pair.positions  # the last wave's pages are written from the scratch row
    record = results[tasks[-1].key]  # every run's tasks counted (the prepares' besides)
    assert runs[0] > 0 and sum(runs) <= record.cpu_seconds < sum(runs) + 1
    whole = tmp_path / "whole"
    shutil.copytree(native3, whole)
    pipeline.build_pair(whole, pair, deps, contents=contents)
    assert compact_files(directory, 3) == compact_files(whole, 3) != {}
    assert not path.exists()
    logged = [r.getMessage() for r in caplog.records if "DTZ positions spilled" in r.getMessage()]
    assert len(logged) == 1 and logged[0].startswith(f"{pair.key}: {spilled[0]:,} DTZ positions spilled in ")


def test_a_resumed_pair_on_disk_counts_the_cpu_of_every_run(native3, tmp_path, monkeypatch):
    for path in native3.iterdir():
        shutil.copy(path, tmp_path)
    pair = max((p for p in plan_pairs(3, min_pieces=3) if p.materials[0].men), key=lambda p: p.positions)
    contents, plan = contents_for(3, native=True), budget.PairPlan(pair.key, True, 0, 0)
    solve = pipeline.solve_pair
    calls = []

    def killed(*args, **options):  # the run is killed after a few checkpoints
        calls.append(1)
        if len(calls) > 3:
            raise KeyboardInterrupt
        return solve(*args, **options)
    monkeypatch.setattr(pipeline, "solve_pair", killed)
    with pytest.raises(KeyboardInterrupt):
        pipeline.build_pair(tmp_path, pair, dependency_materials(pair), contents=contents, plan=plan,
                            checkpoint_seconds=0)
    monkeypatch.setattr(pipeline, "solve_pair", solve)
    earlier = scratch.recorded_cpu(scratch.scratch_dir(tmp_path, pair.key))
    start = time.thread_time()
    record = pipeline.build_pair(tmp_path, pair, dependency_materials(pair), contents=contents, plan=plan,
                                 checkpoint_seconds=0)
    spent = time.thread_time() - start
    assert earlier > 0 and record.cpu_seconds == pytest.approx(earlier + spent, abs=earlier / 4)


def test_scratch_files_made_anew_drop_the_spill_of_another_run(native3, tmp_path):
    # a pair's scratch with a spilled DTZ, then a checkpoint of other tables (another run's): the
    # files are made anew, and the spill with them (its chunks would stand for their positions)
    for path in native3.iterdir():
        shutil.copy(path, tmp_path)
    pair = max((p for p in plan_pairs(3, min_pieces=3) if p.materials[0].men), key=lambda p: p.positions)
    contents = contents_for(3, native=True)
    path = scratch.scratch_dir(tmp_path, pair.key)
    done = pipeline.open_on_disk(tmp_path, pair, dependency_materials(pair), contents)[2]
    DtzSpill.open(path).spill(np.ones(2 * PAGE, dtype=np.uint8), [(0, 2 * PAGE)])
    assert pipeline.open_on_disk(tmp_path, pair, dependency_materials(pair), contents)[2] == done == 0
    assert DtzSpill.open(path).positions == 2 * PAGE  # the same run's: kept
    checkpoint = path / scratch.CHECKPOINT_NAME
    record = json.loads(checkpoint.read_text())
    record["layout"]["rules"] = ["crowning"]
    checkpoint.write_text(json.dumps(record))
    pipeline.open_on_disk(tmp_path, pair, dependency_materials(pair), contents)
    assert DtzSpill.open(path).positions == 0 and not (path / SPILL_NAME).exists()
