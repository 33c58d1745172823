"""Start-up of the command lines (issue 30): wall and CPU seconds of short commands, against a baseline.

Each command runs as a user runs it (this venv's ``egtb`` / ``tournament`` scripts), once
from this checkout and once from a baseline tree (a git worktree of ``--base-commit``, made
under ``--base`` when missing), the two interleaved run by run so that a change in the
machine's load falls on both. Prints the median wall and CPU (user + sys of the child) seconds
of ``--runs`` runs after one warm-up run each (which also writes the baseline's numba cache
and __pycache__), and the ratios new / baseline.

Python is let write its bytecode (PYTHONDONTWRITEBYTECODE is removed from the children's
environment, as the Makefile does): without it every start compiles numba and numpy again.

Usage::

    .venv/bin/python bench/bench_startup.py [--runs 5] [--tables /tmp/st3] [--base /tmp/startup-base]

The probe needs a table directory with the 3-piece tables; one is built there when missing
(``egtb build -n 3``, a few minutes the first time: the builder's kernels compile).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
#: main's commit before the lazy imports of issue 30.
BASE_COMMIT = "e571277"


def commands(tables: Path) -> list[tuple[str, ...]]:
    """The commands measured: every help path, a probe, the two rules commands."""
    return [("egtb", "--help"), ("egtb", "probe", "--help"), ("tournament", "--help"), ("tournament", "run", "--help"),
            ("egtb", "probe", "W:WK10,K14:BK1", "--tables", str(tables)), ("egtb", "moves", "W:W18:B14"),
            ("egtb", "perft", "--depth", "1")]


def child_env(tree: Path) -> dict[str, str]:
    """The environment of a command run from `tree`: its sources first on the path, bytecode kept."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    return env


def run_once(command: tuple[str, ...], tree: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of `command` from `tree`; raises if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run([str(BIN / command[0]), *command[1:]], env=child_env(tree), cwd=tree,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} from {tree} failed ({result.returncode}): {result.stderr[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def ensure_base(base: Path, commit: str) -> Path:
    """The baseline tree: a detached git worktree of `commit` at `base`, added when missing."""
    if not (base / "egtb" / "cli.py").exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), commit], check=True)
    return base


def ensure_tables(tables: Path) -> Path:
    """The 3-piece tables the probe reads, built with this checkout when missing."""
    if not (tables / "1k-2k.h5").exists():
        print(f"building the 3-piece tables in {tables} ...", file=sys.stderr, flush=True)
        subprocess.run([str(BIN / "egtb"), "build", "-n", "3", "--tables", str(tables), "--quiet"],
                       env=child_env(ROOT), cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return tables


def measure(cmds: list[tuple[str, ...]], trees: dict[str, Path], runs: int) -> dict:
    """{(command, tree name): [(wall, cpu), ...]}: a warm-up each, then `runs` interleaved rounds."""
    for command in cmds:
        for tree in trees.values():
            run_once(command, tree)
    samples: dict = {(c, name): [] for c in cmds for name in trees}
    for _ in range(runs):
        for command in cmds:
            for name, tree in trees.items():
                samples[command, name].append(run_once(command, tree))
    return samples


def report(cmds: list[tuple[str, ...]], samples: dict, runs: int) -> str:
    """One line per command: the baseline's and the new median wall and CPU, and the ratios."""
    def med(rows: list, i: int) -> float:
        return statistics.median(row[i] for row in rows)

    lines = [f"median of {runs} runs (after one warm-up each); seconds; ratio = new / base",
             f"{'command':<46} {'base wall':>9} {'base cpu':>9} {'new wall':>9} {'new cpu':>9} "
             f"{'wall x':>7} {'cpu x':>7}"]
    for command in cmds:
        base, new = samples[command, "base"], samples[command, "new"]
        bw, bc, nw, nc = med(base, 0), med(base, 1), med(new, 0), med(new, 1)
        label = " ".join(command) if len(" ".join(command)) <= 46 else " ".join(command)[:43] + "..."
        lines.append(f"{label:<46} {bw:9.2f} {bc:9.2f} {nw:9.2f} {nc:9.2f} {nw / bw:7.2f} {nc / bc:7.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs of each command and tree (default 5)")
    parser.add_argument("--tables", type=Path, default=Path("/tmp/st3"), help="3-piece table directory")
    parser.add_argument("--base", type=Path, default=Path("/tmp/startup-base"), help="baseline tree")
    parser.add_argument("--base-commit", default=BASE_COMMIT, help=f"baseline commit (default {BASE_COMMIT})")
    args = parser.parse_args()
    trees = {"base": ensure_base(args.base, args.base_commit), "new": ROOT}
    cmds = commands(ensure_tables(args.tables.resolve()))
    load = os.getloadavg()
    samples = measure(cmds, trees, args.runs)
    print(f"cores {os.cpu_count()}, load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after; "
          f"base {args.base} ({args.base_commit}), new {ROOT}")
    print(report(cmds, samples, args.runs))


if __name__ == "__main__":
    main()
