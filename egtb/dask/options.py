"""The command-line options that name a Dask cluster, for both command lines (``egtb build``,
``tournament run``): argparse stays out of the cluster module, and ``tournament`` needs no
``egtb.cli`` for them.

>>> parser = argparse.ArgumentParser()
>>> add_scheduler_options(parser)
>>> parser.parse_args(["--scheduler", "tcp://10.0.0.5:8786"])
Namespace(scheduler='tcp://10.0.0.5:8786', scheduler_file=None)
"""

from __future__ import annotations

import argparse

__all__ = ["add_scheduler_options"]


def add_scheduler_options(parser: argparse.ArgumentParser) -> None:
    """``--scheduler ADDRESS`` and ``--scheduler-file PATH`` (mutually exclusive) on a subcommand;
    ``egtb.dask.executor.make_executor`` turns the two values into an executor."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--scheduler", metavar="ADDRESS", default=None,
                       help="run on this Dask scheduler, e.g. tcp://10.0.0.5:8786 (pip install .[distributed])")
    group.add_argument("--scheduler-file", metavar="PATH", default=None,
                       help="run on the Dask scheduler described by this file (dask scheduler --scheduler-file)")
