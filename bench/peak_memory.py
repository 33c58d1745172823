"""Run a command and report its wall time, CPU time and peak memory summed over its process tree.

``/usr/bin/time -v`` reports the largest single process; a build with two workers
needs the sum of the parent and every worker at the same moment, which this
samples (psutil, every ``--interval`` seconds) and prints as one line of JSON.

    .venv/bin/python bench/peak_memory.py -- .venv/bin/egtb build -n 6 --tables /tmp/t6

>>> import sys
>>> report = measure([sys.executable, "-c", "x = bytearray(50_000_000)"], interval=0.01)
>>> report["exit_status"], report["peak_rss_mb"] > 10
(0, True)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import psutil


def tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants now (0 for those already gone)."""
    total = 0
    try:
        members = [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    for member in members:
        try:
            total += member.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def measure(command: list[str], *, interval: float = 0.2) -> dict:
    """Run `command` to its end; return wall seconds, CPU seconds of the tree, peak summed RSS."""
    start = time.perf_counter()
    child = subprocess.Popen(command)
    process = psutil.Process(child.pid)
    peak = 0
    while child.poll() is None:
        peak = max(peak, tree_rss(process))
        time.sleep(interval)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"command": command, "exit_status": child.returncode, "wall_seconds": round(wall, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mb": round(peak / 2 ** 20), "largest_process_mb": round(usage.ru_maxrss / 1024)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    report = measure(command, interval=args.interval)
    print(json.dumps(report), file=sys.stderr)
    return report["exit_status"]


if __name__ == "__main__":
    sys.exit(main())
