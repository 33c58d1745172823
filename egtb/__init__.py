"""English draughts endgame tables: rules core, builder, prober.

>>> from egtb import Board
>>> len(Board().legal_moves())
7
>>> from egtb import Tablebase, MissingTableError
>>> issubclass(MissingTableError, KeyError)
True

Only the error family is imported with the package: the rules (numba kernels),
the prober (h5py) and the rest load on first use of their names, so that a
command line's ``--help`` or a light submodule such as :mod:`egtb.exit_status`
starts without compiling or loading any kernel.
"""

from egtb.kernel_cache import set_cache_dir as _set_cache_dir

_set_cache_dir()  # before numba is imported: the kernels of this state of the source

from egtb.errors import (AmbiguousMoveError, EgtbError, IllegalMoveError, InvalidArgumentError, InvalidDataError,
                         InvalidFenError, InvalidMoveError, InvalidPositionError, MissingRuleLayerError,
                         MissingTableError, SolverError, TableError)

__version__ = "0.2.0"

__all__ = [
    "AmbiguousMoveError", "BLACK", "Board", "Category", "DRAW_RULES", "DrawRule", "EgtbError",
    "IllegalMoveError", "InvalidArgumentError", "InvalidDataError", "InvalidFenError", "InvalidMoveError",
    "InvalidPositionError", "Material", "MissingRuleLayerError",
    "MissingTableError", "Move",
    "Outcome", "ProbeResult", "SolverError", "TableError", "Tablebase", "Termination", "WHITE", "Wdl",
    "__version__",
]

_LAZY = {
    **dict.fromkeys(("BLACK", "DRAW_RULES", "WHITE", "Board", "DrawRule", "Move", "Outcome", "Termination"),
                    "egtb.rules.board"),
    "Material": "egtb.positions.material",
    "Category": "egtb.formats.values", "Wdl": "egtb.formats.values",
    "Tablebase": "egtb.probe.tablebase", "ProbeResult": "egtb.probe.tablebase",
}


def __getattr__(name: str):
    """Import the rules, the tables' values and the prober (numba, h5py) only when asked for."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'egtb' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
