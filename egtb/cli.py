"""The ``egtb`` command line: ``perft`` and ``moves`` here; the table commands
(``build``, ``stats``, ``verify``) come from :mod:`egtb.tablecli` and ``probe``
from :mod:`egtb.probecli`.

Each of those modules provides ``register(subparsers)``, adding its
subcommands; a subcommand sets ``func(args) -> int | None`` with
``set_defaults``. A ValueError raised by a subcommand is reported on stderr
(exit status 2), without a traceback.

>>> main(["perft", "--depth", "3"])
302
0
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from egtb import probecli, tablecli
from egtb.rules.board import Board
from egtb.rules.movegen import perft

__all__ = ["build_parser", "main"]

EXIT_USAGE = 2


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
    except ValueError as exc:
        print(f"egtb {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return int(status or 0)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available subcommand."""
    parser = argparse.ArgumentParser(prog="egtb", description="English draughts endgame tables and rules tools.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _register_perft(subparsers)
    _register_moves(subparsers)
    tablecli.register(subparsers)
    probecli.register(subparsers)
    return parser


# --- perft ------------------------------------------------------------------


def _register_perft(subparsers) -> None:
    parser = subparsers.add_parser("perft", help="count leaf positions of the move tree",
                                   description="Count the leaf positions DEPTH plies ahead (distinct moves).")
    parser.add_argument("--depth", type=_non_negative, required=True, help="plies to search")
    parser.add_argument("--fen", default=None, help="start position (default: the standard start)")
    parser.add_argument("--divide", action="store_true", help="one count per legal move, then the total")
    parser.set_defaults(func=run_perft)


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"depth must be 0 or more, not {value}")
    return value


def run_perft(args: argparse.Namespace) -> int:
    """Print the perft count, or with --divide one "move: count" line per move and the total."""
    board = Board(args.fen)
    if not args.divide:
        print(count_leaves(board, args.depth))
        return 0
    total = 0
    for move, count in divide(board, args.depth):
        print(f"{move}: {count}")
        total += count
    print(f"total: {total}")
    return 0


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
    parser = subparsers.add_parser("moves", help="list the legal moves of a position",
                                   description="One line per legal move: its PDN notation and the resulting FEN.")
    parser.add_argument("fen", metavar="FEN", help='position, e.g. "B:W18,24,K27:B12,16,K22"')
    parser.set_defaults(func=run_moves)


def run_moves(args: argparse.Namespace) -> int:
    """Print "move resulting-FEN" for every legal move."""
    board = Board(args.fen)
    for move in board.legal_moves():
        board.push(move)
        print(f"{move} {board.fen()}")
        board.pop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
