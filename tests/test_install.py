"""A plain (non-editable) ``pip install .`` into a fresh virtual environment works from any directory.

The opening ballots and the reference figures are package data: the installed
commands must find them without the repository's checkout. The install itself
takes a minute or more, so it is a ``slow`` check (``make test-slow``, CI); the
default run checks the cheap half: every data file of the packages is listed as
package data in pyproject.toml.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """bin/ of a fresh venv with the project installed from a copy of the source tree."""
    home = tmp_path_factory.mktemp("install")
    venv.create(home / "venv", with_pip=True)
    bin_dir = home / "venv" / "bin"
    result = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(ROOT)],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail(f"pip install . failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return bin_dir


def run(bin_dir: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EGTB_DIR")}
    return subprocess.run([str(bin_dir / argv[0]), *argv[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_every_data_file_of_the_packages_is_package_data():
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    tracked = subprocess.run(["git", "ls-files", *listed], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    data = [Path(name) for name in tracked if not name.endswith(".py")]
    assert any(path.parts[:2] == ("egtb", "data") for path in data)  # the reference figures are there
    unlisted = [str(path) for path in data
                if not any(path.relative_to(package).match(glob) for package, globs in listed.items()
                           for glob in globs if path.parts[0] == package)]
    assert not unlisted, f"data files missing from [tool.setuptools.package-data]: {unlisted}"


@pytest.mark.slow
def test_installed_package_is_not_the_checkout(installed, tmp_path):
    where = run(installed, tmp_path, "python", "-c", "import egtb, tournament; print(egtb.__file__, tournament.__file__)")
    assert where.returncode == 0, where.stderr
    assert str(ROOT) not in where.stdout and "site-packages" in where.stdout


@pytest.mark.slow
def test_installed_commands_find_their_package_data(installed, tmp_path):
    built = run(installed, tmp_path, "egtb", "build", "--pieces", "3", "--jobs", "1", "--quiet", "--tables", "t")
    assert built.returncode == 0, built.stderr
    verified = run(installed, tmp_path, "egtb", "verify", "--quiet", "--jobs", "1", "--tables", "t")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "reference: 16 of 16 listed tables identical" in verified.stdout
    played = run(installed, tmp_path, "tournament", "run", "--engine", "random", "--engine", "random",
                 "--openings", "3-move", "--games", "4", "--out", "runs", "--seed", "3")
    assert played.returncode == 0, played.stderr
    records = [json.loads(line) for line in (tmp_path / "runs" / "games.jsonl").read_text().splitlines()]
    assert len(records) == 4
    # games run in parallel and are recorded as they end: the first game of the schedule plays ballot 1
    first = min(records, key=lambda record: record["index"])
    assert first["opening"].startswith("ACF 001"), first["opening"]
