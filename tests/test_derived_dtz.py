"""A pair's DTZ held on one side alone (egtb.probe.derived_dtz): the other side's derived from its moves.

What must hold: with the ``.dtz`` files of one side of several pairs gone, every position of
those materials gets the same outcome, category and DTZ from batch and single probes at every
counter as with both files; a capture position's DTZ is 1; the largest DTZ the layer claims
bounds the true one; a self-mirrored material never derives; and a derivation whose categories
contradict the stored ones names the directory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from egtb.errors import TableError
from egtb.positions.index import code_of_material, unrank_positions
from egtb.positions.material import Material, count_positions
from egtb.probe.derived_dtz import derive
from egtb.probe.kernels import NO_DTW, probe_rule_one
from egtb.probe.single import probe_rule
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import DRAW_RULES

#: One side of four pairs (men and kings, men alone, kings alone): their ``.dtz`` files dropped.
DROPPED = ("1m1k-2k", "2m-1m1k", "1m2k-1k", "1k-1m")


@pytest.fixture(scope="module")
def one_sided(native_dir: Path, tmp_path_factory) -> Path:
    """The 4-piece compact-native set with the DTZ files of DROPPED (and their marks) left out."""
    directory = tmp_path_factory.mktemp("one-sided")
    dropped = {f"{name}.dtz" for name in DROPPED} | {f"{name}.dtz.marks" for name in DROPPED}
    for source in native_dir.iterdir():
        if source.name not in dropped:
            (directory / source.name).symlink_to(source)
    return directory


def every_position(material: Material) -> tuple[np.ndarray, ...]:
    n = count_positions(material)
    boards = tuple(np.empty(n, dtype=np.int64) for _ in range(4))
    unrank_positions(np.arange(n, dtype=np.int64), material.black_men, material.black_kings,
                     material.white_men, material.white_kings, *boards)
    return boards


def test_the_dropped_side_derives_and_the_kept_side_reads(one_sided):
    with Tablebase(one_sided) as tb:
        derived = [tb.layer_for(code, "wcdf") for code in _codes(DROPPED)]
        kept = [tb.layer_for(code, "wcdf") for code in _codes([Material.parse(n).mirrored().name for n in DROPPED])]
        symmetric = tb.layer_for(_codes(["2k-2k"])[0], "wcdf")
    assert all(layer.dtz_derived and layer.dtz_file is None for layer in derived)
    assert not any(layer.dtz_derived for layer in kept) and all(layer.dtz_file is not None for layer in kept)
    assert not symmetric.dtz_derived


def _codes(names) -> list[int]:
    return [code_of_material(Material.parse(name)) for name in names]


@pytest.mark.parametrize("name", DROPPED)
def test_batches_of_every_position_answer_as_with_both_files(native_dir, one_sided, name):
    material = Material.parse(name)
    boards = every_position(material)
    with Tablebase(native_dir) as full, Tablebase(one_sided) as part:
        for turn in (0, 1):  # the material itself, and its mirror with White to move
            for counter in (0, 79, 80):
                want = full.probe_batch_rule(*boards, turn, counter)
                got = part.probe_batch_rule(*boards, turn, counter)
                assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1]), (turn, counter)
                both = (np.abs(want[1]) == 2) & (want[2] != NO_DTW) & (got[2] != NO_DTW)
                assert np.array_equal(want[2][both], got[2][both]), (turn, counter)
                if turn == 0 and counter == 80:  # every win and loss's DTZ is read there
                    assert both.sum() == np.count_nonzero(np.abs(want[1]) == 2) > 0
        layer = part.layer_for(_codes([name])[0], "wcdf")
        dtz = part.probe_batch_rule(*boards, 0, 80)[2]
        assert layer.max_dtz >= dtz[np.abs(part.probe_batch_rule(*boards, 0, 0)[1]) == 2].max()


def test_single_probes_answer_as_with_both_files(native_dir, one_sided):
    rule = DRAW_RULES["wcdf"]
    rng = np.random.default_rng(7)
    derived = 0
    with Tablebase(native_dir) as full, Tablebase(one_sided) as part:
        for name in DROPPED:
            material = Material.parse(name)
            boards = every_position(material)
            for i in rng.integers(0, count_positions(material), 60).tolist():
                key = (*(int(b[i]) for b in boards), 0)
                for counter in (0, 41, 79):
                    want, got = probe_rule(full, key, rule, counter), probe_rule(part, key, rule, counter)
                    assert want == got, (name, key, counter)
                    derived += abs(got[1]) == 2
    assert derived > 100


def test_a_derivation_that_contradicts_the_stored_categories_names_the_directory():
    boards = (np.array([0]), np.array([1 << 13]), np.array([0]), np.array([1 << 20]), np.array([0]))

    def every_move_draws(children, counter):
        n = len(children[0])
        return np.zeros(n, dtype=np.int8), np.zeros(n, dtype=np.uint16)

    with pytest.raises(TableError, match=r"^tables here: the category 2 of position .* is not the 0 its moves give"):
        derive(boards, np.array([2]), limit=80, man_resets=True, probe=every_move_draws, where="tables here")


def test_the_single_probe_kernel_derives_once_what_its_moves_reach_is_in_memory(native_dir, one_sided):
    rule = DRAW_RULES["wcdf"]
    material = Material.parse("1m2k-1k")
    boards = every_position(material)
    with Tablebase(native_dir) as full, Tablebase(one_sided) as part:
        category = full.probe_batch_rule(*boards, 0, 0)[1]
        chosen = np.flatnonzero(np.abs(category) == 2)[::97]
        want = full.probe_batch_rule(*(b[chosen] for b in boards), 0, rule.limit_plies)[2]
        for i in chosen.tolist():  # a first probe of each: the layers and blocks its moves reach are then read
            probe_rule(part, (*(int(b[i]) for b in boards), 0), rule, rule.limit_plies)
        rows_at = part.kernel_rows_at(rule.name)
        for i, dtz in zip(chosen.tolist(), want.tolist()):
            status, _, got_category, got_dtz, _ = probe_rule_one(*(int(b[i]) for b in boards), 0, rule.limit_plies,
                                                                 rule.limit_plies, rows_at)
            assert (status, got_category, got_dtz) == (0, category[i], dtz), i
    assert len(chosen) > 100
