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

From :data:`NATIVE_PIECES` pieces on a build is compact-native: a table is its
compact files alone (``.wld``, ``.wcdf``, ``.dtz`` and their marks), with no
HDF5 master, so it holds exactly what those files hold: the values and the
``wcdf`` layer, no DTW.

>>> contents_for(8).native, contents_for(5, native=True).names
(True, ('wcdf',))
"""

from __future__ import annotations

from dataclasses import dataclass

from egtb.errors import InvalidArgumentError
from egtb.rules.draw_rules import DrawRule

#: The largest piece count whose files get DTW and every rule layer by default.
FULL_PIECES = 6
#: ``--rules`` default: every layer up to :data:`FULL_PIECES` pieces, then ``wcdf``.
AUTO = "auto"
#: Rule layers from :data:`FULL_PIECES` + 1 pieces on, by default.
LEAN_RULES = "wcdf"
#: The smallest piece count built compact-native by default (compact files alone, no master).
NATIVE_PIECES = 8


@dataclass(frozen=True)
class Contents:
    """The tables a file holds besides the values: DTW and the rule layers."""

    dtw: bool
    """The rule-free distance (DTW) is solved and stored."""
    presets: tuple[DrawRule, ...]
    """The rule layers, in :data:`egtb.builder.rule_layer.PRESETS` order."""
    native: bool = False
    """Written as compact files alone (no master): the values and the ``wcdf`` layer."""
    threats: bool = False
    """(Compact-native) its WLD file leaves threat positions out too (:mod:`egtb.rules.threats`)."""

    @property
    def names(self) -> tuple[str, ...]:
        """The rule layers' preset names."""
        return tuple(p.name for p in self.presets)

    @property
    def tables(self) -> int:
        """Tables the solver computes: the rule-free one (with DTW) and one per layer."""
        return int(self.dtw) + len(self.presets)


def contents_for(pieces: int, *, rules: str | tuple = AUTO, dtw: bool | None = None,
                 native: bool | None = None, threats: bool = False) -> Contents:
    """What a file of `pieces` pieces holds for these options (:data:`AUTO` and None: the defaults).

    `native`: compact files alone (None: from :data:`NATIVE_PIECES` pieces on); `threats`: their
    WLD file leaves threat positions out too (a table with a master keeps them; ValueError with
    `native` False).
    Raises ValueError for an unknown preset, when nothing would be solved
    (no DTW and no rule layer: the values need one of them), or when a
    compact-native table is asked for more than its files hold.

    >>> contents_for(7, dtw=False, rules="none")
    Traceback (most recent call last):
    ...
    egtb.errors.InvalidArgumentError: no DTW and no rule layer: nothing to solve the values with (add --dtw or --rules)
    """
    from egtb.builder.rule_layer import parse_presets  # numba: not for `egtb build --help`'s default

    full = pieces <= FULL_PIECES
    if threats and native is False:
        raise InvalidArgumentError("--threats is for the compact-native tables' WLD files, and "
                                   "--no-compact-native writes none")
    native = pieces >= NATIVE_PIECES if native is None else native
    if isinstance(rules, str) and rules.strip() == AUTO:
        rules = LEAN_RULES if native else "all" if full else LEAN_RULES
    contents = Contents(False if native and dtw is None else full if dtw is None else dtw,
                        parse_presets(rules), native, threats and native)
    if contents.tables == 0:
        raise InvalidArgumentError("no DTW and no rule layer: nothing to solve the values with "
                                   "(add --dtw or --rules)")
    if native and (contents.dtw or contents.names != (LEAN_RULES,)):
        raise InvalidArgumentError(f"a compact-native table of {pieces} pieces holds the values and the "
                                   f"{LEAN_RULES} layer only: no DTW and no other rule layer")
    return contents
