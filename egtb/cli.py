"""The ``egtb`` command line: ``perft``, ``moves``, ``build``, ``stats``, ``verify``, ``probe``.

Every subcommand that prints results takes ``--json``; a table directory is
``--tables DIR`` everywhere (``--dir``/``--out`` are hidden aliases kept for one
release), parallelism ``--jobs N``, and ``--quiet`` silences progress bars.
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
import json
import logging
import os
import sys
from pathlib import Path
from typing import Iterable, Iterator, Sequence, TextIO

from egtb.errors import EgtbError, MissingTableError, TableError
from egtb.probe import MoveValue, Tablebase
from egtb.rules.board import Board
from egtb.rules.movegen import perft
from egtb.tables import storage

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "EXIT_CODES_HELP",
           "add_tables_option", "build_parser", "main"]

EXIT_OK = 0  #: everything asked for was done and is right
EXIT_FAILED = 1  #: a result is wrong or missing (failed verification, missing table, bad probe line)
EXIT_USAGE = 2  #: bad usage or input: unknown option, malformed FEN, missing directory
EXIT_INTERRUPTED = 130  #: interrupted (Ctrl-C); complete work is kept
#: The epilog of every ``--help``.
EXIT_CODES_HELP = ("exit status: 0 ok, 1 a result is wrong or missing, 2 bad usage or input, "
                   "130 interrupted")
DEFAULT_PIECES = 5


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: sys.argv[1:]); return the exit status.

    >>> main(["moves", "B:W14,23:B9"])
    9x18x27 W:W:B27
    0
    """
    parser = build_parser()
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="egtb", description="English draughts endgame tables and rules tools.",
                                     epilog=EXIT_CODES_HELP)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for register in (_register_perft, _register_moves, _register_build, _register_stats,
                     _register_verify, _register_probe):
        register(subparsers)
    return parser


def _subcommand(subparsers, name: str, **kwargs) -> argparse.ArgumentParser:
    """A subparser with the exit-status epilog."""
    return subparsers.add_parser(name, epilog=EXIT_CODES_HELP, **kwargs)


def add_tables_option(parser: argparse.ArgumentParser, *, help_text: str | None = None,
                      default: Path | str | None = None) -> None:
    """``--tables DIR`` (with the hidden aliases ``--dir`` and ``--out`` kept for one release)."""
    parser.add_argument("--tables", dest="tables", type=Path, default=default, metavar="DIR",
                        help=help_text or f"table directory (default: ${storage.ENV_DIR} or {storage.DEFAULT_DIR})")
    parser.add_argument("--dir", "--out", dest="tables", type=Path, help=argparse.SUPPRESS)


def _add_jobs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: number of cores)")
    parser.add_argument("--concurrency", dest="jobs", type=int, help=argparse.SUPPRESS)


def _add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def _print_json(data: object) -> None:
    print(json.dumps(data))


# --- perft ------------------------------------------------------------------


def _register_perft(subparsers) -> None:
    parser = _subcommand(subparsers, "perft", help="count leaf positions of the move tree",
                         description="Count the leaf positions DEPTH plies ahead (distinct moves).")
    parser.add_argument("--depth", type=_non_negative, required=True, help="plies to search")
    parser.add_argument("--fen", default=None, help="start position (default: the standard start)")
    parser.add_argument("--divide", action="store_true", help="one count per legal move, then the total")
    _add_json(parser)
    parser.set_defaults(func=run_perft)


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"depth must be 0 or more, not {value}")
    return value


def run_perft(args: argparse.Namespace) -> int:
    """Print the perft count, or with --divide one "move: count" line per move and the total."""
    board = Board(args.fen)
    counts = divide(board, args.depth) if args.divide else []
    total = sum(c for _, c in counts) if args.divide else count_leaves(board, args.depth)
    if args.json:
        _print_json({"fen": board.fen(), "depth": args.depth, "leaves": total,
                     **({"divide": dict(counts)} if args.divide else {})})
        return EXIT_OK
    for move, count in counts:
        print(f"{move}: {count}")
    print(f"total: {total}" if args.divide else total)
    return EXIT_OK


def count_leaves(board: Board, depth: int) -> int:
    """perft of the board's position.

    >>> count_leaves(Board(), 4)
    1469
    """
    return int(perft(*board.key(), depth))


def divide(board: Board, depth: int) -> list[tuple[str, int]]:
    """(move, perft(depth - 1) after it) for every legal move; [] when depth is 0.

    >>> divide(Board("B:W14,23:B9"), 1)
    [('9x18x27', 1)]
    """
    if depth == 0:
        return []
    counts = []
    for move in board.legal_moves():
        board.push(move)
        counts.append((str(move), count_leaves(board, depth - 1)))
        board.pop()
    return counts


# --- moves ------------------------------------------------------------------


def _register_moves(subparsers) -> None:
    parser = _subcommand(subparsers, "moves", help="list the legal moves of a position",
                         description="One line per legal move: its PDN notation and the resulting FEN.")
    parser.add_argument("fen", metavar="FEN", help='position, e.g. "B:W18,24,K27:B12,16,K22"')
    _add_json(parser)
    parser.set_defaults(func=run_moves)


def run_moves(args: argparse.Namespace) -> int:
    """Print "move resulting-FEN" for every legal move."""
    board = Board(args.fen)
    rows = []
    for move in board.legal_moves():
        board.push(move)
        rows.append({"move": str(move), "fen": board.fen()})
        board.pop()
    if args.json:
        _print_json({"fen": args.fen, "moves": rows})
    for row in [] if args.json else rows:
        print(f"{row['move']} {row['fen']}")
    return EXIT_OK


# --- tables -----------------------------------------------------------------


def _register_build(subparsers) -> None:
    from egtb.tables.build import DEFAULT_RULES, RULE_PRESETS
    p = _subcommand(subparsers, "build", help="build endgame tables up to N pieces",
                    description="Build every table with up to N pieces, skipping complete files (resumable).")
    p.add_argument("--pieces", "-n", type=int, default=DEFAULT_PIECES,
                   help=f"largest piece count (default {DEFAULT_PIECES})")
    p.add_argument("--min-pieces", type=int, default=2,
                   help="smallest piece count to build (smaller ones must exist)")
    _add_jobs(p)
    p.add_argument("--rules", type=_rule_list, default=DEFAULT_RULES,
                   help=f"rule layers to build: a comma list of {', '.join(RULE_PRESETS)}, "
                        f"'all' or 'none' (default {DEFAULT_RULES})")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_json(p)
    add_tables_option(p)
    p.set_defaults(func=run_build)


def _rule_list(text: str) -> str:
    """argparse type of ``--rules``: checks the preset names, keeps the text."""
    from egtb.tables.rule_layer import parse_presets
    try:
        parse_presets(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _register_stats(subparsers) -> None:
    p = _subcommand(subparsers, "stats", help="per-material statistics of built tables")
    _add_json(p)
    add_tables_option(p)
    p.set_defaults(func=run_stats)


def _register_verify(subparsers) -> None:
    p = _subcommand(subparsers, "verify", help="re-check every stored value against its successors")
    _add_jobs(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the comparison with the reference figures shipped with the package")
    _add_json(p)
    add_tables_option(p)
    p.set_defaults(func=run_verify)


def run_build(args: argparse.Namespace) -> int:
    """Handler of ``egtb build``."""
    from egtb.tables.build import build
    if args.pieces < 2:
        raise ValueError(f"--pieces must be at least 2, not {args.pieces}")
    _log_warnings_to_console()
    report = build(args.pieces, directory=args.tables, jobs=args.jobs, rules=args.rules,
                   min_pieces=args.min_pieces, progress=not args.quiet)
    if args.json:
        _print_json({"built": report.built, "skipped": report.skipped, "rebuilt": report.rebuilt,
                     "positions": report.positions, "seconds": round(report.seconds, 3)})
        return EXIT_OK
    print(f"built {len(report.built)} tables ({report.positions} positions) in "
          f"{report.seconds:.1f}s; {len(report.skipped)} already complete"
          + (f"; rebuilt broken: {', '.join(report.rebuilt)}" if report.rebuilt else ""))
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
    directory = Path(args.tables or storage.default_dir())
    if not directory.is_dir():
        raise ValueError(f"table directory {directory} does not exist")
    return directory


def run_stats(args: argparse.Namespace) -> int:
    """Handler of ``egtb stats``."""
    from egtb.tables.stats import directory_stats, format_stats, stats_json
    tables, totals = directory_stats(_existing_tables_dir(args))
    print(stats_json(tables, totals) if args.json else format_stats(tables, totals))
    return EXIT_OK


def run_verify(args: argparse.Namespace) -> int:
    """Handler of ``egtb verify``: exit status 1 on any error."""
    from egtb.tables.verify import verify_directory
    directory = _existing_tables_dir(args)
    report = verify_directory(directory, jobs=args.jobs or os.cpu_count() or 1, progress=not args.quiet)
    differing, listed, layers_listed = (([], 0, 0) if args.no_reference or not report.tables
                                        else _compare_reference(directory))
    ok = report.ok and report.tables > 0 and not differing
    if args.json:
        _print_json({"tables": report.tables, "positions": report.checked, "errors": report.errors,
                     "messages": report.messages, "reference_listed": listed,
                     "reference_rule_layers_listed": layers_listed,
                     "reference_differing": differing, "ok": ok})
        return EXIT_OK if ok else EXIT_FAILED
    for message in report.messages + differing:
        print(message)
    if report.tables == 0:
        print(f"no tables in {directory}", file=sys.stderr)
        return EXIT_FAILED
    status = "OK" if report.ok else f"{report.errors} ERRORS"
    print(f"verified {report.tables} tables, {report.checked} positions: {status}")
    if not args.no_reference:
        layers = [m for m in differing if " rule layer " in m]
        print(f"reference: {listed - len(differing) + len(layers)} of {listed} listed tables "
              f"identical; {layers_listed - len(layers)} of {layers_listed} listed rule layers "
              "identical")
    return EXIT_OK if ok else EXIT_FAILED


def _compare_reference(directory: Path) -> tuple[list[str], int, int]:
    """(messages about tables or rule layers whose figures differ from the shipped reference,
    tables listed there, rule layers listed there)."""
    from egtb.tables.reference import compare_with_reference, load_reference, load_rule_reference
    from egtb.tables.verify import stored_materials
    reference, rule_reference = load_reference(), load_rule_reference()
    materials = stored_materials(directory)
    differing = compare_with_reference(directory, materials, reference=reference,
                                       rule_reference=rule_reference)
    layers_listed = sum((m.name, preset) in rule_reference for m in materials
                        for preset in storage.rule_presets_in(storage.table_path(directory, m)))
    return differing, sum(m.name in reference for m in materials), layers_listed


# --- probe ------------------------------------------------------------------


def _register_probe(subparsers: argparse._SubParsersAction) -> None:
    parser = _subcommand(
        subparsers, "probe", help="value, DTW and best moves of positions from the tables",
        description="Probe the endgame tables: for each FEN (arguments, or one per line on "
                    "standard input) print the value for the side to move, its DTW and every "
                    "legal move with the result it leads to, best first.")
    parser.add_argument("fens", nargs="*", metavar="FEN", help="positions (default: read stdin)")
    add_tables_option(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.set_defaults(func=run_probe)


def run_probe(args: argparse.Namespace, *, stdin: TextIO | None = None,
              stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Handler of ``egtb probe``; returns the exit status."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    fens = args.fens if args.fens else _stdin_fens(stdin)
    with Tablebase(_existing_tables_dir(args)) as tablebase:
        failed = probe_lines(tablebase, fens, json_mode=args.json, out=stdout, err=stderr)
    return EXIT_FAILED if failed else EXIT_OK


def probe_lines(tablebase: Tablebase, fens: Iterable[str], *, json_mode: bool,
                out: TextIO, err: TextIO) -> int:
    """Answer every FEN on ``out`` (errors on ``err`` in text mode); return the failures.

    >>> import io
    >>> out = io.StringIO()
    >>> probe_lines(Tablebase("/nonexistent"), ["B:W5,6,10:B1", "nonsense"], json_mode=True,
    ...             out=out, err=io.StringIO())
    1
    >>> print(out.getvalue().splitlines()[0])
    {"fen": "B:W5,6,10:B1", "value": "loss", "dtw": 0, "moves": []}
    """
    failed = 0
    for fen in fens:
        try:
            record = answer(tablebase, fen)
        except (ValueError, MissingTableError, TableError) as exc:
            failed += 1
            _write_error(fen, _message(exc), json_mode=json_mode, out=out, err=err)
            continue
        out.write(json.dumps(record) + "\n" if json_mode else format_text(record))
        out.flush()
    return failed


def answer(tablebase: Tablebase, fen: str) -> dict:
    """The JSON-ready answer for one FEN (ValueError, MissingTableError, TableError).

    >>> answer(Tablebase("/nonexistent"), "B:W5,6,10:B1")
    {'fen': 'B:W5,6,10:B1', 'value': 'loss', 'dtw': 0, 'moves': []}
    """
    board = Board(fen)
    result = tablebase.probe(board)
    moves = [_move_record(mv) for mv in tablebase.best_moves(board)]
    return {"fen": fen, "value": result.value, "dtw": result.dtw, "moves": moves}


def format_text(record: dict) -> str:
    """Text block of one answer: a header line, then one line per move.

    >>> print(format_text({"fen": "B:W9:BK1", "value": "win", "dtw": 3,
    ...                    "moves": [{"move": "1-5", "value": "win", "dtw": 3}]}), end="")
    B:W9:BK1  win  dtw 3
      1-5       win   dtw 3
    """
    lines = [f"{record['fen']}  {record['value']}  dtw {record['dtw']}"]
    lines += [f"  {m['move']:<9} {m['value']:<5} dtw {m['dtw']}" for m in record["moves"]]
    return "\n".join(lines) + "\n"


def _move_record(mv: MoveValue) -> dict:
    return {"move": str(mv.move), "value": mv.value, "dtw": mv.dtw}


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
    """Non-blank, non-comment lines of standard input, stripped."""
    for line in stdin:
        text = line.strip()
        if text and not text.startswith("#"):
            yield text


if __name__ == "__main__":
    sys.exit(main())
