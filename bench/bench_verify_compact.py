"""Benchmark the check of compact-native tables against their successors (``egtb verify`` of a
table without a master: its .wld, .wcdf and .dtz files), positions a second.

Prints figures, never asserts. The tables come from ``--tables`` (a compact-native
directory, e.g. one ``egtb build -n 5 --compact-native`` wrote); without it every
table up to ``--build`` pieces is built compact-native into a temporary directory
first. The largest materials of its largest piece count are checked one at a
time (``--materials`` names others), nothing recorded (no resume). Rates are
positions of a material (its three files checked) per CPU second of this
process (``time.process_time``), so that a busy machine disturbs them less; the
wall rate and the load average are printed beside them.

``--chunks K`` checks only K chunks of each material, from the middle of its positions (an
8-piece material is tens of billions of positions): the verify's own step
(``egtb.builder.verify_native.check_chunk``), timed the same way.

``--figures`` (with ``--chunks``) times, on the same chunks, the check alone, the check
counting the table's figures (what ``egtb verify`` does, for the reference rows), and the
check followed by the figures' own pass over the chunk (the reference rows counted apart).

``--before REV`` first runs the same bench with the code of a git revision (or
of a checkout directory), in the same run: the old code path's rate against the
new one's on the same files.

    .venv/bin/python bench/bench_verify_compact.py --tables /tmp/vt5 --before 00bee46

Target (issue 31 item 6): well over 1 M positions a second a core (the old path
measured 26.9 k/s on 4k-4k's 736 M positions).
"""

from __future__ import annotations

import argparse
import atexit
import inspect
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from egtb.builder.verify_compact import verify_compact
from egtb.formats import master
from egtb.formats.compact import SUFFIX
from egtb.positions.material import Material, count_positions

REPO = Path(__file__).resolve().parent.parent


def checkout_of(before: str) -> str:
    """A directory holding the ``egtb`` package of ``before``: itself when it is a directory, else
    the package of that git revision exported into a temporary directory (removed at exit)."""
    if Path(before).is_dir():
        return before
    out = tempfile.mkdtemp(prefix="bench-verify-before-")
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", before, "egtb"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
    return out


def run_before(before: str) -> None:
    """This bench with the code of ``before`` (a revision or a checkout), its output printed first."""
    argv, skip = [], False
    for a in sys.argv[1:]:
        if skip or a == "--before":
            skip = not skip
            continue
        argv.append(a)
    checkout = checkout_of(before)
    env = {**os.environ, "PYTHONPATH": str(Path(checkout).resolve())}
    print(f"=== before: the code of {before} ===", flush=True)
    subprocess.run([sys.executable, str(Path(sys.argv[0]).resolve()), *argv], env=env, check=True)
    print("=== after: this checkout ===", flush=True)


def tables_dir(args: argparse.Namespace) -> Path:
    """The compact-native directory to check: ``--tables``, or one built now."""
    if args.tables:
        return Path(args.tables)
    from egtb.builder.driver import build
    directory = Path(tempfile.mkdtemp(prefix="bench-verify-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    started = time.perf_counter()
    build(args.build, directory=directory, jobs=args.jobs, progress=False, native=True)
    print(f"built every table up to {args.build} pieces compact-native in {time.perf_counter() - started:.0f} s")
    return directory


def check_chunks(directory: Path, material: Material, chunks: int, chunk: int | None
                 ) -> tuple[int, float, float, bool]:
    """(positions, CPU s, wall s, none flagged) of ``chunks`` chunks of a material from the middle
    of its positions, checked as ``egtb verify`` checks each (the first chunk, untimed, opens the
    tables and compiles the kernels)."""
    from egtb.builder.verify_compact import CHUNK, CompactProber
    from egtb.builder.verify_native import check_chunk
    size = chunk or CHUNK
    prober = CompactProber(directory)
    lo = count_positions(material) // 2 // size * size
    check_chunk(prober, material, lo, lo + size, rule="wcdf")
    ok, positions = True, 0
    wall, cpu = time.perf_counter(), time.process_time()
    for k in range(1, chunks + 1):
        hi = min(lo + (k + 1) * size, count_positions(material))
        found = check_chunk(prober, material, lo + k * size, hi, rule="wcdf")
        ok &= not found.flags.any()
        positions += hi - lo - k * size
    return positions, time.process_time() - cpu, time.perf_counter() - wall, ok


def figures_chunks(directory: Path, material: Material, chunks: int, chunk: int | None) -> dict[str, float]:
    """CPU s of three ways through the same ``chunks`` chunks from the middle of a material, one
    chunk each in turn: the check alone; the check counting the figures (``egtb verify`` now); the
    check and then the reference rows' own pass over the chunk (``native_reference.range_values``,
    what ``bench/make_reference.py`` ran after the verify before). The first chunk, untimed,
    each way compiles and opens the tables; a chunk where a table is copied whole (once a
    check) is timed again after the copy."""
    from egtb.builder.native_reference import range_values
    from egtb.builder.verify_compact import CHUNK, CompactProber
    from egtb.builder.verify_native import check_chunk
    size = chunk or CHUNK
    prober = CompactProber(directory)
    total = count_positions(material)
    lo = total // 2 // size * size
    ways = {"check": lambda a, b: check_chunk(prober, material, a, b, rule="wcdf"),
            "check counting the figures": lambda a, b: check_chunk(prober, material, a, b, rule="wcdf", figures=True),
            "check, then the figures' own pass": lambda a, b: (check_chunk(prober, material, a, b, rule="wcdf"),
                                                              range_values(prober, material, a, b))}
    for way in ways.values():
        way(lo, lo + size)
    cpu = dict.fromkeys(ways, 0.0)
    for k in range(1, chunks + 1):
        a, b = lo + k * size, min(lo + (k + 1) * size, total)
        for name, way in ways.items():
            while True:  # a table copied whole in this chunk: timed again without the copy (a table's once)
                copies = prober.copies()
                started = time.process_time()
                way(a, b)
                if prober.copies() == copies:
                    break
            cpu[name] += time.process_time() - started
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", default=None, help="a compact-native table directory")
    parser.add_argument("--build", type=int, default=5, help="pieces to build when --tables is not given")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--materials", nargs="*", default=None, help="materials to check (default: the 3 largest)")
    parser.add_argument("--chunk", type=int, default=None, help="positions a chunk (default: the code's)")
    parser.add_argument("--chunks", type=int, default=None,
                        help="check only this many chunks of each material, from its middle")
    parser.add_argument("--figures", action="store_true",
                        help="with --chunks: the check alone, counting the figures, and with the figures' own "
                             "pass after it, chunk by chunk in turn")
    parser.add_argument("--before", default=None, metavar="REV",
                        help="first run this bench with the code of a git revision or checkout directory")
    args = parser.parse_args()
    if args.before:
        run_before(args.before)
    directory = tables_dir(args)
    stored = master.stored_materials(directory, suffix=SUFFIX)
    if args.materials:
        materials = [Material.parse(name) for name in args.materials]
    else:
        top = max(m.pieces for m in stored)
        materials = sorted((m for m in stored if m.pieces == top), key=count_positions, reverse=True)[:3]
    if args.figures:
        for material in materials:
            cpu = figures_chunks(directory, material, args.chunks or 4, args.chunk)
            base = cpu["check"]
            print(f"{material.name}: " + "; ".join(f"{name} {seconds:.2f} CPU s ({seconds / base:.2f}x)"
                                                   for name, seconds in cpu.items()), flush=True)
        return
    options = {"resume": False} if "resume" in inspect.signature(verify_compact).parameters else {}
    if args.chunk:
        options["chunk"] = args.chunk
    code = sys.modules[verify_compact.__module__].__file__
    print(f"code: {code}; tables: {directory}; cores: {os.cpu_count()}")
    verify_compact(directory, materials=[min(stored, key=count_positions)], **options)  # compiles the kernels
    total_positions = total_cpu = 0.0
    print(f"{'material':<12}{'positions':>14}{'CPU s':>9}{'wall s':>9}{'pos/CPU s':>14}{'pos/wall s':>14}"
          f"{'load':>7}  ok")
    for material in materials:
        load = os.getloadavg()[0]
        if args.chunks:
            positions, cpu, wall, ok = check_chunks(directory, material, args.chunks, args.chunk)
        else:
            wall, cpu = time.perf_counter(), time.process_time()
            ok = verify_compact(directory, materials=[material], **options).ok
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            positions = count_positions(material)
        total_positions += positions
        total_cpu += cpu
        print(f"{material.name:<12}{positions:>14,}{cpu:>9.2f}{wall:>9.2f}{positions / cpu:>14,.0f}"
              f"{positions / wall:>14,.0f}{load:>7.2f}  {ok}")
    print(f"{'all':<12}{int(total_positions):>14,}{total_cpu:>9.2f}{'':>9}{total_positions / total_cpu:>14,.0f}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3:,.0f} MB; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
