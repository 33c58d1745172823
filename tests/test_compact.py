"""Compact WLD files: exact round trip, capture search, damage detection, mixed directories."""

from __future__ import annotations

import bisect
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from egtb.probe.moves import best_moves
from egtb import cli
from egtb.builder import budget, driver
from egtb.errors import MissingRuleLayerError, MissingTableError, TableError
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import DRAW_RULES, Board
from egtb.positions.walk import capture_flags, unrank_captures, unrank_range
from egtb.builder.successor_check import read_ascending
from egtb.builder.verify_compact import verify_compact
from egtb.builder import compaction
from egtb.formats import compact, values
from egtb.formats.cache import TableCache, release_evicted
from egtb.formats.compact import codec, layout
from egtb.probe import compact_kernels as ck
from egtb.probe.compact_tables import CompactWdl
from egtb.probe import kernels
from egtb.probe.kernels import NO_DTW
from egtb.rules import movegen
from egtb.rules.captures import has_capture
from egtb.formats import master
from egtb.positions.index import global_unrank
from egtb.positions.material import Material, all_materials, count_positions
from egtb.formats.values import DRAW, LOSS, WDL_OF_CODE, WIN, Category, Wdl
from egtb.rules.notation import Placement, format_fen

MAX_PIECES = 4


@pytest.fixture(scope="session")
def master_dir(built_tables) -> Path:
    """Every master table up to 4 pieces with its "wcdf" layer (the session's shared set: read only)."""
    return built_tables(MAX_PIECES)


@pytest.fixture(scope="session")
def compact_dir(compact_tables) -> Path:
    """The compact files (.wld, .wcdf and .dtz) of every table up to 4 pieces, alone in a directory
    (the session's shared set: read only)."""
    return compact_tables(MAX_PIECES)


@pytest.fixture(scope="session")
def unmarked_dir(compact_dir, tmp_path_factory) -> Path:
    """The compact files of `compact_dir` without their marks files (the reader makes the marks)."""
    directory = tmp_path_factory.mktemp("compact_unmarked")
    for path in compact_dir.iterdir():
        if path.suffix != compact.sidecar.MARKS_SUFFIX:
            shutil.copy(path, directory)
    return directory


def capture_mask(material: Material) -> np.ndarray:
    """Whether the side to move (Black) must capture, per position of a material."""
    n = count_positions(material)
    bm, bk, wm, wk = (np.empty(n, dtype=np.int64) for _ in range(4))
    cap = np.empty(n, dtype=np.bool_)
    unrank_range(compact.material_counts(material), 0, n, bm, bk, wm, wk, cap)
    return cap


def stored_arrays(material: Material, indices: np.ndarray) -> tuple[np.ndarray, ...]:
    rows = np.array([global_unrank(material, int(i)) for i in indices], dtype=np.int64)
    return tuple(rows[:, k].copy() for k in range(4))


# ------------------------------------------------------------------ coding

def test_run_lengths_round_trip_through_their_buckets():
    for n in [*range(1, 300), 1 << 20, (1 << 33) + 12345, (1 << 47) + 1]:
        bucket, xb, extra = codec.length_symbol(n)
        assert 0 <= bucket < layout.NUM_BUCKETS and xb == codec.extra_bits(bucket)
        assert codec.length_of(bucket, xb, extra) == n


def test_huffman_code_is_prefix_free_and_length_limited():
    freqs = np.array([1 << k for k in range(30)])  # a skewed alphabet: lengths up to 29 unlimited
    lengths = codec.huffman_lengths(freqs, max_bits=12)
    assert lengths.max() == 12
    assert sum(2.0 ** -int(n) for n in lengths) <= 1.0  # Kraft: a prefix code exists


@pytest.mark.parametrize("kind", [layout.WDL, layout.WCDF, layout.WCDF_DTZ], ids=lambda kind: kind.suffix)
def test_codes_longer_than_the_decoding_tables_first_level_decode_through_its_second(kind):
    # a bit stream of random tokens coded with skewed code lengths up to 12 bits, written here
    # bit by bit: the decoder reads codes of 8 bits or fewer in one lookup, longer ones in two
    rng = np.random.default_rng(31)
    lengths = np.zeros((kind.contexts + 1, kind.symbols), dtype=np.int64)
    for ctx in range(1, kind.contexts + 1):  # at most 1,500 symbols in use (a DTZ file has 24,257)
        freqs = np.zeros(kind.symbols)
        used = rng.choice(kind.symbols, min(kind.symbols, 1500), replace=False)
        freqs[used] = rng.pareto(0.7, len(used)) + 1e-3
        lengths[ctx] = codec.huffman_lengths(freqs)
    assert lengths.max() == layout.MAX_CODE_BITS and (lengths[1:] > 8).sum() > 10
    codes = [codec.canonical_codes(row) for row in lengths]
    lut = codec.decoding_table(lengths, kind)
    assert len(lut) < (kind.contexts + 1) << layout.MAX_CODE_BITS  # two levels take less than one
    bits, n_bits, ctx, ends, values, position = 0, 0, 1, [], [], 0
    while n_bits < 8 * layout.BLOCK_BYTES - 64:
        symbol = int(rng.choice(np.flatnonzero(lengths[ctx])))
        choice, bucket = divmod(symbol, layout.NUM_BUCKETS)
        xb = int(codec.extra_bits(bucket))
        extra = int(rng.integers(0, 1 << xb))
        bits |= (int(codes[ctx][symbol]) | extra << int(lengths[ctx, symbol])) << n_bits
        n_bits += int(lengths[ctx, symbol]) + xb
        position += int(codec.length_of(bucket, xb, extra))
        value = int(kind.value_of_choice[ctx, choice])
        ends.append(position)
        values.append(value)
        ctx = int(kind.context_after[value])
    data = np.frombuffer(bits.to_bytes(layout.BLOCK_BYTES, "little"), dtype=np.uint8)
    out_ends, out_values = np.empty(len(ends), dtype=np.int64), np.empty(len(ends), dtype=np.uint8)
    assert codec.decode_block(data, 0, len(data), position, 1, lut, out_ends, out_values) == len(ends)
    assert out_ends.tolist() == ends and out_values.tolist() == values


# ------------------------------------------------------------------ round trip

@pytest.mark.slow  # 6.4 M positions, 7 CPU s: the sample up to four pieces below is the default run's
def test_every_position_up_to_four_pieces_matches_the_master_table(master_dir, compact_dir):
    sampled = verify_compact(compact_dir, masters=master_dir)  # a capture position in 64 searched
    assert sampled.ok, sampled.messages
    total = sum(count_positions(m) for m in all_materials(MAX_PIECES))
    assert sampled.tables == sampled.layers == sampled.dtz_files == len(all_materials(MAX_PIECES))
    assert sampled.checked == sampled.layer_checked == total  # every value and every wcdf category
    quiet_decisive = 0  # every win and loss whose side need not capture has the master's DTZ
    for material in all_materials(MAX_PIECES):
        category = master.read_rule_layer(master.table_path(master_dir, material), "wcdf").category
        quiet_decisive += int(((np.abs(category) == 2) & ~capture_mask(material)).sum())
    assert sampled.dtz_checked == quiet_decisive
    captures = sum(int(capture_mask(m).sum()) for m in all_materials(MAX_PIECES))
    assert 0 < sampled.captures < captures / 32


@pytest.mark.slow
def test_every_capture_position_up_to_four_pieces_is_recovered_by_the_search(master_dir, compact_dir,
                                                                             monkeypatch):
    import egtb.builder.verify_compact as vc
    monkeypatch.setattr(vc, "SEARCH_SAMPLE", 1)  # every one (the default run searches one in 64)
    report = verify_compact(compact_dir, masters=master_dir)
    assert report.ok, report.messages
    assert report.captures == sum(int(capture_mask(m).sum()) for m in all_materials(MAX_PIECES))


def test_stored_categories_equal_the_master_layer_where_no_capture_is_due(master_dir, compact_dir):
    cursed = 0
    for material in all_materials(MAX_PIECES):
        layer = master.open_table(master.table_path(master_dir, material), rules=("wcdf",)).rules["wcdf"]
        table = compact.CompactTable(compact.compact_path(compact_dir, material)).layer("wcdf")
        quiet = ~capture_mask(material)
        codes = table.values()
        assert np.array_equal(values.CATEGORY_OF_CODE[codes[quiet]], layer.category[quiet]), material.name
        cursed += int(np.isin(codes, (values.CURSED_WIN, values.BLESSED_LOSS)).sum())
    assert cursed == 0  # under wcdf the first cursed wins come at 6 pieces (docs/move-rule-figures.md)


def test_all_five_category_codes_round_trip_through_a_file(master_dir, compact_dir, tmp_path):
    material = Material.parse("1m1k-1k")  # its real categories made cursed and blessed in places
    layer = master.open_table(master.table_path(master_dir, material), rules=("wcdf",)).rules["wcdf"]
    category = layer.category.copy()
    every_third = np.arange(len(category)) % 3 == 0
    category[every_third & (category == 2)] = 1
    category[every_third & (category == -2)] = -1
    assert set(np.unique(category).tolist()) == {-2, -1, 0, 1, 2}
    shutil.copy(compact.compact_path(compact_dir, material), tmp_path)
    blob, _ = compact.encode_values(material, compact.category_codes(category), kind=compact.WCDF)
    compact.write_compact(compact.compact_path(tmp_path, material, kind=compact.WCDF), blob)
    table = compact.CompactTable(compact.compact_path(tmp_path, material)).layer("wcdf")
    quiet = np.flatnonzero(~capture_mask(material))
    assert np.array_equal(values.CATEGORY_OF_CODE[table.values()[quiet]], category[quiet])
    assert [values.CATEGORY_OF_CODE[table.value(int(i))] for i in quiet[:200]] == category[quiet[:200]].tolist()
    with Tablebase(tmp_path) as tb:  # the batch pool packs all five codes, three a byte
        _, got, _ = tb.probe_batch_rule(*stored_arrays(material, quiet[::7]), 0, 0)
    assert got.tolist() == category[quiet[::7]].tolist()


def test_stored_values_equal_the_master_where_no_capture_is_due(master_dir, compact_dir):
    for material in all_materials(MAX_PIECES):
        stored, _ = master.load_material(master_dir, material)
        table = compact.CompactTable(compact.compact_path(compact_dir, material))
        quiet = ~capture_mask(material)
        assert np.array_equal(table.values()[quiet], stored[quiet]), material.name


@pytest.mark.parametrize("every", [1, 3, 32])
def test_lookups_from_the_marks_inside_a_block_equal_the_whole_block_decoded(compact_dir, every):
    largest = max(all_materials(MAX_PIECES), key=count_positions)
    for kind in (layout.WDL, layout.WCDF):
        table = compact.CompactTable(compact.compact_path(compact_dir, largest, kind=kind), mark_every=every,
                                     cache=TableCache())
        every_value = table.values()
        assert [table.value(i) for i in range(len(table))] == every_value.tolist(), kind.suffix
        runs = max(len(table.decode(block)[0]) for block in range(table.n_blocks))
        assert max(table.block_marks(b).count for b in range(table.n_blocks)) == -(-runs // every)


@pytest.mark.parametrize("every", [1, 4, 32])
def test_ascending_lookups_that_skip_the_search_of_marks_equal_the_whole_table(compact_dir, every):
    # read_ascending goes on from the last mark it used while the next mark lies beyond the
    # position; strides below, about and far above a mark's span reach every case
    largest = max(all_materials(MAX_PIECES), key=count_positions)
    rng = np.random.default_rng(every)
    for kind in (layout.WDL, layout.WCDF):
        table = compact.CompactTable(compact.compact_path(compact_dir, largest, kind=kind), mark_every=every,
                                     cache=TableCache())
        want = table.values()
        value_of = np.arange(int(want.max()) + 1)
        for stride in (1, 5, 37, 1001):
            indices = np.arange(int(rng.integers(stride)), len(table), stride, dtype=np.int64)
            assert read_ascending(table, indices, value_of).tolist() == want[indices].tolist(), (kind.suffix,
                                                                                               stride)
        indices = np.unique(rng.integers(0, len(table), 5000))
        assert read_ascending(table, indices, value_of).tolist() == want[indices].tolist(), kind.suffix


@pytest.mark.parametrize("n, bits", [(0, 5), (1, 0), (9, 1), (5000, 22), (5000, 41), (3000, 63), (70000, 33)])
def test_the_radix_sort_orders_keys_as_a_stable_sort(n, bits):
    # keys and places packed in one word up to 63 bits, two arrays beyond; equal digits skipped
    rng = np.random.default_rng(n + bits)
    keys = rng.integers(0, 1 << bits, n) if bits else np.zeros(n, dtype=np.int64)
    keys[: n // 3] = keys[0] if n else 0  # many equal keys: stability shows
    order, ordered = ck.radix_sort(keys, bits)
    want = np.argsort(keys, kind="stable")
    assert order.tolist() == want.tolist() and ordered.tolist() == keys[want].tolist()


@pytest.mark.parametrize("name", ["1k-1k", "2m1k-1m", "1m2k-2k", "2m-1m1k"])
def test_the_capture_positions_of_a_range_are_those_the_whole_unranking_flags(name):
    material = Material.parse(name)
    counts, n = compact.material_counts(material), count_positions(material)
    boards = [np.empty(n, dtype=np.int64) for _ in range(4)]
    cap = np.empty(n, dtype=np.bool_)
    unrank_range(counts, 0, n, *boards, cap)
    assert 0 < cap.sum() < n
    for lo, hi in [(0, n), (1, n - 1), (n // 3, min(n, n // 3 + 1000)), (n // 2, n // 2)]:
        out = [np.empty(hi - lo, dtype=np.int64) for _ in range(5)]
        count = unrank_captures(counts, lo, hi, *out)
        chosen = lo + np.flatnonzero(cap[lo:hi])
        assert count == len(chosen) and np.array_equal(out[0][:count], chosen), (name, lo, hi)
        for board, found in zip(boards, out[1:]):
            assert np.array_equal(found[:count], board[chosen]), (name, lo, hi)
        flags = np.empty(hi - lo, dtype=np.bool_)
        assert capture_flags(counts, lo, hi, flags) == count
        assert np.array_equal(flags, cap[lo:hi]), (name, lo, hi)


# 1k-2m and 2m-1m1k (men on both sides, kings, captures) in the default run; the other two are slow
@pytest.mark.parametrize("name", ["1k-2m", pytest.param("2k-1m1k", marks=pytest.mark.slow),
                                  pytest.param("1m1k-2k", marks=pytest.mark.slow), "2m-1m1k"])
def test_a_file_coded_a_chunk_at_a_time_is_the_file_coded_whole(master_dir, name):
    # the chunks' don't-cares, runs, contexts and blocks go on across chunk boundaries; the leading
    # don't-cares take the file's last value wherever it lies
    material = Material.parse(name)
    path = master.table_path(master_dir, material)
    kinds = [layout.WDL, layout.WCDF, layout.WCDF_DTZ]
    codes = [compaction._codes(path, kind) for kind in kinds]
    whole = [compact.encode_values(material, c, kind=kind) for c, kind in zip(codes, kinds)]
    for chunk in (13, 997):
        chunked = compact.encode_kinds(material, lambda lo, hi: [c[lo:hi].copy() for c in codes], kinds,
                                       chunk=chunk)
        for (blob, report), (want, made) in zip(chunked, whole):
            assert blob == want and (report.runs, report.captures) == (made.runs, made.captures), chunk
    assert sum(made.captures for _, made in whole) > 0


@pytest.mark.parametrize("threats", [False, True])
def test_a_material_over_the_kept_flags_size_finds_them_again_and_codes_the_same_bytes(master_dir, monkeypatch,
                                                                                      threats):
    # the second pass walks the positions again for their flags instead of unpacking the first's
    material = Material.parse("2m-1m1k")
    path = master.table_path(master_dir, material)
    kinds = [layout.WDL, layout.WCDF, layout.WCDF_DTZ]
    codes = [compaction._codes(path, kind) for kind in kinds]

    def coded() -> list:
        return compact.encode_kinds(material, lambda lo, hi: [c[lo:hi].copy() for c in codes], kinds, chunk=997,
                                    threats=threats)

    kept = coded()
    walked = []
    monkeypatch.setattr(compact.writer, "KEPT_FLAGS_POSITIONS", 0)
    for name in ("capture_flags", "left_out_flags"):
        monkeypatch.setattr(compact.writer, name,
                            lambda *a, walk=getattr(compact.writer, name): walked.append(a[1]) or walk(*a))
    assert [blob for blob, _ in coded()] == [blob for blob, _ in kept]
    assert len(walked) > 2 * (count_positions(material) // 997)  # both passes walked every chunk


def test_a_range_of_codes_equals_the_blocks_decoded_whole(compact_dir):
    # a range reads only the runs that cover it: within a block, across block starts, one
    # position, whole blocks, a run's first and last position
    largest = max(all_materials(MAX_PIECES), key=count_positions)
    for kind in (layout.WDL, layout.WCDF):
        table = compact.CompactTable(compact.compact_path(compact_dir, largest, kind=kind), cache=TableCache())
        whole = np.concatenate([np.repeat(vals, np.diff(ends, prepend=0))
                                for ends, vals in (table.decode(b) for b in range(table.n_blocks))])
        assert len(whole) == len(table) and table.n_blocks > 2
        starts = sorted({*table.starts.tolist(), len(table)})  # the block starts and the end
        ends, _ = table.decode(1)
        run = starts[1] + int(ends[len(ends) // 2])  # a run's first position
        ranges = [(0, len(table)), (starts[1], starts[2]), (starts[1] - 5, starts[1] + 5), (run - 1, run + 1),
                  (run, run + 1), (starts[2] - 1, starts[2]), (starts[1] + 3, starts[-2] + 7), (7, 7)]
        rng = np.random.default_rng(5)
        ranges += [tuple(sorted(rng.integers(0, len(table) + 1, size=2))) for _ in range(50)]
        for lo, hi in ranges:
            assert np.array_equal(table.codes(lo, hi), whole[lo:hi]), (kind.suffix, lo, hi)


def test_marks_dropped_by_the_cache_leave_their_table_and_are_made_again(unmarked_dir):
    largest = max(all_materials(MAX_PIECES), key=count_positions)
    cache = TableCache(max_entries=1, on_evict=release_evicted)
    table = compact.CompactTable(compact.compact_path(unmarked_dir, largest), cache=cache)
    assert table.n_blocks > 1
    first_of_last = int(table.starts[table.n_blocks - 1])
    want = table.values()
    assert table.value(0) == want[0] and table.marks_at[0] != 0
    assert table.value(first_of_last) == want[first_of_last]
    assert table.marks_at[0] == 0 and table.marks_at[table.n_blocks - 1] != 0 and len(cache) == 1
    assert table.value(0) == want[0] and table.marks_at[0] != 0
    table.close()
    assert len(cache) == 0 and not table.marks_at.any()


def test_files_are_far_smaller_than_the_values(compact_dir):
    four = [m for m in all_materials(MAX_PIECES) if m.pieces == 4]
    size = sum(compact.compact_path(compact_dir, m).stat().st_size for m in four)
    positions = sum(count_positions(m) for m in four)
    assert positions / size > 20  # 4 positions per byte packed; about 34 measured


# ------------------------------------------------------------------ capture search

def test_capture_positions_answer_through_the_search(master_dir, compact_dir):
    material = Material.parse("2m-1m1k")
    stored, _ = master.load_material(master_dir, material)
    table = compact.CompactTable(compact.compact_path(compact_dir, material))
    differing = np.flatnonzero(capture_mask(material) & (table.values() != stored))
    assert len(differing) > 100  # the file really holds filler there
    sample = differing[:: max(1, len(differing) // 50)]
    with Tablebase(compact_dir) as tb:
        for index in sample.tolist():
            board = Board(_fen(*global_unrank(material, index)))
            assert int(tb.probe_wdl(board)) == int(WDL_OF_CODE[stored[index]])
        wdl, dtw = tb.probe_batch(*stored_arrays(material, sample), 0)
    assert wdl.tolist() == WDL_OF_CODE[stored[sample]].tolist()
    assert set(dtw.tolist()) == {NO_DTW}


def test_capture_positions_recover_their_category_through_the_search(master_dir, compact_dir):
    material = Material.parse("2m-1m1k")
    layer = master.open_table(master.table_path(master_dir, material), rules=("wcdf",)).rules["wcdf"]
    table = compact.CompactTable(compact.compact_path(compact_dir, material)).layer("wcdf")
    stored = values.CATEGORY_OF_CODE[table.values()]
    differing = np.flatnonzero(capture_mask(material) & (stored != layer.category))
    assert len(differing) > 100  # the file really holds filler there
    sample = differing[:: max(1, len(differing) // 50)]
    decisive = np.abs(layer.category[sample]) == 2
    assert decisive.any() and set(layer.dtz[sample][decisive].tolist()) == {1}  # the capture zeroes
    with Tablebase(compact_dir) as tb:
        for index in sample.tolist():
            fen = _fen(*global_unrank(material, index))
            assert int(tb.probe_category(fen)) == int(layer.category[index]), fen
            assert tb.probe(fen).dtz == (layer.dtz[index] if layer.category[index] else 0), fen  # no .dtz read
        _, category, dtz = tb.probe_batch_rule(*stored_arrays(material, sample), 0, 0)
        late = tb.probe_batch_rule(*stored_arrays(material, sample), 0, 80)  # 79 + its max DTZ 1 fits
    assert category.tolist() == late[1].tolist() == layer.category[sample].tolist()
    assert set(dtz.tolist()) == {NO_DTW}  # counter 0: no DTZ read
    assert late[2][decisive].tolist() == [1] * int(decisive.sum())


def test_the_single_probe_kernels_search_a_capture_position_once_its_blocks_are_in_memory(
        master_dir, compact_dir):
    rule = DRAW_RULES["wcdf"]
    deeper = 0  # positions whose search goes on below a capture (a successor that must capture too)
    with Tablebase(compact_dir) as tb:
        for name in ("2m-1m1k", "1m1k-2k", "2k-1m1k", "1k-1m2k"):
            material = Material.parse(name)
            stored, _ = master.load_material(master_dir, material)
            layer = master.open_table(master.table_path(master_dir, material), rules=("wcdf",)).rules["wcdf"]
            for index in np.flatnonzero(capture_mask(material))[::5][:80].tolist():
                key = (*global_unrank(material, index), 0)
                tb._probe_key(key)  # the first probes read, through Python, the blocks the search needs
                tb._probe_rule_key(key, rule, 0)
                status, wdl, dtw, _ = kernels.probe_value_one(*key, tb._value_rows_at)
                assert (status, wdl, dtw) == (kernels.STATUS_OK, WDL_OF_CODE[stored[index]], -1), (name, index)
                category, dtz = int(layer.category[index]), int(layer.dtz[index])
                for counter in (0, 79, 80):
                    status, outcome, got, got_dtz, _ = kernels.probe_rule_one(*key, counter, rule.limit_plies,
                                                                              tb._rows_at["wcdf"])
                    assert (status, got) == (kernels.STATUS_OK, category), (name, index)
                    assert got_dtz == (dtz if category else 0)  # the capture zeroes: 1 for a win or loss
                    assert outcome == kernels.outcome_at(category, dtz, counter, rule.limit_plies)
                deeper += any(has_capture(*child) for child in _successors(key))
    assert deeper > 0


def _successors(key: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The positions after each move of a position (bm, bk, wm, wk, turn), the opponent to move."""
    moves = np.empty((movegen.MAX_MOVES, movegen.MOVE_WIDTH), dtype=np.int64)
    n = movegen.generate_moves(*(np.int64(v) for v in key[:4]), key[4], moves)
    return [(*row, 1 - key[4]) for row in moves[:n, movegen.M_BM:movegen.M_WK + 1].tolist()]


def test_compact_categories_answer_at_counter_zero_and_draws_at_any_counter(master_dir, compact_dir):
    rng = np.random.default_rng(11)
    with Tablebase(master_dir) as tm, Tablebase(compact_dir) as tc:
        for material in all_materials(MAX_PIECES):
            arrays = stored_arrays(material, rng.integers(0, count_positions(material), 40))
            for turn in (0, 1):
                expected = tm.probe_batch_rule(*arrays, turn, 0)
                got = tc.probe_batch_rule(*arrays, turn, 0)
                assert got[0].tolist() == expected[0].tolist(), material.name
                assert got[1].tolist() == expected[1].tolist(), material.name
                drawn = np.flatnonzero(np.abs(expected[1]) != 2)  # draws, cursed wins, blessed losses
                late = tc.probe_batch_rule(*(a[drawn] for a in arrays), turn, 79)
                assert late[0].tolist() == [0] * len(drawn)
                for k in range(0, 40, 8):
                    key = tuple(int(a[k]) for a in arrays) + (turn,)
                    assert tc._probe_rule_key(key, DRAW_RULES["wcdf"], 0)[:2] == tuple(
                        int(x[k]) for x in expected[:2])


def _fen(bm, bk, wm, wk) -> str:
    from egtb.rules.notation import Placement, format_fen
    return format_fen(Placement(bm, bk, wm, wk, 0))


def test_single_and_batch_probes_agree_with_the_master(master_dir, compact_dir):
    rng = np.random.default_rng(7)
    with Tablebase(master_dir) as tm, Tablebase(compact_dir) as tc:
        for material in all_materials(MAX_PIECES):
            indices = rng.integers(0, count_positions(material), 40)
            arrays = stored_arrays(material, indices)
            for turn in (0, 1):
                expected, _ = tm.probe_batch(*arrays, turn)
                got, _ = tc.probe_batch(*arrays, turn)
                assert got.tolist() == expected.tolist(), material.name
                for k in range(0, 40, 8):
                    key = tuple(int(a[k]) for a in arrays) + (turn,)
                    assert tc._probe_key(key)[0] == expected[k]


def test_compact_results_have_no_dtw_and_moves_are_ranked_by_value(master_dir, compact_dir, tmp_path):
    with Tablebase(master_dir) as tm:
        expected = tm.probe("W:WK10,K14:BK1")
    for path in compact_dir.iterdir():  # the same directory without its .dtz files
        if ".dtz" not in path.suffixes:
            shutil.copy(path, tmp_path)
    with Tablebase(compact_dir) as tb, Tablebase(tmp_path) as without_dtz:
        result = tb.probe("W:WK10,K14:BK1", rule_free=True)
        moves = best_moves(tb, "W:WK10,K14:BK1", rule_free=True).moves
        assert tb.max_pieces == MAX_PIECES
        ruled = tb.probe("W:WK10,K14:BK1")  # wcdf at counter 0: the category file, and the DTZ file
        assert (ruled.category, ruled.outcome, ruled.dtz) == (Category.WIN, 1, expected.dtz)
        got, want = tb.probe("W:WK10,K14:BK1", counter=70), tm.probe("W:WK10,K14:BK1", counter=70)
        assert (got.outcome, got.category, got.dtz) == (want.outcome, want.category, want.dtz) == (0, 2, 15)
        ruled = without_dtz.probe("W:WK10,K14:BK1")
        assert (ruled.category, ruled.outcome, ruled.dtz) == (Category.WIN, 1, None)
        with pytest.raises(MissingRuleLayerError, match=r"2k-1k\.wcdf: a compact category file holds no DTZ, so "
                           r".* needs its DTZ: 2k-1k\.dtz \(or its mirror's\) or the master file"):
            without_dtz.probe("W:WK10,K14:BK1", counter=10)  # whether the win still fits needs the DTZ
        with pytest.raises(MissingRuleLayerError, match=r"2k-1k\.wld: a compact file has no rule layer"):
            tb.probe("W:WK10,K14:BK1", rule="crowning")  # no compact file for that preset
    assert result.value is Wdl.WIN and result.dtw is None
    assert [m.value for m in moves] == sorted((m.value for m in moves), reverse=True)
    assert moves[0].value is Wdl.WIN and all(m.dtw is None for m in moves)


# ------------------------------------------------------------------ damage

def test_a_flipped_byte_in_a_block_is_detected_and_named(compact_dir, tmp_path):
    material = Material.parse("2k-2k")
    path = shutil.copy(compact.compact_path(compact_dir, material), tmp_path / "2k-2k.wld")
    table = compact.CompactTable(path)
    block = table.n_blocks - 1
    raw = bytearray(Path(path).read_bytes())
    raw[table.data_offset + block * layout.BLOCK_BYTES + 5] ^= 0x10
    Path(path).write_bytes(bytes(raw))
    damaged = compact.CompactTable(path)  # the header and index are intact
    with pytest.raises(TableError, match=rf"2k-2k\.wld: block {block} is damaged"):
        damaged.value(count_positions(material) - 1)
    with Tablebase(tmp_path) as tb:
        index = count_positions(material) - 1
        arrays = stored_arrays(material, np.array([index]))
        with pytest.raises(TableError, match=rf"2k-2k\.wld: block {block} is damaged"):
            tb.probe_batch(*arrays, 0)
    report = verify_compact(tmp_path, materials=[material])
    assert not report.ok and f"block {block}" in report.messages[0]


def test_a_flipped_byte_in_a_category_block_is_detected_and_named(compact_dir, tmp_path):
    material = Material.parse("2k-2k")
    for kind in (compact.WDL, compact.WCDF):
        shutil.copy(compact.compact_path(compact_dir, material, kind=kind), tmp_path)
    path = compact.compact_path(tmp_path, material, kind=compact.WCDF)
    table = compact.CompactTable(path)
    raw = bytearray(path.read_bytes())
    raw[table.data_offset + 7] ^= 0x04
    path.write_bytes(bytes(raw))
    with Tablebase(tmp_path) as tb:
        arrays = stored_arrays(material, np.array([0]))
        assert tb.probe_batch(*arrays, 0)[0].tolist() in ([-1], [0], [1])  # the WLD file is intact
        with pytest.raises(TableError, match=r"2k-2k\.wcdf: block 0 is damaged"):
            tb.probe_batch_rule(*arrays, 0, 0)
    report = verify_compact(tmp_path, materials=[material])
    assert not report.ok and any("2k-2k.wcdf: block 0" in m for m in report.messages)


def test_a_wrong_stored_category_is_found_against_the_master_and_the_wdl_file(master_dir, tmp_path):
    material = Material.parse("2k-1k")
    compaction.compact_directory(master_dir, out=tmp_path, materials=all_materials(3))
    layer = master.open_table(master.table_path(master_dir, material), rules=("wcdf",)).rules["wcdf"]
    wrong = np.flatnonzero(~capture_mask(material) & (layer.category == 2))[5]
    category = layer.category.copy()
    category[wrong] = 0
    blob, _ = compact.encode_values(material, compact.category_codes(category), kind=compact.WCDF)
    compact.write_compact(compact.compact_path(tmp_path, material, kind=compact.WCDF), blob)
    for reference in (master_dir, tmp_path):  # the master layer, then the .wld file alone
        report = verify_compact(tmp_path, masters=reference, materials=[material])
        assert f"2k-1k.wcdf #{wrong}): stored category" in report.messages[0]
        # checked without its master, its figures recounted differ from the reference too
        assert report.errors == len(report.messages) == (1 if reference == master_dir else 2), report.messages
        assert (reference == master_dir) != ("rule_layers.tsv" in report.messages[-1])


def test_a_damaged_header_is_named(compact_dir, tmp_path):
    path = shutil.copy(compact.compact_path(compact_dir, Material.parse("1k-1k")),
                       tmp_path / "1k-1k.wld")
    raw = bytearray(Path(path).read_bytes())
    raw[20] ^= 1  # positions
    Path(path).write_bytes(bytes(raw))
    with pytest.raises(TableError, match="1k-1k.wld: header checksum mismatch"):
        compact.CompactTable(path)


def test_a_wrong_stored_value_fails_the_successor_check(master_dir, tmp_path):
    # 2k-1k, its mirror and the 2-piece tables its captures reach: what its successor check reads
    # (test_native checks a whole native directory, 2k-2k, by its successors alone)
    material = Material.parse("2k-1k")
    materials = [m for m in all_materials(3) if m.pieces <= 2 or m.name in ("2k-1k", "1k-2k")]
    compaction.compact_directory(master_dir, out=tmp_path, materials=materials)
    assert verify_compact(tmp_path, masters=tmp_path, materials=[material]).ok  # successor check alone
    wdl, _ = master.load_material(master_dir, material)
    quiet = np.flatnonzero(~capture_mask(material) & (wdl == WIN))
    wdl = wdl.copy()
    wdl[quiet[len(quiet) // 2]] = DRAW if wdl[quiet[0]] != DRAW else LOSS
    blob, _ = compact.encode_values(material, wdl)
    compact.write_compact(compact.compact_path(tmp_path, material), blob)
    report = verify_compact(tmp_path, masters=tmp_path, materials=[material])
    assert not report.ok and report.errors >= 1
    assert any(f"2k-1k.wld #{quiet[len(quiet) // 2]}" in m for m in report.messages)


def test_one_shuffled_batch_of_every_table_through_a_small_cache_matches_the_master(master_dir, unmarked_dir):
    # one batch over every material, in random order, from a fresh prober: the kernel stops
    # at each table it has not seen and at each block whose marks are not in memory (after
    # positions whose capture search is still due) and resumes; a cache of a few dozen
    # blocks' marks drops and makes them again many times over
    rng = np.random.default_rng(17)
    materials = all_materials(MAX_PIECES)
    parts = [stored_arrays(m, rng.integers(0, count_positions(m), 60)) for m in materials]
    arrays = [np.concatenate(a) for a in zip(*parts)]
    order = rng.permutation(len(arrays[0]))
    arrays = [a[order] for a in arrays]
    turns = rng.integers(0, 2, len(order))
    dropped = []
    with Tablebase(master_dir) as tm, Tablebase(unmarked_dir, memory_limit_bytes=40_000) as tc:
        tc._blocks_cache.on_evict = lambda key, value: (dropped.append(key), release_evicted(key, value))
        expected, _ = tm.probe_batch(*arrays, turns)
        got, dtw = tc.probe_batch(*arrays, turns)
        again, _ = tc.probe_batch(*arrays, turns)
        kept = len(tc._blocks_cache)
    assert kept < 100 and len(dropped) > kept  # marks were dropped and made again
    assert got.tolist() == expected.tolist() and again.tolist() == expected.tolist()
    assert set(dtw.tolist()) <= {NO_DTW, 0, 1}  # 1: one side has no piece
    assert set(got.tolist()) == {-1, 0, 1}


def test_a_batch_in_position_order_continues_each_lookup_from_the_one_before(compact_dir):
    # the kernel's memo: sorted positions of one block decode forward from the previous
    # lookup; every answer equals the block decoded whole, in order, reversed and repeated
    largest = max(all_materials(MAX_PIECES), key=count_positions)
    table = CompactWdl(compact.compact_path(compact_dir, largest), cache=TableCache(), mark_every=64)
    state = ck.BatchPool(compact.WDL)
    state.describe(0, table)
    want = WDL_OF_CODE[table.values()]
    # its first four blocks (or all, if fewer): each lookup is a Python call, and the whole table
    # took 15 s; the memo's cases (forward, backward, a repeat, across blocks) are all in four
    stop = bisect.bisect_left(range(len(table)), 4, key=table.block_of)
    assert table.block_of(stop - 1) == min(3, table.block_of(len(table) - 1))
    indices = np.arange(stop, dtype=np.int64)
    indices = np.concatenate([indices, indices[::-1], indices[::3], indices[::3]])
    got = np.zeros(len(indices), dtype=np.int64)
    for i, index in enumerate(indices.tolist()):
        table.block_marks(table.block_of(index))
        got[i] = ck._compact_value(0, index, state.desc, state.memo, np.zeros(4, dtype=np.int64),
                                   compact.WDL.value_of_code)
    assert got.tolist() == want[indices].tolist()


def test_a_directory_mixing_compact_and_master_files_works(master_dir, compact_dir, tmp_path):
    for material in all_materials(MAX_PIECES):
        source = (master.table_path(master_dir, material) if material.pieces <= 3
                  else compact.compact_path(compact_dir, material))
        shutil.copy(source, tmp_path / source.name)
    rng = np.random.default_rng(3)
    with Tablebase(master_dir) as tm, Tablebase(tmp_path) as mixed:
        assert mixed.max_pieces == MAX_PIECES
        for material in all_materials(MAX_PIECES):
            indices = rng.integers(0, count_positions(material), 30)
            arrays = stored_arrays(material, indices)
            expected, expected_dtw = tm.probe_batch(*arrays, 0)
            got, dtw = mixed.probe_batch(*arrays, 0)
            assert got.tolist() == expected.tolist(), material.name
            if material.pieces <= 3:
                assert dtw.tolist() == expected_dtw.tolist()
            fen = _fen(*(int(a[0]) for a in arrays))
            assert mixed.probe(fen, rule_free=True).value == tm.probe(fen, rule_free=True).value
            assert (mixed.probe(fen, rule_free=True).dtw is None) == (material.pieces > 3)


@pytest.fixture(scope="session")
def paired_dir(master_dir, compact_dir, tmp_path_factory) -> Path:
    """The master and the compact files of every table up to 4 pieces side by side (links)."""
    directory = tmp_path_factory.mktemp("paired")
    for source in (*master_dir.glob("*.h5"), *compact_dir.glob("*.wld"), *compact_dir.glob("*.wcdf")):
        (directory / source.name).symlink_to(source)
    return directory


def test_a_directory_with_both_files_answers_as_the_masters_alone(master_dir, paired_dir):
    rng = np.random.default_rng(21)
    limit = DRAW_RULES["wcdf"].limit_plies
    with Tablebase(master_dir) as tm, Tablebase(paired_dir, compact_above=0) as tp:
        for material in all_materials(MAX_PIECES):
            arrays = stored_arrays(material, rng.integers(0, count_positions(material), 40))
            counters = rng.integers(0, limit + 1, 40)
            max_dtz = master.read_layer_attrs(master.table_path(master_dir, material))["wcdf"]["max_dtz"]
            for turn in (0, 1):
                assert ([x.tolist() for x in tp.probe_batch(*arrays, turn)]
                        == [x.tolist() for x in tm.probe_batch(*arrays, turn)]), material.name
                want = tm.probe_batch_rule(*arrays, turn, counters)
                got = tp.probe_batch_rule(*arrays, turn, counters)
                assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
                read = got[2] != NO_DTW  # the DTZ is read where the outcome needs it, and is exact
                assert got[2][read].tolist() == want[2][read].tolist()
                if turn == 0:  # positions of this material (White to move: of its mirror)
                    assert read[(np.abs(want[1]) == 2) & (counters + max_dtz > limit)].all()
                crowning = [tb.probe_batch_rule(*arrays, turn, counters % 40, rule="crowning") for tb in (tm, tp)]
                assert [x.tolist() for x in crowning[0]] == [x.tolist() for x in crowning[1]]
            for k in range(0, 40, 5):
                board = Board(_fen(*(int(a[k]) for a in arrays)), quiet_plies=int(counters[k]))
                assert tp.probe(board) == tm.probe(board), board.fen()
                assert tp.probe_outcome(board) == tm.probe_outcome(board)
                assert best_moves(tp, board).moves == best_moves(tm, board).moves
                assert tp.probe(board, rule="crowning", counter=3) == tm.probe(board, rule="crowning", counter=3)


def test_values_and_categories_at_counter_zero_read_no_master_block(paired_dir):
    rng = np.random.default_rng(22)
    boards = [Board(_fen(*global_unrank(m, int(i)))) for m in all_materials(MAX_PIECES)
              for i in rng.integers(0, count_positions(m), 10)]
    with Tablebase(paired_dir, memory_limit_bytes=1 << 30, compact_above=0) as tb:
        master_bytes = lambda: sum(table.full.nbytes for table in tb._tables.values())  # noqa: E731
        for board in boards:
            tb.probe_wdl(board), tb.probe_outcome(board), tb.probe_category(board)
        assert master_bytes() == 0
        assert tb.probe(boards[-1]).dtw is not None  # the DTW is the master's
        assert master_bytes() > 0


def test_small_tables_answer_from_their_master_files_by_default(paired_dir):
    with Tablebase(paired_dir) as tb:
        tb.probe_wdl("B:WK30,K32:BK1")
        assert [type(t).__name__ for t in tb._tables.values()] == ["MasterTable"]
    with Tablebase(paired_dir, compact_above=100) as tb:
        tb.probe_wdl("B:WK30,K32:BK1")   # 2k-1k (with Black to move: 1k-2k) has 14,880 positions
        assert [type(t).__name__ for t in tb._tables.values()] == ["PairedTable"]


def test_the_capture_search_needs_the_smaller_tables(compact_dir, tmp_path):
    shutil.copy(compact.compact_path(compact_dir, Material.parse("1k-2k")), tmp_path)
    with Tablebase(tmp_path) as tb:
        assert tb.probe_wdl("B:WK30,K32:BK1") == -1  # no capture due: the file answers
        with pytest.raises(MissingTableError, match="1k-1k"):
            tb.probe_wdl("B:WK6,K32:BK1")  # 1x10 leads to 1k-1k, which is absent
        with pytest.raises(MissingTableError, match="1k-1k"):
            tb.probe_batch(np.array([0]), np.array([1]), np.array([0]),
                           np.array([(1 << 5) | (1 << 31)]), 0)


# ------------------------------------------------------------------ command line

def test_compact_and_verify_from_the_command_line(master_dir, tmp_path, capsys):
    out = tmp_path / "wld"
    small = tmp_path / "master"
    small.mkdir()
    for material in all_materials(3):
        shutil.copy(master.table_path(master_dir, material), small)
    assert cli.main(["compact", "--tables", str(small), "--out", str(out), "--jobs", "1",
                     "--json"]) == cli.EXIT_OK
    summary = json.loads(capsys.readouterr().out)
    assert summary["tables"] == len(all_materials(3))
    assert summary["positions"] == 3488 + 196032
    assert cli.main(["verify", "--quiet", "--json", "--no-reference", "--tables", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["positions"] == 3488 + 196032
    assert cli.main(["probe", "--tables", str(out), "W:WK10,K14:BK1"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "W:WK10,K14:BK1  win  wcdf counter 0: win  category win  dtz 15"
    assert cli.main(["probe", "--tables", str(small), "W:WK10,K14:BK1"]) == 0  # as the master says
    assert capsys.readouterr().out.splitlines()[0].endswith("category win  dtz 15")


@pytest.mark.parametrize("fen", ["W:WK10,K14:BK1", "W:W9,K14:BK1", "B:W18,24:B14,K3"])
def test_compact_directories_answer_kings_and_men_alike_from_the_command_line(master_dir, compact_dir, fen,
                                                                             capsys):
    assert cli.main(["probe", "--tables", str(master_dir), "--json", fen]) == cli.EXIT_OK
    want = json.loads(capsys.readouterr().out)
    assert cli.main(["probe", "--tables", str(compact_dir), "--json", fen]) == cli.EXIT_OK
    record = json.loads(capsys.readouterr().out)
    assert (record["rule"], record["dtw"], record["outcome"]) == ("wcdf", None, "win")
    assert record["dtz"] == want["dtz"] > 0
    assert "rule_layer_missing" not in record
    assert record["moves"] and all(m["dtw"] is None for m in record["moves"])
    # every move's category, DTZ and outcome from the counter it leaves, as the master's
    fields = ("category", "dtz", "outcome")
    assert ({m["move"]: [m[f] for f in fields] for m in record["moves"]}
            == {m["move"]: [m[f] for f in fields] for m in want["moves"]})
    assert record["moves"][0]["value"] == "win"


def _random_boards(pieces: int, rng: np.random.Generator, per_material: int) -> list[Board]:
    """Random positions of every material up to ``pieces``, either side to move."""
    boards = []
    for material in all_materials(pieces):
        for index in rng.integers(0, count_positions(material), per_material).tolist():
            turn = int(rng.integers(0, 2))
            boards.append(Board(format_fen(Placement(*global_unrank(material, index), turn))))
    return boards


def assert_compact_answers_as_the_masters(masters: Path, compacts: Path, pieces: int, per_material: int):
    """Value, category and outcome at counter 0 of a random sample, and every move's value and category."""
    rng = np.random.default_rng(pieces)
    with Tablebase(masters) as tm, Tablebase(compacts) as tc:
        for board in _random_boards(pieces, rng, per_material):
            fen = board.fen()
            want, got = tm.probe(board), tc.probe(board)
            assert (got.value, got.category, got.outcome) == (want.value, want.category, want.outcome), fen
            assert got.dtw is None and got.dtz == want.dtz, fen  # no cursed win up to 5 pieces
            want_moves = {str(m.move): m for m in best_moves(tm, board).moves}
            got_moves = best_moves(tc, board).moves
            assert sorted(want_moves) == sorted(str(m.move) for m in got_moves), fen
            for m in got_moves:
                expected = want_moves[str(m.move)]
                assert (m.value, m.category) == (expected.value, expected.category), (fen, str(m.move))
                assert (m.outcome, m.dtz) == (expected.outcome, expected.dtz), (fen, str(m.move))


def test_a_sample_up_to_four_pieces_answers_from_compact_files_as_from_the_masters(master_dir, compact_dir):
    assert_compact_answers_as_the_masters(master_dir, compact_dir, MAX_PIECES, per_material=20)


@pytest.mark.slow
def test_a_sample_up_to_five_pieces_answers_from_compact_files_as_from_the_masters(built_tables, tmp_path):
    masters = built_tables(5)
    compaction.compact_directory(masters, out=tmp_path, jobs=2)
    assert_compact_answers_as_the_masters(masters, tmp_path, 5, per_material=40)


def test_build_compact_writes_a_compact_file_per_table(tmp_path, capsys):
    assert cli.main(["build", "--pieces", "2", "--compact", "--rules", "none", "--jobs", "1", "--quiet",
                     "--tables", str(tmp_path)]) == cli.EXIT_OK
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.glob("*.wld")) == sorted(
        f"{m.name}.wld" for m in all_materials(2))
    assert verify_compact(tmp_path).ok


def test_build_compacts_a_directory_with_large_tables_by_default_and_only_stale_files(
        tmp_path, capsys, monkeypatch):
    """A directory holding tables of driver.COMPACT_FROM_PIECES (7) or more gets compact files for
    every table without --compact (the capture search of a 7-piece compact file reads the
    smaller ones); a resumed build writes only those missing or older than their master."""
    import json
    build = ["build", "--jobs", "1", "--quiet", "--json", "--tables", str(tmp_path)]
    monkeypatch.setattr(driver, "COMPACT_FROM_PIECES", 3)  # a 3-piece build stands for a 7-piece one
    assert cli.main(build + ["--pieces", "2"]) == cli.EXIT_OK
    assert json.loads(capsys.readouterr().out)["compacted"] == []  # small tables only: none
    assert cli.main(build + ["--pieces", "3"]) == cli.EXIT_OK
    every = sorted(m.name for m in all_materials(3))
    assert sorted(json.loads(capsys.readouterr().out)["compacted"]) == every
    assert sorted(p.stem for p in tmp_path.glob("*.wld")) == every
    assert sorted(p.stem for p in tmp_path.glob("*.wcdf")) == every
    assert sorted(p.stem for p in tmp_path.glob("*.dtz")) == every
    assert compaction.stale_materials(tmp_path) == []
    assert verify_compact(tmp_path).ok
    for material in all_materials(3):  # the build's disk check counts them, with their marks files
        assert budget.compact_bytes(tmp_path, material) == sum(
            p.stat().st_size for p in tmp_path.glob(f"{material.name}.*") if p.suffix != master.SUFFIX)
    assert cli.main(build + ["--pieces", "3"]) == cli.EXIT_OK
    assert json.loads(capsys.readouterr().out)["compacted"] == []  # up to date: kept
    os.utime(compact.compact_path(tmp_path, Material.parse("2k-1k")), ns=(0, 0))  # older than its master
    assert [m.name for m in compaction.stale_materials(tmp_path)] == ["2k-1k"]
    assert [m.name for m in compaction.stale_materials(tmp_path, min_pieces=4)] == []


# --- marks files (egtb.formats.compact.sidecar) ---------------------------------------------------

def _largest_compact(directory: Path, kind=layout.WDL) -> Path:
    return compact.compact_path(directory, max(all_materials(MAX_PIECES), key=count_positions), kind=kind)


def _copy_with_marks(source: Path, directory: Path) -> Path:
    """A compact file and its marks file copied into ``directory``; the copy's path."""
    shutil.copy(source, directory)
    shutil.copy(compact.marks_path(source), directory)
    return directory / source.name


@pytest.mark.parametrize("kind", [layout.WDL, layout.WCDF])
def test_a_marks_file_holds_the_marks_made_in_memory_and_answers_the_same(compact_dir, kind):
    path = _largest_compact(compact_dir, kind)
    from_file = compact.CompactTable(path, cache=TableCache())
    in_memory = compact.CompactTable(path, cache=TableCache(), use_marks_file=False)
    assert from_file.marks_file is not None and in_memory.marks_file is None
    assert compact.marks_path(path).name == path.name + ".marks"
    for block in range(from_file.n_blocks):
        assert from_file.block_marks(block).marks.tolist() == in_memory.block_marks(block).marks.tolist()
    assert from_file.values().tolist() == in_memory.values().tolist()
    every = np.arange(len(from_file))
    assert [from_file.value(i) for i in every[::5].tolist()] == in_memory.values()[::5].tolist()
    assert len(from_file.cache) == 0  # the marks are the file's, not the cache's


def test_marks_at_another_spacing_than_the_file_are_made_in_memory_without_a_warning(compact_dir, recwarn):
    table = compact.CompactTable(_largest_compact(compact_dir), cache=TableCache(), mark_every=8)
    assert table.marks_file is None and not recwarn.list
    assert table.value(0) in (1, 2, 3)


def test_a_reader_takes_its_marks_files_own_spacing_and_egtb_compact_marks_restores_the_default(
        compact_dir, tmp_path, capsys):
    path = _copy_with_marks(_largest_compact(compact_dir), tmp_path)
    written = compact.marks_path(path).read_bytes()
    want = compact.CompactTable(path, cache=TableCache(), use_marks_file=False).values()
    assert cli.main(["compact", "--marks", "--mark-every", "64", "--tables", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["marked"] == [path.name]
    table = compact.CompactTable(path, cache=TableCache())
    assert table.marks_file is not None and table.mark_every == table.marks_file.every == 64
    assert len(table.marks_file.marks) < len(written) // 8 // 2 + table.n_blocks  # about half the marks
    sample = np.arange(0, len(table), 3)
    assert [table.value(i) for i in sample.tolist()] == want[sample].tolist()
    assert compact.CompactTable(path, cache=TableCache(), mark_every=32).marks_file is None  # asked for 32
    assert cli.main(["compact", "--marks", "--tables", str(tmp_path), "--json"]) == 0  # back to 32 runs
    assert json.loads(capsys.readouterr().out)["marked"] == [path.name]
    assert compact.marks_path(path).read_bytes() == written


@pytest.mark.parametrize("runs", ["0", "65536", "x"])
def test_egtb_compact_marks_refuses_a_spacing_its_files_cannot_hold(tmp_path, capsys, runs):
    with pytest.raises(SystemExit) as exc:
        cli.main(["compact", "--marks", "--mark-every", runs, "--tables", str(tmp_path)])
    assert exc.value.code == 2 and "--mark-every" in capsys.readouterr().err


def test_egtb_compact_refuses_a_mark_spacing_without_marks_before_any_work(tmp_path, capsys):
    (tmp_path / "1k-1k.h5").write_bytes(b"not read")  # nothing is compacted: the options are checked first
    assert cli.main(["compact", "--mark-every", "64", "--tables", str(tmp_path)]) == 2
    assert "give --marks too" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1k-1k.h5"]


@pytest.mark.parametrize("spoil, why", [
    (lambda marks: marks.write_bytes(marks.read_bytes()[:-8]), "truncated"),
    (lambda marks: marks.write_bytes(marks.read_bytes()[:40]), "not a marks file"),
    (lambda marks: marks.write_bytes(marks.read_bytes()[:100]), "header checksum mismatch"),
    (lambda marks: marks.write_bytes(b"EGTBMRK\x00\x07" + marks.read_bytes()[9:]), "version 7"),
])
def test_a_truncated_or_foreign_marks_file_is_named_and_the_marks_are_made_in_memory(compact_dir, tmp_path,
                                                                                      spoil, why):
    path = _copy_with_marks(_largest_compact(compact_dir), tmp_path)
    want = compact.CompactTable(path, cache=TableCache()).values()
    spoil(compact.marks_path(path))
    with pytest.warns(compact.sidecar.MarksFileWarning, match=why) as caught:
        table = compact.CompactTable(path, cache=TableCache())
    assert str(compact.marks_path(path)) in str(caught[0].message)
    assert table.marks_file is None and table.values().tolist() == want.tolist()


def test_a_stale_marks_file_is_named_and_egtb_compact_marks_writes_it_again(compact_dir, tmp_path, capsys):
    largest = _largest_compact(compact_dir)
    path = _copy_with_marks(largest, tmp_path)
    other = min(all_materials(MAX_PIECES), key=count_positions)
    shutil.copy(compact.compact_path(compact_dir, other), path)  # the compact file changed, not its marks
    with pytest.warns(compact.sidecar.MarksFileWarning, match="belongs to another compact file"):
        assert compact.CompactTable(path, cache=TableCache()).marks_file is None
    shutil.copy(compact.compact_path(compact_dir, other), tmp_path)  # no marks file at all: quiet
    assert cli.main(["compact", "--marks", "--tables", str(tmp_path), "--jobs", "1", "--json"]) == 0
    assert sorted(json.loads(capsys.readouterr().out)["marked"]) == sorted([path.name, f"{other.name}.wld"])
    assert compact.CompactTable(path, cache=TableCache()).marks_file is not None
    assert cli.main(["compact", "--marks", "--tables", str(tmp_path), "--jobs", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["marked"] == []


def test_writing_a_compact_file_removes_the_marks_of_the_file_it_replaces(compact_dir, tmp_path):
    path = _copy_with_marks(_largest_compact(compact_dir), tmp_path)
    compact.write_compact(path, path.read_bytes())
    assert not compact.marks_path(path).exists()


def test_damaged_marks_of_a_block_are_named_on_its_first_lookup(compact_dir, tmp_path, monkeypatch):
    path = _copy_with_marks(_largest_compact(compact_dir), tmp_path)
    marks = compact.marks_path(path)
    blob = bytearray(marks.read_bytes())
    blob[-3] ^= 0x10  # in the last block's marks: the header and offsets still check
    marks.write_bytes(bytes(blob))
    table = compact.CompactTable(path, cache=TableCache())
    assert table.marks_file is not None
    assert table.value(0) in (1, 2, 3)  # the first block is sound
    with pytest.raises(TableError, match=f"{marks.name}: the marks of block {table.n_blocks - 1} are damaged"):
        table.value(len(table) - 1)
    quiet = np.flatnonzero(~capture_mask(Material.parse(path.stem)))[-1:]  # in the last block
    for order_above in (ck.ORDER_ABOVE, 0):  # one by one, and a sorted batch checking its blocks first
        monkeypatch.setattr(ck, "ORDER_ABOVE", order_above)
        with Tablebase(tmp_path) as tb, pytest.raises(TableError, match="are damaged"):
            tb.probe_batch(*stored_arrays(Material.parse(path.stem), quiet), 0)


@pytest.mark.parametrize("directory", ["compact_dir", "unmarked_dir"])
def test_a_batch_in_the_order_of_its_positions_answers_as_the_master(master_dir, directory, request,
                                                                    monkeypatch):
    # the 7-piece path (sorted by table and index, blocks marked ahead, captures as one batch of
    # successors) on small tables, with and without marks files
    monkeypatch.setattr(ck, "ORDER_ABOVE", 0)
    rng = np.random.default_rng(23)
    materials = [m for m in all_materials(MAX_PIECES) if m.pieces >= 3]
    parts = [stored_arrays(m, rng.integers(0, count_positions(m), 40)) for m in materials]
    arrays = [np.concatenate(a)[order] for a, order in
              zip(zip(*parts), [rng.permutation(40 * len(materials))] * 4)]
    turns = rng.integers(0, 2, len(arrays[0]))
    with Tablebase(master_dir) as tm, Tablebase(request.getfixturevalue(directory)) as tc:
        assert tc.probe_batch(*arrays, turns)[0].tolist() == tm.probe_batch(*arrays, turns)[0].tolist()
        want = tm.probe_batch_rule(*arrays, turns, 0)[1]
        assert tc.probe_batch_rule(*arrays, turns, 0)[1].tolist() == want.tolist()


def test_a_sorted_batch_answers_its_captures_from_the_small_masters_values_alone(master_dir, paired_dir,
                                                                                monkeypatch):
    # the larger tables from their compact files, the smaller from their masters: the successors
    # of the captures are read from the masters' values (no DTW, no DTZ block), the batch's own
    # positions with their distances
    monkeypatch.setattr(ck, "ORDER_ABOVE", 0)
    materials = [m for m in all_materials(MAX_PIECES) if m.pieces >= 3]
    line = sorted(count_positions(m) for m in materials)[len(materials) // 2]
    rng = np.random.default_rng(29)
    parts = [stored_arrays(m, rng.integers(0, count_positions(m), 50)) for m in materials]
    arrays = [np.concatenate(a) for a in zip(*parts)]
    turns = rng.integers(0, 2, len(arrays[0]))
    with Tablebase(master_dir) as tm, Tablebase(paired_dir, compact_above=line) as tp:
        want_wdl, want_dtw = tm.probe_batch(*arrays, turns)
        got_wdl, got_dtw = tp.probe_batch(*arrays, turns)
        _, want_category, want_dtz = tm.probe_batch_rule(*arrays, turns, 0)
        _, got_category, _ = tp.probe_batch_rule(*arrays, turns, 0)
        masters = [t for t in tp._tables.values() if t.stores_captures]
        assert any(t.codes.nbytes and t.codes is not t.values for t in masters)
    assert got_wdl.tolist() == want_wdl.tolist() and got_dtw.tolist() == want_dtw.tolist()
    assert got_category.tolist() == want_category.tolist()
