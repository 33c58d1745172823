"""Compile the numba kernels the test suite runs, once, before pytest-xdist starts its workers.

The kernels are ``cache=True``: numba keeps them in the cache directory of this state of the source
(:mod:`egtb.kernel_cache`), which a fresh clone lacks. Without this, each worker that first needs a kernel compiles it, and two workers
that need it at once (the shared tables' build and a compact-native build, say) both compile it.
``python tests/numba_warmup.py PART`` runs one part; tests/conftest.py runs the parts side by side
in the controller, and the workers then load the kernels from the cache. What the parts leave out
the workers compile, each that needs it: list the cache's ``*.nbi`` files after the parts alone
(a cold ``NUMBA_CACHE_DIR``) and after a run of the suite with ``EGTB_TEST_WARMUP=0``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path


def probe_all(tables: Path) -> None:
    """Single probes and batches (values, and outcomes under the rule from two counters)."""
    import numpy as np

    from egtb.positions.index import unrank_positions
    from egtb.positions.material import Material
    from egtb.probe.tablebase import Tablebase
    from egtb.rules.draw_rules import DEFAULT_RULE, DRAW_RULES

    material = Material.parse("2k-1k")
    bm, bk, wm, wk = (np.zeros(2000, dtype=np.int64) for _ in range(4))
    unrank_positions(np.arange(2000, dtype=np.int64), material.black_men, material.black_kings,
                     material.white_men, material.white_kings, bm, bk, wm, wk)
    with Tablebase(tables) as tb:
        for fen in ("W:WK1:BK32", "B:W32:B1,K28", "W:W9,K30:B5"):
            tb.probe(fen)
            tb.probe_dtz(fen)
        tb.probe_batch(bm, bk, wm, wk, 0)
        tb.probe_batch_rule(bm, bk, wm, wk, 0, 0)
        tb.probe_batch_rule(bm, bk, wm, wk, 1, 3)
        tb.probe_batch_rule(bm, bk, wm, wk, 1, DRAW_RULES[DEFAULT_RULE].limit_plies - 1)  # the DTZ read too


def builder(directory: Path) -> None:
    """The solver, rule layers, master files, their verify and prober; compaction, and the check
    of compact files against their masters."""
    import shutil

    from egtb.builder.compaction import compact_directory
    from egtb.builder.driver import build
    from egtb.builder.verify import verify_directory

    masters, both = directory / "masters", directory / "both"
    build(3, directory=masters, jobs=1, progress=False)
    probe_all(masters)
    shutil.copytree(masters, both)
    compact_directory(both, jobs=1)
    verify_directory(both, jobs=1, compact=True)  # the masters, and the compact files against them
    probe_all(both)


def native_and_play(directory: Path) -> None:
    """The engines' search, perft and move generation, then the compact-native build (by then the
    other part has likely cached the solver's kernels, which both builds run), the compact files'
    prober and their check by successors."""
    from egtb.builder.driver import build
    from egtb.builder.native import keep_dtz_on_one_side_in
    from egtb.builder.verify_compact import verify_compact
    from egtb.cli import main as egtb_main
    from egtb.rules.board import Board
    from tournament.engines.search import search_position

    board = Board()
    search_position(board, 4)
    search_position(Board("B:W32:B1,K28"), 4)
    board.legal_moves()
    egtb_main(["perft", "--depth", "3"])
    egtb_main(["perft", "--depth", "3", "--hash", "1"])
    native = directory / "native"
    build(3, directory=native, jobs=1, progress=False, native=True)
    probe_all(native)
    verify_compact(native)  # no masters: the successor checks
    keep_dtz_on_one_side_in(native, min_pieces=3)  # and the DTZ derived from the moves, probed and checked
    probe_all(native)
    verify_compact(native)
    # on disk, as the 8-piece pairs: the dependencies' capture positions answered from the loaded
    # tables, the DTZ spill (kernels the workers compiled after this part, a cold run's cache showed)
    build(3, directory=directory / "on-disk", jobs=1, progress=False, native=True, on_disk=True)


def test_modules(directory: Path) -> None:
    """The kernels of the test modules themselves (tests/test_probe_rule.py's oracle,
    tests/test_index.py's enumeration), which the workers compiled after the other parts."""
    from egtb.positions.material import Material
    from test_index import _enumerate
    from test_probe_rule import Oracle

    Oracle(2, "wcdf")
    _enumerate(Material.parse("1k-1k"))


PARTS = {"builder": builder, "native_and_play": native_and_play, "test_modules": test_modules}


def main(part: str) -> None:
    with tempfile.TemporaryDirectory(prefix="numba-warmup-") as directory:
        PARTS[part](Path(directory))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's packages and cache
    main(sys.argv[1])
