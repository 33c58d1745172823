"""Every package module with examples in its docstrings has them collected by pytest.

pytest's default ``norecursedirs`` skips folders named ``build``, ``dist``,
``venv`` and the like; ``egtb/build`` was such a folder, and its 46 doctests
never ran. This reads pytest's own settings for this run (``norecursedirs``,
``testpaths``, ``--doctest-modules``) and checks each module with a ``>>>``
example against them, so a folder renamed back into a skipped name fails here.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("egtb", "tournament")


def modules_with_examples() -> list[Path]:
    """Our modules whose source holds a doctest example."""
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py")
                  if ">>> " in path.read_text(encoding="utf-8"))


def skipped_folder(path: Path, patterns: list[str]) -> str | None:
    """The first folder on `path` (below the root) that a ``norecursedirs`` pattern skips."""
    for folder in path.relative_to(ROOT).parents:
        if folder.name and any(fnmatch(folder.name, pattern) for pattern in patterns):
            return str(folder)
    return None


def test_the_examples_are_many() -> None:
    # the check below means something only over the modules that hold examples
    assert len(modules_with_examples()) >= 40


def test_no_module_with_examples_sits_in_a_folder_pytest_skips(pytestconfig: pytest.Config) -> None:
    patterns = pytestconfig.getini("norecursedirs")
    assert "build" in patterns  # pytest's default, which this check is about
    skipped = {str(path.relative_to(ROOT)): skipped_folder(path, patterns)
               for path in modules_with_examples()}
    assert {path: folder for path, folder in skipped.items() if folder} == {}


def test_doctests_run_from_every_package(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.getoption("doctestmodules")
    assert set(PACKAGES) <= set(pytestconfig.getini("testpaths"))
