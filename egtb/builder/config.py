"""What a build makes and within what limits: one :class:`BuildConfig`, passed whole.

:func:`egtb.builder.driver.build` takes its options as keywords and gathers them
here; the driver, the plan and each pair's task read them from this one value
instead of a dozen parameters each.

>>> config = BuildConfig(rules="wcdf", dtw=False, max_per_side=4)
>>> config.pair_contents(plan_pairs(8, min_pieces=8, max_per_side=4)[0]).names
('wcdf',)
"""

from __future__ import annotations

from dataclasses import dataclass

from egtb.builder.contents import Contents
from egtb.builder.dependency_load import PART_POSITIONS
from egtb.builder.pipeline import CHECKPOINT_SECONDS
from egtb.builder.plan import DEFAULT_RULES, Pair, contents_of, plan_pairs, select_pairs

#: Pairs of this many positions or more run as unit tasks on a cluster, by default: the largest
#: of those the local pool runs on disk (:data:`egtb.builder.budget.CHECKPOINTED_POSITIONS`).
SPLIT_POSITIONS = 1 << 30


@dataclass(frozen=True)
class Split:
    """Which pairs run as unit tasks (:mod:`egtb.builder.split`), and how big a task is."""

    positions: int = SPLIT_POSITIONS
    """Pairs of this many positions or more are split."""
    task_positions: int = 1 << 24
    """Positions a unit task solves, about (:data:`egtb.builder.split.TASK_POSITIONS`)."""
    part_positions: int = PART_POSITIONS
    """Positions a task puts in of a compact-native dependency, at most (a multiple of 3,
    :data:`egtb.builder.dependency_load.PART_POSITIONS`)."""


@dataclass(frozen=True)
class BuildConfig:
    """A build's options (see :func:`egtb.builder.driver.build` for each one's meaning)."""

    rules: str | tuple = DEFAULT_RULES
    """The rule layers: "auto", "all", "none" or a comma list (:mod:`egtb.builder.contents`)."""
    dtw: bool | None = None
    """Whether files store DTW (None: up to 6 pieces)."""
    native: bool | None = None
    """Compact files alone, no master (None: from :data:`egtb.builder.contents.NATIVE_PIECES`)."""
    min_pieces: int = 2
    """The smallest piece count built (smaller tables must be complete)."""
    max_per_side: int | None = None
    """Only the materials with at most this many pieces a side."""
    materials: tuple[str, ...] = ()
    """Only the pairs of these materials (empty: all)."""
    memory: int | None = None
    """Bytes all the build's processes may use together (None: the default budget)."""
    disk: int | None = None
    """Bytes the table directory may take at the build's peak, everything in it counted
    (None: as much as its disk has free)."""
    on_disk: bool = False
    """Every pair's values on disk, memory-mapped and checkpointed."""
    checkpoint_seconds: float = CHECKPOINT_SECONDS
    """Seconds between two checkpoints of a pair on disk."""
    split_pairs: Split | None = None
    """Which pairs run as unit tasks (None: :class:`Split` on a remote executor, none locally)."""
    compact: bool | None = None
    """Write the directory's missing compact files after the pairs (None: from 7 pieces)."""
    threats: bool = False
    """Compact-native WLD files leave threat positions out too (:mod:`egtb.rules.threats`)."""

    def pair_contents(self, pair: Pair) -> Contents:
        """What the files of `pair` hold under this configuration."""
        return contents_of(pair, rules=self.rules, dtw=self.dtw, native=self.native, threats=self.threats)

    def pairs(self, max_pieces: int) -> tuple[list[Pair], set[str] | None]:
        """Every pair up to `max_pieces` within :attr:`max_per_side` (dependencies included),
        and the keys of those :attr:`materials` selects (None: all of them)."""
        pairs = plan_pairs(max_pieces, max_per_side=self.max_per_side)
        return pairs, (select_pairs(pairs, self.materials) if self.materials else None)
