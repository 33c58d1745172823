"""The prober: :class:`Tablebase` answers any position from the table files.

>>> from egtb.probe import Tablebase, ProbeResult
>>> Tablebase.__name__
'Tablebase'
"""

from egtb.probe.tablebase import ProbeResult, Tablebase
from egtb.probe.moves import MoveValue, Ranking, best_moves, tablebase_for

__all__ = ["MoveValue", "ProbeResult", "Ranking", "Tablebase", "best_moves", "tablebase_for"]
