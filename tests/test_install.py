"""A plain (non-editable) ``pip install .`` into a fresh virtual environment works from any directory.

The opening ballots and the reference figures are package data: the installed
commands must find them without the repository's checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
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


def test_installed_package_is_not_the_checkout(installed, tmp_path):
    where = run(installed, tmp_path, "python", "-c", "import egtb, tournament; print(egtb.__file__, tournament.__file__)")
    assert where.returncode == 0, where.stderr
    assert str(ROOT) not in where.stdout and "site-packages" in where.stdout


def test_installed_commands_find_their_package_data(installed, tmp_path):
    built = run(installed, tmp_path, "egtb", "build", "--pieces", "3", "--jobs", "1", "--quiet", "--tables", "t")
    assert built.returncode == 0, built.stderr
    verified = run(installed, tmp_path, "egtb", "verify", "--quiet", "--jobs", "1", "--tables", "t")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "reference: 16 of 16 listed tables identical" in verified.stdout
    played = run(installed, tmp_path, "tournament", "run", "--engine", "random", "--engine", "random",
                 "--openings", "3-move", "--games", "4", "--out", "runs", "--seed", "3")
    assert played.returncode == 0, played.stderr
    records = (tmp_path / "runs" / "games.jsonl").read_text().splitlines()
    assert len(records) == 4
    assert json.loads(records[0])["opening"].startswith("ACF 001")
