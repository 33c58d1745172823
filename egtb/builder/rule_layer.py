"""Rule layers: values under a move-rule preset (category at counter 0 and DTZ).

A game state is (position, counter). A quiet ply adds 1 to the counter; a
zeroing ply (a capture; under "wcdf" any man move; under "crowning" and
"forty-plies" a crowning) resets it. A side with no legal move has lost, even at
the limit; otherwise a counter at the limit is a draw. DTZ is the number of plies
up to and including the next zeroing ply (or the end) that the winner needs, the
loser delaying, keeping the win with the fresh counter: the side to move wins
from counter ``c`` iff the category is WIN and ``dtz + c <= limit``, loses iff
it is LOSS and ``dtz + c <= limit``, and the game is drawn otherwise.

A cursed win (won without the rule, drawn by it) and a blessed loss store a DTZ
above the limit, Syzygy's convention: a zeroing ply into a cursed win or blessed
loss counts ``limit + 1`` instead of 1, so ``dtz - limit`` orders the ways to
keep the rule-free win for the case the opponent errs. The solver computes every
layer in the same kernel pass as the rule-free values (:mod:`egtb.builder.solve`);
this module names the presets and turns the kernel's (code, DTZ) into categories.

>>> [p.name for p in parse_presets("all")]
['wcdf', 'crowning', 'forty-plies']
>>> categories(np.array([WIN, WIN, DRAW, LOSS, LOSS], dtype=np.uint8),
...            np.array([80, 81, 0, 3, 95]), 80).tolist()
[2, 1, 0, -2, -1]
"""

from __future__ import annotations

import numpy as np
from numba import njit

from egtb.errors import InvalidArgumentError, SolverError
from egtb.rules.board import DRAW_RULES, DrawRule
from egtb.formats.master import RuleLayer
from egtb.formats.values import DRAW, DTZ_SATURATED, LOSS, WIN, Category

__all__ = ["PRESETS", "LayerTally", "categories", "codes_of", "layer_attrs", "make_layer",
           "parse_presets", "values_of", "zeroing_words"]


#: Every preset, in DRAW_RULES order (wcdf, crowning, forty-plies): the board's own DrawRule values.
PRESETS: dict[str, DrawRule] = dict(DRAW_RULES)


def zeroing_words(rule: DrawRule) -> str:
    """The plies that reset the counter, in words (a file attribute).

    >>> zeroing_words(PRESETS["wcdf"]), zeroing_words(PRESETS["crowning"])
    ('capture or man move', 'capture or crowning')
    """
    return "capture or man move" if rule.man_move_resets else "capture or crowning"


#: Attribute (and statistics) name of each category's count.
COUNT_NAMES = {Category.WIN: "wins", Category.CURSED_WIN: "cursed_wins",
               Category.DRAW: "draws", Category.BLESSED_LOSS: "blessed_losses",
               Category.LOSS: "losses"}


def parse_presets(text: str | tuple | list) -> tuple[DrawRule, ...]:
    """Presets from a comma list ("wcdf,crowning"), "all", "none" or a sequence of names.

    >>> [p.limit_plies for p in parse_presets("forty-plies,wcdf")]
    [80, 40]
    >>> parse_presets("none")
    ()
    """
    if isinstance(text, str):
        text = text.strip()
        if text == "all":
            return tuple(PRESETS.values())
        names = [] if text in ("", "none") else [t.strip() for t in text.split(",")]
    else:
        names = list(text)
    unknown = [n for n in names if n not in PRESETS]
    if unknown:
        raise InvalidArgumentError(f"unknown rule preset {unknown[0]!r}; choose from "
                         f"{', '.join(PRESETS)}, all or none")
    return tuple(PRESETS[n] for n in PRESETS if n in names)


def categories(code: np.ndarray, dtz: np.ndarray, limit: int) -> np.ndarray:
    """Category codes (int8) of a layer held as value codes and DTZ."""
    out = np.zeros(len(code), dtype=np.int8)
    fits = dtz <= limit
    out[(code == WIN) & fits] = Category.WIN
    out[(code == WIN) & ~fits] = Category.CURSED_WIN
    out[(code == LOSS) & fits] = Category.LOSS
    out[(code == LOSS) & ~fits] = Category.BLESSED_LOSS
    return out


def codes_of(category: np.ndarray) -> np.ndarray:
    """Value codes (uint8: DRAW, WIN, LOSS) of category codes, the inverse of :func:`categories`.

    >>> codes_of(np.array([2, 1, 0, -1, -2], dtype=np.int8)).tolist()
    [2, 2, 1, 3, 3]
    """
    out = np.full(len(category), DRAW, dtype=np.uint8)
    out[category > 0] = WIN
    out[category < 0] = LOSS
    return out


def values_of(category: np.ndarray) -> np.ndarray:
    """Value codes of a layer's categories (:func:`codes_of`) in one pass, for big (mapped) layers.

    >>> values_of(np.array([2, -1, 0], dtype=np.int8)).tolist()
    [2, 3, 1]
    """
    out = np.empty(len(category), dtype=np.uint8)
    _codes_into(category, out)
    return out


@njit(cache=True)
def _codes_into(category, out):
    for i in range(category.shape[0]):
        c = category[i]
        out[i] = WIN if c > 0 else (LOSS if c < 0 else DRAW)


def layer_attrs(preset: DrawRule, category: np.ndarray, dtz: np.ndarray) -> dict:
    """Group attributes of a layer: limit, zeroing, counts per category, max DTZ.

    ``max_dtz`` is over positions decisive under the rule (win or loss);
    ``max_dtz_cursed`` over cursed wins and blessed losses (0 when none).

    >>> layer_attrs(PRESETS["wcdf"], np.array([2, 0, -1], dtype=np.int8),
    ...             np.array([7, 0, 90], dtype=np.uint16))["max_dtz_cursed"]
    90
    """
    tally = LayerTally()
    for start in range(0, len(category), LAYER_SLICE):  # a slice at a time: dtz may be spilled
        part = slice(start, start + LAYER_SLICE)
        tally.add(category[part], dtz[part])
    return tally.attrs(preset, dtz.dtype)


class LayerTally:
    """A layer's counts per category and longest DTZ, its slices added one by one (in any order):
    what :func:`layer_attrs` gives of the whole, for a writer that reads the layer once.

    >>> tally = LayerTally()
    >>> tally.add(np.array([2, 0], dtype=np.int8), np.array([7, 0], dtype=np.uint8))
    >>> tally.add(np.array([-1], dtype=np.int8), np.array([90], dtype=np.uint8))
    >>> attrs = tally.attrs(PRESETS["wcdf"], np.dtype(np.uint8))
    >>> attrs["wins"], attrs["draws"], attrs["max_dtz"], attrs["max_dtz_cursed"]
    (1, 1, 7, 90)
    """

    def __init__(self) -> None:
        self.counts = np.zeros(5, dtype=np.int64)
        self.max_dtz = self.max_cursed = 0

    def add(self, category: np.ndarray, dtz: np.ndarray) -> None:
        """Count the positions of one slice (`category` and `dtz` of the same positions)."""
        more, most, most_cursed = count_layer(category, dtz)
        self.counts += more
        self.max_dtz, self.max_cursed = max(self.max_dtz, int(most)), max(self.max_cursed, int(most_cursed))

    def state(self) -> dict:
        """The counts so far, as plain JSON types (:meth:`from_state` takes them again)."""
        return {"counts": self.counts.tolist(), "max_dtz": int(self.max_dtz), "max_cursed": int(self.max_cursed)}

    @classmethod
    def from_state(cls, state: dict) -> "LayerTally":
        """A tally that goes on from :meth:`state`'s counts."""
        tally = cls()
        tally.counts = np.array(state["counts"], dtype=np.int64)
        tally.max_dtz, tally.max_cursed = int(state["max_dtz"]), int(state["max_cursed"])
        return tally

    def attrs(self, preset: DrawRule, dtz_type: np.dtype) -> dict:
        """The layer's attributes (:func:`layer_attrs`); SolverError when a one-byte DTZ
        (`dtz_type`) reached its saturated value."""
        if dtz_type == np.uint8 and max(self.max_dtz, self.max_cursed) >= DTZ_SATURATED:
            raise SolverError(f"a {preset.name} DTZ of {DTZ_SATURATED} plies or more: the one-byte DTZ "
                              "array (egtb.formats.scratch.dtz_type) and the compact .dtz file cannot "
                              "hold it")
        return dict({COUNT_NAMES[c]: int(self.counts[c + 2]) for c in Category}, preset=preset.name,
                    limit=preset.limit_plies, zeroing=zeroing_words(preset), max_dtz=int(self.max_dtz),
                    max_dtz_cursed=int(self.max_cursed))


#: Positions :func:`layer_attrs` counts at a time.
LAYER_SLICE = 1 << 24


@njit(cache=True)
def count_layer(category, dtz):
    """(count per category + 2, max DTZ of a win or loss, max DTZ of a cursed or blessed one)."""
    counts = np.zeros(5, dtype=np.int64)
    max_dtz = 0
    max_cursed = 0
    for i in range(category.shape[0]):
        c = category[i]
        counts[c + 2] += 1
        if c == 2 or c == -2:
            max_dtz = max(max_dtz, np.int64(dtz[i]))
        elif c != 0:
            max_cursed = max(max_cursed, np.int64(dtz[i]))
    return counts, max_dtz, max_cursed


def make_layer(preset: DrawRule, category: np.ndarray, dtz: np.ndarray) -> RuleLayer:
    """The stored layer (categories, DTZ, attributes) of a solved layer."""
    return RuleLayer(category, dtz, layer_attrs(preset, category, dtz))
