"""The compact kernel for big units gives exactly the edge-list solver's values.

Every check here is a slow one (`make test-all`, CI): compiling the kernel alone takes
13 CPU s of a fresh clone's `make test`, and the default run's builds never choose it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from egtb.builder.contents import contents_for
from egtb.builder import budget
from egtb.builder import dependency_load, pipeline, plan as planner
from egtb.positions.material import all_materials
from egtb.builder.verify import verify_directory
from test_scratch import file_checksums

CONTENTS = contents_for(4)  # the rule-free table and every layer
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tables4(built_tables) -> Path:
    return built_tables(4)  # the session's shared set: read only


def solve_both(directory: Path, pair: planner.Pair, per_pass: int):
    deps = planner.dependency_materials(pair)
    edges = dependency_load.load_dependencies(directory, deps, pair.materials, CONTENTS)
    compact = dependency_load.load_dependencies(directory, deps, pair.materials, CONTENTS)
    pipeline.solve_pair(pair.materials, edges)
    pipeline.solve_pair(pair.materials, compact, per_pass=per_pass)
    return edges, compact


def same(a: dependency_load.FlatTables, b: dependency_load.FlatTables) -> bool:
    return all(np.array_equal(getattr(a, name), getattr(b, name))
               for name in ("wdl", "dtw", "rcat", "rdtz"))


# Every 4-piece pair, solved both ways (the build test below writes each with this kernel too).
def test_every_pair_up_to_four_pieces(tables4):
    for pair in planner.plan_pairs(4):
        assert same(*solve_both(tables4, pair, 4)), pair.key


@pytest.mark.parametrize("per_pass", [1, 2, 3])
def test_fewer_tables_per_pass(tables4, per_pass):
    for key in ("2k-2k", "1k-1m2k", "1m1k-2m"):
        pair = next(p for p in planner.plan_pairs(4) if p.key == key)
        assert same(*solve_both(tables4, pair, per_pass)), key


@pytest.mark.parametrize("pieces", [3, 4])
def test_build_with_the_compact_kernel_writes_the_same_files(tables4, tmp_path, pieces):
    for pair in planner.plan_pairs(pieces):  # each pair reads the files written before it
        record = pipeline.build_pair(tmp_path, pair, planner.dependency_materials(pair),
                                    plan=budget.PairPlan(pair.key, False, 4, 0))
        assert record.per_pass == 4
    materials = all_materials(pieces)
    assert file_checksums(tmp_path, materials) == file_checksums(tables4, materials)
    largest = [m for m in materials if m.pieces == pieces]
    assert verify_directory(tmp_path, materials=[largest[0], largest[-1]]).ok


def test_five_piece_pairs(built_tables):
    tables5 = built_tables(5)  # the session's shared set: read only
    for key in ("2k-3k", "1k-1m3k", "1m1k-1m2k", "2m-2m1k", "1m-3m1k"):  # pair keys: the smaller name
        pair = next(p for p in planner.plan_pairs(5) if p.key == key)
        assert same(*solve_both(tables5, pair, 4)), key


FRESH_BUILD = """
import sys
from pathlib import Path
from egtb.builder import budget, pipeline, plan as planner
directory, per_pass = Path(sys.argv[1]), int(sys.argv[2])
for pair in planner.plan_pairs(3):  # this kernel first, before anything else is compiled
    pipeline.build_pair(directory, pair, planner.dependency_materials(pair),
                        plan=budget.PairPlan(pair.key, False, per_pass, 0))
print("built")
"""


# compiles every kernel from nothing in a subprocess: minutes
@pytest.mark.parametrize("per_pass", [0, 4], ids=["edge-lists", "compact"])
def test_kernels_compile_first_in_a_fresh_process(tmp_path, per_pass):
    """Kernels compiled without reference counts type their callees the same way: one
    that allocates (generate_moves) fails there unless something compiled it before, so
    a fresh machine's first build on the compact kernel failed. Here nothing is cached."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    (tmp_path / "tables").mkdir()
    done = subprocess.run([sys.executable, "-c", FRESH_BUILD, str(tmp_path / "tables"),
                           str(per_pass)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "built"
