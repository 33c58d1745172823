"""Single probes: one position's value and DTW, or its outcome, category and DTZ under a rule.

The kernels answer first (:func:`~egtb.probe.kernels.probe_value_one`,
:func:`~egtb.probe.kernels.probe_rule_one`, reading the lookup rows the
:class:`~egtb.probe.tablebase.Tablebase` keeps), a capture position of a compact file
included: they search its captures themselves (:func:`~egtb.probe.kernels.search_one`)
when every successor they reach is in memory. What they cannot answer (a table not
loaded yet, a block not in memory, a DTZ that needs a master file) is read through the
table kinds (:mod:`egtb.probe.tables`); a capture position then is the Tablebase's
capture search (:meth:`~egtb.probe.tablebase.Tablebase.search_captures`), which asks
the leaf probes here (:func:`value_leaf`, :func:`category_leaf`) for its successors and
so reads what the kernels missed: a leaf never searches in Python, so no probe calls
itself. A threat position a WLD file leaves out (:mod:`egtb.rules.threats`) is searched the
same way, over all its moves (:func:`left_out`), its category then found from its WDL
(:func:`searched_category`).

>>> from egtb.probe.tablebase import Tablebase
>>> probe_value(Tablebase("/nonexistent"), (1, 0, 0, 0, 1))   # White to move has no pieces
(-1, 0)
"""

from __future__ import annotations

import numpy as np

from egtb.errors import InvalidPositionError, MissingRuleLayerError, MissingTableError, TableError
from egtb.formats.values import CAT_LOSS, CAT_WIN, INVALID_WDL, WDL_DRAW, WDL_LOSS, WDL_WIN, Category
from egtb.probe.derived_dtz import derive
from egtb.probe.kernels import (STATUS_INVALID, STATUS_OK, STATUS_OUT_OF_RANGE, outcome_at, probe_rule_one,
                                probe_value_one, threat_category)
from egtb.probe.locate import CODE_NO_OPPONENT, CODE_NO_PIECES, has_moves, locate_capture
from egtb.rules.board import DrawRule
from egtb.rules.threats import threat_left_out

# ``tb`` is the egtb.probe.tablebase.Tablebase probing (not imported: it imports this module).

__all__ = ["Key", "category_leaf", "left_out", "probe_rule", "probe_value", "searched_category", "terminal_value",
           "value_leaf"]

#: A position as (bm, bk, wm, wk, turn).
Key = tuple[int, int, int, int, int]
_CATEGORY_OF = tuple(Category(v) for v in range(-2, 3))


def probe_value(tb: "Tablebase", key: Key, *, distance: bool = True) -> tuple[int, int | None]:
    """(wdl, dtw) of a position; dtw None when no file holds it, or (``distance`` False) when a
    compact file answered and the DTW was not asked for.

    >>> from egtb.probe.tablebase import Tablebase
    >>> probe_value(Tablebase("/nonexistent"), (0, 0, 0, 1, 0))   # Black to move has no pieces
    (-1, 0)
    """
    found = _kernel_value(tb, key)
    if found is not None:
        value, dtw, code = found
        if dtw >= 0 or not distance or code < 0 or not tb._tables.peek(code).holds_distances:
            return value, None if dtw < 0 else dtw
    code, index, capture = locate_capture(*key)
    if code < 0:
        return terminal_value(code, key)
    table = tb.table_for(code, key)
    if table is None:
        return WDL_LOSS, 0
    value = table.stored_value(index, left_out(table, key, capture))
    if value is None:
        value = tb.search_captures(key, top=WDL_WIN, leaf=lambda child: value_leaf(tb, child))
    return value, table.distance_at(index) if distance else None


def value_leaf(tb: "Tablebase", key: Key) -> int | None:
    """The WDL of a position stored in its table (the kernel's, else the table's), or None where
    its side to move must capture and its file leaves it out (the caller searches); no search.

    >>> from egtb.probe.tablebase import Tablebase
    >>> value_leaf(Tablebase("/nonexistent"), (1, 0, 0, 0, 1))
    -1
    """
    found = _kernel_value(tb, key)
    if found is not None:
        return found[0]
    code, index, capture = locate_capture(*key)
    if code < 0:
        return terminal_value(code, key)[0]
    table = tb.table_for(code, key)
    return WDL_LOSS if table is None else table.stored_value(index, left_out(table, key, capture))


def left_out(table, key: Key, capture: bool) -> bool:
    """Whether ``table``'s file leaves a position out (a search gives it): its side to move must
    capture (``capture``), or it is a threat position and the file leaves those out.

    >>> from egtb.probe.tables import MasterTable
    >>> left_out(MasterTable, (0, 1 << 12, 0, 1 << 8, 1), False)   # a master file holds every position
    False
    """
    return capture or (table.threats and bool(threat_left_out(*key)))


def searched_category(tb: "Tablebase", key: Key, best: int, rule: DrawRule) -> int:
    """The category at counter 0 of a position a search gave ``best`` for (the best over its
    moves of minus their categories): itself, unless the position is a threat position its
    file leaves out, whose category comes from its WDL and its file's exceptions
    (:func:`~egtb.probe.kernels.threat_category`)."""
    code, index, capture = locate_capture(*key)
    if code < 0 or capture:
        return best
    layer = tb.layer_for(code, rule.name)
    if not left_out(layer, key, False):
        return best
    exceptions = getattr(layer.coded, "exceptions", None)
    if exceptions is None or not len(exceptions):
        return int(threat_category(best, index, 0, 0))
    return int(threat_category(best, index, exceptions.ctypes.data, len(exceptions)))


def _kernel_value(tb: "Tablebase", key: Key) -> tuple[int, int, int] | None:
    """(wdl, dtw or -1, code) from the value kernel, None when it cannot answer (InvalidPositionError
    for a position no table holds, TableError for an unsolved one)."""
    while True:
        status, value, dtw, code = probe_value_one(*key, tb._value_rows_at)
        if status == STATUS_INVALID:
            raise InvalidPositionError(f"invalid position {key}")
        if status != STATUS_OK:
            return None
        if code >= 0:
            read = tb._tables.peek(code)
            if tb.table(code) is not read:  # its file changed (checked once a second): ask again
                continue
            if value == INVALID_WDL:
                raise TableError(f"{read.path}: a position is unsolved")
        return value, dtw, code


def probe_rule(tb: "Tablebase", key: Key, rule: DrawRule, counter: int, *, unknown_ok: bool = False,
               want_dtz: bool = True) -> tuple[int | None, int, int | None]:
    """(outcome, category, dtz) of a position under ``rule`` from a checked ``counter``.

    Where a compact category file answered, the DTZ is None (with a master file beside it:
    read from there when ``want_dtz`` asks for it, or when the outcome needs it); so is the
    outcome with ``unknown_ok`` when it needs a DTZ no file holds (else MissingRuleLayerError).
    A layer without DTZ (a compact category file alone) is exact at counter 0, and at any
    counter for a category that draws there.

    >>> from egtb.probe.tablebase import Tablebase
    >>> from egtb.rules.board import DRAW_RULES
    >>> probe_rule(Tablebase("/nonexistent"), (1, 0, 0, 0, 1), DRAW_RULES["wcdf"], 80)
    (-1, -2, 0)
    """
    rows_at = tb._rows_at[rule.name]
    status, outcome, category, dtz, code = probe_rule_one(*key, counter, rule.limit_plies, rows_at)
    if status == STATUS_OK:
        if code >= 0:
            tb._tables.touch(code)
        if dtz < 0 and want_dtz and category in (CAT_WIN, CAT_LOSS):  # not read: from the limit it is
            status, _, _, dtz, _ = probe_rule_one(*key, rule.limit_plies, rule.limit_plies, rows_at)
        if status == STATUS_OK and (dtz >= 0 or not want_dtz):
            return outcome, category, None if dtz < 0 else dtz
    found = _layer_at(tb, key, code, status, rule)
    if found is None:
        return WDL_LOSS, CAT_LOSS, 0  # no move: lost whatever the table holds
    layer, index, capture = found
    category = layer.stored_value(index, left_out(layer, key, capture))
    if category is None:
        category = tb.search_captures(key, top=CAT_WIN, leaf=lambda child: category_leaf(tb, child, rule),
                                      finish=lambda child, best: searched_category(tb, child, best, rule))
    decisive = category in (CAT_WIN, CAT_LOSS)
    late = counter and decisive and not layer.fits(counter, rule.limit_plies)  # the outcome needs the DTZ
    distance = layer.dtz_at(index, category, capture) if want_dtz or late else None
    if distance is None and decisive and (want_dtz or late) and layer.dtz_derived:
        distance = _derived_distance(tb, key, category, rule, layer)
    if distance is not None:
        return outcome_at(category, distance, counter, rule.limit_plies), category, distance
    if not decisive:
        return WDL_DRAW, category, None
    if late and unknown_ok:
        return None, category, None
    if late:
        raise MissingRuleLayerError(
            f"{layer.path}: a compact category file holds no DTZ, so the {rule.name} outcome of "
            f"a {_CATEGORY_OF[category + 2]} from counter {counter} needs its DTZ: "
            f"{layer.path.with_suffix('.dtz').name} (or its mirror's) or the master file (it is exact at counter 0)")
    return (WDL_WIN if category == CAT_WIN else WDL_LOSS), category, None


def _derived_distance(tb: "Tablebase", key: Key, category: int, rule: DrawRule, layer) -> int:
    """The DTZ of a quiet win or loss of a layer whose DTZ is derived from its moves (the kernel
    could not: a table or block it reads was not in memory), each position after a move probed
    here, so that the layers and blocks they read are the kernel's next time."""
    def probe_each(children: tuple[np.ndarray, ...], counter: int) -> tuple[np.ndarray, np.ndarray]:
        found = [probe_rule(tb, tuple(int(a[i]) for a in children), rule, counter, want_dtz=counter > 0)
                 for i in range(len(children[0]))]
        return (np.array([f[1] for f in found], dtype=np.int64),
                np.array([0 if f[2] is None else f[2] for f in found], dtype=np.int64))

    arrays = tuple(np.array([value], dtype=np.int64) for value in key)
    return int(derive(arrays, np.array([category], dtype=np.int64), limit=rule.limit_plies,
                      man_resets=rule.man_move_resets, probe=probe_each, where=str(layer.path))[0])


def category_leaf(tb: "Tablebase", key: Key, rule: DrawRule) -> int | None:
    """The category at counter 0 of a position stored in its layer (the kernel's, else the
    layer's), or None where its side to move must capture and its file leaves it out; no search.

    >>> from egtb.probe.tablebase import Tablebase
    >>> from egtb.rules.board import DRAW_RULES
    >>> category_leaf(Tablebase("/nonexistent"), (1, 0, 0, 0, 1), DRAW_RULES["wcdf"])
    -2
    """
    status, _, category, _, code = probe_rule_one(*key, 0, rule.limit_plies, tb._rows_at[rule.name])
    if status == STATUS_OK:
        if code >= 0:
            tb._tables.touch(code)
        return category
    found = _layer_at(tb, key, code, status, rule)
    if found is None:
        return CAT_LOSS
    layer, index, capture = found
    return layer.stored_value(index, left_out(layer, key, capture))


def _layer_at(tb: "Tablebase", key: Key, code: int, status: int, rule: DrawRule):
    """(layer, index, must capture) of a position the rule kernel did not answer (its layer
    entered in the kernel's rows), None when its table is missing and it has no move (lost)."""
    if status == STATUS_INVALID:
        raise InvalidPositionError(f"invalid position {key}")
    if status == STATUS_OUT_OF_RANGE:
        raise TableError(f"{tb._tables.peek(code).path}: position outside the {rule.name} layer")
    if tb.rules is not None and rule.name not in tb.rules:
        raise MissingRuleLayerError(f"preset {rule.name!r} is not loaded by this Tablebase "
                                    f"(rules={tb.rules}); open it with that preset")
    try:
        layer = tb.layer_for(code, rule.name)
    except MissingTableError:
        if not has_moves(*key):
            return None
        raise
    _, index, capture = locate_capture(*key)
    if index >= len(layer):
        raise TableError(f"{layer.path}: position outside the {rule.name} layer")
    return layer, index, capture


def terminal_value(code: int, key: Key) -> tuple[int, int]:
    """(wdl, dtw) of a position that needs no table (InvalidPositionError for an invalid one).

    >>> terminal_value(CODE_NO_PIECES, (0, 0, 1, 0, 0))
    (-1, 0)
    """
    if code == CODE_NO_PIECES:
        return WDL_LOSS, 0
    if code == CODE_NO_OPPONENT:
        return (WDL_WIN, 1) if has_moves(*key) else (WDL_LOSS, 0)
    raise InvalidPositionError(f"invalid position {key}")
