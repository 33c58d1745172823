"""What a build writes into each table file: the rule-free table (values and DTW) and rule layers.

Up to :data:`FULL_PIECES` pieces a file holds by default everything: the
values with their DTW, and one layer per move-rule preset. From 7 pieces on it
holds by default the values and the ``wcdf`` layer only (the category at
counter 0 and the DTZ, which make probes exact under the default rule); the
values are then the sign of the ``wcdf`` category, so the build solves one
table instead of four, and its dependencies are read as categories alone
(about a quarter of the bytes a position). The other presets and the DTW are
built on request (``--rules``, ``--dtw``).

>>> contents_for(5).names, contents_for(5).dtw
(('wcdf', 'crowning', 'forty-plies'), True)
>>> contents_for(7).names, contents_for(7).dtw
(('wcdf',), False)
>>> contents_for(7, rules="all", dtw=True).tables
4
"""

from __future__ import annotations

from dataclasses import dataclass

from egtb.errors import InvalidArgumentError
from egtb.builder.rule_layer import RulePreset, parse_presets

#: The largest piece count whose files get DTW and every rule layer by default.
FULL_PIECES = 6
#: ``--rules`` default: every layer up to :data:`FULL_PIECES` pieces, then ``wcdf``.
AUTO = "auto"
#: Rule layers from :data:`FULL_PIECES` + 1 pieces on, by default.
LEAN_RULES = "wcdf"


@dataclass(frozen=True)
class Contents:
    """The tables a file holds besides the values: DTW and the rule layers."""

    dtw: bool
    """The rule-free distance (DTW) is solved and stored."""
    presets: tuple[RulePreset, ...]
    """The rule layers, in :data:`egtb.builder.rule_layer.PRESETS` order."""

    @property
    def names(self) -> tuple[str, ...]:
        """The rule layers' preset names."""
        return tuple(p.name for p in self.presets)

    @property
    def tables(self) -> int:
        """Tables the solver computes: the rule-free one (with DTW) and one per layer."""
        return int(self.dtw) + len(self.presets)


def contents_for(pieces: int, *, rules: str | tuple = AUTO, dtw: bool | None = None) -> Contents:
    """What a file of `pieces` pieces holds for these options (:data:`AUTO` and None: the defaults).

    Raises ValueError for an unknown preset, or when nothing would be solved
    (no DTW and no rule layer: the values need one of them).

    >>> contents_for(7, dtw=False, rules="none")
    Traceback (most recent call last):
    ...
    egtb.errors.InvalidArgumentError: no DTW and no rule layer: nothing to solve the values with (add --dtw or --rules)
    """
    full = pieces <= FULL_PIECES
    if isinstance(rules, str) and rules.strip() == AUTO:
        rules = "all" if full else LEAN_RULES
    contents = Contents(full if dtw is None else dtw, parse_presets(rules))
    if contents.tables == 0:
        raise InvalidArgumentError("no DTW and no rule layer: nothing to solve the values with "
                         "(add --dtw or --rules)")
    return contents
