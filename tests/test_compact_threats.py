"""WLD files that leave threat positions out (format version 2, :mod:`egtb.rules.threats`): every
probe answers as from the files that store them."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from egtb.builder.driver import build
from egtb.builder.native import read_categories
from egtb.builder.native_reference import native_figures
from egtb.builder.verify_compact import verify_compact
from egtb.cli import main
from egtb.errors import TableError
from egtb.formats import compact
from egtb.formats.compact.layout import THREATS_VERSION, WCDF, WCDF_DTZ, material_counts
from egtb.formats.master import stored_materials
from egtb.formats.values import BLESSED_LOSS, CURSED_WIN, LOSS, WIN
from egtb.positions.material import Material, all_materials, count_positions
from egtb.positions.walk import capture_flags, left_out_flags, unrank_range
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import DRAW_RULES
from egtb.rules.movegen import M_BK, M_BM, M_WK, M_WM, generate_moves, has_capture, new_move_buffer
from egtb.rules.threats import threat_left_out

#: A material whose categories get made-up cursed wins and blessed losses (as exceptions), so that
#: a threat position's category is looked up in them.
MATERIAL = Material.parse("2k-1m1k")
PROBED = [MATERIAL, Material.parse("1m2k-1k"), Material.parse("1m-2k"),
          *(pytest.param(Material.parse(name), marks=pytest.mark.slow) for name in ("1m1k-2k", "2m-1m1k", "2k-2k"))]
WCDF_RULE = DRAW_RULES["wcdf"]


def positions(material: Material) -> tuple[np.ndarray, ...]:
    """Every position of a material as bitboard arrays (Black to move)."""
    n = count_positions(material)
    out = [np.empty(n, dtype=np.int64) for _ in range(4)]
    unrank_range(material_counts(material), 0, n, *out, np.empty(n, dtype=np.bool_))
    return tuple(out)


def write_refined(directory: Path, codes: np.ndarray) -> None:
    """MATERIAL's categories ``codes`` as exceptions to the WLD file in ``directory``."""
    wdl_crc = compact.CompactTable(compact.compact_path(directory, MATERIAL)).header_crc
    blob, _ = compact.encode_kinds(MATERIAL, lambda lo, hi: [codes[lo:hi].copy()], [WCDF], as_exceptions=True,
                                   wdl_crc=wdl_crc)[0]
    compact.write_compact(compact.compact_path(directory, MATERIAL, kind=WCDF), blob)


@pytest.fixture(scope="module")
def two_directories(compact_tables, tmp_path_factory) -> tuple[Path, Path]:
    """The compact files up to 4 pieces twice, MATERIAL's categories with made-up exceptions (every
    7th stored win cursed, every 5th stored loss blessed): with the WLD files as written, and with
    every WLD file written again leaving threat positions out."""
    source = compact_tables(4)
    plain, threats = (tmp_path_factory.mktemp(name) for name in ("plain", "threats"))
    for directory in (plain, threats):
        shutil.copytree(source, directory, dirs_exist_ok=True)
    codes = compact.CompactTable(compact.compact_path(source, MATERIAL, kind=WCDF)).values()
    must = np.empty(len(codes), dtype=np.bool_)
    capture_flags(material_counts(MATERIAL), 0, len(codes), must)
    codes[np.flatnonzero(~must & (codes == WIN))[::7]] = CURSED_WIN
    codes[np.flatnonzero(~must & (codes == LOSS))[::5]] = BLESSED_LOSS
    write_refined(plain, codes)
    for material in stored_materials(source, suffix=compact.SUFFIX):
        path = compact.compact_path(threats, material)
        values = compact.CompactTable(path).values()
        compact.write_marks(compact.write_compact(path, compact.encode_values(material, values, threats=True)[0]))
    write_refined(threats, codes)
    return plain, threats


def test_the_threat_positions_are_those_whose_every_move_a_search_answers():
    rng = np.random.default_rng(5)
    moves = new_move_buffer()
    counted = [0, 0]
    for _ in range(8000):
        squares = rng.choice(32, size=int(rng.integers(2, 8)), replace=False)
        split = int(rng.integers(1, len(squares)))
        kings = rng.integers(0, 2, size=len(squares)).astype(bool)
        black = [(int(s), bool(k) or s >= 28) for s, k in zip(squares[:split], kings[:split])]
        white = [(int(s), bool(k) or s < 4) for s, k in zip(squares[split:], kings[split:])]
        bm, bk = sum(1 << s for s, k in black if not k), sum(1 << s for s, k in black if k)
        wm, wk = sum(1 << s for s, k in white if not k), sum(1 << s for s, k in white if k)
        turn = int(rng.integers(0, 2))
        threat = not has_capture(bm, bk, wm, wk, turn) and has_capture(bm, bk, wm, wk, 1 - turn)
        want = threat
        for j in range(generate_moves(bm, bk, wm, wk, turn, moves) if threat else 0):
            child = tuple(int(v) for v in moves[j, [M_BM, M_BK, M_WM, M_WK]])
            if not has_capture(*child, 1 - turn) and has_capture(*child, turn):
                want = False  # a move leaves a threat of the mover's: that child could be left out
        assert bool(threat_left_out(bm, bk, wm, wk, turn)) == want
        counted[want] += threat
    assert min(counted) > 40  # threats of both kinds were met


def test_a_threats_file_is_version_2_and_smaller(two_directories):
    plain, threats = two_directories
    materials = stored_materials(plain, suffix=compact.SUFFIX)
    assert len(materials) == 41
    coded = [sum(len(compact.CompactTable(compact.compact_path(d, m)).data) for m in materials)
             for d in (plain, threats)]  # the blocks: each file's header and code lengths take 1.3 KB
    assert coded[1] < 0.9 * coded[0]  # 13% less here; about half at 6 pieces (bench/bench_threats.py)
    table = compact.CompactTable(compact.compact_path(threats, MATERIAL))
    assert table.threats and table.layer("wcdf").threats and not compact.CompactTable(
        compact.compact_path(plain, MATERIAL)).threats
    assert compact.compact_path(threats, MATERIAL).read_bytes()[8:10] == THREATS_VERSION.to_bytes(2, "little")
    must, threat = flags_of(MATERIAL)
    assert threat.sum() > 1000 and not (threat & must).any()  # threat positions left out


@pytest.mark.parametrize("material", PROBED, ids=str)
def test_batch_probes_answer_as_from_the_files_that_store_every_threat(two_directories, material):
    plain, threats = two_directories
    rng = np.random.default_rng(3)
    arrays = positions(material)
    with Tablebase(plain) as ta, Tablebase(threats) as tb:
        for turn in (0, 1):
            assert tb.probe_batch(*arrays, turn)[0].tolist() == ta.probe_batch(*arrays, turn)[0].tolist()
            counters = rng.integers(0, 81, len(arrays[0]))
            for want, got in zip(ta.probe_batch_rule(*arrays, turn, counters),
                                 tb.probe_batch_rule(*arrays, turn, counters)):
                assert got.tolist() == want.tolist()


@pytest.mark.parametrize("material", [PROBED[0], *(pytest.param(m, marks=pytest.mark.slow) for m in PROBED[1:3]),
                                      *PROBED[3:]], ids=str)
def test_single_probes_answer_as_from_the_files_that_store_every_threat(two_directories, material):
    plain, threats = two_directories
    rng = np.random.default_rng(4)
    arrays = positions(material)
    picked = rng.choice(len(arrays[0]), size=min(len(arrays[0]), 1500), replace=False)
    with Tablebase(plain) as ta, Tablebase(threats) as tb:
        for i in picked.tolist():
            turn = i & 1
            key = tuple(int(a[i]) for a in arrays) + (turn,)
            counter = int(rng.integers(0, 81))
            assert tb._probe_key(key) == ta._probe_key(key), key
            assert tb._probe_rule_key(key, WCDF_RULE, counter) == ta._probe_rule_key(key, WCDF_RULE, counter), key


def test_a_threat_position_first_probed_through_python_is_answered(two_directories):
    """A fresh prober reads a table the kernels have not loaded through the table kinds (and
    searches a threat position in Python): the same answers, cursed and blessed ones included."""
    plain, threats = two_directories
    arrays = positions(MATERIAL)
    threat = [i for i in range(0, len(arrays[0]), 7)
              if threat_left_out(*(int(a[i]) for a in arrays), 0)][:40]
    assert len(threat) == 40
    with Tablebase(plain) as ta:
        want = [ta._probe_rule_key(tuple(int(a[i]) for a in arrays) + (0,), WCDF_RULE, 0) for i in threat]
    got = []
    for i in threat:
        with Tablebase(threats) as tb:
            got.append(tb._probe_rule_key(tuple(int(a[i]) for a in arrays) + (0,), WCDF_RULE, 0))
    assert got == want


def test_egtb_compact_threats_recodes_a_directory_which_then_answers_the_same(compact_tables, tmp_path, capsys):
    source = compact_tables(3)
    shutil.copytree(source, tmp_path, dirs_exist_ok=True)
    assert main(["compact", "--tables", str(tmp_path), "--threats"]) == 0
    assert "WLD files with threat positions left out" in capsys.readouterr().out
    materials = stored_materials(tmp_path, suffix=compact.SUFFIX)
    assert all(compact.CompactTable(compact.compact_path(tmp_path, m)).threats for m in materials)
    assert all(compact.marks_path(compact.compact_path(tmp_path, m)).exists() for m in materials)
    with Tablebase(source) as ta, Tablebase(tmp_path) as tb:
        for material in materials:
            arrays = positions(material)
            for turn in (0, 1):
                assert tb.probe_batch(*arrays, turn)[0].tolist() == ta.probe_batch(*arrays, turn)[0].tolist()
    before = {m: compact.compact_path(tmp_path, m).stat().st_mtime_ns for m in materials}
    assert main(["compact", "--tables", str(tmp_path), "--threats", "--quiet"]) == 0  # again: nothing to do
    assert {m: compact.compact_path(tmp_path, m).stat().st_mtime_ns for m in materials} == before


def test_a_build_reads_categories_coded_as_exceptions_to_a_threats_file_as_the_others(two_directories):
    plain, threats = two_directories
    n = count_positions(MATERIAL)
    want, got = np.empty(n, dtype=np.int8), np.empty(n, dtype=np.int8)
    read_categories(plain, MATERIAL, want)
    read_categories(threats, MATERIAL, got)
    assert got.tolist() == want.tolist()
    assert (np.abs(got) == 1).sum() > 100  # its cursed and blessed ones among them
    # after a crowning only: those a crowning reaches (a white king on squares 1-4), and the stored ones
    read_categories(plain, MATERIAL, want, crowned_only=True)
    read_categories(threats, MATERIAL, got, crowned_only=True)
    boards = positions(MATERIAL)
    left_out = left_out_of(MATERIAL)
    meant = ~left_out | ((boards[3] & 0xF) != 0)
    assert got[meant].tolist() == want[meant].tolist() and (left_out & ~meant).sum() > 100


@pytest.fixture()
def native_threats(compact_tables, tmp_path) -> Path:
    """The compact files up to 3 pieces alone (a compact-native set), their WLD files re-coded
    leaving threat positions out."""
    for path in compact_tables(3).iterdir():
        if path.suffix in (".wld", ".wcdf", ".dtz", ".marks"):
            shutil.copy(path, tmp_path / path.name)
    assert main(["compact", "--tables", str(tmp_path), "--threats", "--quiet"]) == 0
    return tmp_path


def test_verify_checks_a_threats_file_against_the_successors_and_ignores_its_filler(native_threats):
    materials = all_materials(3)
    report = verify_compact(native_threats, materials=materials)
    assert report.ok, report.messages[:3]
    assert report.checked == report.layer_checked == sum(count_positions(m) for m in materials)
    material = Material.parse("2k-1k")
    path = compact.compact_path(native_threats, material)
    codes = compact.CompactTable(path).values()
    must, threat_flags = flags_of(material)
    threat, stored = np.flatnonzero(threat_flags), np.flatnonzero(~(must | threat_flags) & (codes == WIN))
    assert len(threat) > 10
    changed = codes.copy()
    changed[threat] = LOSS  # filler: a search gives them
    compact.write_marks(compact.write_compact(path, compact.encode_values(material, changed, threats=True)[0]))
    assert verify_compact(native_threats, materials=[material]).ok
    changed[stored[0]] = LOSS
    compact.write_marks(compact.write_compact(path, compact.encode_values(material, changed, threats=True)[0]))
    report = verify_compact(native_threats, materials=[material])
    assert not report.ok and f"2k-1k.wld #{stored[0]}" in report.messages[0], report.messages


def test_verify_against_the_masters_recovers_the_threat_positions_as_the_captures(built_tables, native_threats):
    report = verify_compact(native_threats, materials=all_materials(3), masters=built_tables(3))
    assert report.ok, report.messages[:3]
    assert report.checked == sum(count_positions(m) for m in all_materials(3))


def test_the_reference_figures_of_a_threats_file_are_those_of_the_file_before(compact_tables, native_threats):
    for material in all_materials(3):
        assert native_figures(native_threats, material) == native_figures(compact_tables(3), material)


def test_a_compact_native_build_with_threats_writes_them_and_the_same_other_files(tmp_path):
    plain, threats = tmp_path / "plain", tmp_path / "threats"
    build(3, directory=plain, jobs=1, progress=False, native=True)
    build(3, directory=threats, jobs=1, progress=False, native=True, threats=True)
    materials = all_materials(3)
    for material in materials:
        wld = [compact.CompactTable(compact.compact_path(d, material)) for d in (plain, threats)]
        assert not wld[0].threats and wld[1].threats
        assert wld[1].values()[~left_out_of(material)].tolist() == wld[0].values()[~left_out_of(material)].tolist()
        for kind in (WCDF, WCDF_DTZ):  # the categories (coded in full) and the DTZ: byte for byte
            assert (compact.compact_path(threats, material, kind=kind).read_bytes()
                    == compact.compact_path(plain, material, kind=kind).read_bytes())
    assert verify_compact(threats, materials=materials).ok
    with pytest.raises(ValueError, match="--no-compact-native"):
        build(3, directory=tmp_path / "none", jobs=1, progress=False, native=False, threats=True)


def flags_of(material: Material) -> tuple[np.ndarray, np.ndarray]:
    """Whether each position of a material must capture, and whether it is a threat position a WLD
    file leaves out."""
    must, threat = (np.empty(count_positions(material), dtype=np.bool_) for _ in range(2))
    left_out_flags(material_counts(material), 0, len(must), must, threat)
    return must, threat


def left_out_of(material: Material) -> np.ndarray:
    """Whether each position of a material is left out of a WLD file that leaves threats out."""
    must, threat = flags_of(material)
    return must | threat
