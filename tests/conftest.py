"""pytest configuration and fixtures shared by the test modules."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from egtb.probe.tablebase import Tablebase
from egtb.builder.driver import build
from egtb.builder.compaction import compact_directory
from egtb.formats.master import SUFFIX, stored_materials

# Scripts run as external engine processes by the tests, not test modules: they
# read standard input when imported, so doctest collection must skip them.
collect_ignore = ["fake_engines"]

#: The test files that take longest, longest first (the sum of a file's test durations in a warm
#: `make test`, Dec 5 2026, loaded machine: from about 66 s down to 5). `make test` runs pytest-xdist
#: with ``--dist loadfile --no-loadscope-reorder``: a worker takes a whole file, in this order, so
#: the long files start first and short ones fill in at the end (a long file taken last ended the
#: run late). The kernels are compiled before the workers start (pytest_configure), so no file
#: need wait for another's compile any more; test_native waits for test_compact's shared 4-piece
#: compact files (a lock) after building its own. test_web_browser (skipped on the machine measured,
#: which had no Chromium) and test_solve_regen (slow tests alone) keep their places from the earlier order.
LONGEST_FIRST = ("test_compact.py", "test_native.py", "test_web_api.py", "test_rule_layer.py",
                 "test_web_browser.py", "test_build.py", "test_schedule.py", "test_scratch.py",
                 "test_verify.py", "test_solve_regen.py", "test_probe.py", "test_hub.py",
                 "test_checkerboard.py", "test_probe_rule.py", "test_startup.py", "test_engine_pool.py",
                 "test_movegen.py", "test_distributed.py", "test_web_analysis.py", "test_compact_dtz.py",
                 "test_cli.py", "test_captures.py", "test_doc_examples.py", "test_openings.py",
                 "test_index.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files of LONGEST_FIRST first, in that order; the others after them as collected."""
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests keep their order


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, the controller compiles the numba kernels before it starts the workers
    (tests/numba_warmup.py, its parts side by side): a fresh clone has no kernel cache, and workers
    that needed a kernel at once each compiled it (a cold `make test` spent about 120 CPU s more
    than a warm one; the warm-up's own cost: about 61 CPU s cold, 4 warm), and beside them collects
    the tests once (:func:`collection_command`). Set EGTB_TEST_WARMUP=0 to skip both."""
    if (os.environ.get("PYTEST_XDIST_WORKER") or not config.pluginmanager.hasplugin("xdist")
            or not getattr(config.option, "numprocesses", None) or config.option.collectonly
            or os.environ.get("EGTB_TEST_WARMUP") == "0"):
        return
    from numba_warmup import PARTS  # tests/ is on sys.path: pytest put it there to import this file
    script = Path(__file__).with_name("numba_warmup.py")
    commands = {part: [sys.executable, str(script), part] for part in PARTS}
    if not sys.dont_write_bytecode:
        commands["collection"] = collection_command(config)
    env = {name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"}
    runs = {part: subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
            for part, command in commands.items()}
    for part, run in runs.items():
        output, _ = run.communicate()
        if run.returncode:  # the tests that use these kernels will say what is wrong
            print(f"test warm-up {part} failed ({run.returncode}):\n{output[-2000:]}", file=sys.stderr)


def collection_command(config: pytest.Config) -> list[str]:
    """A collection of the run's tests beside the warm-up, in one process: it writes the bytecode of
    the test modules, assertions rewritten (``__pycache__``), which each worker then reads instead of
    making it again (a fresh clone's collection took 10.8 CPU s in a worker, 3.5 s with that bytecode)."""
    return [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
            "--rootdir", str(config.rootpath), *config.args]


def run_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of this pytest run that its pytest-xdist workers share (each has its own basetemp
    below it); without workers, the session's own basetemp."""
    basetemp = tmp_path_factory.getbasetemp()
    return basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp


#: Under pytest-xdist the smaller shared sets are the files of this one's (test_compact builds it
#: first): a second build of its own compiled the solver again in another worker (9-20 CPU s).
SHARED_PIECES = 4


def link_smaller_tables(source: Path, directory: Path, pieces: int) -> None:
    """Hard-link the table files of up to ``pieces`` pieces of ``source`` into ``directory``: the
    files a build of ``pieces`` writes (the builds are deterministic; the reference checksums
    of tests/test_build.py hold them to it), without their build.log."""
    directory.mkdir()
    for material in stored_materials(source):
        if material.pieces <= pieces:
            name = f"{material.name}{SUFFIX}"
            os.link(source / name, directory / name)


@pytest.fixture(scope="session")
def built_tables(tmp_path_factory) -> Callable[[int], Path]:
    """``built_tables(n)``: a directory of every table up to n pieces with all rule layers.

    Each is built once per test run by the local pool and shared by the modules
    that ask for it, across pytest-xdist workers too (the first to ask builds it
    under a file lock; the others wait and read it): read it, never write into it
    (copy what a test alters; the smaller sets share their files with the 4-piece one).
    """
    root = run_directory(tmp_path_factory)
    built: dict[int, Path] = {}

    def up_to(pieces: int) -> Path:
        if pieces not in built:
            directory = root / f"shared-tables{pieces}"
            complete = root / f"shared-tables{pieces}.complete"
            linked = pieces < SHARED_PIECES and bool(os.environ.get("PYTEST_XDIST_WORKER"))
            if linked:
                larger = up_to(SHARED_PIECES)  # outside this lock: the two locks never nest the other way
            with FileLock(root / f"shared-tables{pieces}.lock"):
                if not complete.exists():
                    if linked:
                        link_smaller_tables(larger, directory, pieces)
                    else:
                        build(pieces, directory=directory, jobs=2, progress=False)
                    complete.touch()
            built[pieces] = directory
        return built[pieces]

    return up_to


@pytest.fixture(scope="session")
def compact_tables(built_tables, tmp_path_factory) -> Callable[[int], Path]:
    """``compact_tables(n)``: the compact files (``.wld``, ``.wcdf``, ``.dtz`` and their marks files)
    of every table up to n pieces, alone in a directory, made once per test run from
    ``built_tables(n)`` and shared as it is (under a file lock): read it, never write into it."""
    root = run_directory(tmp_path_factory)
    made: dict[int, Path] = {}

    def up_to(pieces: int) -> Path:
        if pieces not in made:
            masters = built_tables(pieces)
            directory = root / f"shared-compact{pieces}"
            with FileLock(root / f"shared-compact{pieces}.lock"):
                if not (root / f"shared-compact{pieces}.complete").exists():
                    compact_directory(masters, out=directory, jobs=2)
                    (root / f"shared-compact{pieces}.complete").touch()
            made[pieces] = directory
        return made[pieces]

    return up_to


@pytest.fixture(scope="session")
def native_dir(tmp_path_factory) -> Path:
    """Every table up to 4 pieces built compact-native (compact files alone, no master), once per
    test run and shared as it is, across pytest-xdist workers too (under a file lock): test_native
    and test_native_split each built it (a 4-piece build, 4-9 CPU s). Read it, never write into it
    (copy or link what a test alters into a directory of its own)."""
    root = run_directory(tmp_path_factory)
    directory = root / "shared-native4"
    with FileLock(root / "shared-native4.lock"):
        if not (root / "shared-native4.complete").exists():
            build(4, directory=directory, jobs=2, progress=False, native=True)
            (root / "shared-native4.complete").touch()
    return directory


@pytest.fixture(scope="session")
def shared_lean_tables(tmp_path_factory) -> Path:
    """Every table up to 4 pieces as the 7-piece tables are stored and built: the values and the wcdf
    layer, no DTW, each pair solved on disk. Built once a test run and shared as it is (under a file
    lock): test_build checks it against the full set, test_verify verifies it (each built it, 4-6 CPU
    s). Read it, never write into it (verify writes its record: link the files into a directory)."""
    root = run_directory(tmp_path_factory)
    directory = root / "shared-lean4"
    with FileLock(root / "shared-lean4.lock"):
        if not (root / "shared-lean4.complete").exists():
            build(4, directory=directory, jobs=2, rules="wcdf", dtw=False, progress=False, on_disk=True,
                  checkpoint_seconds=60)
            (root / "shared-lean4.complete").touch()
    return directory


@pytest.fixture()
def tb(tables_dir: Path) -> Iterator[Tablebase]:
    """A Tablebase over the module's ``tables_dir``, closed after the test."""
    with Tablebase(tables_dir) as tablebase:
        yield tablebase
