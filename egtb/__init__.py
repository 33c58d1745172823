"""English draughts endgame tables: rules core, builder, prober.

>>> from egtb import Board
>>> len(Board().legal_moves())
7
>>> from egtb import Tablebase, MissingTableError
>>> issubclass(MissingTableError, KeyError)
True
"""

from egtb.errors import (AmbiguousMoveError, EgtbError, IllegalMoveError, InvalidArgumentError, InvalidDataError,
                         InvalidFenError, InvalidMoveError, InvalidPositionError, MissingRuleLayerError,
                         MissingTableError, SolverError, TableError)
from egtb.rules.board import BLACK, DRAW_RULES, WHITE, Board, DrawRule, Move, Outcome, Termination
from egtb.positions.material import Material
from egtb.formats.values import Category, Wdl

__version__ = "0.2.0"

__all__ = [
    "AmbiguousMoveError", "BLACK", "Board", "Category", "DRAW_RULES", "DrawRule", "EgtbError",
    "IllegalMoveError", "InvalidArgumentError", "InvalidDataError", "InvalidFenError", "InvalidMoveError",
    "InvalidPositionError", "Material", "MissingRuleLayerError",
    "MissingTableError", "Move",
    "Outcome", "ProbeResult", "SolverError", "TableError", "Tablebase", "Termination", "WHITE", "Wdl",
    "__version__",
]

_LAZY = {"Tablebase": "egtb.probe.tablebase", "ProbeResult": "egtb.probe.tablebase"}


def __getattr__(name: str):
    """Import the prober (and h5py) only when it is asked for."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'egtb' has no attribute {name!r}")
