"""The check of compact-native tables against their successors (egtb.builder.verify_compact, issue 31
item 6): every value, wcdf category and DTZ re-checked from the compact files alone, a chunk at a
time (no whole file decoded), resumable after a kill.

The tables are the session's compact files up to 4 pieces (``compact_tables``), copied, checked
without their masters; a wrong code is written into a copy through the writer, as a damaged build
would leave it (its blocks' CRCs hold: only the check against the successors can tell).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from egtb.builder import dense_units, native_reference
from egtb.builder.native_reference import native_figures
from egtb.builder.figures import TableFigures
from egtb.builder.reference import load_reference, load_rule_reference, recounted_differences
from egtb.errors import TableError
from egtb.positions.walk import unrank_range
from egtb.builder.verify_compact import passed_figures, verify_compact
from egtb.builder.successor_check import quiet_successors, successor_ranks, unranked
from egtb.builder.verify_native import max_moves
from egtb.builder.verify_progress import progress_path
from egtb.cli import main
from egtb.formats import compact
from egtb.formats.compact import CompactTable
from egtb.formats.values import CAT_CURSED_WIN, CAT_WIN, DRAW, LOSS, WIN
from egtb.positions.index import global_unrank
from egtb.positions.material import Material, all_materials, count_positions
from egtb.probe.locate import locate_valid
from egtb.rules.movegen import BLACK_TO_MOVE, M_BK, M_BM, M_WK, M_WM, MAX_MOVES, MOVE_WIDTH, generate_moves

MATERIAL = Material.parse("2k-1k")


@pytest.fixture()
def tables(compact_tables, tmp_path) -> Path:
    """A copy of the compact files up to 3 pieces, no master beside them (a compact-native set)."""
    directory = tmp_path / "tables"
    directory.mkdir()
    for path in compact_tables(4).iterdir():
        if path.suffix in (".wld", ".wcdf", ".dtz", ".marks") and Material.parse(path.name.split(".")[0]).pieces <= 3:
            shutil.copy(path, directory / path.name)
    return directory


def quiet(material: Material) -> np.ndarray:
    """Whether each position's side to move (Black) need not capture."""
    n = count_positions(material)
    cap = np.empty(n, dtype=np.bool_)
    unrank_range(compact.material_counts(material), 0, n, *(np.empty(n, dtype=np.int64) for _ in range(4)), cap)
    return ~cap


def rewrite(directory: Path, material: Material, kind, index: int, code: int) -> int:
    """Write ``material``'s file of ``kind`` again with one code changed (through the writer, its
    blocks' CRCs and marks file made anew); the code it held."""
    path = compact.compact_path(directory, material, kind=kind)
    codes = CompactTable(path).values()
    before = int(codes[index])
    codes[index] = code
    blob, _ = compact.encode_values(material, codes, kind=kind)
    compact.write_marks(compact.write_compact(path, blob))
    return before


def first_quiet(directory: Path, material: Material, kind, code: int, start: int = 0) -> int:
    """The first position from ``start`` whose side need not capture holding ``code`` in its ``kind`` file."""
    codes = CompactTable(compact.compact_path(directory, material, kind=kind)).values()
    return start + int(np.flatnonzero(quiet(material)[start:] & (codes[start:] == code))[0])


def fen_of(material: Material, index: int) -> str:
    from egtb.rules.notation import Placement, format_fen
    return format_fen(Placement(*global_unrank(material, index), 0))


def test_the_untouched_tables_pass_and_every_quiet_win_and_loss_has_its_dtz_checked(tables):
    report = verify_compact(tables, materials=all_materials(3), resume=False)
    assert report.ok, report.messages[:3]
    assert report.tables == report.layers == report.dtz_files == len(all_materials(3))
    assert report.checked == report.layer_checked == sum(count_positions(m) for m in all_materials(3))
    expected = 0
    for material in all_materials(3):
        table = CompactTable(compact.compact_path(tables, material, kind=compact.WCDF))
        category = np.asarray(table.kind.value_of_code)[table.values()]
        expected += int(np.count_nonzero(quiet(material) & (np.abs(category) == CAT_WIN)))
    assert report.dtz_checked == expected > 0
    assert report.captures == sum(int(np.count_nonzero(~quiet(m))) for m in all_materials(3)) > 0


def test_a_wrong_value_is_caught_against_its_successors(tables):
    index = first_quiet(tables, MATERIAL, compact.WDL, WIN)
    assert rewrite(tables, MATERIAL, compact.WDL, index, DRAW) == WIN
    report = verify_compact(tables, materials=[MATERIAL], resume=False)
    assert report.errors == 3, report.messages  # the value, the category's side that no longer agrees, the counts
    assert report.messages == [
        f"{fen_of(MATERIAL, index)} (2k-1k.wld #{index}): stored value is not the best value over its successors",
        f"{fen_of(MATERIAL, index)} (2k-1k.wcdf #{index}): stored category disagrees with 2k-1k.wld",
        "2k-1k: figures recounted from its files differ from the reference (tables.tsv): wins 14845 (reference "
        "14846), draws 35 (reference 34)"]


def test_a_wrong_category_of_the_right_side_is_caught_against_its_successors(tables):
    codes = compact.category_codes(np.array([CAT_WIN, CAT_CURSED_WIN], dtype=np.int8))
    index = first_quiet(tables, MATERIAL, compact.WCDF, int(codes[0]), start=1000)
    rewrite(tables, MATERIAL, compact.WCDF, index, int(codes[1]))  # a win made a cursed win: still a win
    report = verify_compact(tables, materials=[MATERIAL], resume=False)
    assert report.errors == 2, report.messages  # and the counts, against the reference
    assert report.messages[0] == (f"{fen_of(MATERIAL, index)} (2k-1k.wcdf #{index}): stored category is not the "
                                  "one its successors give")
    assert report.messages[1].startswith("2k-1k: figures recounted from its files differ from the reference "
                                         "(rule_layers.tsv, wcdf): wins 14845 (reference 14846), cursed_wins 1 "
                                         "(reference 0)")


def write_a_wrong_dtz(tables: Path) -> tuple[int, int]:
    """Add 2 to the DTZ of a quiet win or loss of MATERIAL's ``.dtz``; (its index, the DTZ now stored)."""
    dtz_kind = compact.DTZ_KINDS["wcdf"]
    codes = CompactTable(compact.compact_path(tables, MATERIAL, kind=dtz_kind)).values()
    category = CompactTable(compact.compact_path(tables, MATERIAL, kind=compact.WCDF)).values()
    decisive = quiet(MATERIAL) & np.isin(category, compact.category_codes(np.array([CAT_WIN, -CAT_WIN])))
    index = int(np.flatnonzero(decisive & (codes > 3))[5])
    rewrite(tables, MATERIAL, dtz_kind, index, int(codes[index]) + 2)
    return index, int(codes[index]) + 2 - 1  # a DTZ file's code is DTZ + 1


def test_a_wrong_dtz_is_caught_against_its_successors(tables):
    index, stored = write_a_wrong_dtz(tables)
    report = verify_compact(tables, materials=[MATERIAL], resume=False)
    assert report.errors == 2, report.messages  # and the layer's checksum, against the reference
    assert report.messages[0] == (f"{fen_of(MATERIAL, index)} (2k-1k.dtz #{index}): stored DTZ {stored} is not "
                                  "the one its successors give")
    assert report.messages[1].startswith("2k-1k: figures recounted from its files differ from the reference "
                                         "(rule_layers.tsv, wcdf): checksum_crc32 ")


@pytest.fixture()
def decoded_units(monkeypatch) -> list[int]:
    """Every unit of 1,000 positions or more that the successors reach read decoded whole
    (:mod:`egtb.builder.dense_units`), however few its successors: the sizes of the units decoded,
    as they are."""
    monkeypatch.setattr(dense_units, "MIN_UNIT", 1000)
    monkeypatch.setattr(dense_units, "POSITIONS_A_SUCCESSOR", 1 << 40)
    sizes = []
    packed = dense_units.DenseUnits.packed

    def counted(self, table, material, unit, size, rule):
        sizes.append(size)
        return packed(self, table, material, unit, size, rule)
    monkeypatch.setattr(dense_units.DenseUnits, "packed", counted)
    return sizes


def test_successors_read_from_decoded_units_give_the_report_of_those_looked_up(compact_tables, decoded_units,
                                                                               monkeypatch, tmp_path):
    materials = [Material.parse(name) for name in ("2k-2k", "1m1k-2k", "2k-1m1k", "3k-1k")]
    for path in compact_tables(4).iterdir():
        if path.suffix in (".wld", ".wcdf", ".dtz", ".marks"):
            shutil.copy(path, tmp_path / path.name)
    decoded = verify_compact(tmp_path, materials=materials, resume=False)
    assert {215_760, 143_840, 13_485} <= set(decoded_units)  # the units of 2k-2k, 3k-1k, 2k-1m1k
    monkeypatch.setattr(dense_units, "MIN_UNIT", 1 << 62)  # none
    looked_up = verify_compact(tmp_path, materials=materials, resume=False)
    assert decoded.ok and report_fields(decoded) == report_fields(looked_up)


@pytest.mark.parametrize("units", ["looked up", "decoded"])
def test_a_wrong_successor_value_is_caught_at_its_predecessors(tables, units, request):
    decoded = request.getfixturevalue("decoded_units") if units == "decoded" else []
    # a drawn 2k-1k position whose move reaches a drawn 1k-2k one: that one made a loss (for its
    # side to move) gives the 2k-1k position a win its stored draw does not have
    from egtb.probe.locate import locate_capture
    from egtb.rules.movegen import M_BK, M_BM, M_WK, M_WM, MAX_MOVES, MOVE_WIDTH, generate_moves
    successor = Material.parse("1k-2k")
    wdl = CompactTable(compact.compact_path(tables, MATERIAL)).values()
    reached = CompactTable(compact.compact_path(tables, successor)).values()
    moves = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    found = None
    for index in np.flatnonzero(quiet(MATERIAL) & (wdl == DRAW)).tolist():
        for m in range(generate_moves(*global_unrank(MATERIAL, index), 0, moves)):
            code, target, capture = locate_capture(moves[m, M_BM], moves[m, M_BK], moves[m, M_WM], moves[m, M_WK], 1)
            if not capture and reached[target] == DRAW:
                found = index, int(target)
                break
        if found:
            break
    index, target = found
    rewrite(tables, successor, compact.WDL, target, LOSS)
    report = verify_compact(tables, materials=[MATERIAL], resume=False)
    assert f"(2k-1k.wld #{index}): stored value is not the best value over its successors" in report.messages[0]
    assert bool(decoded) == (units == "decoded")


def killed_after(calls: int):
    """A progress callback that stops the check (as a kill would) at its ``calls``-th call."""
    seen = []

    def tell(name: str, positions: int) -> None:
        seen.append(name)
        if len(seen) == calls:
            raise KeyboardInterrupt
    return tell


def report_fields(report) -> dict:
    return {name: getattr(report, name) for name in ("tables", "checked", "errors", "messages", "captures",
                                                     "layers", "layer_checked", "dtz_files", "dtz_checked",
                                                     "figures")}


def test_a_killed_check_resumes_to_the_report_of_an_uninterrupted_one(tables, tmp_path):
    material = MATERIAL  # 14880 positions: 4 chunks of 4096
    for value_index in (first_quiet(tables, material, compact.WDL, WIN, start=5000),
                        first_quiet(tables, material, compact.WDL, WIN, start=10000)):
        rewrite(tables, material, compact.WDL, value_index, DRAW)  # errors in two chunks
    whole = verify_compact(tables, materials=[material], chunk=4096, resume=False)
    assert whole.errors == 5 and len(whole.messages) == 5  # four at the positions, one of the counts
    assert not progress_path(tables, material).exists()  # without resume, no record
    with pytest.raises(KeyboardInterrupt):  # 3 files told each chunk: stopped in its 4th chunk
        verify_compact(tables, materials=[material], chunk=4096, resume=True, save_every=0,
                       progress=killed_after(3 * 4 + 2))
    record = json.loads(progress_path(tables, material).read_text())
    assert record["next"] == 3 * 4096 and not record["done"]
    calls: list[tuple[str, int]] = []
    resumed = verify_compact(tables, materials=[material], chunk=4096, resume=True, save_every=0,
                             progress=lambda name, positions: calls.append((name, positions)))
    assert report_fields(resumed) == report_fields(whole)
    assert calls[:2] == [("2k-1k.wld", 0), ("2k-1k.wld", 3 * 4096)]  # went on from there
    assert sum(p for name, p in calls if name == "2k-1k.dtz") == count_positions(material)
    # the errors it found still count: a failed check is not skipped, and goes on no further
    again = verify_compact(tables, materials=[material], chunk=4096, resume=True)
    assert report_fields(again) == report_fields(whole) and not again.skipped


def test_a_passed_check_is_skipped_until_a_file_changes(tables):
    leftover = tables / "2k-1k.verify.json.999999999.tmp"  # a record a killed check was writing
    leftover.write_text("{")
    first = verify_compact(tables, materials=[MATERIAL], chunk=1 << 12, resume=True)
    assert first.ok and first.tables == 1 and not first.skipped and not leftover.exists()
    second = verify_compact(tables, materials=[MATERIAL], resume=True)
    assert second.ok and second.tables == 0 and second.skipped == ["2k-1k"]
    assert verify_compact(tables, materials=[MATERIAL], resume=False).tables == 1
    again = verify_compact(tables, materials=[MATERIAL], resume=True, again=True)  # --again: checked, recorded
    assert again.tables == 1 and not again.skipped and json.loads(progress_path(tables, MATERIAL).read_text())["done"]
    index = first_quiet(tables, MATERIAL, compact.WDL, WIN)
    rewrite(tables, MATERIAL, compact.WDL, index, DRAW)  # rebuilt since: checked again
    third = verify_compact(tables, materials=[MATERIAL], resume=True)
    assert third.tables == 1 and not third.skipped and third.errors == 3


def test_a_chunk_at_a_time_no_whole_file_is_decoded(tables, monkeypatch):
    index = first_quiet(tables, MATERIAL, compact.WDL, WIN, start=3000)
    rewrite(tables, MATERIAL, compact.WDL, index, DRAW)
    expected = report_fields(verify_compact(tables, materials=[MATERIAL], resume=False))
    figures = native_figures(tables, MATERIAL)

    def whole_file(self):
        raise AssertionError(f"{self.path.name} decoded whole")
    monkeypatch.setattr(CompactTable, "values", whole_file)
    for chunk in (1000, 4096, 1 << 18):
        assert report_fields(verify_compact(tables, materials=[MATERIAL], chunk=chunk, resume=False)) == expected
    assert native_figures(tables, MATERIAL, chunk=4096) == figures


@pytest.mark.parametrize("name", ["2k-2k", "1m1k-1k", "1k-1m2k", "2m-1m1k", "3k-1k"])
def test_a_range_is_unranked_as_the_index_orders_it(name):
    material = Material.parse(name)
    n = count_positions(material)
    for lo, hi in ((0, n), (1, n - 1), (n // 3, n // 3 + 777)):
        out = [np.empty(hi - lo, dtype=np.int64) for _ in range(4)] + [np.empty(hi - lo, dtype=np.bool_)]
        unrank_range(compact.material_counts(material), lo, hi, *out)
        for i in sorted({lo, (lo + hi) // 2, hi - 1}):
            assert tuple(int(a[i - lo]) for a in out[:4]) == tuple(global_unrank(material, i)), (name, i)


def test_the_command_line_resumes_and_checks_again(tables, capsys):
    args = ["verify", "--tables", str(tables), "--quiet", "--pieces", "3", "--no-reference", "--chunk", "4096"]
    assert main(args) == 0
    assert f"verified {len(all_materials(3))} tables" in capsys.readouterr().out
    assert main(args) == 0
    assert f"{len(all_materials(3))} materials passed before with the same files" in capsys.readouterr().out
    assert main([*args, "--again"]) == 0
    assert f"verified {len(all_materials(3))} tables" in capsys.readouterr().out
    assert main([*args[:-2], "--chunk", "0"]) == 2


def test_materials_checked_side_by_side_give_the_report_of_one_after_the_other(tables):
    index = first_quiet(tables, MATERIAL, compact.WDL, WIN, start=3000)
    rewrite(tables, MATERIAL, compact.WDL, index, DRAW)
    materials = [Material.parse(name) for name in ("2k-1k", "1k-2k", "1m1k-1k", "2k-1m")]
    alone = verify_compact(tables, materials=materials, resume=False)
    told: dict[str, int] = {}
    together = verify_compact(tables, materials=materials, resume=False, jobs=2,
                              progress=lambda name, positions: told.__setitem__(name, told.get(name, 0) + positions))
    # its two in 2k-1k, and 1k-2k positions whose moves reach it (a win found where a draw is stored)
    assert report_fields(together) == report_fields(alone) and alone.errors == 5  # and 2k-1k's counts
    assert any("1k-2k.wld" in m for m in alone.messages) and "(2k-1k.wld #" in alone.messages[0]
    assert told == {f"{m.name}{suffix}": count_positions(m) for m in materials for suffix in (".wld", ".wcdf", ".dtz")}


def test_a_successor_with_a_master_and_no_compact_file_is_named_with_the_command_that_writes_it(
        tables, built_tables):
    # mid-build, the smaller tables may still be masters alone: their compact files come at the end
    shutil.copy(built_tables(2) / "1k-1k.h5", tables / "1k-1k.h5")
    for path in tables.glob("1k-1k.*"):
        if path.suffix != ".h5":
            path.unlink()
    report = verify_compact(tables, materials=[MATERIAL], resume=False)
    assert not report.ok
    assert any("1k-1k.wld is missing; `egtb compact --stale --tables" in m for m in report.messages), report.messages


def drop_dtz(directory: Path, material: Material) -> None:
    """Remove a material's DTZ file and its marks (its pair's DTZ then held by its mirror alone)."""
    path = compact.compact_path(directory, material, kind=compact.DTZ_KINDS["wcdf"])
    path.unlink()
    Path(f"{path}.marks").unlink()


def test_a_pair_with_its_dtz_on_one_side_passes_and_checks_the_kept_sides_dtz(tables):
    whole = verify_compact(tables, materials=all_materials(3), resume=False)
    drop_dtz(tables, MATERIAL.mirrored())
    report = verify_compact(tables, materials=all_materials(3), resume=False)
    assert report.ok, report.messages[:3]
    assert report.tables == report.layers == report.dtz_files + 1 == len(all_materials(3))
    assert report.layer_checked == whole.layer_checked
    table = CompactTable(compact.compact_path(tables, MATERIAL.mirrored(), kind=compact.WCDF))
    derived = quiet(MATERIAL.mirrored()) & (np.abs(np.asarray(table.kind.value_of_code)[table.values()]) == CAT_WIN)
    assert report.dtz_checked == whole.dtz_checked - int(np.count_nonzero(derived)) < whole.dtz_checked


@pytest.mark.parametrize("wrong", ["dtz of the kept side", "category of the derived side"])
def test_a_wrong_code_is_caught_when_the_pairs_dtz_is_on_one_side(tables, wrong):
    drop_dtz(tables, MATERIAL.mirrored())
    if wrong == "dtz of the kept side":
        index, _ = write_a_wrong_dtz(tables)
        checked, file = MATERIAL, "2k-1k.dtz"
    else:
        codes = compact.category_codes(np.array([-CAT_WIN, -CAT_CURSED_WIN], dtype=np.int8))  # a loss made blessed
        checked, file = MATERIAL.mirrored(), "1k-2k.wcdf"
        index = first_quiet(tables, checked, compact.WCDF, int(codes[0]))
        rewrite(tables, checked, compact.WCDF, index, int(codes[1]))
    report = verify_compact(tables, materials=[checked], resume=False)
    assert not report.ok
    assert any(message.startswith(f"{fen_of(checked, index)} ({file} #{index}): stored ")
               for message in report.messages), report.messages


def count_derivations(monkeypatch) -> list[int]:
    """The positions each derivation of DTZ from its moves (the kept side's successors) was asked for."""
    from egtb.builder import verify_compact as module
    calls: list[int] = []
    derive = module.derived_dtz

    def counted(tb, arrays, category, rule):
        calls.append(len(category))
        return derive(tb, arrays, category, rule)
    monkeypatch.setattr(module, "derived_dtz", counted)
    return calls


def test_the_kept_side_reads_the_dtz_its_mirrors_check_found(tables, monkeypatch):
    drop_dtz(tables, MATERIAL.mirrored())
    calls = count_derivations(monkeypatch)
    alone = verify_compact(tables, materials=[MATERIAL], resume=False, chunk=4096)
    assert alone.ok and sum(calls) > 0  # its successors' DTZ derived from their moves
    calls.clear()
    pair = verify_compact(tables, materials=[MATERIAL, MATERIAL.mirrored()], resume=False, chunk=4096)
    assert pair.ok and calls == []  # the derived side checked first, its DTZ kept for the kept side
    assert pair.dtz_checked == alone.dtz_checked and pair.tables == 2
    assert not list(tables.glob(".verify-*")) and not list(tables.glob("*.verify-dtz*"))  # its room removed


def test_a_wrong_kept_dtz_is_caught_through_the_dtz_its_mirrors_check_found(tables, monkeypatch):
    drop_dtz(tables, MATERIAL.mirrored())
    index, _ = write_a_wrong_dtz(tables)
    calls = count_derivations(monkeypatch)
    report = verify_compact(tables, materials=[MATERIAL, MATERIAL.mirrored()], resume=False)
    assert calls == [] and not report.ok
    assert report.messages == [m for m in verify_compact(tables, materials=[MATERIAL], resume=False).messages]
    assert report.messages[0].startswith(f"{fen_of(MATERIAL, index)} (2k-1k.dtz #{index}): stored ")


def test_the_dtz_a_derived_sides_check_found_is_the_one_its_moves_give(tables):
    from egtb.builder.verify_compact import CompactProber
    from egtb.builder.verify_derived import derived_path, open_derived
    derived = MATERIAL.mirrored()
    drop_dtz(tables, derived)
    with pytest.raises(KeyboardInterrupt):  # stopped in the kept side's check: the derived side's file kept
        verify_compact(tables, materials=[MATERIAL, derived], chunk=4096, resume=True, save_every=0,
                       progress=killed_after(3 + 2 * 4 + 2 + 3 * 2))
    found = open_derived(tables, derived, "wcdf")
    assert found is not None and not derived_path(tables, derived, "wcdf", part=True).exists()
    table = CompactTable(compact.compact_path(tables, derived, kind=compact.WCDF))
    category = np.asarray(table.kind.value_of_code, dtype=np.int64)[table.values()]
    decisive = np.flatnonzero(quiet(derived) & (np.abs(category) == CAT_WIN))
    expected = CompactProber(tables).derived_dtz(derived, decisive, category[decisive], "wcdf")
    assert len(decisive) > 100 and found[decisive].tolist() == expected.tolist()
    assert not np.delete(np.asarray(found), decisive).any()  # nothing but at the quiet wins and losses
    resumed = verify_compact(tables, materials=[MATERIAL, derived], chunk=4096, resume=True)
    assert resumed.ok and resumed.skipped == [derived.name]
    assert not derived_path(tables, derived, "wcdf").exists()  # its mirror checked: removed


def test_a_killed_derived_sides_check_resumes_its_dtz_file(tables, monkeypatch):
    from egtb.builder.verify_derived import derived_path
    derived = MATERIAL.mirrored()
    drop_dtz(tables, derived)
    whole = verify_compact(tables, materials=[MATERIAL, derived], chunk=4096, resume=False)
    with pytest.raises(KeyboardInterrupt):  # in the derived side's third chunk (2 files told each)
        verify_compact(tables, materials=[MATERIAL, derived], chunk=4096, resume=True, save_every=0,
                       progress=killed_after(3 + 2 + 2 * 2 + 1))
    assert derived_path(tables, derived, "wcdf", part=True).exists()
    calls = count_derivations(monkeypatch)
    resumed = verify_compact(tables, materials=[MATERIAL, derived], chunk=4096, resume=True)
    assert report_fields(resumed) == report_fields(whole) and calls == []
    assert not list(tables.glob("*.verify-dtz*"))


def test_without_room_for_the_derived_dtz_the_kept_side_derives_it(tables, monkeypatch):
    import errno
    import os
    drop_dtz(tables, MATERIAL.mirrored())

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "posix_fallocate", full)
    calls = count_derivations(monkeypatch)
    report = verify_compact(tables, materials=[MATERIAL, MATERIAL.mirrored()], resume=False)
    assert report.ok and sum(calls) > 0 and not list(tables.glob("*.verify-dtz*"))


def test_a_pair_checked_side_by_side_waits_for_its_derived_side(tables):
    drop_dtz(tables, MATERIAL.mirrored())
    index, _ = write_a_wrong_dtz(tables)
    materials = all_materials(3)
    alone = verify_compact(tables, materials=materials, resume=False)
    together = verify_compact(tables, materials=materials, resume=False, jobs=2)
    assert report_fields(together) == report_fields(alone) and alone.errors == 2  # and 2k-1k's layer checksum


def test_the_figures_of_a_derived_side_refuse_a_category_its_moves_do_not_give(tables):
    from egtb.errors import TableError
    derived = MATERIAL.mirrored()
    drop_dtz(tables, derived)
    codes = compact.category_codes(np.array([-CAT_WIN, -CAT_CURSED_WIN], dtype=np.int8))  # a loss made blessed
    index = first_quiet(tables, derived, compact.WCDF, int(codes[0]))
    rewrite(tables, derived, compact.WCDF, index, int(codes[1]))
    with pytest.raises(TableError, match=f"position {index} of {derived.name} disagrees with its successors"):
        native_figures(tables, derived)


def test_tables_copied_whole_for_the_capture_search_give_the_report_of_the_search(tables, monkeypatch):
    from egtb.builder import verify_native
    from egtb.builder.verify_compact import CompactProber
    small = Material.parse("1k-1m")  # wrong, and copied whole for the 3-piece tables whose captures reach it
    rewrite(tables, small, compact.WDL, first_quiet(tables, small, compact.WDL, WIN), DRAW)
    copied: list[str] = []
    load = CompactProber.loaded_categories

    def spied(self, material):
        found = load(self, material)
        copied.append(material.name if found is not None else "")
        return found
    monkeypatch.setattr(CompactProber, "loaded_categories", spied)
    materials = all_materials(3)
    with_copies = verify_compact(tables, materials=materials, resume=False)
    assert {"1k-1k", "1k-1m"} <= set(copied)
    monkeypatch.setattr(verify_native, "LOAD_SHARE", 2.0)  # no table holds more than all of them
    copied.clear()
    searched = verify_compact(tables, materials=materials, resume=False)
    assert copied == [] and report_fields(with_copies) == report_fields(searched) and searched.errors > 1


def test_a_derived_dtz_past_a_byte_is_refused_naming_the_file(tmp_path):
    from egtb.builder.verify_derived import DerivedWriter
    from egtb.errors import TableError
    writer = DerivedWriter(tmp_path, MATERIAL, "wcdf", fresh=True)
    writer.write(0, np.array([3, 255]))
    with pytest.raises(TableError, match=r"2k-1k\.wcdf\.verify-dtz\.part: a DTZ of 256 plies does not fit a byte"):
        writer.write(2, np.array([256]))


def test_successors_coded_as_exceptions_give_the_report_of_those_coded_in_full(compact_tables, tmp_path, monkeypatch):
    from egtb.cli import main as egtb_main
    from egtb.formats.compact import exceptions
    full, coded = tmp_path / "full", tmp_path / "coded"
    full.mkdir()
    for path in compact_tables(4).iterdir():
        if path.suffix in (".wld", ".wcdf", ".dtz", ".marks"):
            shutil.copy(path, full / path.name)
    materials = [m for m in all_materials(4, min_pieces=4) if m.black_kings and m.white_kings]
    loss, blessed = (int(c) for c in compact.category_codes(np.array([-CAT_WIN, -CAT_CURSED_WIN], dtype=np.int8)))
    for material in materials[:2]:  # losses made blessed (none is at 4 pieces): exceptions, wrong, which
        table = CompactTable(compact.compact_path(full, material, kind=compact.WCDF))  # their predecessors see
        codes = table.values()
        codes[np.flatnonzero(quiet(material) & (codes == loss))[:20]] = blessed
        blob, _ = compact.encode_values(material, codes, kind=compact.WCDF)
        compact.write_marks(compact.write_compact(table.path, blob))
    shutil.copytree(full, coded)
    monkeypatch.setattr(exceptions, "EXCEPTIONS_FROM_PIECES", 4)
    assert egtb_main(["compact", "--tables", str(coded), "--recode", "--quiet"]) == 0
    recoded = [compact.CompactTable(compact.compact_path(coded, m, kind=compact.WCDF)) for m in materials]
    assert all(t.coded_path != t.path for t in recoded) and sum(len(t.exceptions) for t in recoded) == 40
    reports = [verify_compact(directory, materials=materials, resume=False) for directory in (full, coded)]
    assert report_fields(reports[0]) == report_fields(reports[1]) and reports[0].errors > 40


# --- the figures the check counts (counts, longest DTZ, checksums), for the reference rows ---


def test_a_check_counts_the_figures_native_figures_recounts_and_the_reference_lists(tables):
    drop_dtz(tables, MATERIAL.mirrored())  # a derived side's DTZ counted from its successors too
    report = verify_compact(tables, materials=all_materials(3), resume=True, chunk=4096)
    assert report.ok and report.figures == len(all_materials(3)), report.messages[:3]
    reference, rule_reference = load_reference(), load_rule_reference()
    for material in all_materials(3):
        values, layer = passed_figures(tables, material).entries()
        assert (values, layer) == native_figures(tables, material), material.name
        assert layer == rule_reference[material.name, "wcdf"], material.name
        assert values.wins == reference[material.name].wins, material.name


def test_figures_of_a_killed_check_go_on_from_its_record(tables):
    whole = verify_compact(tables, materials=[MATERIAL], chunk=4096, resume=True)
    counted = passed_figures(tables, MATERIAL).entries()
    progress_path(tables, MATERIAL).unlink()
    with pytest.raises(KeyboardInterrupt):
        verify_compact(tables, materials=[MATERIAL], chunk=4096, resume=True, save_every=0,
                       progress=killed_after(3 * 2 + 2))
    record = json.loads(progress_path(tables, MATERIAL).read_text())
    assert record["figures"]["checksum"]["positions"] == record["next"] == 4096  # counted as far as checked
    assert passed_figures(tables, MATERIAL) is None  # not passed yet
    resumed = verify_compact(tables, materials=[MATERIAL], chunk=4096, resume=True)
    assert report_fields(resumed) == report_fields(whole) and resumed.figures == 1
    assert passed_figures(tables, MATERIAL).entries() == counted == native_figures(tables, MATERIAL)


def test_a_record_begun_without_figures_is_finished_without_them(tables, monkeypatch):
    with pytest.raises(KeyboardInterrupt):
        verify_compact(tables, materials=[MATERIAL], chunk=4096, resume=True, save_every=0,
                       progress=killed_after(3 * 2 + 2))
    record = json.loads(progress_path(tables, MATERIAL).read_text())
    del record["figures"], record["differ"]  # as a check of the code before them left it
    progress_path(tables, MATERIAL).write_text(json.dumps(record))
    report = verify_compact(tables, materials=[MATERIAL], chunk=4096, resume=True)
    assert report.ok and report.figures == 0 and passed_figures(tables, MATERIAL) is None
    # the reference rows then count them from the files
    recounted, count = [], native_reference._counted
    monkeypatch.setattr(native_reference, "_counted",
                        lambda *args, **kwargs: recounted.append(args[1]) or count(*args, **kwargs))
    lines = native_reference.native_reference_lines(tables, [MATERIAL, MATERIAL.mirrored()])
    assert recounted == [MATERIAL, MATERIAL.mirrored()]
    verify_compact(tables, materials=[MATERIAL, MATERIAL.mirrored()], resume=True, again=True)
    recounted.clear()
    assert native_reference.native_reference_lines(tables, [MATERIAL, MATERIAL.mirrored()]) == lines
    assert recounted == []  # taken from the passed checks' records


def test_figures_unlike_the_stamp_fail_the_check_and_name_it(native_dir, tmp_path):
    directory = tmp_path / "native"
    shutil.copytree(native_dir, directory)
    stamp = directory / "2k-1k.native.json"
    summary = json.loads(stamp.read_text())
    summary["wins"] += 1
    summary["rules"]["wcdf"]["max_dtz"] += 2
    stamp.write_text(json.dumps(summary))
    report = verify_compact(directory, materials=[MATERIAL, MATERIAL.mirrored()], resume=True)
    assert report.errors == 2 and report.figures == 2, report.messages
    wins, max_dtz = summary["wins"], summary["rules"]["wcdf"]["max_dtz"]
    assert report.messages == [
        f"2k-1k: figures recounted from its files differ from 2k-1k.native.json: wins {wins - 1} (stamped {wins})",
        f"2k-1k: figures recounted from its files differ from rule layer wcdf of 2k-1k.native.json: max_dtz "
        f"{max_dtz - 2} (stamped {max_dtz})"]
    again = verify_compact(directory, materials=[MATERIAL], resume=True)  # a record that differs did not pass
    assert not again.skipped and again.errors == 2


def test_the_command_line_names_the_figures_it_recounted(tables, capsys):
    args = ["verify", "--tables", str(tables), "--quiet", "--materials", "2k-1k,1k-2k", "--chunk", "4096"]
    assert main(args) == 0
    assert ("figures recounted from the files of 2 compact-native tables (counts, longest DTZ, checksums): "
            "equal to their stamps and the reference") in capsys.readouterr().out
    rewrite(tables, MATERIAL, compact.WDL, first_quiet(tables, MATERIAL, compact.WDL, WIN), DRAW)
    assert main([*args, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["figures_recounted"] == 2 and not out["ok"]  # 1k-2k too: its successors' file changed
    assert any("differ from the reference (tables.tsv)" in m for m in out["messages"])
    assert main([*args, "--json", "--no-reference", "--again"]) == 1  # the check itself still fails
    messages = json.loads(capsys.readouterr().out)["messages"]
    assert messages and not any("figures recounted" in m for m in messages)


def test_a_quiet_cursed_wins_dtz_no_file_holds_is_taken_from_the_stamp_for_the_reference_rows(tables, monkeypatch):
    # no table of 4 pieces or fewer has a quiet cursed win under wcdf (the first are of 6 pieces: 3k-3m,
    # 1m2k-3k): a count with one stands for a check's record
    figures = TableFigures()
    figures.add(np.array([1, 1, 0, 1]), np.array([2, 1, 0, 1]), np.array([5, 0, 0, 0]),
                np.array([False, False, False, True]))
    assert figures.dtz_unknown == 1  # the quiet one; the capture position's DTZ is 1
    monkeypatch.setattr(native_reference, "passed_figures", lambda directory, material: figures)
    with pytest.raises(TableError, match="2k-1k: 1 quiet cursed wins or blessed losses, whose DTZ no compact file "
                                         "holds, and no wcdf layer in 2k-1k.native.json"):
        native_reference.native_reference_lines(tables, [MATERIAL])
    (tables / "2k-1k.native.json").write_text(json.dumps({"rules": {"wcdf": {"max_dtz_cursed": 99,
                                                                             "checksum_crc32": 1234}}}))
    _, layer_lines = native_reference.native_reference_lines(tables, [MATERIAL])
    assert layer_lines == ["2k-1k\twcdf\t1\t2\t1\t0\t0\t5\t99\t1234"]  # the counts recounted, the rest stamped
    # and the check compares the counts only
    values, layer = figures.entries()
    stamp = {"positions": 4, "wins": 3, "losses": 0, "draws": 1,
             "rules": {"wcdf": {**asdict(layer), "max_dtz_cursed": 99, "checksum_crc32": 1234}}}
    (tables / "2k-1k.native.json").write_text(json.dumps(stamp))
    assert recounted_differences(tables, MATERIAL, values, layer, dtz_known=False, reference={},
                                 rule_reference={}) == []
    assert len(recounted_differences(tables, MATERIAL, values, layer, reference={}, rule_reference={})) == 1
    stamp["rules"]["wcdf"]["cursed_wins"] += 1
    (tables / "2k-1k.native.json").write_text(json.dumps(stamp))
    assert recounted_differences(tables, MATERIAL, values, layer, dtz_known=False, reference={},
                                 rule_reference={}) == [
        "2k-1k: figures recounted from its files differ from rule layer wcdf of 2k-1k.native.json: cursed_wins 2 "
        "(stamped 3)"]


@njit(cache=True)
def _located_moves(bm, bk, wm, wk, cap, out_codes, out_indices):
    """Every simple move's successor located the plain way (locate_valid), in the check's order."""
    moves = np.zeros((MAX_MOVES, MOVE_WIDTH), dtype=np.int64)
    k = 0
    for i in range(bm.shape[0]):
        if cap[i]:
            continue
        for m in range(generate_moves(bm[i], bk[i], wm[i], wk[i], BLACK_TO_MOVE, moves)):
            out_codes[k], out_indices[k] = locate_valid(moves[m, M_BM], moves[m, M_BK], moves[m, M_WM],
                                                        moves[m, M_WK], 1)
            k += 1
    return k


@pytest.mark.parametrize("name", ["4k-4k", "1m3k-2m2k", "2m2k-3m1k", "3k-3k", "2m1k-2m1k", "1k-5m"])
def test_the_successors_of_king_steps_are_located_as_every_other_position(name):
    """quiet_successors locates a position's king steps from what they share (king_step_frame):
    every successor's table and index equal locate_valid's, over random ranges of 8- to 6-piece
    materials (no table needed)."""
    material = Material.parse(name)
    rank, codes, index_bits = successor_ranks(material)
    rng = np.random.default_rng(7)
    for lo in rng.integers(0, count_positions(material) - 4096, size=4).tolist():
        boards, cap = unranked(compact.material_counts(material), lo, lo + 4096)
        rows = 4096 * max_moves(material)
        keys, zeroing, parent = np.empty(rows, np.int64), np.empty(rows, np.bool_), np.empty(rows, np.int32)
        k = quiet_successors(*boards, cap, True, rank, index_bits, np.empty(4097, np.int64), keys, zeroing, parent)
        want_codes, want_indices = np.empty(rows, np.int64), np.empty(rows, np.int64)
        assert _located_moves(*boards, cap, want_codes, want_indices) == k > 0
        assert (np.asarray(codes)[keys[:k] >> (index_bits + 1)] == want_codes[:k]).all()
        assert ((keys[:k] >> 1) & ((1 << index_bits) - 1) == want_indices[:k]).all()
