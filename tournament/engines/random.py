"""The random mover: a uniformly random legal move, seeded so games repeat.

>>> from egtb import Board
>>> from tournament.engines.base import GameState, Limit
>>> RandomEngine(seed=1).play(GameState.from_board(Board()), Limit()).move in Board().legal_moves()
True
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from tournament.engines.base import Engine, GameState, Limit, PlayResult

__all__ = ["RandomEngine"]


@dataclass
class RandomEngine(Engine):
    """Plays a uniformly random legal move (seeded, so games repeat)."""

    seed: int | None = None
    """Seed of the move choice."""
    name: str = "random"
    """Display name."""
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def play(self, state: GameState, limit: Limit) -> PlayResult:
        board = state.board()
        return PlayResult(self._rng.choice(board.legal_moves()))
