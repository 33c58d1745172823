"""The move-rule presets (draw after so many quiet plies): plain values, no kernel.

They sit apart from :mod:`egtb.rules.board` (which re-exports them) so that a
command line can offer ``--rule`` and its default without loading the move
generator's numba kernels.

>>> DRAW_RULES[DEFAULT_RULE]
DrawRule(name='wcdf', limit_plies=80, man_move_resets=True)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_RULE", "DRAW_RULES", "DrawRule"]


@dataclass(frozen=True)
class DrawRule:
    """A move-rule preset: after ``limit_plies`` quiet plies the game is drawn.

    A capture always resets the count, and so does a crowning; a plain man
    move resets it only when ``man_move_resets`` is true.
    """

    name: str
    """Preset name, part of a game's settings and of a table's metadata."""
    limit_plies: int
    """Quiet plies (moves by either side) that draw the game."""
    man_move_resets: bool
    """Whether any man move (not only a crowning) resets the count."""


DRAW_RULES: dict[str, DrawRule] = {
    "wcdf": DrawRule("wcdf", 80, True),
    "crowning": DrawRule("crowning", 80, False),
    "forty-plies": DrawRule("forty-plies", 40, False),
}
#: The preset a game, a probe or a FEN is under when none is named: the one home of it.
DEFAULT_RULE = "wcdf"
