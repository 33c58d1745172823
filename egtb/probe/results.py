"""Probe results in their JSON form: what ``egtb probe --json`` prints and the page sends.

>>> from egtb.probe import Tablebase
>>> answer(Tablebase("/nonexistent"), "B:W5,6,10:B1")["value"]
'loss'
"""

from __future__ import annotations

from egtb.probe.moves import MoveValue, best_moves, probe_position
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import DEFAULT_RULE, Board

__all__ = ["answer", "move_value_record", "rule_ignored_note"]


def answer(tablebase: Tablebase, fen: str, *, rule: str = DEFAULT_RULE, counter: int = 0) -> dict:
    """The JSON-ready answer for one FEN under ``rule`` from ``counter``.

    ``value``/``dtw`` (and each move's) are without the move rule; ``outcome``
    is perfect play under the rule from the counter, ``category``/``dtz`` the
    rule layer's; each move's ``outcome``, ``category`` and ``dtz`` are the
    mover's, with the counter the move leaves. A table without the preset's
    rule layer (a compact directory under "crowning" or "forty-plies", or a
    build with fewer ``--rules``) gives the rule-free answer with those fields
    None, ``rule_layer_missing`` True and a ``note`` saying that the answer
    ignores the rule. A directory of compact files (``.wld`` with ``.wcdf``)
    answers under "wcdf" like a master directory, with every ``dtw`` None (the
    files hold none) and a move's ``outcome`` None where it would need a DTZ
    no file holds; see docs/table-format.md ("What a compact directory answers").
    Raises ValueError, MissingTableError or TableError.

    >>> answer(Tablebase("/nonexistent"), "B:W5,6,10:B1", rule="forty-plies")
    {'fen': 'B:W5,6,10:B1', 'value': 'loss', 'dtw': 0, 'rule': 'forty-plies', 'counter': 0, 'outcome': 'loss', 'category': 'loss', 'dtz': 0, 'moves': []}
    """
    board = Board(fen, rule=rule, quiet_plies=counter)
    result = probe_position(tablebase, board)
    ranking = best_moves(tablebase, board, rule_free=result.rule is None)
    record = {"fen": fen, "value": str(result.value), "dtw": result.dtw, "rule": rule,
              "counter": counter, "outcome": _text_or_none(result.outcome),
              "category": _text_or_none(result.category), "dtz": result.dtz,
              "moves": [move_value_record(mv) for mv in ranking.moves]}
    if result.rule is None or ranking.rule_free:
        return {**record, "rule_layer_missing": True, "note": rule_ignored_note(rule)}
    return record


def rule_ignored_note(rule: str) -> str:
    """What an answer without the preset's layer says of itself.

    >>> rule_ignored_note("crowning")
    'these tables hold no crowning layer: the values ignore the move rule'
    """
    return f"these tables hold no {rule} layer: the values ignore the move rule"


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def move_value_record(mv: MoveValue) -> dict:
    """A ranked move in its JSON form (the values as 'win', 'cursed-win', ...)."""
    return {"move": str(mv.move), "value": str(mv.value), "dtw": mv.dtw, "outcome": _text_or_none(mv.outcome),
            "category": _text_or_none(mv.category), "dtz": mv.dtz}
