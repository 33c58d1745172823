"""Tests of egtb.formats.cache: the bounds hold, a changed file is read again, an unchanged one is not."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from egtb.formats.cache import TableCache, file_stamp, process_cache


class CountingLoader:
    """np.load that counts its calls."""

    def __init__(self) -> None:
        self.calls: list[Path] = []

    def __call__(self, path: Path) -> np.ndarray:
        self.calls.append(path)
        return np.load(path)


@pytest.fixture()
def files(tmp_path) -> list[Path]:
    """Four .npy files of 10, 20, 30 and 40 int64 values (80..320 bytes)."""
    paths = []
    for i in range(4):
        path = tmp_path / f"t{i}.npy"
        np.save(path, np.arange(10 * (i + 1), dtype=np.int64))
        paths.append(path)
    return paths


def test_entry_limit_holds_and_drops_least_recently_used(files):
    cache, load = TableCache(max_entries=2), CountingLoader()
    for i in (0, 1, 0, 2):  # 0 used again, so 1 is the oldest when 2 arrives
        cache.get(i, files[i], load)
    assert len(cache) == 2 and 0 in cache and 2 in cache and 1 not in cache
    assert len(load.calls) == 3


def test_byte_limit_holds_and_keeps_the_newest(files):
    evicted = []
    cache = TableCache(max_bytes=250, on_evict=lambda key, value: evicted.append(key))
    cache.get(0, files[0], np.load)
    cache.get(1, files[1], np.load)  # 80 + 160 bytes
    assert cache.nbytes == 240 and evicted == []
    cache.get(2, files[2], np.load)  # 240 more: both older entries go
    assert evicted == [0, 1] and len(cache) == 1 and cache.nbytes == 240
    cache.get(3, files[3], np.load)  # larger than the bound alone: it stays, the rest goes
    assert len(cache) == 1 and cache.nbytes == 320 and evicted == [0, 1, 2]


def test_changed_file_is_read_again(files):
    cache, load = TableCache(), CountingLoader()
    assert cache.get("t", files[0], load).tolist() == list(range(10))
    assert cache.get("t", files[0], load).tolist() == list(range(10))
    assert len(load.calls) == 1  # unchanged: served from the cache
    np.save(files[0], np.arange(5, dtype=np.int64))  # new size
    assert cache.get("t", files[0], load).tolist() == list(range(5))
    assert len(load.calls) == 2 and cache.nbytes == 40


def test_same_size_with_new_mtime_is_read_again(files):
    cache, load = TableCache(), CountingLoader()
    cache.get("t", files[0], load)
    np.save(files[0], np.arange(10, 20, dtype=np.int64))  # same size, other values
    st = os.stat(files[0])
    os.utime(files[0], ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert cache.get("t", files[0], load).tolist() == list(range(10, 20))
    assert len(load.calls) == 2


def test_recheck_interval_spares_the_check(files):
    cache, load = TableCache(recheck_seconds=3600), CountingLoader()
    cache.get("t", files[0], load)
    np.save(files[0], np.arange(5, dtype=np.int64))
    assert len(cache.get("t", files[0], load)) == 10  # checked less than an hour ago
    assert len(load.calls) == 1


def test_path_finder_is_called_only_when_reading(files):
    cache, found = TableCache(), []

    def finder() -> Path:
        found.append(1)
        return files[1]

    cache.get("t", finder, np.load)
    cache.get("t", finder, np.load)
    assert found == [1]


def test_loader_errors_pass_through_and_nothing_is_cached(tmp_path):
    cache = TableCache()

    def load(path: Path):
        raise FileNotFoundError(f"no table: {path} is missing")

    with pytest.raises(FileNotFoundError, match="missing"):
        cache.get("t", tmp_path / "absent.npy", load)
    assert len(cache) == 0 and file_stamp(tmp_path / "absent.npy") is None


def test_clear_reports_every_entry(files):
    evicted = []
    cache = TableCache(on_evict=lambda key, value: evicted.append(key))
    for i in range(3):
        cache.get(i, files[i], np.load)
    cache.clear()
    assert evicted == [0, 1, 2] and len(cache) == 0 and cache.nbytes == 0


def test_bad_bound_is_refused():
    with pytest.raises(ValueError, match="max_entries"):
        TableCache(max_entries=0)


def test_a_bound_holds_within_its_block_and_is_lifted_after(files):
    cache = TableCache(max_bytes=10_000)
    for i in range(4):
        cache.get(i, files[i], np.load)
    with cache.bounded(400):
        assert cache.nbytes <= 400 and list(cache.values())[-1].size == 40  # the newest stays
        cache.get(0, files[0], np.load)
        assert cache.nbytes <= 400
    assert cache.max_bytes == 10_000


def test_the_builder_and_the_verifier_keep_their_tables_in_the_process_cache(tmp_path):
    from egtb.builder.driver import build
    from egtb.builder.verify import verify_directory
    cache = process_cache()
    budget = cache.max_bytes
    build(3, directory=tmp_path, jobs=1, progress=False)
    users = {key[0] for key in _keys(cache)}
    assert "build" in users and cache.max_bytes == budget  # the build's bound is lifted after it
    assert verify_directory(tmp_path).ok
    assert not [key for key in _keys(cache) if key[0] == "verify"]  # dropped when it is done


def _keys(cache: TableCache) -> list[tuple]:
    return [key for key in cache.keys() if isinstance(key, tuple)]
