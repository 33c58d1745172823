"""Probe results in their JSON form: what ``egtb probe --json`` prints and the page sends.

>>> from egtb.probe import Tablebase
>>> answer(Tablebase("/nonexistent"), "B:W5,6,10:B1")["value"]
'loss'
"""

from __future__ import annotations

from egtb.errors import MissingRuleLayerError
from egtb.probe.tablebase import MoveValue, Tablebase
from egtb.rules.board import Board

__all__ = ["answer"]


def answer(tablebase: Tablebase, fen: str, *, rule: str = "wcdf", counter: int = 0) -> dict:
    """The JSON-ready answer for one FEN under ``rule`` from ``counter``.

    ``value``/``dtw`` (and each move's) are without the move rule; ``outcome``
    is perfect play under the rule from the counter, ``category``/``dtz`` the
    rule layer's; each move's ``outcome``, ``category`` and ``dtz`` are the
    mover's, with the counter the move leaves. A table without the preset's
    rule layer (a compact file, or a build with fewer ``--rules``) gives the
    rule-free answer with those fields None and ``rule_layer_missing`` True.
    A directory of compact files (``.wld`` with ``.wcdf``) answers under
    "wcdf" like a master directory, with every ``dtw`` and ``dtz`` None (the
    files hold neither) and a move's ``outcome`` None where it would need the
    DTZ (a win or loss category reached at a counter above 0); see
    docs/table-format.md ("What a compact directory answers").
    Raises ValueError, MissingTableError or TableError.

    >>> answer(Tablebase("/nonexistent"), "B:W5,6,10:B1", rule="forty-plies")
    {'fen': 'B:W5,6,10:B1', 'value': 'loss', 'dtw': 0, 'rule': 'forty-plies', 'counter': 0, 'outcome': 'loss', 'category': 'loss', 'dtz': 0, 'moves': []}
    """
    board = Board(fen, rule=rule, quiet_plies=counter)
    missing_layer = False
    try:
        result = tablebase.probe(board)
        moves = [_move_record(mv) for mv in tablebase.best_moves(board)]
    except MissingRuleLayerError:  # a WDL-only file: the rule-free answer, rule fields null
        missing_layer = True
        result = tablebase.probe(board, rule_free=True)
        moves = [_move_record(mv) for mv in tablebase.best_moves(board, rule_free=True)]
    record = {"fen": fen, "value": result.value, "dtw": result.dtw, "rule": result.rule,
              "counter": result.counter, "outcome": _text_or_none(result.outcome),
              "category": _text_or_none(result.category), "dtz": result.dtz, "moves": moves}
    return {**record, "rule_layer_missing": True} if missing_layer else record


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _move_record(mv: MoveValue) -> dict:
    return {"move": str(mv.move), "value": mv.value, "dtw": mv.dtw, "outcome": _text_or_none(mv.outcome),
            "category": _text_or_none(mv.category), "dtz": mv.dtz}
