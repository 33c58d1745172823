"""Tests of the HDF5 table format: round trip, atomic writes, broken files detected."""

from __future__ import annotations

import os
import shutil
import h5py
import numpy as np
import pytest

from egtb.formats import master
from egtb.positions.material import Material, count_positions

M = Material.parse("1k-1m")


def sample(n: int, *, deep: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    wdl = rng.integers(1, 4, n).astype(np.uint8)
    dtw = rng.integers(0, 400 if deep else 200, n).astype(np.uint16)
    return wdl, dtw


@pytest.mark.parametrize("n", [0, 1, 5, 868, 100_003])
def test_pack_round_trip(n):
    wdl, _ = sample(n)
    assert np.array_equal(master.unpack_wdl(master.pack_wdl(wdl), n), wdl)


@pytest.mark.parametrize("deep", [False, True])
def test_write_read_round_trip(tmp_path, deep):
    wdl, dtw = sample(count_positions(M), deep=deep)
    path = master.write_table(master.table_path(tmp_path, M), M, wdl, dtw,
                               attrs={"wins": 1, "rule_preset": "wcdf"})
    data = master.open_table(path)
    assert data.material == M and data.attrs["rule_preset"] == "wcdf"
    assert np.array_equal(data.wdl, wdl) and np.array_equal(data.dtw, dtw)
    assert data.dtw.dtype == (np.uint16 if deep else np.uint8)
    assert not list(tmp_path.glob(master.TMP_GLOB))
    got = master.load_material(tmp_path, M)
    assert np.array_equal(got[0], wdl)


def test_missing_table(tmp_path):
    with pytest.raises(FileNotFoundError, match="1k-1m"):
        master.load_material(tmp_path, M)
    assert master.stored_materials(tmp_path) == []


def write_sample(tmp_path):
    wdl, dtw = sample(count_positions(M))
    return master.write_table(master.table_path(tmp_path, M), M, wdl, dtw)


def test_truncated_file_is_detected(tmp_path):
    path = write_sample(tmp_path)
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(master.TableError, match=str(path.name)):
        master.open_table(path)
    assert master.stored_materials(tmp_path) == [M]  # listed by name; opening it is what fails


def test_changed_values_fail_the_checksum(tmp_path):
    path = write_sample(tmp_path)
    with h5py.File(path, "r+") as f:
        f["dtw"][3] = f["dtw"][3] + 1
    with pytest.raises(master.TableError, match="checksum"):
        master.open_table(path)
    master.open_table(path, check=False)


def test_foreign_file_is_rejected(tmp_path):
    path = tmp_path / "1k-1m.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(master.TableError, match="not an English draughts table"):
        master.open_table(path)
    (tmp_path / "2k-1k.h5").write_text("not hdf5")
    with pytest.raises(master.TableError, match="2k-1k.h5"):
        master.open_table(tmp_path / "2k-1k.h5")


def test_temporaries_are_removed(tmp_path):
    leftover = tmp_path / "1k-1m.h5.1234.tmp"
    leftover.write_bytes(b"partial")
    assert master.remove_temporaries(tmp_path) == [leftover]
    assert not leftover.exists()


def test_disk_in_use_passes_over_a_scratch_directory_removed_while_it_is_counted(tmp_path, monkeypatch):
    """Another worker removes its pair's scratch directory in the middle of the walk: counted
    up to there, no error (it failed the pair asking, in a build of 4 pieces with 2 workers)."""
    (tmp_path / "1k-1k.h5").write_bytes(b"x" * 10_000)
    scratch = tmp_path / "1m1k-1m1k.pair.tmp"
    (scratch / "inner").mkdir(parents=True)
    (scratch / "wld.bin").write_bytes(b"x" * 5_000)
    (scratch / "inner" / "dtw.bin").write_bytes(b"x" * 5_000)
    real_stat = os.stat

    def stat_then_remove(path, *args, **kwargs):
        answer = real_stat(path, *args, **kwargs)
        if str(path).endswith("wld.bin"):
            shutil.rmtree(scratch)  # the other worker finishes its pair
        return answer
    monkeypatch.setattr(os, "stat", stat_then_remove)
    assert master.bytes_on_disk(tmp_path) >= 15_000


def test_default_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(master.ENV_DIR, str(tmp_path))
    assert master.default_dir() == tmp_path
    monkeypatch.delenv(master.ENV_DIR)
    assert master.default_dir() == master.DEFAULT_DIR


@pytest.mark.parametrize("count, slice_chunks", [(master.CHUNK * 2, 16),
                                                  (master.CHUNK * 3 + 12345, 16),
                                                  (master.CHUNK * 9 + 12345, 4)])
def test_chunks_compressed_here_give_the_same_file_as_hdf5_filters(tmp_path, monkeypatch, count,
                                                                   slice_chunks):
    """The threaded direct-chunk path writes byte for byte HDF5's own filtered file,
    also when a dataset is written in several slices (the last one partial)."""
    monkeypatch.setattr(master, "SLICE", master.CHUNK * slice_chunks)
    rng = np.random.default_rng(count)
    material = Material.parse("2k-2k")
    wdl = rng.integers(1, 4, count).astype(np.uint8)
    dtw = (rng.integers(0, 40, count) * (rng.random(count) < 0.3)).astype(np.uint16)
    dtw[7] = 300  # stored as uint16: shuffled
    layer = master.RuleLayer(np.sign(wdl.astype(np.int8) - 1) * 2, dtw // 2, {"limit": 80})
    monkeypatch.setattr(master.time, "strftime", lambda *_: "2026-01-01T00:00:00+0000")
    paths = []
    for direct in (False, True):
        monkeypatch.setattr(master, "DIRECT_CHUNKS", direct)
        paths.append(master.write_table(tmp_path / f"{direct}.h5", material, wdl, dtw,
                                         rules={"wcdf": layer}))
    assert paths[0].read_bytes() == paths[1].read_bytes()
    data = master.open_table(paths[1])
    assert np.array_equal(data.dtw, dtw) and np.array_equal(data.wdl, wdl)


def test_a_forked_child_compresses_with_its_own_threads(tmp_path):
    """The parent's chunk-compression pool is not reused (and never waited on) in a fork."""
    import multiprocessing
    material = Material.parse("2k-2k")
    wdl = np.ones(master.CHUNK * 2, dtype=np.uint8)
    dtw = np.arange(master.CHUNK * 2, dtype=np.uint16)
    master.write_table(tmp_path / "parent.h5", material, wdl, dtw)  # the parent's pool exists
    child = multiprocessing.get_context("fork").Process(
        target=master.write_table, args=(tmp_path / "child.h5", material, wdl, dtw))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert np.array_equal(master.open_table(tmp_path / "child.h5").dtw, dtw)
