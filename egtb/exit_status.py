"""The exit statuses of both command lines (``egtb`` and ``tournament``), in one place.

>>> EXIT_USAGE, EXIT_INTERRUPTED
(2, 130)
"""

from __future__ import annotations

__all__ = ["EXIT_CODES_HELP", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE"]

EXIT_OK = 0  #: everything asked for was done and is right
EXIT_FAILED = 1  #: a result is wrong or missing (failed verification, missing table, bad probe line)
EXIT_USAGE = 2  #: bad usage or input: unknown option, malformed FEN, missing directory
EXIT_INTERRUPTED = 130  #: interrupted (Ctrl-C); complete work is kept
#: The epilog of every ``--help``.
EXIT_CODES_HELP = ("exit status: 0 ok, 1 a result is wrong or missing, 2 bad usage or input, "
                   "130 interrupted")
