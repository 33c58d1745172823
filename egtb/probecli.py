"""``egtb probe``: perfect-play value, DTW and every move's result of positions.

FENs come as arguments or, without any, one per line on standard input (blank
lines and ``#`` comments are skipped). Text mode prints one block per FEN::

    W:WK10,K14:BK1  win  dtw 15
      14-9   win   dtw 15
      ...

``--json`` prints one JSON object per input line with the keys ``fen``,
``value``, ``dtw``, ``moves`` (each with ``move``, ``value``, ``dtw``), or
``fen`` and ``error`` for a line that failed. The exit status is 1 when any line
failed (malformed FEN, missing or damaged table), else 0.

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="egtb")
>>> register(parser.add_subparsers(dest="command"))
>>> parser.parse_args(["probe", "--json", "B:WK10:BK1"]).json
True
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Iterable, Iterator, TextIO

from egtb.rules.board import Board
from egtb.probe import MissingTableError, MoveValue, TableError, Tablebase

__all__ = ["probe_lines", "register", "run_probe"]

EXIT_OK = 0
EXIT_FAILED = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``probe`` subcommand to an ``egtb`` argument parser."""
    parser = subparsers.add_parser(
        "probe", help="value, DTW and best moves of positions from the tables",
        description="Probe the endgame tables: for each FEN (arguments, or one per line on "
                    "standard input) print the value for the side to move, its DTW and every "
                    "legal move with the result it leads to, best first.")
    parser.add_argument("fens", nargs="*", metavar="FEN", help="positions (default: read stdin)")
    parser.add_argument("--dir", default=None, help="table directory (default: $EGTB_DIR or data/egtb)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.set_defaults(func=run_probe)


def run_probe(args: argparse.Namespace, *, stdin: TextIO | None = None,
              stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Handler of ``egtb probe``; returns the exit status."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    fens = args.fens if args.fens else _stdin_fens(stdin)
    with Tablebase(args.dir) as tablebase:
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
