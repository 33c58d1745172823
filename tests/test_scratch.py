"""Tests of pairs built on disk: memory-mapped values, checkpoints, resume after a kill."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from egtb.builder.contents import contents_for
from egtb.builder import driver as builder
from egtb.builder import plan as planner
from egtb.formats import scratch
from egtb.formats import master
from egtb.positions.material import Material, all_materials


@pytest.fixture(scope="module")
def tables4(built_tables) -> Path:
    """Every table up to 4 pieces, built in memory (the reference; the session's shared set: read only)."""
    return built_tables(4)


def file_checksums(directory: Path, materials) -> dict[str, tuple]:
    """Per material: the values' CRC-32 and each rule layer's (all the stored data)."""
    out = {}
    for m in materials:
        path = master.table_path(directory, m)
        layers = master.read_layer_attrs(path)
        out[m.name] = (int(master.read_attrs(path)["checksum_crc32"]),
                       tuple(sorted((k, int(v["checksum_crc32"])) for k, v in layers.items())))
    return out


def copy_up_to(source: Path, target: Path, pieces: int) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for m in all_materials(pieces):
        shutil.copy(master.table_path(source, m), target)


# the default run's: a pair with men and kings of both sides (its 4-piece dependencies copied as
# built in memory) and a kings-only pair; every 4-piece pair on disk (5 CPU s) is a slow check
@pytest.mark.parametrize("materials", [("1m1k-2m", "2k-2k"), pytest.param((), marks=pytest.mark.slow)],
                         ids=["two-pairs", "every-pair"])
def test_on_disk_build_writes_the_same_tables(tables4, tmp_path, materials):
    copy_up_to(tables4, tmp_path, 3)
    every = {p.key: p for p in planner.plan_pairs(4, min_pieces=4)}
    pairs = [p for p in every.values() if not materials or {m.name for m in p.materials} & set(materials)]
    for key in {key for pair in pairs for key in pair.depends} & every.keys() - {p.key for p in pairs}:
        for m in every[key].materials:
            shutil.copy(master.table_path(tables4, m), tmp_path)
    report = builder.build(4, directory=tmp_path, jobs=1, progress=False, on_disk=True,
                           min_pieces=4, materials=materials)
    assert all(record.on_disk for record in report.records)
    four = [m for p in pairs for m in p.materials]
    assert sorted(report.built) == sorted(m.name for m in four)
    assert len(four) == (3 if materials else 25)
    assert file_checksums(tmp_path, four) == file_checksums(tables4, four)
    assert not scratch.scratch_dirs(tmp_path)  # removed once the files are written
    m = Material.parse("1m1k-2m")
    a, b = master.open_table(master.table_path(tmp_path, m)), master.open_table(
        master.table_path(tables4, m))
    assert np.array_equal(a.dtw, b.dtw) and np.array_equal(a.rules["wcdf"].dtz,
                                                          b.rules["wcdf"].dtz)


# slow: test_build's SIGKILL test resumes a killed build in the default run
@pytest.mark.slow
def test_killed_pair_on_disk_resumes_from_its_checkpoint(tables4, tmp_path):
    copy_up_to(tables4, tmp_path, 3)
    command = [sys.executable, "-m", "egtb.cli", "build", "--pieces", "4", "--min-pieces", "4",
               "--jobs", "1", "--on-disk", "--checkpoint-minutes", "0", "--quiet",
               "--tables", str(tmp_path)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    done = None
    while done is None and time.monotonic() < deadline and process.poll() is None:
        for path in scratch.scratch_dirs(tmp_path):
            try:
                units = json.loads((path / scratch.CHECKPOINT_NAME).read_text())["units"]
            except (OSError, ValueError, KeyError):
                continue
            if units >= 3:  # killed in the middle of a pair, some units after a checkpoint
                done = (path, units)
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert done is not None, "no checkpoint was seen before the build ended"
    assert done[0].exists()
    resume = [arg for arg in command if arg != "0"]  # default checkpoints: fewer fsyncs
    resume.remove("--checkpoint-minutes")
    subprocess.run(resume, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = (tmp_path / builder.LOG_NAME).read_text()
    assert f"resuming {done[0].name[:-len(scratch.SCRATCH_SUFFIX)]} from its checkpoint" in log
    four = [m for m in all_materials(4) if m.pieces == 4]
    assert file_checksums(tmp_path, four) == file_checksums(tables4, four)
    assert not scratch.scratch_dirs(tmp_path)


def test_a_checkpoint_of_other_tables_is_not_used(tmp_path):
    arrays = scratch.map_arrays(tmp_path, 10, 4, contents=contents_for(7), create=True)
    # the pair's 4 categories and DTZ, the 6 dependencies' categories packed in 2 bytes
    assert [a.shape for a in arrays] == [(0,), (0,), (1, 4), (1, 4), (1, 2)]
    assert int(arrays[2][0, 0]) == -128  # unsolved categories
    scratch.write_checkpoint(tmp_path, {"pair": "a", "positions": 10}, 4, arrays)
    assert scratch.read_checkpoint(tmp_path, {"pair": "a", "positions": 10}) == 4
    assert scratch.read_checkpoint(tmp_path, {"pair": "a", "positions": 11}) is None
    assert scratch.read_checkpoint(tmp_path / "none", {"pair": "a"}) is None


def test_slices_read_back_what_was_written(tables4):
    m = Material.parse("1k-1m2k")
    path = master.table_path(tables4, m)
    whole = master.open_table(path)
    parts = list(master.read_slices(path, rules=("crowning",), step=4096))
    assert len(parts) > 1
    assert np.array_equal(np.concatenate([p[1] for p in parts]), whole.wdl)
    assert np.array_equal(np.concatenate([p[2] for p in parts]), whole.dtw)
    assert np.array_equal(np.concatenate([p[4][0] for p in parts]), whole.rules["crowning"].dtz)
    assert master.check_table(path) == sorted(whole.rules)


def test_a_flipped_byte_is_found_by_the_sliced_check(tables4, tmp_path):
    m = Material.parse("2k-2k")
    path = shutil.copy(master.table_path(tables4, m), tmp_path)
    import h5py
    with h5py.File(path, "r+") as f:
        f["dtw"][5] = f["dtw"][5] ^ 1
    with pytest.raises(master.TableError, match="checksum mismatch"):
        master.check_table(path)


def resident_file_kib() -> int:
    """This process's resident pages of mapped files (RssFile), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    pytest.skip("no RssFile in /proc/self/status (needs Linux)")


def test_a_mapped_row_read_once_keeps_what_it_read_off_resident_memory(tmp_path):
    positions = 64 << 20  # 64 MiB of int8
    arrays = scratch.map_arrays(tmp_path, positions, positions, contents=contents_for(7), create=True)
    row = arrays[2][0]  # rcat, filled with UNSOLVED by map_arrays: its slices released as written
    row[::4096] = np.arange(positions // 4096, dtype=np.int64) % 100
    scratch.flush(arrays)
    scratch.release(row)
    before = resident_file_kib()
    reader = scratch.ReadOnce(row)
    seen = [reader[start:start + (8 << 20)][::4096].copy() for start in range(0, positions, 8 << 20)]
    assert resident_file_kib() - before < 16 << 10  # less than 16 MiB of the 64 MiB it read stay
    assert np.array_equal(np.concatenate(seen), np.arange(positions // 4096) % 100)
    kept = np.array(row[:positions])  # a plain read keeps them resident
    assert resident_file_kib() - before > 48 << 10
    assert np.array_equal(kept[::4096], np.arange(positions // 4096) % 100)


def test_an_array_in_memory_is_not_released():
    values = np.arange(10_000, dtype=np.int64)
    scratch.release_range(values, 0, len(values))
    scratch.release(values)
    assert np.array_equal(values, np.arange(10_000))
