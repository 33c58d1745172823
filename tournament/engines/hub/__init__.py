"""The Hub protocol (Scan's, as pydraughts adapts it to English draughts), in four parts.

As python-chess splits ``chess/engine.py`` into the protocol, the process
transport and the blocking engine, the Hub code is:

- :mod:`~tournament.engines.hub.protocol`: the codec: positions, moves, message
  fields and ``level`` lines, with no process and no state;
- :mod:`~tournament.engines.hub.transport`: :class:`EngineProcess`, a program
  behind start, alive, write, read (with a timeout) and kill;
- :mod:`~tournament.engines.hub.client`: :class:`HubEngine`, an external Hub
  program as an :class:`~tournament.engines.base.Engine` to the runner;
- :mod:`~tournament.engines.hub.server`: :func:`serve`, any of our engines
  answering Hub commands (``tournament hub-engine SPEC``).

docs/hub-protocol.md lists the messages.

>>> from egtb import Board
>>> hub_position(Board("B:W18:B14")), parse_hub_move("14x23x18", Board("B:W18:B14"))
('Weeeeeeeeeeeeeebeeeweeeeeeeeeeeee', Move.from_pdn('14x23'))
"""

from tournament.engines.hub.client import HubEngine
from tournament.engines.hub.protocol import hub_move, hub_position, parse_fields, parse_hub_move, parse_hub_position
from tournament.engines.hub.server import serve
from tournament.engines.hub.transport import EngineProcess

__all__ = ["EngineProcess", "HubEngine", "hub_move", "hub_position", "parse_fields", "parse_hub_move",
           "parse_hub_position", "serve"]
