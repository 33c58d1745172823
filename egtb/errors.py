"""One exception family for the whole package.

Every error raised on purpose by :mod:`egtb` is an :class:`EgtbError`; each
also subclasses the builtin a caller would naturally catch: bad notation is a
``ValueError``, a missing table a ``KeyError`` (as in python-chess).

>>> issubclass(MissingTableError, KeyError), issubclass(InvalidFenError, ValueError)
(True, True)
>>> issubclass(MissingTableError, EgtbError) and issubclass(SolverError, TableError)
True
"""

from __future__ import annotations

__all__ = [
    "AmbiguousMoveError", "ClusterError", "EgtbError", "IllegalMoveError", "InvalidArgumentError",
    "InvalidDataError", "InvalidFenError", "InvalidMoveError", "InvalidPositionError", "MarksFileWarning",
    "MemoryBudgetError", "MissingRuleLayerError", "MissingTableError", "PdnError", "SolverError",
    "TableError", "TaskError",
]


class EgtbError(Exception):
    """Root of every error the egtb package raises on purpose."""


class TableError(EgtbError):
    """A table file is damaged, foreign or inconsistent (the message names the file)."""


class MissingTableError(TableError, KeyError):
    """No table of this material in the directory (a KeyError, as in python-chess)."""

    def __str__(self) -> str:  # KeyError would print the repr of its argument
        return str(self.args[0]) if self.args else "missing table"


class SolverError(TableError):
    """A solver kernel failed; the message names the material and what failed."""


class InvalidFenError(EgtbError, ValueError):
    """A FEN that does not describe a position (the message quotes it)."""


class InvalidMoveError(EgtbError, ValueError):
    """Move text that is not a move in PDN notation."""


class IllegalMoveError(EgtbError, ValueError):
    """A well-formed move that is not legal in the position."""


class AmbiguousMoveError(EgtbError, ValueError):
    """Move text that matches more than one legal move (e.g. a capture given by its ends only)."""


class InvalidPositionError(EgtbError, ValueError):
    """Bitboards that are no position of their material: pieces on shared squares or off the board,
    men on their crowning row, counts that do not match (the message gives the bitboards)."""


class InvalidArgumentError(EgtbError, ValueError):
    """An argument or option out of its range or of an unknown name: a draw rule, a counter, a
    material name, a size (the message names it and what is allowed).

    >>> from egtb.rules.board import Board
    >>> try:
    ...     Board(rule="fifty-moves")
    ... except ValueError as exc:                  # still a ValueError
    ...     print(type(exc).__name__, isinstance(exc, EgtbError))
    InvalidArgumentError True
    """


class InvalidDataError(EgtbError, ValueError):
    """Values a table file cannot hold, or stored bytes that do not decode (the message names the
    material, file or chunk; a reader of a file wraps it in a :class:`TableError` naming the file)."""


class MissingRuleLayerError(MissingTableError):
    """A table file without the rule layer of the asked move-rule preset (names the file and preset).

    A :class:`MissingTableError` (so a ``get_*`` twin returns its default and an
    engine falls back as for a missing table), hence a ``KeyError`` too.
    """


class PdnError(EgtbError, ValueError):
    """Text that is not a PDN game of English draughts; says where (``FILE:LINE:`` for a file)."""

    def __init__(self, message: str, *, line: int, source: str | None = None) -> None:
        super().__init__(f"{source}:{line}: {message}" if source else f"PDN: {message} at line {line}")
        self.line = line
        """Line (1-based) of the fault."""
        self.source = source
        """File name, when the text came from a file."""


class MemoryBudgetError(EgtbError, MemoryError):
    """A pair cannot be solved within the memory budget, even on disk."""


class BuildRunningError(EgtbError, BlockingIOError):
    """Another build holds the table directory (its lock file): two builds of one directory would
    remove each other's unfinished files and scratch."""


class ClusterError(EgtbError, ConnectionError):
    """The Dask cluster cannot be used: Dask missing, scheduler unreachable, no worker, bad worker setup.

    A ``ConnectionError`` (so an ``OSError``): both command lines report it as bad setup (exit 2).
    """


class TaskError(EgtbError, RuntimeError):
    """A task run by an executor (:mod:`egtb.executor`) failed: its exception is the ``__cause__``.

    >>> TaskError("task pair-1k-1k failed: OSError: disk full", key="pair-1k-1k").key
    'pair-1k-1k'
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        """The key of the task that failed."""


class MarksFileWarning(UserWarning):
    """A compact file's marks file is not used (foreign, stale, truncated or of another version: the
    message names it and why); the reader makes the marks in memory instead."""
