"""English draughts endgame tables: rules core, builder, prober.

>>> from egtb import Board
>>> len(Board().legal_moves())
7
"""

from egtb.board import BLACK, DRAW_RULES, WHITE, Board, DrawRule, Move, Outcome, Termination

__all__ = ["BLACK", "DRAW_RULES", "WHITE", "Board", "DrawRule", "Move", "Outcome", "Termination"]
