"""Start-up of the command lines (issue 30): wall and CPU seconds of short commands, against a baseline.

Each command runs as a user runs it (this venv's ``egtb`` / ``tournament`` scripts), once
from this checkout and once from a baseline tree (a git worktree of ``--base-commit``, made
under ``--base`` when missing), the two interleaved run by run so that a change in the
machine's load falls on both. Prints the median wall and CPU (user + sys of the child) seconds
of ``--runs`` runs after one warm-up run each (which also writes the baseline's numba cache
and __pycache__), and the ratios new / baseline.

Python is let write its bytecode (PYTHONDONTWRITEBYTECODE is removed from the children's
environment, as the Makefile does): without it every start compiles numba and numpy again.

With ``--engines`` it measures instead the processes the tournament starts (and the test
suite starts dozens of): ``tournament hub-engine SPEC`` (built-in, plug-in, perfect), a plug-in
script serving itself over Hub, ``tournament play`` up to the line with its URL, a short
``tournament run``. Each engine runs a scripted Hub session (``hub`` only, as a program
listing engines asks; the full handshake ``hub`` + ``init``, as a game's client does before
the first move; and one move at depth 2) and the bench reads the process's CPU seconds
(``/proc``) when it answers ``wait`` and ``ready``, and its total at exit. Their baseline is
``--base-commit`` too, by default the commit before the lazy engine imports
(:data:`ENGINES_BASE_COMMIT`).

Usage::

    .venv/bin/python bench/bench_startup.py [--runs 5] [--tables /tmp/st3] [--base DIR]
    .venv/bin/python bench/bench_startup.py --engines [--runs 5] [--tables /tmp/st3]

The probe and the perfect engine need a table directory with the 3-piece tables; one is built
there when missing (``egtb build -n 3``, a few minutes the first time: the builder's kernels
compile). The baseline tree defaults to ``/tmp/startup-base-COMMIT``.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
#: main's commit before the lazy imports of issue 30.
BASE_COMMIT = "e571277"
#: main's commit before the engine processes' lazy imports (registry, Hub server).
ENGINES_BASE_COMMIT = "95639c4"
#: Seconds of CPU in one tick of /proc/PID/stat.
TICK = 1 / os.sysconf("SC_CLK_TCK")


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


# --- the engine processes (--engines) -------------------------------------------------------

#: Hub sessions: (name, [(line sent, first word of the answer awaited), ...]); "quit" follows.
HUB_ONLY = ("hub", [("hub", "wait")])
HANDSHAKE = ("hub+init", [("hub", "wait"), ("init", "ready")])
ONE_MOVE = ("hub+init+go", [("hub", "wait"), ("init", "ready"),
                            ("pos pos=Wbbbbbbbbbbbbeeeeeeeewwwwwwwwwwww\nlevel depth=2\ngo think", "done")])


def engine_kinds(tables: Path) -> list[tuple[str, list[str], str | None, tuple]]:
    """(label, argv after python, working directory under the tree or None, session) of each engine
    process measured: what ``tournament run``, ``tournament play`` and the tests start."""
    hub = ["-m", "tournament.cli", "hub-engine"]
    perfect = [*hub, "perfect", "--tables", str(tables), "--option", "fallback=depth=2"]
    plug_in = [*hub, "state_echo:StateEcho"]
    script = ["tests/fake_engines/crash_in_game.py", "0"]
    return [("hub-engine random", [*hub, "random"], None, HUB_ONLY),
            ("hub-engine random", [*hub, "random"], None, HANDSHAKE),
            ("hub-engine random", [*hub, "random"], None, ONE_MOVE),
            ("hub-engine easy", [*hub, "easy"], None, HUB_ONLY),
            ("hub-engine easy", [*hub, "easy"], None, ONE_MOVE),
            ("hub-engine perfect --tables", perfect, None, ONE_MOVE),
            ("hub-engine plug-in class", plug_in, "tests/fake_engines", HANDSHAKE),
            ("plug-in script serving itself", script, None, HUB_ONLY),
            ("plug-in script serving itself", script, None, HANDSHAKE)]


def process_cpu(pid: int) -> float:
    """CPU seconds (user + sys) the running process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK


def run_session(argv: list[str], cwd: str | None, session: tuple, tree: Path) -> dict[str, float]:
    """One engine process through a Hub session: its CPU seconds at each awaited answer (by the
    answer's name), at exit ("total", with everything it started and reaped) and the wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, *argv], cwd=tree / cwd if cwd else tree, env=child_env(tree),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               bufsize=1)
    assert process.stdin is not None and process.stdout is not None
    figures: dict[str, float] = {}
    for line, awaited in session[1]:
        process.stdin.write(line + "\n")
        process.stdin.flush()
        while not (answer := process.stdout.readline()).startswith(awaited):
            if not answer:
                raise SystemExit(f"{' '.join(argv)} from {tree} ended before '{awaited}': "
                                 f"{process.stderr.read()[-500:] if process.stderr else ''}")
        figures[awaited] = process_cpu(process.pid)
    process.communicate("quit\n")
    figures["wall"] = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures["total"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return figures


def run_play(tables: Path, tree: Path) -> dict[str, float]:
    """``tournament play`` up to the line with its URL: the CPU seconds of the process by then (not
    of the engine processes it starts meanwhile), and the wall seconds; then Ctrl-C."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "tournament.cli", "play", "--no-browser", "--port", "0",
                                "--tables", str(tables)], cwd=tree, env=child_env(tree),
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    while not (line := process.stdout.readline()).startswith("serving on"):
        if not line:
            raise SystemExit(f"tournament play from {tree} ended before serving")
    figures = {"serving": process_cpu(process.pid), "wall": time.perf_counter() - started}
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    figures["total"] = figures["serving"]
    return figures


def run_match(tree: Path) -> dict[str, float]:
    """A two-game ``tournament run`` of two random movers in one job: its CPU seconds from start to
    exit, the games' forked worker included."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-m", "tournament.cli", "run", "--engine", "random", "--engine", "random",
                        "--games", "2", "--openings", "start", "--jobs", "1", "--quiet", "--out", out],
                       cwd=tree, env=child_env(tree), check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"wall": time.perf_counter() - started,
            "total": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)}


def engine_cases(tables: Path) -> list[tuple[str, object]]:
    """(label, function of a tree returning its figures) of every process kind measured."""
    cases: list[tuple[str, object]] = [
        (f"{label} [{session[0]}]", lambda tree, a=argv, c=cwd, s=session: run_session(a, c, s, tree))
        for label, argv, cwd, session in engine_kinds(tables)]
    cases.append(("tournament play [to its URL]", lambda tree: run_play(tables, tree)))
    cases.append(("tournament run random x2 [2 games]", run_match))
    return cases


def measure_engines(cases: list, trees: dict[str, Path], runs: int) -> dict:
    """{(label, tree name): [figures, ...]}: a warm-up each (it also writes the tree's kernel cache),
    then `runs` rounds, the trees interleaved case by case."""
    for _, run in cases:
        for tree in trees.values():
            run(tree)
    samples: dict = {(label, name): [] for label, _ in cases for name in trees}
    for _ in range(runs):
        for label, run in cases:
            for name, tree in trees.items():
                samples[label, name].append(run(tree))
    return samples


def engines_report(cases: list, samples: dict, runs: int) -> str:
    """One line per process kind: median CPU seconds at the first answer (``wait``, or the URL) and in
    all, the baseline's and the new, and the ratios new / base."""
    def med(rows: list[dict], key: str) -> float:
        return statistics.median(row[key] for row in rows) if key in rows[0] else float("nan")

    lines = [f"median of {runs} runs (after one warm-up each); CPU seconds (user + sys); ratio = new / base;",
             "first = at the first answer ('wait' to 'hub', or the URL line); total = to exit",
             f"{'process [session]':<52} {'base 1st':>8} {'new 1st':>8} {'1st x':>6} "
             f"{'base all':>8} {'new all':>8} {'all x':>6}"]
    sums = {"base": 0.0, "new": 0.0}
    for label, _ in cases:
        base, new = samples[label, "base"], samples[label, "new"]
        first = "wait" if "wait" in base[0] else "serving" if "serving" in base[0] else "total"
        bf, nf, bt, nt = med(base, first), med(new, first), med(base, "total"), med(new, "total")
        sums["base"] += bt
        sums["new"] += nt
        lines.append(f"{label:<52} {bf:8.2f} {nf:8.2f} {nf / bf:6.2f} {bt:8.2f} {nt:8.2f} {nt / bt:6.2f}")
    lines.append(f"{'sum of the medians':<52} {'':8} {'':8} {'':6} {sums['base']:8.2f} {sums['new']:8.2f} "
                 f"{sums['new'] / sums['base']:6.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs of each command and tree (default 5)")
    parser.add_argument("--tables", type=Path, default=Path("/tmp/st3"), help="3-piece table directory")
    parser.add_argument("--base", type=Path, default=None, help="baseline tree (default /tmp/startup-base-COMMIT)")
    parser.add_argument("--base-commit", default=None,
                        help=f"baseline commit (default {BASE_COMMIT}; with --engines {ENGINES_BASE_COMMIT})")
    parser.add_argument("--engines", action="store_true",
                        help="measure the engine processes (Hub sessions, play, run) instead of the commands")
    args = parser.parse_args()
    commit = args.base_commit or (ENGINES_BASE_COMMIT if args.engines else BASE_COMMIT)
    base = args.base or Path(f"/tmp/startup-base-{commit}")
    trees = {"base": ensure_base(base, commit), "new": ROOT}
    tables = ensure_tables(args.tables.resolve())
    load = os.getloadavg()
    if args.engines:
        cases = engine_cases(tables)
        samples = measure_engines(cases, trees, args.runs)
    else:
        cmds = commands(tables)
        samples = measure(cmds, trees, args.runs)
    print(f"cores {os.cpu_count()}, load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after; "
          f"base {base} ({commit}), new {ROOT}")
    print(engines_report(cases, samples, args.runs) if args.engines else report(cmds, samples, args.runs))


if __name__ == "__main__":
    main()
