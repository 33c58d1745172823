"""Compact-native pairs split into unit tasks over the local workers, and their dependencies put in
by parts: the same files as a pair solved whole (issue 31 items 2 and 8). Apart from
test_native.py so that the long builds run beside its tests (pytest-xdist deals out files); the
compact-native 4-piece set both compare with is conftest's ``native_dir``, built once a run."""

from __future__ import annotations

import os

import numpy as np
import pytest

from egtb.builder import dependency_load, native, pipeline, plan as planner
from egtb.builder.config import Split
from egtb.builder.contents import contents_for
from egtb.builder.dependency_load import load_dependencies
from egtb.builder.driver import build
from egtb.errors import SolverError
from egtb.formats import scratch
from egtb.formats.packed import unpack
from egtb.positions.material import all_materials, count_positions
from test_native import compact_files


@pytest.mark.slow  # a 4-piece build as unit tasks on two workers (25 s): keeps make test under 3 minutes
def test_pairs_split_over_the_local_workers_write_the_same_files(native_dir, tmp_path):
    # every pair as unit tasks, wave by wave, over two forked workers, each pair's scratch held
    # from its first task to its last: the same bytes
    report = build(4, directory=tmp_path, jobs=2, progress=False, native=True,
                   split_pairs=Split(positions=1, task_positions=20_000, part_positions=30_000))
    assert compact_files(tmp_path) == compact_files(native_dir)
    assert not list(tmp_path.glob("*.pair.tmp"))
    assert all(r.split >= 1 for r in report.records) and max(r.split for r in report.records) > 20  # unit tasks
    assert any(len({pid for _, pid in r.workers}) == 2 for r in report.records)
    log = (tmp_path / "build.log").read_text()
    assert log.count(" INFO solved ") == len(report.records) and " unit tasks on 2 workers, then write " in log
    assert log.count("resuming") == 0  # the unit tasks open the scratch files quietly


def test_dependencies_put_in_by_parts_in_any_order_and_resumed_are_the_whole_load(native_dir, tmp_path):
    # a 4-piece pair on disk, its compact-native dependencies (the captures of each read those of
    # fewer pieces, a wave before) put in by parts of 3,000 positions: those of a wave backwards,
    # half of them, then a fresh open puts in the rest and skips the marked ones
    pair = max((p for p in planner.plan_pairs(4, min_pieces=4)),
               key=lambda p: sum(count_positions(m) for m in planner.dependency_materials(p)))
    deps = planner.dependency_materials(pair)
    names = {m.name for m in all_materials(4)} - {m.name for m in pair.materials}
    for path in native_dir.iterdir():
        if path.is_file() and path.name.split(".")[0] in names:
            os.link(path, tmp_path / path.name)
    lean = contents_for(4, native=True)
    whole = load_dependencies(tmp_path, deps, pair.materials, lean)  # in memory, a table at a time
    tables, _, _ = pipeline.open_on_disk(tmp_path, pair, deps, lean, load=False)
    assert set(tables.dependencies) > set(deps)  # and the natives the captures of the natives reach
    waves = dependency_load.dependency_parts(tmp_path, list(tables.dependencies), positions=3_000)
    assert len(waves) >= 2 and len(waves[-1]) > 2 * len({part.material for part in waves[-1]})
    marks = scratch.scratch_dir(tmp_path, pair.key)
    parts = [part for wave in waves for part in wave[::-1]]
    with pytest.raises(SolverError, match=r"is put in before .*which its captures read"):
        dependency_load.load_parts(tmp_path, tables, waves[-1][:1], needed_by=pair.key, marks=marks)
    half = parts[:len(parts) // 2]
    assert dependency_load.load_parts(tmp_path, tables, half, needed_by=pair.key, marks=marks) == len(half)
    assert scratch.loaded_marks(marks) == {part.name for part in half}
    del tables
    resumed, _, _ = pipeline.open_on_disk(tmp_path, pair, deps, lean)  # whole parts: those not covered
    marked = scratch.loaded_marks(marks)
    assert {part.name for part in half} < marked and all(part.covered_by(marked) for part in parts)
    assert not any(part.name in marked for part in parts[len(half):])
    assert resumed.dependencies == whole.dependencies
    for material in resumed.dependencies:
        got, want = resumed.slice_of(material), whole.slice_of(material)
        assert got.start % 3 == want.start % 3 == pair.positions % 3  # each from a byte of its own
        own = resumed.rcat.shape[1]
        assert np.array_equal(unpack(resumed.rdep[0], got.start - own, got.stop - own),
                              unpack(whole.rdep[0], want.start - own, want.stop - own)), material.name
    assert dependency_load.load_parts(tmp_path, resumed, parts, needed_by=pair.key, marks=marks) == 0
    # files made anew (another layout) drop the marks of the parts their predecessors held
    scratch.map_arrays(marks, 10, 5, contents=lean, create=True)
    assert scratch.loaded_marks(marks) == set()


def test_split_pairs_keep_their_dtz_on_one_side_as_local_ones(tmp_path, monkeypatch):
    # the split pairs' last task does what a local pair's write does (both in this process: the patch holds)
    monkeypatch.setattr(native, "ONE_SIDED_DTZ_PIECES", 3)
    local, split = tmp_path / "local", tmp_path / "split"
    build(3, directory=local, jobs=1, progress=False, native=True)
    report = build(3, directory=split, jobs=1, progress=False, native=True,
                   split_pairs=Split(positions=1, task_positions=20_000, part_positions=30_000))
    assert all(r.split >= 1 for r in report.records)
    assert compact_files(split) == compact_files(local)
    pairs = {tuple(sorted((m, m.mirrored()))) for m in all_materials(3) if m.pieces == 3 and m.mirrored() != m}
    assert [sum((split / f"{m.name}.dtz").exists() for m in pair) for pair in pairs] == [1] * len(pairs)
