"""Run a command and report its wall time, CPU time and peak memory summed over its process tree.

``/usr/bin/time -v`` reports the largest single process; a build with two workers
needs the sum of the parent and every worker at the same moment, which this
samples (psutil, every ``--interval`` seconds) and prints as one line of JSON.

    .venv/bin/python bench/peak_memory.py -- .venv/bin/egtb build -n 6 --tables /tmp/t6

A long build also logs a sample every ``--log-every`` seconds to ``--log FILE``
(``<time> rss_mb=N disk_used_gb=G egtb_dir_gb=D``: the tree's summed RSS, the
file system's use and, with ``--directory``, that directory's size), which
bench/seven_log.py reads for the peaks of a build run over several sessions.

>>> import sys
>>> report = measure([sys.executable, "-c", "x = bytearray(50_000_000)"], interval=0.01)
>>> report["exit_status"], report["peak_rss_mb"] > 10, len(report["processes_at_peak_mb"])
(0, True, 1)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import psutil


def tree_memory(process: psutil.Process, *, pss: bool = False) -> dict[int, int]:
    """Resident bytes of a process and each of its descendants now, by pid (gone ones left out).

    `pss`: proportional set size instead (pages shared between processes counted
    once over them all; slower, it reads each process's smaps).
    """
    try:
        members = [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return {}
    sizes = {}
    for member in members:
        try:
            sizes[member.pid] = member.memory_full_info().pss if pss else member.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return sizes


def sample_line(rss: int, directory: str | None) -> str:
    """One log line of a sample (see the module docstring).

    >>> sample_line(3 << 30, None).split()[1]
    'rss_mb=3072'
    """
    from egtb.formats.master import bytes_on_disk
    used = psutil.disk_usage(directory or "/").used
    size = bytes_on_disk(directory) if directory else 0
    return (f"{time.strftime('%Y-%m-%dT%H:%M:%S')} rss_mb={rss >> 20} "
            f"disk_used_gb={used / 2 ** 30:.2f} egtb_dir_gb={size / 2 ** 30:.2f}")


def measure(command: list[str], *, interval: float = 0.2, pss: bool = False,
            log: str | None = None, log_every: float = 30.0, directory: str | None = None) -> dict:
    """Run `command` to its end; return wall seconds, CPU seconds of the tree, peak summed RSS.

    Also the processes' resident sizes at that peak (MB, largest first), and with
    `pss` the peak of the summed proportional set sizes.
    """
    start = time.perf_counter()
    child = subprocess.Popen(command)
    process = psutil.Process(child.pid)
    peak, at_peak, peak_pss = 0, {}, 0
    logged = 0.0
    while child.poll() is None:
        sizes = tree_memory(process)
        if sum(sizes.values()) > peak:
            peak, at_peak = sum(sizes.values()), sizes
        if log and time.monotonic() - logged >= log_every:
            with open(log, "a") as out:
                print(sample_line(sum(sizes.values()), directory), file=out)
            logged = time.monotonic()
        if pss:
            peak_pss = max(peak_pss, sum(tree_memory(process, pss=True).values()))
        time.sleep(interval)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = {"command": command, "exit_status": child.returncode, "wall_seconds": round(wall, 1),
              "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
              "peak_rss_mb": round(peak / 2 ** 20),
              "processes_at_peak_mb": sorted((round(s / 2 ** 20) for s in at_peak.values()),
                                             reverse=True),
              "largest_process_mb": round(usage.ru_maxrss / 1024)}
    if pss:
        report["peak_pss_mb"] = round(peak_pss / 2 ** 20)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--pss", action="store_true",
                        help="also sample the summed proportional set size (shared pages once)")
    parser.add_argument("--log", default=None, help="append a sample line to this file every --log-every s")
    parser.add_argument("--log-every", type=float, default=30.0)
    parser.add_argument("--directory", default=None, help="a directory whose size the samples give")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    report = measure(command, interval=args.interval, pss=args.pss, log=args.log,
                     log_every=args.log_every, directory=args.directory)
    print(json.dumps(report), file=sys.stderr)
    return report["exit_status"]


if __name__ == "__main__":
    sys.exit(main())
