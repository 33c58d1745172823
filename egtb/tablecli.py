"""``egtb build | stats | verify`` subcommands (registered by :mod:`egtb.cli`).

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="egtb")
>>> register(parser.add_subparsers(dest="command"))
>>> parser.parse_args(["build", "--pieces", "3", "--jobs", "2"]).pieces
3
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from egtb.tables import storage

DEFAULT_PIECES = 5
EXIT_ERRORS = 1
EXIT_INTERRUPTED = 130


def register(subparsers) -> None:
    """Add the build, stats and verify subcommands to an argparse subparsers object."""
    _register_build(subparsers)
    _register_stats(subparsers)
    _register_verify(subparsers)


def _add_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", "--out", dest="dir", type=Path, default=None,
                        help=f"table directory (default: ${storage.ENV_DIR} or "
                             f"{storage.DEFAULT_DIR})")


def _register_build(subparsers) -> None:
    from egtb.tables.build import DEFAULT_RULES, RULE_PRESETS
    p = subparsers.add_parser("build", help="build endgame tables up to N pieces",
                              description="Build every table with up to N pieces, skipping "
                                          "complete files (resumable).")
    p.add_argument("--pieces", "-n", type=int, default=DEFAULT_PIECES,
                   help=f"largest piece count (default {DEFAULT_PIECES})")
    p.add_argument("--min-pieces", type=int, default=2,
                   help="smallest piece count to build (smaller ones must exist)")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="worker processes (default: number of cores)")
    p.add_argument("--rules", choices=RULE_PRESETS, default=DEFAULT_RULES,
                   help="move-rule preset recorded in the metadata")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_dir(p)
    p.set_defaults(func=run_build)


def _register_stats(subparsers) -> None:
    p = subparsers.add_parser("stats", help="per-material statistics of built tables")
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_dir(p)
    p.set_defaults(func=run_stats)


def _register_verify(subparsers) -> None:
    p = subparsers.add_parser("verify", help="re-check every stored value against its "
                                             "successors")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="worker processes (default: number of cores)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the comparison with the reference figures in egtb/data/reference")
    _add_dir(p)
    p.set_defaults(func=run_verify)


def run_build(args: argparse.Namespace) -> int:
    """Handler of ``egtb build``."""
    from egtb.tables.build import build
    if args.pieces < 2:
        raise ValueError(f"--pieces must be at least 2, not {args.pieces}")
    _log_warnings_to_console()
    try:
        report = build(args.pieces, directory=args.dir, jobs=args.jobs, rules=args.rules,
                       min_pieces=args.min_pieces, progress=not args.quiet)
    except KeyboardInterrupt:
        print("interrupted: complete tables are kept; run again to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"built {len(report.built)} tables ({report.positions} positions) in "
          f"{report.seconds:.1f}s; {len(report.skipped)} already complete"
          + (f"; rebuilt broken: {', '.join(report.rebuilt)}" if report.rebuilt else ""))
    return 0


def _log_warnings_to_console() -> None:
    """Warnings (rebuilt files, ...) on stderr; the full log goes to build.log."""
    if not logging.getLogger().handlers:
        console = logging.StreamHandler()
        console.setLevel(logging.WARNING)
        console.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        logging.getLogger().addHandler(console)


def run_stats(args: argparse.Namespace) -> int:
    """Handler of ``egtb stats``."""
    from egtb.tables.stats import print_stats
    return print_stats(args.dir or storage.default_dir(), as_json=args.json)


def run_verify(args: argparse.Namespace) -> int:
    """Handler of ``egtb verify``: exit status 1 on any error."""
    from egtb.tables.verify import verify_directory
    directory = args.dir or storage.default_dir()
    report = verify_directory(directory, jobs=args.jobs or os.cpu_count() or 1,
                              progress=not args.quiet)
    for message in report.messages:
        print(message)
    if report.tables == 0:
        print(f"no tables in {directory}", file=sys.stderr)
        return EXIT_ERRORS
    status = "OK" if report.ok else f"{report.errors} ERRORS"
    print(f"verified {report.tables} tables, {report.checked} positions: {status}")
    differing = [] if args.no_reference else _compare_reference(directory)
    return 0 if report.ok and not differing else EXIT_ERRORS


def _compare_reference(directory: Path) -> list[str]:
    """Print and return the tables whose figures differ from egtb/data/reference."""
    from egtb.tables.reference import compare_with_reference, load_reference
    from egtb.tables.verify import stored_materials
    reference = load_reference()
    materials = stored_materials(directory)
    differing = compare_with_reference(directory, materials, reference=reference)
    for message in differing:
        print(message)
    listed = sum(m.name in reference for m in materials)
    print(f"reference: {listed - len(differing)} of {listed} listed tables identical")
    return differing
