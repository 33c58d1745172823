"""What a command line loads at start-up (issue 30): a help text, a usage error or a light command
loads no numba kernel, and a kernel command only what it uses.

Each case runs in a fresh interpreter and asserts which packages ended up in ``sys.modules``;
nothing here is timed (bench/bench_startup.py measures the seconds).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: The packages a start-up is measured by: the kernels (numba, numpy), the tables' HDF5 (h5py),
#: the cluster (dask, distributed), the page (starlette, uvicorn) and the progress bars (tqdm).
HEAVY = ("numba", "numpy", "h5py", "dask", "distributed", "starlette", "uvicorn", "tqdm")

#: Runs a command line's main in a fresh interpreter and prints which heavy packages it loaded.
_IMPORTS_PROBE = """
import sys
from {module} import main
try:
    main({argv!r})
except SystemExit:
    pass
print("loaded:", *[name for name in {heavy!r} if name in sys.modules])
"""


def loaded_by(module: str, *argv: str) -> tuple[str, set[str]]:
    """(what a fresh process running ``module.main(argv)`` printed, the heavy packages it loaded)."""
    code = _IMPORTS_PROBE.format(module=module, argv=list(argv), heavy=HEAVY)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *printed, last = result.stdout.rstrip("\n").split("\n")
    assert last.startswith("loaded:"), result.stdout + result.stderr
    return "\n".join(printed), set(last.removeprefix("loaded:").split())


EGTB_LIGHT = [["--help"], ["--version"], *([name, "--help"] for name in
              ("perft", "moves", "build", "compact", "stats", "verify", "probe")),
              ["nosuch"], ["perft"], ["build", "--pieces", "many"], ["probe", "--counter", "-1"]]
TOURNAMENT_LIGHT = [["--help"], ["--version"], *([name, "--help"] for name in ("run", "hub-engine", "play", "review")),
                    ["run"], ["run", "--engine", "easy"], ["run", "--engine", "a", "--engine", "b", "--games", "0"],
                    ["run", "--engine", "a", "--engine", "b", "--openings", "no-such-file"]]


@pytest.mark.parametrize("argv", EGTB_LIGHT, ids=" ".join)
def test_egtb_help_and_usage_errors_load_no_kernel(argv):
    printed, heavy = loaded_by("egtb.cli", *argv)
    assert heavy == set()  # `egtb --help` and `egtb probe --help` start without numba, numpy or h5py
    if argv == ["--help"]:
        assert "COMMAND" in printed and "probe" in printed
    if argv == ["--version"]:
        assert printed == "egtb 0.2.0"


@pytest.mark.parametrize("argv", TOURNAMENT_LIGHT, ids=" ".join)
def test_tournament_help_and_usage_errors_load_no_kernel(argv):
    printed, heavy = loaded_by("tournament.cli", *argv)
    assert heavy == set()
    if argv == ["--help"]:
        assert "hub-engine" in printed
    if argv == ["--version"]:
        assert printed.startswith("tournament 0.")
    if argv == ["run", "--help"]:
        assert "--openings-order {sequential,random}" in printed and "--rule {crowning,forty-plies,wcdf}" in printed


def test_the_help_texts_still_name_the_defaults_they_took_from_the_kernels_modules():
    printed, _ = loaded_by("egtb.cli", "build", "--help")
    assert "wcdf, crowning, forty-plies" in " ".join(printed.split()) and "(default auto:" in printed
    printed, _ = loaded_by("egtb.cli", "probe", "--help")
    assert "{wcdf,crowning,forty-plies}" in printed and "$EGTB_DIR or data/egtb" in printed


@pytest.mark.parametrize("argv, printed_text", [(["perft", "--depth", "1"], "7"),
                                                (["moves", "B:W14,23:B9"], "9x18x27 W:W:B27")])
def test_rules_commands_load_the_kernels_but_no_tables_cluster_or_page(argv, printed_text):
    printed, heavy = loaded_by("egtb.cli", *argv)
    assert printed == printed_text and heavy == {"numba", "numpy"}


def test_probe_loads_no_cluster_page_or_progress_bar(tmp_path):
    _, heavy = loaded_by("egtb.cli", "probe", "B:W5,6,10:B1", "--tables", str(tmp_path))
    assert heavy & {"dask", "distributed", "starlette", "uvicorn", "tqdm"} == set()


def test_the_package_loads_the_rules_on_first_use_of_their_names():
    code = ("import sys, egtb; before = 'numba' in sys.modules; from egtb import Board, Move, DRAW_RULES; "
            "print(before, 'numba' in sys.modules, len(Board().legal_moves()), Move.__name__, sorted(DRAW_RULES))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split(maxsplit=4) == ["False", "True", "7", "Move", "['crowning', 'forty-plies', 'wcdf']\n"]


def test_the_kernels_of_another_state_of_the_source_go_to_another_cache_directory(tmp_path):
    # numba checks only a kernel's own file; a kernel that calls another module's holds its code too
    from egtb import kernel_cache
    package = tmp_path / "egtb"
    package.mkdir()
    (package / "a.py").write_text("x = 1\n")
    (package / "b.py").write_text("y = 1\n")
    before = kernel_cache.source_digest([package])
    assert kernel_cache.source_digest([package]) == before
    os.utime(package / "b.py", ns=(1, 1))  # the callee's module changed alone
    assert kernel_cache.source_digest([package]) != before


def test_numba_caches_in_the_directory_of_this_state_of_the_source_unless_told(tmp_path):
    code = "import os, egtb, numba; print(os.environ['NUMBA_CACHE_DIR']); print(numba.config.CACHE_DIR)"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", code], env=dict(env, XDG_CACHE_HOME=str(tmp_path)),
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == out[1] and Path(out[0]).parent == tmp_path / "egtb" / "numba" and Path(out[0]).is_dir()
    out = subprocess.run([sys.executable, "-c", code], env=dict(env, NUMBA_CACHE_DIR=str(tmp_path / "mine")),
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(tmp_path / "mine")] * 2


def test_a_hub_engine_answers_hub_without_the_kernels_and_loads_at_init_only_what_it_plays_with():
    # a program listing engines asks only "hub"; "init" loads the move generator (off the first move's
    # clock), and the random mover loads no searcher, prober or HDF5 (the registry imports them on demand)
    code = ("import io, sys\nfrom tournament.engines.registry import make_engine\n"
            "from tournament.engines.hub.server import serve\n"
            f"heavy = lambda: sorted(name for name in {HEAVY!r} if name in sys.modules)\n"
            "engine, out = make_engine('random'), io.StringIO()\n"
            "serve(engine, io.StringIO('hub\\n'), out); print(out.getvalue().splitlines()[-1], *heavy())\n"
            "serve(engine, io.StringIO('init\\n'), out); print(out.getvalue().splitlines()[-1], *heavy())\n"
            "print('tournament.engines.search' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == ["wait", "ready numba numpy", "False"]
