"""Category files coded as exceptions to the WLD file (the ``.wcdf`` of 8 pieces and more): read,
probed and checked as the category files coded in full."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from egtb.builder.driver import build
from egtb.cli import main
from egtb.errors import TableError
from egtb.formats import compact
from egtb.formats.compact import exceptions
from egtb.formats.compact.layout import WCDF, WCDF_DTZ, WDL, material_counts
from egtb.formats.values import BLESSED_LOSS, CURSED_WIN, LOSS, WIN
from egtb.positions.index import global_unrank
from egtb.positions.material import Material, all_materials, count_positions
from egtb.positions.walk import capture_flags
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import DRAW_RULES

MATERIAL = Material.parse("2k-1m1k")
WCDF_RULE = DRAW_RULES["wcdf"]


def stored(material: Material) -> np.ndarray:
    """Whether each position's side to move need not capture (a compact file stores it)."""
    must = np.empty(count_positions(material), dtype=np.bool_)
    capture_flags(material_counts(material), 0, len(must), must)
    return ~must


@pytest.fixture(scope="module")
def two_codings(compact_tables, tmp_path_factory) -> tuple[Path, Path, np.ndarray]:
    """Two copies of the compact files up to 4 pieces in which MATERIAL's categories have every 7th
    stored win cursed and every 5th stored loss blessed (made up: no table of 4 pieces has one):
    its ``.wcdf`` coded in full in the first, as exceptions in the second; and those categories."""
    source = compact_tables(4)
    full, refined = (tmp_path_factory.mktemp(name) for name in ("full", "refined"))
    for directory in (full, refined):
        shutil.copytree(source, directory, dirs_exist_ok=True)
    codes = compact.CompactTable(compact.compact_path(source, MATERIAL, kind=WCDF)).values()
    keep = stored(MATERIAL)
    codes[np.flatnonzero(keep & (codes == WIN))[::7]] = CURSED_WIN
    codes[np.flatnonzero(keep & (codes == LOSS))[::5]] = BLESSED_LOSS
    path = compact.compact_path(full, MATERIAL, kind=WCDF)
    compact.write_marks(compact.write_compact(path, compact.encode_values(MATERIAL, codes.copy(), kind=WCDF)[0]))
    wdl_crc = compact.CompactTable(compact.compact_path(refined, MATERIAL)).header_crc
    blob, _ = compact.encode_kinds(MATERIAL, lambda lo, hi: [codes[lo:hi].copy()], [WCDF], as_exceptions=True,
                                   wdl_crc=wdl_crc)[0]
    compact.write_compact(compact.compact_path(refined, MATERIAL, kind=WCDF), blob)
    return full, refined, codes


def test_a_file_coded_as_exceptions_holds_only_the_cursed_and_blessed_positions(two_codings):
    _, refined, codes = two_codings
    path = compact.compact_path(refined, MATERIAL, kind=WCDF)
    found = exceptions.read_exceptions(path)
    want = np.flatnonzero(stored(MATERIAL) & ((codes == CURSED_WIN) | (codes == BLESSED_LOSS)))
    assert len(want) > 100
    assert found.indices.tolist() == want.tolist()
    assert path.stat().st_size == exceptions.EXCEPTIONS_HEADER.size + 8 * len(want)
    assert not compact.marks_path(path).exists()


def test_its_codes_are_those_of_the_file_coded_in_full_at_every_stored_position(two_codings):
    full, refined, codes = two_codings
    keep = stored(MATERIAL)
    a, b = (compact.CompactTable(compact.compact_path(d, MATERIAL)).layer("wcdf") for d in (full, refined))
    assert b.kind is WCDF and b.coded_path == compact.compact_path(refined, MATERIAL)
    assert b.codes(0, len(b))[keep].tolist() == codes[keep].tolist() == a.codes(0, len(a))[keep].tolist()
    assert b.codes(1000, 5000)[keep[1000:5000]].tolist() == codes[1000:5000][keep[1000:5000]].tolist()
    picked = np.flatnonzero(keep)[::53]
    assert [b.value(int(i)) for i in picked] == codes[picked].tolist()  # the lookup kernel


def test_the_wld_codes_refined_at_ascending_positions_are_the_categories_coded_in_full(two_codings):
    # what the verify reads: its WLD file's codes at a chunk's successors, refined by the exceptions;
    # ranges that start and end inside the exceptions' span, and positions given twice
    full, refined, codes = two_codings
    keep = np.flatnonzero(stored(MATERIAL))
    table = compact.CompactTable(compact.compact_path(refined, MATERIAL)).layer("wcdf")
    wld = compact.CompactTable(compact.compact_path(refined, MATERIAL))
    rng = np.random.default_rng(5)
    for picked in (keep, keep[len(keep) // 3:len(keep) // 2], np.sort(rng.choice(keep, 400)), keep[7:8],
                   np.repeat(keep[::9], 2)):
        got = table.refined_at(picked, wld.codes(0, len(wld))[picked])
        assert got.tolist() == codes[picked].tolist()


def test_probes_through_either_coding_agree_at_every_counter(two_codings):
    full, refined, _ = two_codings
    rng = np.random.default_rng(11)
    n = count_positions(MATERIAL)
    rows = np.array([global_unrank(MATERIAL, i) for i in range(n)], dtype=np.int64)
    arrays = tuple(rows[:, k].copy() for k in range(4))
    with Tablebase(full) as ta, Tablebase(refined) as tb:
        for turn in (0, 1):
            counters = rng.integers(0, 81, n)
            want, got = ta.probe_batch_rule(*arrays, turn, counters), tb.probe_batch_rule(*arrays, turn, counters)
            for w, g in zip(want, got):
                assert g.tolist() == w.tolist()
            assert turn or (np.abs(want[1]) == 1).sum() > 100  # cursed and blessed answered (Black to move)
            for k in range(0, n, 389):
                position = tuple(int(a[k]) for a in arrays) + (turn,)
                assert tb._probe_rule_key(position, WCDF_RULE, int(counters[k])) == \
                    ta._probe_rule_key(position, WCDF_RULE, int(counters[k]))


def test_a_wld_file_written_again_is_not_refined_by_the_old_exceptions(two_codings, tmp_path):
    _, refined, _ = two_codings
    for path in refined.glob(f"{MATERIAL.name}.*"):
        shutil.copy(path, tmp_path / path.name)
    wld = compact.compact_path(tmp_path, MATERIAL)
    table = compact.CompactTable(wld)
    compact.write_compact(wld, compact.encode_values(MATERIAL, table.values() % 3 + 1)[0])
    with pytest.raises(TableError, match=r"wcdf: refines another .*\.wld"):
        compact.CompactTable(wld).layer("wcdf")


@pytest.mark.parametrize("damage", ["cut", "flip", "header"])
def test_a_damaged_exceptions_file_is_named(two_codings, tmp_path, damage):
    _, refined, _ = two_codings
    for path in refined.glob(f"{MATERIAL.name}.*"):
        shutil.copy(path, tmp_path / path.name)
    path = compact.compact_path(tmp_path, MATERIAL, kind=WCDF)
    blob = bytearray(path.read_bytes())
    if damage == "cut":
        blob = blob[:-5]
    else:
        blob[100 if damage == "flip" else 20] ^= 1
    path.write_bytes(bytes(blob))
    with pytest.raises(TableError, match=str(path)):
        compact.CompactTable(path)


@pytest.mark.slow  # a build and a verify: keeps make test under 3 minutes
def test_recoded_tables_feed_the_next_piece_count_which_is_written_coded_so_and_verifies(
        compact_tables, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(exceptions, "EXCEPTIONS_FROM_PIECES", 3)  # the build's workers fork after it
    shutil.copytree(compact_tables(3), tmp_path, dirs_exist_ok=True)
    assert main(["compact", "--tables", str(tmp_path), "--recode"]) == 0
    three = all_materials(3, min_pieces=3)
    assert f"{len(three)} category files coded as exceptions" in capsys.readouterr().out
    assert main(["compact", "--tables", str(tmp_path), "--recode", "--json"]) == 0  # again: nothing to do
    assert all(after == exceptions.EXCEPTIONS_HEADER.size == before
               for before, after in json.loads(capsys.readouterr().out)["recoded"].values())
    build(4, min_pieces=4, directory=tmp_path, jobs=2, progress=False, native=True)
    source = compact_tables(4)
    for material in all_materials(4, min_pieces=4):
        for kind in (WDL, WCDF_DTZ):
            path = compact.compact_path(tmp_path, material, kind=kind)
            assert path.read_bytes() == compact.compact_path(source, material, kind=kind).read_bytes()
        path = compact.compact_path(tmp_path, material, kind=WCDF)
        assert exceptions.is_exceptions_header(path.read_bytes()[:64]) and not compact.marks_path(path).exists()
        keep = stored(material)
        got = compact.CompactTable(path).codes(0, count_positions(material))
        want = compact.CompactTable(compact.compact_path(source, material, kind=WCDF)).values()
        assert got[keep].tolist() == want[keep].tolist(), material.name
    assert main(["verify", "--tables", str(tmp_path), "--pieces", "4", "--quiet"]) == 0
    assert "verified" in capsys.readouterr().out
