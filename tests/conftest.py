"""pytest configuration and fixtures shared by the test modules."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from egtb.probe.tablebase import Tablebase
from egtb.build.driver import build

# Scripts run as external engine processes by the tests, not test modules: they
# read standard input when imported, so doctest collection must skip them.
collect_ignore = ["fake_engines"]


@pytest.fixture(scope="session")
def built_tables(tmp_path_factory) -> Callable[[int], Path]:
    """``built_tables(n)``: a directory of every table up to n pieces with all rule layers.

    Each is built once per session by the local pool and shared by the modules
    that ask for it: read it, never write into it (copy what a test alters).
    """
    built: dict[int, Path] = {}

    def up_to(pieces: int) -> Path:
        if pieces not in built:
            directory = tmp_path_factory.mktemp(f"tables{pieces}")
            build(pieces, directory=directory, jobs=2, progress=False)
            built[pieces] = directory
        return built[pieces]

    return up_to


@pytest.fixture()
def tb(tables_dir: Path) -> Iterator[Tablebase]:
    """A Tablebase over the module's ``tables_dir``, closed after the test."""
    with Tablebase(tables_dir) as tablebase:
        yield tablebase
