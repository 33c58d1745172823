"""English draughts endgame tables: rules core, builder, prober.

>>> from egtb import Board
>>> len(Board().legal_moves())
7
>>> from egtb import Tablebase, MissingTableError
>>> issubclass(MissingTableError, KeyError)
True
"""

from egtb.rules.board import BLACK, DRAW_RULES, WHITE, Board, DrawRule, Move, Outcome, Termination

__all__ = [
    "BLACK", "DRAW_RULES", "WHITE", "Board", "DrawRule", "MissingTableError", "Move", "Outcome",
    "Tablebase", "Termination",
]

_LAZY = {"Tablebase": "egtb.probe", "MissingTableError": "egtb.probe"}


def __getattr__(name: str):
    """Import the prober (and h5py) only when it is asked for."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'egtb' has no attribute {name!r}")
