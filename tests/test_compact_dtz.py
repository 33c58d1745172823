"""Compact DTZ files (``<material>.dtz``): the DTZ under wcdf of every win and loss, probed at any counter."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from egtb import cli
from egtb.positions.walk import unrank_range
from egtb.builder.verify_compact import verify_compact
from egtb.errors import TableError
from egtb.builder import compaction
from egtb.formats import compact, master
from egtb.formats.compact import layout
from egtb.positions.index import global_unrank
from egtb.positions.material import Material, all_materials, count_positions
from egtb.probe.kernels import NO_DTW
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import DRAW_RULES

MAX_PIECES = 4
WCDF = DRAW_RULES["wcdf"]


@pytest.fixture(scope="module")
def master_dir(built_tables) -> Path:
    """Every master table up to 4 pieces (the session's shared set: read only)."""
    return built_tables(MAX_PIECES)


@pytest.fixture(scope="module")
def compact_dir(compact_tables) -> Path:
    """The compact files (.wld, .wcdf, .dtz) of every table up to 4 pieces (the session's shared
    set: read only; tests/test_compact.py verifies every DTZ of it against the masters)."""
    return compact_tables(MAX_PIECES)


def quiet_decisive(material: Material, layer) -> np.ndarray:
    """Whether each position is a win or loss whose side to move (Black) need not capture."""
    n = count_positions(material)
    bm, bk, wm, wk = (np.empty(n, dtype=np.int64) for _ in range(4))
    cap = np.empty(n, dtype=np.bool_)
    unrank_range(compact.material_counts(material), 0, n, bm, bk, wm, wk, cap)
    return ~cap & (np.abs(layer.category) == 2)


def rule_layer(master_dir: Path, material: Material):
    return master.read_rule_layer(master.table_path(master_dir, material), "wcdf")


def positions(material: Material, indices: np.ndarray) -> tuple[np.ndarray, ...]:
    rows = np.array([global_unrank(material, int(i)) for i in indices], dtype=np.int64)
    return tuple(rows[:, k].copy() for k in range(4))


def test_wins_and_losses_answer_the_master_dtz_one_at_a_time(master_dir, compact_dir):
    for material in (Material.parse("2k-2k"), Material.parse("1m1k-1k")):
        layer = rule_layer(master_dir, material)
        table = compact.CompactTable(compact.compact_path(compact_dir, material)).layer("wcdf")
        checked = np.flatnonzero(quiet_decisive(material, layer))[::97]
        assert [table.distance_at(int(i)) for i in checked] == layer.dtz[checked].tolist()
        assert table.max_dtz == max(int(layer.dtz[np.abs(layer.category) == 2].max()), 1)


def test_outcomes_at_random_counters_are_the_masters(master_dir, compact_dir):
    rng = np.random.default_rng(5)
    with Tablebase(master_dir) as tm, Tablebase(compact_dir) as tc:
        for material in all_materials(MAX_PIECES):
            arrays = positions(material, rng.integers(0, count_positions(material), 60))
            counters = rng.integers(0, WCDF.limit_plies + 1, 60)
            for turn in (0, 1):
                want = tm.probe_batch_rule(*arrays, turn, counters)
                got = tc.probe_batch_rule(*arrays, turn, counters)
                assert got[0].tolist() == want[0].tolist(), material.name
                assert got[1].tolist() == want[1].tolist(), material.name
                read = got[2] != NO_DTW  # only where the outcome needed it, and then the master's
                assert got[2][read].tolist() == want[2][read].tolist(), material.name
                late = (np.abs(want[1]) == 2) & (counters + int(want[2].max()) > WCDF.limit_plies) & (counters > 0)
                assert read[late].all(), material.name
                for k in range(0, 60, 6):
                    key = tuple(int(a[k]) for a in arrays) + (turn,)
                    outcome, category, dtz = tc._probe_rule_key(key, WCDF, int(counters[k]))
                    assert (outcome, category, dtz) == tm._probe_rule_key(key, WCDF, int(counters[k])), key


def test_the_codec_carries_every_dtz_code_in_one_context(compact_dir, tmp_path):
    material = Material.parse("2k-2k")
    rng = np.random.default_rng(3)
    runs = rng.integers(1, 40, count_positions(material) // 8)
    codes = np.repeat(rng.integers(1, layout.MAX_DTZ_CODE + 1, len(runs)), runs)[:count_positions(material)]
    codes = np.resize(codes, count_positions(material)).astype(np.uint8)
    blob, _ = compact.encode_values(material, codes, kind=compact.WCDF_DTZ)
    path = compact.write_compact(tmp_path / "2k-2k.dtz", blob)
    table = compact.CompactTable(path)
    assert table.kind is compact.WCDF_DTZ and table.largest_code == int(codes.max()) == layout.MAX_DTZ_CODE
    stored = table.values()
    n = count_positions(material)
    cap = np.empty(n, dtype=np.bool_)
    unrank_range(compact.material_counts(material), 0, n, *(np.empty(n, dtype=np.int64) for _ in range(4)), cap)
    assert np.array_equal(stored[~cap], codes[~cap])
    assert [table.value(int(i)) for i in np.flatnonzero(~cap)[::501]] == codes[~cap][::501].tolist()


def test_a_dtz_that_does_not_fit_is_refused():
    with pytest.raises(ValueError, match="a DTZ of 127 does not fit a DTZ file"):
        compact.dtz_codes(np.array([2, -2]), np.array([3, 127]))
    with pytest.raises(ValueError, match="position 1 is unsolved"):
        compact.encode_values(Material.parse("1k-1k"), np.array([1, 0] + [1] * 990, dtype=np.uint8))


def test_a_flipped_byte_in_a_dtz_block_is_named_when_a_counter_needs_it(master_dir, compact_dir, tmp_path):
    material = Material.parse("2k-2k")
    for path in compact_dir.glob(f"{material.name}.*"):
        if path.suffix != ".marks":
            shutil.copy(path, tmp_path)
    path = compact.compact_path(tmp_path, material, kind=compact.WCDF_DTZ)
    table = compact.CompactTable(path)
    raw = bytearray(path.read_bytes())
    raw[table.data_offset + 9] ^= 0x20
    path.write_bytes(bytes(raw))
    layer = rule_layer(master_dir, material)
    index = int(np.flatnonzero(quiet_decisive(material, layer) & (np.arange(len(layer.dtz)) < table.starts[1]))[0])
    arrays = positions(material, np.array([index]))
    with Tablebase(tmp_path) as tb:
        assert tb.probe_batch_rule(*arrays, 0, 0)[1].tolist() == [layer.category[index]]  # no DTZ needed
        with pytest.raises(TableError, match=r"2k-2k\.dtz: block 0 is damaged"):
            tb.probe_batch_rule(*arrays, 0, 80)
    with Tablebase(tmp_path) as tb, pytest.raises(TableError, match=r"2k-2k\.dtz: block 0 is damaged"):
        tb.probe(compact_fen(arrays), counter=80)
    report = verify_compact(tmp_path, materials=[material], masters=master_dir)
    assert not report.ok and any("2k-2k.dtz: block 0" in m for m in report.messages)


def compact_fen(arrays: tuple[np.ndarray, ...]) -> str:
    from egtb.rules.notation import Placement, format_fen
    return format_fen(Placement(*(int(a[0]) for a in arrays), 0))


def write_a_wrong_dtz(master_dir: Path, directory: Path) -> tuple[int, np.ndarray]:
    """The compact files up to 3 pieces in ``directory``, 2k-1k's .dtz file with one DTZ changed:
    (its index, the DTZ written)."""
    material = Material.parse("2k-1k")
    compaction.compact_directory(master_dir, out=directory, materials=all_materials(3))
    layer = rule_layer(master_dir, material)
    wrong = int(np.flatnonzero(quiet_decisive(material, layer) & (layer.dtz > 3))[7])
    dtz = layer.dtz.copy()
    dtz[wrong] -= 2
    blob, _ = compact.encode_values(material, compact.dtz_codes(layer.category, dtz), kind=compact.WCDF_DTZ)
    compact.write_marks(compact.write_compact(compact.compact_path(directory, material, kind=compact.WCDF_DTZ), blob))
    return wrong, dtz


def test_a_wrong_stored_dtz_is_found_against_the_master(master_dir, tmp_path):
    wrong, dtz = write_a_wrong_dtz(master_dir, tmp_path)
    report = verify_compact(tmp_path, masters=master_dir, materials=[Material.parse("2k-1k")])
    assert report.errors == 1, report.messages
    assert (f"2k-1k.dtz #{wrong}): stored DTZ {int(dtz[wrong])} differs from the master's "
            f"{int(rule_layer(master_dir, Material.parse('2k-1k')).dtz[wrong])}") in report.messages[0]


@pytest.mark.slow
def test_without_masters_every_dtz_up_to_four_pieces_is_checked_against_its_successors(master_dir, compact_dir,
                                                                                      tmp_path):
    report = verify_compact(compact_dir, masters=compact_dir / "none")
    assert report.ok, report.messages[:5]
    assert report.dtz_files == len(all_materials(MAX_PIECES))
    assert report.dtz_checked == sum(int(quiet_decisive(m, rule_layer(master_dir, m)).sum())
                                     for m in all_materials(MAX_PIECES))
    wrong, dtz = write_a_wrong_dtz(master_dir, tmp_path)
    alone = verify_compact(tmp_path, masters=tmp_path / "none", materials=[Material.parse("2k-1k")])
    assert alone.errors == 2, alone.messages  # the position, and the layer checksum recounted from the files
    assert f"2k-1k.dtz #{wrong}): stored DTZ {int(dtz[wrong])} is not the one its successors give" in alone.messages[0]
    assert "differ from the reference (rule_layers.tsv, wcdf): checksum_crc32" in alone.messages[1]


def test_a_dtz_file_of_another_material_is_refused(compact_dir, tmp_path):
    for path in compact_dir.glob("2k-1k.*"):
        if path.name != "2k-1k.dtz.marks":
            shutil.copy(path, tmp_path)
    shutil.copy(compact.compact_path(compact_dir, Material.parse("1k-2k"), kind=compact.WCDF_DTZ),
                compact.compact_path(tmp_path, Material.parse("2k-1k"), kind=compact.WCDF_DTZ))
    table = compact.CompactTable(compact.compact_path(tmp_path, Material.parse("2k-1k")))
    with pytest.raises(TableError, match=r"2k-1k\.dtz: holds material 1k-2k, not 2k-1k"):
        table.layer("wcdf")


def test_compact_stale_adds_the_dtz_files_a_directory_lacks(master_dir, tmp_path, capsys):
    for material in all_materials(3):
        shutil.copy(master.table_path(master_dir, material), tmp_path)
    assert cli.main(["compact", "--tables", str(tmp_path), "--jobs", "1", "--quiet"]) == cli.EXIT_OK
    kept = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.w*")}
    for path in tmp_path.glob("*.dtz*"):  # a directory compacted before .dtz files
        path.unlink()
    capsys.readouterr()
    assert cli.main(["compact", "--tables", str(tmp_path), "--stale", "--jobs", "2"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert f"compacted {len(all_materials(3))} tables" in out and "DTZ" in out
    assert sorted(p.stem for p in tmp_path.glob("*.dtz")) == sorted(m.name for m in all_materials(3))
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("*.w*")} == kept  # .wld, .wcdf untouched
    assert cli.main(["compact", "--tables", str(tmp_path), "--stale"]) == cli.EXIT_OK
    assert "is up to date" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()  # no master at all is no "up to date"
    assert cli.main(["compact", "--tables", str(tmp_path / "empty"), "--stale"]) == cli.EXIT_FAILED
    assert "no master tables in" in capsys.readouterr().err
    os.utime(master.table_path(tmp_path, Material.parse("2k-1k")))  # the master rebuilt: all three again
    assert [m.name for m in compaction.stale_materials(tmp_path)] == ["2k-1k"]


def test_a_master_layer_with_a_changed_dtz_is_refused_before_a_dtz_file_is_written(master_dir, tmp_path):
    import h5py
    material = Material.parse("2k-1k")
    path = shutil.copy(master.table_path(master_dir, material), tmp_path)
    with h5py.File(path, "r+") as f:
        f["rules/wcdf/dtz"][5] += 1
    with pytest.raises(TableError, match=r"2k-1k\.h5: rule layer wcdf checksum mismatch"):
        compaction.compact_material(tmp_path, material)
    assert not compact.compact_path(tmp_path, material, kind=compact.WCDF_DTZ).exists()


def test_a_killed_writers_temporary_files_are_removed_by_the_next_run(master_dir, tmp_path):
    shutil.copy(master.table_path(master_dir, Material.parse("1k-1k")), tmp_path)
    dead = 2
    while True:  # a process id no process has
        try:
            os.kill(dead, 0)
            dead += 1
        except ProcessLookupError:
            break
        except PermissionError:
            dead += 1
    left = [tmp_path / f"1k-1k.dtz.{dead}.tmp", tmp_path / f"1k-1k.wld.marks.{dead}.tmp"]
    running = tmp_path / f"1k-1k.wcdf.{os.getppid()}.tmp"  # a writer still at work (a live process): kept
    for path in (*left, running):
        path.write_bytes(b"half a file")
    compaction.compact_directory(tmp_path)
    assert [p.exists() for p in left] == [False, False] and running.exists()
    assert compact.CompactTable(compact.compact_path(tmp_path, Material.parse("1k-1k"))).layer("wcdf").dtz_file


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from Linux's /proc")
def test_a_killed_writer_not_yet_reaped_counts_as_dead(tmp_path):
    # where nothing reaps orphans (a container's first process may not), a killed build's workers stay
    # zombies: their process ids answer a signal, but they write nothing any more
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # exits, and is not waited for
    deadline = time.monotonic() + 30
    while open(f"/proc/{zombie.pid}/stat").read().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child never exited"
        time.sleep(0.01)
    left = tmp_path / f"3k-1m.wcdf.marks.{zombie.pid}.tmp"
    running = tmp_path / f"3k-1m.wcdf.{os.getpid()}.tmp"
    for path in (left, running):
        path.write_bytes(b"half a file")
    assert compact.remove_leftovers(tmp_path) == [left]
    assert running.exists()
    zombie.wait()
