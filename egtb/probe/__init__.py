"""The prober: :class:`Tablebase` answers any position from the table files.

>>> from egtb.probe import Tablebase, ProbeResult
>>> Tablebase.__name__
'Tablebase'
"""

from egtb.probe.tablebase import MoveValue, ProbeResult, Tablebase

__all__ = ["MoveValue", "ProbeResult", "Tablebase"]
