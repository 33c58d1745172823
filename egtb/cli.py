"""The ``egtb`` command line: ``perft``, ``moves``, ``build``, ``compact``, ``stats``, ``verify``, ``probe``.

Every subcommand that prints results takes ``--json``; a table directory is
``--tables DIR`` everywhere, parallelism ``--jobs N``, and ``--quiet`` silences
progress bars.
Library code returns data; only this module prints.

Exit status, the same for every subcommand (and for ``tournament``):
0 ok, 1 a result is wrong or missing (a failed verify, a missing table),
2 bad usage or input (a malformed FEN, an unknown option), 130 interrupted.

>>> main(["perft", "--depth", "3"])
302
0
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence, TextIO

from egtb import __version__
from egtb.dask.options import add_scheduler_options
from egtb.errors import EgtbError, InvalidArgumentError, MissingTableError, TableError
from egtb.exit_status import EXIT_CODES_HELP, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:  # the rules, the tables and the prober load numba and h5py: each subcommand imports its own
    import numpy as np

    from egtb.positions.material import Material
    from egtb.probe.tablebase import Tablebase
    from egtb.rules.board import Board

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "EXIT_CODES_HELP",
           "add_tables_option", "build_parser", "main"]

DEFAULT_PIECES = 5


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: sys.argv[1:]); return the exit status.

    >>> main(["moves", "B:W14,23:B9"])
    9x18x27 W:W:B27
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=_command_of(argv))
    args = parser.parse_args(argv)
    try:
        status = args.func(args)
    except KeyboardInterrupt:
        print(f"egtb {args.command}: interrupted; complete work is kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MissingTableError as exc:
        print(f"egtb {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except (ValueError, EgtbError) as exc:
        print(f"egtb {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return int(status or 0)


def build_parser(*, only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser with every subcommand; with `only`, the options of that one alone.

    Each subcommand's options are built by its own register function, from
    modules that load no kernel (:mod:`egtb.rules.draw_rules`,
    :mod:`egtb.formats.directory`), so that every ``--help`` and usage error
    starts without numba, numpy or h5py (tests/test_startup.py); ``only``
    spares building the other subcommands' options.

    >>> sorted(build_parser(only="")._subparsers._group_actions[0].choices)[:3]
    ['build', 'compact', 'moves']
    """
    parser = argparse.ArgumentParser(prog="egtb", description="English draughts endgame tables and rules tools.",
                                     epilog=EXIT_CODES_HELP)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help_text, register) in _COMMANDS.items():
        subparser = subparsers.add_parser(name, help=help_text, epilog=EXIT_CODES_HELP)
        if only is None or only == name:
            register(subparser)
    return parser


def _command_of(argv: Sequence[str]) -> str:
    """The subcommand named in `argv` (its first word that is not an option), or "" when none is.

    >>> _command_of(["--help"]), _command_of(["probe", "--json", "W:W9:B1"]), _command_of(["nope"])
    ('', 'probe', '')
    """
    word = next((word for word in argv if not word.startswith("-")), "")
    return word if word in _COMMANDS else ""


def add_tables_option(parser: argparse.ArgumentParser, *, help_text: str | None = None,
                      default: Path | str | None = None) -> None:
    """``--tables DIR``: the table directory of every subcommand."""
    from egtb.formats.directory import DEFAULT_DIR, ENV_DIR
    parser.add_argument("--tables", dest="tables", type=Path, default=default, metavar="DIR",
                        help=help_text or f"table directory (default: ${ENV_DIR} or {DEFAULT_DIR})")


def _add_jobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: number of cores)")


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def _print_json(data: object) -> None:
    print(json.dumps(data))


# --- perft ------------------------------------------------------------------


def _register_perft(parser: argparse.ArgumentParser) -> None:
    parser.description = "Count the leaf positions DEPTH plies ahead (distinct moves)."
    parser.add_argument("--depth", type=_non_negative, required=True, help="plies to search")
    parser.add_argument("--fen", default=None, help="start position (default: the standard start)")
    parser.add_argument("--divide", action="store_true", help="one count per legal move, then the total")
    parser.add_argument("--hash", type=_positive_megabytes, default=None, metavar="MB",
                        help="transposition table of MB megabytes (subtree counts; for depths 13 and more)")
    _add_json(parser)
    parser.set_defaults(func=run_perft)


def _positive_megabytes(text: str) -> float:
    from egtb.rules.perft import HASH_ENTRY_BYTES
    value = float(text)
    if not value * 2**20 >= HASH_ENTRY_BYTES:
        raise argparse.ArgumentTypeError(f"hash size must hold at least one entry ({HASH_ENTRY_BYTES} bytes), not {text} MB")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _mark_spacing(text: str) -> int:
    from egtb.formats.compact.sidecar import MAX_MARK_EVERY
    value = int(text)
    if not 1 <= value <= MAX_MARK_EVERY:
        raise argparse.ArgumentTypeError(f"runs between marks must be 1 to {MAX_MARK_EVERY}, not {value}")
    return value


def run_perft(args: argparse.Namespace) -> int:
    """Print the perft count, or with --divide one "move: count" line per move and the total."""
    from egtb.rules.board import Board
    from egtb.rules.perft import new_hash_table
    board = Board(args.fen)
    table = None if args.hash is None else new_hash_table(megabytes=args.hash)
    counts = divide(board, args.depth, table=table) if args.divide else []
    total = sum(c for _, c in counts) if args.divide else count_leaves(board, args.depth, table=table)
    if args.json:
        _print_json({"fen": board.fen(), "depth": args.depth, "leaves": total,
                     **({"divide": dict(counts)} if args.divide else {}),
                     **({"hash_mb": args.hash} if args.hash is not None else {})})
        return EXIT_OK
    for move, count in counts:
        print(f"{move}: {count}")
    print(f"total: {total}" if args.divide else total)
    return EXIT_OK


def count_leaves(board: Board, depth: int, *, table: np.ndarray | None = None) -> int:
    """perft of the board's position, with a transposition `table` (:func:`new_hash_table`) if given.

    >>> from egtb.rules.board import Board
    >>> from egtb.rules.perft import new_hash_table
    >>> count_leaves(Board(), 4)
    1469
    >>> count_leaves(Board(), 6, table=new_hash_table(megabytes=1))
    36768
    """
    from egtb.rules.perft import perft, perft_hashed
    if table is not None:
        return int(perft_hashed(*board.key(), depth, table))
    return int(perft(*board.key(), depth))


def divide(board: Board, depth: int, *, table: np.ndarray | None = None) -> list[tuple[str, int]]:
    """(move, perft(depth - 1) after it) for every legal move; [] when depth is 0.

    >>> from egtb.rules.board import Board
    >>> divide(Board("B:W14,23:B9"), 1)
    [('9x18x27', 1)]
    """
    if depth == 0:
        return []
    counts = []
    for move in board.legal_moves():
        board.push(move)
        counts.append((str(move), count_leaves(board, depth - 1, table=table)))
        board.pop()
    return counts


# --- moves ------------------------------------------------------------------


def _register_moves(parser: argparse.ArgumentParser) -> None:
    parser.description = "One line per legal move: its PDN notation and the resulting FEN."
    parser.add_argument("fen", metavar="FEN", help='position, e.g. "B:W18,24,K27:B12,16,K22"')
    _add_json(parser)
    parser.set_defaults(func=run_moves)


def run_moves(args: argparse.Namespace) -> int:
    """Print "move resulting-FEN" for every legal move."""
    from egtb.rules.board import Board
    board = Board(args.fen)
    rows = []
    for move in board.legal_moves():
        board.push(move)
        rows.append({"move": str(move), "fen": board.fen()})
        board.pop()
    if args.json:
        _print_json({"fen": args.fen, "moves": rows, **({"lost": True} if not rows else {})})
    elif not rows:
        print(no_move_text(board))
    for row in [] if args.json else rows:
        print(f"{row['move']} {row['fen']}")
    return EXIT_OK


def no_move_text(board: Board) -> str:
    """What ``egtb moves`` says of a position without a legal move: its side to move has lost.

    >>> from egtb.rules.board import Board
    >>> no_move_text(Board("B:WK10:B"))
    'no legal move: Black, to move, has no piece left and has lost'
    >>> no_move_text(Board("B:W5,6,10:B1"))
    'no legal move: Black, to move, is blocked and has lost'
    """
    from egtb.rules.board import BLACK
    side = "Black" if board.turn == BLACK else "White"
    own = board.black_men | board.black_kings if board.turn == BLACK else board.white_men | board.white_kings
    return f"no legal move: {side}, to move, {'is blocked' if own else 'has no piece left'} and has lost"


# --- tables -----------------------------------------------------------------


def _register_build(p: argparse.ArgumentParser) -> None:
    from egtb.builder.contents import AUTO  # egtb.builder.plan's DEFAULT_RULES, without the solvers' numba
    from egtb.rules.draw_rules import DRAW_RULES
    p.description = "Build every table with up to N pieces, skipping complete files (resumable)."
    p.add_argument("--pieces", "-n", type=int, default=DEFAULT_PIECES,
                   help=f"largest piece count (default {DEFAULT_PIECES})")
    p.add_argument("--min-pieces", type=int, default=2,
                   help="smallest piece count to build (smaller ones must exist)")
    _add_jobs(p)
    p.add_argument("--rules", type=_rule_list, default=AUTO,
                   help=f"rule layers to build: a comma list of {', '.join(DRAW_RULES)}, "
                        f"'all' or 'none' (default {AUTO}: all up to 6 pieces, "
                        "wcdf from 7)")
    p.add_argument("--dtw", action=argparse.BooleanOptionalAction, default=None,
                   help="store the rule-free distance to win (default: up to 6 pieces)")
    p.add_argument("--compact", action="store_true",
                   help="also write the compact files (.wld, .wcdf, .dtz) next to every master file "
                        "(a directory with tables of 7 pieces or more always gets them)")
    p.add_argument("--compact-native", action=argparse.BooleanOptionalAction, default=None,
                   help="write every table built as its compact files alone (.wld, .wcdf, .dtz and "
                        "their marks: the values and the wcdf layer), with no master file "
                        "(default: from 8 pieces on)")
    p.add_argument("--threats", action="store_true",
                   help="the compact-native .wld files leave threat positions out too (format version 2, "
                        "as egtb compact --threats writes them: smaller, batch probes slower)")
    p.add_argument("--plan", action="store_true",
                   help="print the plan (pairs, positions, CPU estimate, disk and memory at the "
                        "peak) and stop before any work")
    p.add_argument("--max-per-side", type=int, default=None, metavar="N",
                   help="only the materials with at most N pieces a side (e.g. 5: KingsRow's "
                        "cut of its 10-piece set)")
    p.add_argument("--materials", type=_material_list, default=(), metavar="LIST",
                   help="only the pairs of these materials, a comma list such as 4k-4k,4k-1m3k "
                        "(each built with its mirror; their dependencies must be built)")
    p.add_argument("--memory", type=float, default=None, metavar="GB",
                   help="memory the build may use, all jobs together (default 60%% of the "
                        "physical memory); pairs too big run on disk or wait their turn")
    p.add_argument("--disk", type=float, default=None, metavar="GB",
                   help="disk the table directory may take at the build's peak, what it holds "
                        "counted (default: what its disk has free); refused before any work when "
                        "the plan exceeds it, and pairs run side by side only while their scratch "
                        "files fit")
    p.add_argument("--on-disk", action="store_true",
                   help="keep every pair's values on disk (memory-mapped, checkpointed), "
                        "as the 7-piece pairs too big for --memory do")
    p.add_argument("--split-pairs", type=_positions, default=None, metavar="N",
                   help="run each pair of at least N positions (e.g. 2e9) as unit tasks over every "
                        "worker, wave by wave, on disk: one pair keeps all the jobs busy and holds "
                        "its scratch files once (default: on a cluster 1G positions, locally none)")
    p.add_argument("--checkpoint-minutes", type=float, default=5.0, metavar="MIN",
                   help="minutes between two checkpoints of a pair on disk (default 5)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_json(p)
    add_tables_option(p)
    add_scheduler_options(p)  # --scheduler / --scheduler-file: run on a Dask cluster
    p.set_defaults(func=run_build)


def _positions(text: str) -> int:
    """argparse type of ``--split-pairs``: a count of positions at least 1 (``2e9`` allowed)."""
    try:
        count = float(text)
        if count >= 1 and count == int(count):  # int(): OverflowError for inf, ValueError for nan
            return int(count)
    except (ValueError, OverflowError):
        pass
    raise argparse.ArgumentTypeError(f"not a count of positions: {text!r}")


def _material_list(text: str) -> tuple[str, ...]:
    """argparse type of ``--materials``: a comma list of material names, each checked."""
    from egtb.positions.material import Material
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    try:
        for name in names:
            Material.parse(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not names:
        raise argparse.ArgumentTypeError("no material named")
    return names


def _rule_list(text: str) -> str:
    """argparse type of ``--rules``: checks the preset names, keeps the text."""
    from egtb.builder.contents import AUTO
    from egtb.builder.rule_layer import parse_presets
    try:
        if text.strip() != AUTO:
            parse_presets(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _register_stats(p: argparse.ArgumentParser) -> None:
    _add_json(p)
    add_tables_option(p)
    p.set_defaults(func=run_stats)


def _register_verify(p: argparse.ArgumentParser) -> None:
    p.description = ("Re-check every stored value, rule layer and DTZ against its successors (and the "
                     "compact files against their masters). A table without a master (compact-native, "
                     "8 pieces) is checked from its compact files a chunk at a time, its progress kept "
                     "in <material>.verify.json: a verify stopped (Ctrl-C, a kill) goes on where it "
                     "stopped when run again; --jobs checks that many materials side by side. A pair whose "
                     "DTZ is on one side is checked derived side first, which keeps the DTZ it finds in "
                     "<material>.wcdf.verify-dtz (a byte a position) for the other side's check; each process "
                     "copies the tables the captures reach most whole (up to 3 GB). The check of a "
                     "compact-native table also counts its figures (counts, longest DTZ, checksums), kept in its "
                     "record for bench/make_reference.py, and fails where they differ from its stamp "
                     "(<material>.native.json) or the shipped reference.")
    p.add_argument("--pieces", "-n", type=int, default=None,
                   help="only tables of at most N pieces (default: every table)")
    p.add_argument("--min-pieces", type=int, default=2,
                   help="only tables of at least N pieces (e.g. 7 after building them)")
    p.add_argument("--materials", type=_material_list, default=(), metavar="LIST",
                   help="only these materials, a comma list such as 2m2k-2m2k,1m3k-3m1k (each must have "
                        "a table in the directory: a master or compact files)")
    _add_jobs(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--again", action="store_true",
                   help="check again the materials that passed before with the same files "
                        "(by default they are skipped: recorded in verified.json, and for a table "
                        "without a master, a compact-native one, in <material>.verify.json), and "
                        "start a compact-native check that was stopped from its beginning (by "
                        "default it goes on from the last chunk its record holds)")
    p.add_argument("--chunk", type=int, default=None, metavar="POSITIONS",
                   help="positions a compact-native table is checked at a time: memory grows with "
                        "it (about 200 bytes a position), not with the table (default 262144)")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the comparison with the reference figures shipped with the package")
    _add_json(p)
    add_tables_option(p)
    p.set_defaults(func=run_verify)


def run_build(args: argparse.Namespace) -> int:
    """Handler of ``egtb build``."""
    from egtb.errors import SolverError
    from egtb.builder.budget import GB
    from egtb.builder.config import Split
    from egtb.builder.driver import build
    from egtb.dask.executor import make_executor
    from egtb.formats import master
    if args.pieces < 2:
        raise InvalidArgumentError(f"--pieces must be at least 2, not {args.pieces}")
    for name in ("memory", "disk"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            raise InvalidArgumentError(f"--{name} must be more than 0 GB, not {getattr(args, name)}")
    if args.max_per_side is not None and args.max_per_side < 1:
        raise InvalidArgumentError(f"--max-per-side must be at least 1, not {args.max_per_side}")
    writable_dir(master.resolve_dir(args.tables), option="--tables")
    _log_warnings_to_console()
    executor = make_executor(scheduler=args.scheduler, scheduler_file=args.scheduler_file)
    try:
        report = build(args.pieces, directory=args.tables, jobs=args.jobs, rules=args.rules,
                       dtw=args.dtw, min_pieces=args.min_pieces, progress=not args.quiet, executor=executor,
                       memory=int(args.memory * GB) if args.memory else None,
                       disk=int(args.disk * GB) if args.disk else None,
                       on_disk=args.on_disk, checkpoint_seconds=60 * args.checkpoint_minutes,
                       compact=True if args.compact else None, native=args.compact_native,
                       threats=args.threats,
                       max_per_side=args.max_per_side, materials=args.materials, plan_only=args.plan,
                       **({"split_pairs": Split(positions=args.split_pairs)} if args.split_pairs else {}),
                       on_plan=None if args.json or (args.quiet and not args.plan) else
                       lambda plan: print(plan.text(), file=sys.stdout if args.plan else sys.stderr, flush=True))
    except SolverError as exc:  # a material failed to build: a failed result, not bad usage
        print(f"egtb build: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    compacted = report.compacted
    if args.plan:
        if args.json:
            _print_json(dataclasses.asdict(report.plan) if report.plan else None)
        return EXIT_USAGE if report.plan and report.plan.refused else EXIT_OK
    if args.json:
        _print_json({"built": report.built, "skipped": report.skipped, "rebuilt": report.rebuilt,
                     "positions": report.positions, "seconds": round(report.seconds, 3),
                     "compacted": compacted,
                     "pairs": [{k: v for k, v in dataclasses.asdict(r).items() if k != "tables"}
                               for r in report.records]})
        return EXIT_OK
    for record in report.records:
        print(record.text())
    print(f"built {len(report.built)} tables ({report.positions} positions) in "
          f"{report.seconds:.1f}s; {len(report.skipped)} already complete"
          + (f"; rebuilt broken: {', '.join(report.rebuilt)}" if report.rebuilt else "")
          + (f"; compact files written for {len(compacted)}" if compacted else ""))
    return EXIT_OK


def _log_warnings_to_console() -> None:
    """Warnings (rebuilt files, ...) on stderr; the full log goes to build.log."""
    if not logging.getLogger().handlers:
        console = logging.StreamHandler()
        console.setLevel(logging.WARNING)
        console.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        logging.getLogger().addHandler(console)


def _existing_tables_dir(args: argparse.Namespace) -> Path:
    """The --tables directory of a command that reads tables; ValueError when it does not exist."""
    from egtb.formats import master
    directory = master.resolve_dir(args.tables)
    if not directory.is_dir():
        raise InvalidArgumentError(f"table directory {directory} "
                                   + ("is a file, not a directory" if directory.exists() else "does not exist"))
    return directory


def writable_dir(directory: Path, *, option: str) -> Path:
    """`directory`, made if missing; InvalidArgumentError (a ValueError) naming it and `option` when it cannot be made or written.

    A command that writes tables checks its output directory so, before any work.

    >>> writable_dir(Path("/proc/nope"), option="--out")
    Traceback (most recent call last):
    ...
    egtb.errors.InvalidArgumentError: --out /proc/nope: cannot make this directory (No such file or directory)
    """
    if directory.exists() and not directory.is_dir():
        raise InvalidArgumentError(f"{option} {directory}: is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidArgumentError(f"{option} {directory}: cannot make this directory ({exc.strerror})") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InvalidArgumentError(f"{option} {directory}: this directory is not writable")
    return directory


def run_stats(args: argparse.Namespace) -> int:
    """Handler of ``egtb stats``."""
    from egtb.builder.stats import directory_stats, format_stats, stats_json
    tables, totals = directory_stats(_existing_tables_dir(args))
    print(stats_json(tables, totals) if args.json else format_stats(tables, totals))
    return EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    """Handler of ``egtb verify``: exit status 1 on any error."""
    from egtb.builder.native import summary_path as native_summary_path
    from egtb.builder.verify import verify_directory
    from egtb.formats import master
    from egtb.formats.compact import SUFFIX as COMPACT_SUFFIX
    from egtb.positions.material import Material
    directory = _existing_tables_dir(args)
    named = {Material.parse(name) for name in args.materials}
    missing = sorted(named - set(master.stored_materials(directory))
                     - set(master.stored_materials(directory, suffix=COMPACT_SUFFIX)), key=str)
    if missing:
        raise MissingTableError(f"no table of {', '.join(map(str, missing))} in {directory} (--materials)")
    def wanted(suffix: str = master.SUFFIX) -> list[Material]:
        return [m for m in master.stored_materials(directory, suffix=suffix)
                if args.min_pieces <= m.pieces <= (args.pieces or m.pieces) and (not named or m in named)]
    materials = wanted()
    report = verify_directory(directory, materials=materials, jobs=args.jobs or os.cpu_count() or 1,
                              progress=not args.quiet and bool(materials), compact=True,
                              resume=not args.again)
    recounted = _add_compact_check(report, directory, sorted(set(wanted(COMPACT_SUFFIX)) - set(materials)),
                                   progress=not args.quiet, again=args.again, chunk=args.chunk,
                                   jobs=args.jobs or os.cpu_count() or 1, reference=not args.no_reference)
    stamped = [m for m in wanted(COMPACT_SUFFIX) if m not in materials  # compact-native tables
               and native_summary_path(directory, m).exists()]
    differing, listed, layers_listed = (([], 0, 0) if args.no_reference or not report.tables
                                        else _compare_reference(directory, materials + stamped))
    ok = report.ok and not differing
    if args.json:
        _print_json({"tables": report.tables, "positions": report.checked, "errors": report.errors,
                     "skipped": report.skipped,
                     "messages": report.messages, "reference_listed": listed,
                     "reference_rule_layers_listed": layers_listed,
                     "reference_differing": differing, "figures_recounted": recounted, "ok": ok})
        return EXIT_OK if ok else EXIT_FAILED
    for message in report.messages + differing:
        print(message)
    if report.tables == 0 and not report.skipped:
        print(f"no tables in {directory}", file=sys.stderr)
        return EXIT_FAILED
    status = "OK" if report.ok else f"{report.errors} ERRORS"
    print(f"verified {report.tables} tables, {report.checked} positions: {status}"
          + (f"; {len(report.skipped)} materials passed before with the same files, not checked "
             "again (--again checks them)" if report.skipped else ""))
    if recounted:
        print(f"figures recounted from the files of {recounted} compact-native tables (counts, longest DTZ, "
              "checksums): " + (("equal to their stamps" + ("" if args.no_reference else " and the reference"))
                                if report.ok else "see above"))
    if not args.no_reference:
        layers = [m for m in differing if " rule layer " in m]
        print(f"reference: {listed - len(differing) + len(layers)} of {listed} listed tables "
              f"identical; {layers_listed - len(layers)} of {layers_listed} listed rule layers "
              "identical")
    return EXIT_OK if ok else EXIT_FAILED


def _add_compact_check(report, directory: Path, materials: list[Material], *, progress: bool,
                       again: bool = False, chunk: int | None = None, jobs: int = 1, reference: bool = True) -> int:
    """Fold the check of the compact files of `materials`, which have no master, into a verify
    report (those with a master were checked against it by the verify's workers); return how many
    had their figures recounted (:attr:`egtb.builder.verify_compact.CompactVerifyReport.figures`). A stopped
    check goes on and a passed one is skipped (:mod:`egtb.builder.verify_progress`) unless ``again``,
    ``chunk`` positions at a time, ``jobs`` materials side by side.

    Its progress bar counts the positions of each file checked (``.wld``,
    ``.wcdf``, ``.dtz``) and names the file being checked.
    """
    from tqdm import tqdm

    from egtb.builder.verify_compact import CHUNK, verify_compact
    from egtb.formats.compact import compact_paths
    from egtb.positions.material import count_positions
    if not materials:
        return 0
    if chunk is not None and chunk <= 0:
        raise InvalidArgumentError(f"--chunk must be positive, not {chunk}")
    total = sum(count_positions(m) * sum(p.exists() for p in compact_paths(directory, m)) for m in materials)
    with tqdm(total=total, unit="pos", unit_scale=True, desc="verify compact", disable=not progress,
              dynamic_ncols=True) as bar:
        def advance(name: str, positions: int) -> None:
            bar.set_postfix_str(name, refresh=False)
            bar.update(positions)
            if not positions:
                bar.refresh()
        compact = verify_compact(directory, materials=materials, progress=advance, resume=True, again=again,
                                 chunk=chunk or CHUNK, jobs=jobs, reference=reference)
    report.tables += compact.tables
    report.checked += compact.checked
    report.errors += compact.errors
    report.messages += compact.messages
    report.skipped += compact.skipped
    return compact.figures


def _register_compact(p: argparse.ArgumentParser) -> None:
    from egtb.formats.directory import DEFAULT_DIR, ENV_DIR
    p.description = ("Write one compact WLD file per master table (and a .wcdf file of its "
                                "categories and a .dtz file of its DTZ under wcdf when it has that "
                                "layer): capture positions left out, values run-length/Huffman coded "
                     "in 4 KB blocks.")
    p.add_argument("--tables", type=Path, default=None, metavar="DIR",
                   help=f"master table directory (default: ${ENV_DIR} or {DEFAULT_DIR})")
    p.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help="where to write the .wld files (default: the --tables directory)")
    p.add_argument("--marks", action="store_true",
                   help="only write the marks files (.wld.marks, .wcdf.marks, .dtz.marks) of the compact "
                        "files of --tables that have none, a stale one or one of another spacing than "
                        "--mark-every (no master needed)")
    p.add_argument("--mark-every", type=_mark_spacing, default=None, metavar="RUNS",
                   help="with --marks: runs between two marks (default: 32 up to 7 pieces, 128 from 8; "
                        "more runs, smaller marks files and slower lookups)")
    p.add_argument("--stale", action="store_true",
                   help="only write the compact files that are missing or older than their master "
                        "(what a killed run, or a directory from before .dtz files, lacks)")
    p.add_argument("--recode", action="store_true",
                   help="only re-code as exceptions to their .wld files the .wcdf files of 8 pieces or more "
                        "of --tables written in full (before they were coded so; no master needed)")
    p.add_argument("--threats", action="store_true",
                   help="only re-code the .wld files of --tables leaving out the threat positions too (the "
                        "side to move cannot capture, the opponent could, and every move leads to a capture "
                        "or to no threat: probes search them one move deep): 2.5 times smaller at 4k-4k, "
                        "batch probes 2-4 times slower; egtb verify, the builder and every probe read them")
    p.add_argument("--one-sided-dtz", action="store_true",
                   help="only delete the larger .dtz file (and its marks) of each pair of compact-native "
                        "tables of 8 pieces or more of --tables, as the build does: that side's DTZ is then "
                        "derived from its moves, one ply into the other side's file (no master needed)")
    _add_jobs(p)
    p.add_argument("--quiet", action="store_true", help="no per-table lines")
    _add_json(p)
    p.set_defaults(func=run_compact)


def run_compact(args: argparse.Namespace) -> int:
    """Handler of ``egtb compact``."""
    from egtb.formats import master
    from egtb.builder.compaction import compact_directory, stale_materials

    def show(material, table) -> None:
        if not args.quiet and not args.json:
            written = [f"{table.bytes} bytes, {table.positions / table.bytes:.1f} positions/byte"] if table.bytes else []
            written += [f"{name} {size} bytes" for name, size in (("categories", table.rule_bytes),
                                                                 ("DTZ", table.dtz_bytes)) if size]
            print(f"{material.name}: {table.positions} positions, {', '.join(written)}", flush=True)

    if args.mark_every is not None and not args.marks:
        raise InvalidArgumentError("--mark-every spaces the marks files that --marks writes: give --marks too")
    directory = _existing_tables_dir(args)
    if args.marks:
        return _write_marks(directory, args)
    if args.recode:
        return _recode_categories(directory, args)
    if args.threats:
        return _recode_threats(directory, args)
    if args.one_sided_dtz:
        return _one_sided_dtz(directory, args)
    if args.out is not None:
        writable_dir(args.out, option="--out")
    materials = stale_materials(directory, out=args.out, min_pieces=0) if args.stale else None
    report = compact_directory(directory, out=args.out, jobs=args.jobs or os.cpu_count() or 1,
                               materials=materials, only_stale=args.stale, on_done=show)
    if args.stale and not materials and master.stored_materials(directory):
        print(f"every compact file of {directory} is up to date")
        return EXIT_OK
    if report.tables == 0 and not report.rule_bytes + report.dtz_bytes:
        print(f"no master tables in {directory}", file=sys.stderr)
        return EXIT_FAILED
    rows = {str(n): {"positions": p, "bytes": b, "tables": t,
                     "positions_per_byte": round(p / b, 2) if b else None,
                     "bits_per_position": round(8 * b / p, 4) if b else None,
                     "category_bytes": c, "dtz_bytes": d}
            for n, (p, b, t, c, d) in sorted(report.by_pieces.items())}
    if args.json:
        _print_json({"tables": report.tables, "positions": report.positions, "bytes": report.bytes,
                     "captures": report.captures, "seconds": round(report.seconds, 3),
                     "category_bytes": report.rule_bytes, "dtz_bytes": report.dtz_bytes,
                     "by_pieces": rows})
        return EXIT_OK
    for n, row in rows.items():
        print(f"{n} pieces: {row['tables']} tables, {row['positions']} positions"
              + (f", {row['bytes']} bytes, {row['positions_per_byte']} positions/byte "
                 f"({row['bits_per_position']} bits/position)" if row["bytes"] else "")
              + (f", categories {row['category_bytes']} bytes" if row["category_bytes"] else "")
              + (f", DTZ {row['dtz_bytes']} bytes" if row["dtz_bytes"] else ""))
    print(f"compacted {len(materials) if materials else report.tables} tables in {report.seconds:.1f}s"
          + (f": {report.positions / report.bytes:.1f} positions/byte" if report.bytes else ""))
    return EXIT_OK


def _one_sided_dtz(directory: Path, args: argparse.Namespace) -> int:
    """``egtb compact --one-sided-dtz``: the larger ``.dtz`` of each 8-piece compact-native pair deleted."""
    from egtb.builder.native import keep_dtz_on_one_side_in
    from egtb.positions.material import Material

    sizes = {path: path.stat().st_size for path in directory.glob("*.dtz*")}
    dropped = keep_dtz_on_one_side_in(directory)
    freed = sum(size for path, size in sizes.items() if not path.exists())
    if args.json:
        _print_json({"deleted": [path.name for path in dropped], "bytes_freed": freed})
        return EXIT_OK
    if not args.quiet:
        for path in dropped:
            mirror = Material.parse(path.stem).mirrored().name
            print(f"deleted {path.name}: {path.stem}'s DTZ derived from its moves into {mirror}{path.suffix}",
                  flush=True)
    print(f"kept {len(dropped)} pairs' DTZ on one side: {freed:,} bytes freed")
    return EXIT_OK


def _write_marks(directory: Path, args: argparse.Namespace) -> int:
    """``egtb compact --marks``: the missing or stale marks files of a directory's compact files."""
    from egtb.builder.compaction import write_missing_marks
    from egtb.formats.compact import marks_path

    def show(compact_file: Path) -> None:
        if not args.quiet and not args.json:
            marks = marks_path(compact_file)
            print(f"{marks.name}: {marks.stat().st_size} bytes", flush=True)

    started = time.perf_counter()
    done = write_missing_marks(directory, jobs=args.jobs or os.cpu_count() or 1, mark_every=args.mark_every,
                               on_done=show)
    seconds = time.perf_counter() - started
    if args.json:
        _print_json({"marked": [path.name for path in done], "seconds": round(seconds, 3)})
    else:
        print(f"wrote {len(done)} marks files in {seconds:.1f}s")
    return EXIT_OK


def _recode_categories(directory: Path, args: argparse.Namespace) -> int:
    """``egtb compact --recode``: the category files of 8 pieces or more coded in full, as exceptions."""
    from egtb.builder.native import recode_categories
    from egtb.formats import master
    from egtb.formats.compact.exceptions import codes_as_exceptions
    from egtb.formats.compact.layout import WCDF

    materials = [m for m in master.stored_materials(directory, suffix=WCDF.suffix) if codes_as_exceptions(m)]
    return _recode_each(materials, lambda material: recode_categories(directory, material), args,
                        suffix=WCDF.suffix, done="category files coded as exceptions")


def _recode_threats(directory: Path, args: argparse.Namespace) -> int:
    """``egtb compact --threats``: the WLD files again, threat positions left out."""
    from egtb.builder.native import recode_threats
    from egtb.formats import master
    from egtb.formats.compact import SUFFIX as COMPACT_SUFFIX
    from egtb.positions.material import count_positions

    return _recode_each(master.stored_materials(directory, suffix=COMPACT_SUFFIX),
                        lambda material: recode_threats(directory, material), args, suffix=COMPACT_SUFFIX,
                        done="WLD files with threat positions left out",
                        density=lambda material, after: f" ({count_positions(material) / after:.1f} positions a byte)")


def _recode_each(materials: list[Material], recode, args: argparse.Namespace, *, suffix: str, done: str,
                 density=lambda material, after: "") -> int:
    """Re-code one file of each material (``recode(material)``: its bytes before and after), a line
    each unless quiet, then the totals (or JSON)."""
    started = time.perf_counter()
    sizes = {}
    for material in materials:
        sizes[material.name] = before, after = recode(material)
        if not args.quiet and not args.json:
            print(f"{material.name}{suffix}: {before} bytes, now {after}{density(material, after)}", flush=True)
    seconds = time.perf_counter() - started
    if args.json:
        _print_json({"recoded": {name: list(pair) for name, pair in sizes.items()}, "seconds": round(seconds, 3)})
    else:
        print(f"{len(sizes)} {done} in {seconds:.1f}s: "
              f"{sum(b for b, _ in sizes.values())} bytes, now {sum(a for _, a in sizes.values())}")
    return EXIT_OK


def _compare_reference(directory: Path, materials: list[Material]) -> tuple[list[str], int, int]:
    """(messages about those of `materials` whose tables or rule layers differ from the shipped
    reference, tables listed there, rule layers listed there)."""
    from egtb.builder.reference import compare_with_reference, load_reference, load_rule_reference
    from egtb.formats import master
    reference, rule_reference = load_reference(), load_rule_reference()
    differing = compare_with_reference(directory, materials, reference=reference,
                                       rule_reference=rule_reference)
    layers_listed = sum((m.name, preset) in rule_reference for m in materials
                        for preset in (master.rule_presets_in(master.table_path(directory, m))
                                       if master.table_path(directory, m).exists() else ("wcdf",)))
    return differing, sum(m.name in reference for m in materials), layers_listed


# --- probe ------------------------------------------------------------------


def _register_probe(parser: argparse.ArgumentParser) -> None:
    from egtb.rules.draw_rules import DEFAULT_RULE, DRAW_RULES
    parser.description = ("Probe the endgame tables: for each FEN (arguments, or one per line on "
                          "standard input) print the value for the side to move and its DTW without "
                          "the move rule, the outcome under the move rule from the given counter with "
                          "the category and DTZ, and every legal move with the result it leads to, "
                          "best first under the rule.")
    parser.add_argument("fens", nargs="*", metavar="FEN", help="positions (default: read stdin)")
    add_tables_option(parser)
    parser.add_argument("--rule", choices=list(DRAW_RULES), default=DEFAULT_RULE,
                        help=f"move-rule preset (default: {DEFAULT_RULE})")
    parser.add_argument("--counter", type=_non_negative, default=0, metavar="N",
                        help="quiet plies already counted by the move rule (default: 0)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.set_defaults(func=run_probe)


def run_probe(args: argparse.Namespace, *, stdin: TextIO | None = None,
              stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Handler of ``egtb probe``; returns the exit status."""
    from egtb.probe.tablebase import Tablebase
    from egtb.rules.board import DRAW_RULES
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    limit = DRAW_RULES[args.rule].limit_plies
    if args.counter > limit:
        raise InvalidArgumentError(f"--counter {args.counter} is beyond the {args.rule} limit of {limit} plies")
    fens = args.fens if args.fens else _stdin_fens(stdin)
    with Tablebase(_existing_tables_dir(args)) as tablebase:
        failed = probe_lines(tablebase, fens, json_mode=args.json, out=stdout, err=stderr,
                             rule=args.rule, counter=args.counter)
    return EXIT_FAILED if failed else EXIT_OK


def probe_lines(tablebase: Tablebase, fens: Iterable[str], *, json_mode: bool,
                out: TextIO, err: TextIO, rule: str | None = None, counter: int = 0) -> int:
    """Answer every FEN on ``out`` (errors on ``err`` in text mode); return the failures.

    Every line gets its answer or its own error line: an unexpected exception
    on one line (a defect) is reported as ``internal error: <type>: <message>``
    for that line, and the lines after it are still answered.

    >>> import io
    >>> from egtb.probe.tablebase import Tablebase
    >>> out = io.StringIO()
    >>> probe_lines(Tablebase("/nonexistent"), ["B:W5,6,10:B1", "nonsense"], json_mode=True,
    ...             out=out, err=io.StringIO(), counter=80)
    1
    >>> print(out.getvalue().splitlines()[0])
    {"fen": "B:W5,6,10:B1", "value": "loss", "dtw": 0, "rule": "wcdf", "counter": 80, "outcome": "loss", "category": "loss", "dtz": 0, "moves": []}
    """
    from egtb.probe.results import answer
    from egtb.rules.board import DEFAULT_RULE
    rule = rule or DEFAULT_RULE
    failed = 0
    for fen in fens:
        try:
            record = answer(tablebase, fen, rule=rule, counter=counter)
        except (ValueError, MissingTableError, TableError) as exc:
            failed += 1
            _write_error(fen, _message(exc), json_mode=json_mode, out=out, err=err)
            continue
        except Exception as exc:  # a defect on one line must not cost the lines after it
            failed += 1
            _write_error(fen, f"internal error: {type(exc).__name__}: {_message(exc)}",
                         json_mode=json_mode, out=out, err=err)
            continue
        out.write(json.dumps(record) + "\n" if json_mode else format_text(record))
        out.flush()
    return failed


def format_text(record: dict) -> str:
    """Text block of one answer: a header line, then one line per move.

    Rule-free value and DTW first, then the outcome under the rule with its
    category and DTZ. What a compact directory does not hold (DTW, DTZ) is
    left out, an outcome it cannot tell is shown as ``?``.

    >>> print(format_text({"fen": "B:W9:BK1", "value": "win", "dtw": 3, "rule": "wcdf", "counter": 0,
    ...                    "outcome": "win", "category": "win", "dtz": 1,
    ...                    "moves": [{"move": "1-5", "value": "win", "dtw": 3, "outcome": "win",
    ...                               "category": "win", "dtz": 1}]}), end="")
    B:W9:BK1  win  dtw 3  wcdf counter 0: win  category win  dtz 1
      1-5       win   dtw 3    win   category win          dtz 1
    >>> print(format_text({"fen": "B:W9:BK1", "value": "win", "dtw": None, "rule": "wcdf", "counter": 0,
    ...                    "outcome": "win", "category": "win", "dtz": None,
    ...                    "moves": [{"move": "1-5", "value": "win", "dtw": None, "outcome": None,
    ...                               "category": "win", "dtz": None}]}), end="")
    B:W9:BK1  win  wcdf counter 0: win  category win
      1-5       win   ?     category win
    >>> print(format_text({"fen": "B:W9:BK1", "value": "win", "dtw": None, "rule": "crowning", "counter": 9,
    ...                    "outcome": None, "category": None, "dtz": None, "moves": [],
    ...                    "rule_layer_missing": True, "note": "no crowning layer"}), end="")
    B:W9:BK1  win  crowning counter 9: ?  (no crowning layer)
    """
    header = f"{record['fen']}  {record['value']}" + _field_text("dtw", record["dtw"], "  ")
    if record.get("rule_layer_missing"):
        header += f"  {record['rule']} counter {record['counter']}: ?  ({record['note']})"
    elif record["outcome"] is not None:
        header += (f"  {record['rule']} counter {record['counter']}: {record['outcome']}  "
                   f"category {record['category']}" + _field_text("dtz", record["dtz"], "  "))
    return "\n".join(line.rstrip() for line in [header, *(
        _move_text(m, ruled=record["outcome"] is not None) for m in record["moves"])]) + "\n"


def _move_text(move: dict, *, ruled: bool) -> str:
    """One move's line of :func:`format_text` (the rule columns when the answer has them)."""
    line = f"  {move['move']:<9} {move['value']:<5}"
    if move["dtw"] is not None:
        line += f" dtw {move['dtw']:<4}"
    if ruled:
        line += f" {move['outcome'] or '?':<5} category {move['category']:<12}"
        line += _field_text("dtz", move["dtz"], " ")
    return line


def _field_text(name: str, value: int | None, gap: str) -> str:
    """``gap + "name N"``, or nothing when a compact file answered (it holds no such field).

    >>> _field_text("dtw", 3, "  "), _field_text("dtz", None, " ")
    ('  dtw 3', '')
    """
    return "" if value is None else f"{gap}{name} {value}"


def _write_error(fen: str, message: str, *, json_mode: bool, out: TextIO, err: TextIO) -> None:
    if json_mode:
        out.write(json.dumps({"fen": fen, "error": message}) + "\n")
        out.flush()
    else:
        err.write(f"egtb probe: {fen!r}: {message}\n")
        err.flush()


def _message(exc: Exception) -> str:
    """An exception's message (KeyError's str() adds quotes; drop them)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def _stdin_fens(stdin: TextIO) -> Iterator[str]:
    """Non-blank, non-comment lines of standard input, stripped (of a byte-order mark too, which
    an editor may write before the first line).

    >>> import io
    >>> list(_stdin_fens(io.StringIO("\\ufeffW:W9:BK1\\n# a comment\\n\\n B:W9:B1 \\n")))
    ['W:W9:BK1', 'B:W9:B1']
    """
    for number, line in enumerate(stdin):
        text = (line.removeprefix("\ufeff") if number == 0 else line).strip()
        if text and not text.startswith("#"):
            yield text


_COMMANDS = {  # name: (help, the register function that adds its options)
    "perft": ("count leaf positions of the move tree", _register_perft),
    "moves": ("list the legal moves of a position", _register_moves),
    "build": ("build endgame tables up to N pieces", _register_build),
    "compact": ("write compact WLD files (.wld) from master tables", _register_compact),
    "stats": ("per-material statistics of built tables", _register_stats),
    "verify": ("re-check every stored value against its successors", _register_verify),
    "probe": ("value, DTW and best moves of positions from the tables", _register_probe),
}


if __name__ == "__main__":
    sys.exit(main())
