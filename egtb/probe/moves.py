"""Best moves from the tables, ranked by one rule, and one open Tablebase per directory.

Every user of a table ranking (``egtb probe``, the play page, the ``perfect``
engine, the search engine's root, the adjudicator's tablebase) goes through
:func:`best_moves` and :func:`tablebase_for`, so that one question gets one
answer whatever asks it and whatever files (masters or compact) answer it.

The fallback for tables without the asked preset's rule layer is written
here once: :func:`probe_position` and :func:`best_moves` then give the
rule-free answer and say so (``ProbeResult.rule`` None, ``Ranking.rule_free``).

>>> ranking = best_moves(Tablebase("/nonexistent"), "B:W5,6,10:B1")
>>> ranking.moves, ranking.rule_free
([], False)
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from egtb.errors import InvalidArgumentError, MissingRuleLayerError, MissingTableError
from egtb.formats import master
from egtb.formats.values import Category, Wdl
from egtb.probe.tablebase import ProbeResult, Tablebase
from egtb.rules.board import Board, Move

__all__ = ["MoveValue", "Ranking", "best_moves", "move_order", "probe_position", "tablebase_for"]


@dataclass(frozen=True)
class MoveValue:
    """A legal move and what it leads to, seen by the player making it."""

    move: Move
    """The move."""
    value: Wdl
    """Win, draw or loss for the mover after playing it, without the move rule."""
    dtw: int | None
    """Plies to the end of the game when this move is played, then perfect play
    (the DTW of the position it leads to, plus one); 0 for a draw. The best
    move's ``dtw`` equals the position's own DTW. None from a compact file."""
    outcome: Wdl | None = None
    """Win, draw or loss for the mover under the rule, the opponent to move
    from the counter this move leaves (None for a rule-free ranking, and where a
    compact category file answered a win or loss category at a counter above 0:
    whether it still fits the limit needs the DTZ it does not hold)."""
    category: Category | None = None
    """Category of the position the move leads to, at counter 0, seen by the mover."""
    dtz: int | None = None
    """Plies up to and including the next zeroing ply (or the end) when this move
    is played, then perfect play: 1 for a zeroing move, else the DTZ of the
    position it leads to plus one; 0 when that position is a draw. None where a
    compact category file without a ``.dtz`` file answered."""
    counter: int | None = None
    """The counter this move leaves: 0 after a zeroing move, else one more."""


@dataclass(frozen=True)
class Ranking:
    """A position's legal moves ranked by the tables, best first (:func:`best_moves`)."""

    moves: list[MoveValue]
    """The moves the tables answer, best first (:func:`move_order`)."""
    rule: str
    """The move-rule preset asked for."""
    counter: int
    """The counter asked for."""
    rule_free: bool = False
    """True when the ranking ignores the rule: asked for, or (``rule_free`` False
    on the call) because the tables hold no layer for the preset."""
    outside: list[Move] = field(default_factory=list)
    """With ``partial``: the moves whose position no table holds, in legal-move order."""


_TABLEBASES: dict[Path, Tablebase] = {}
_TABLEBASES_LOCK = threading.Lock()


def tablebase_for(directory: os.PathLike | str | None = None) -> Tablebase:
    """The process's one Tablebase over ``directory`` (default $EGTB_DIR or data/egtb).

    Opened on first use and kept for the life of the process, so the engines,
    the adjudicator and the page share its open tables; do not close it.

    >>> tablebase_for("/nonexistent") is tablebase_for("/nonexistent/../nonexistent")
    True
    """
    key = Path(master.resolve_dir(directory)).resolve()
    with _TABLEBASES_LOCK:
        if key not in _TABLEBASES:
            _TABLEBASES[key] = Tablebase(key)
        return _TABLEBASES[key]


def probe_position(tablebase: Tablebase, board: Board | str) -> ProbeResult:
    """``tablebase.probe(board)``, or its rule-free answer (``rule`` None) where the table holds
    no layer for the board's preset. Raises MissingTableError outside the tables.

    >>> probe_position(Tablebase("/nonexistent"), "B:W5,6,10:B1").value
    <Wdl.LOSS: -1>
    """
    try:
        return tablebase.probe(board)
    except MissingRuleLayerError:
        return tablebase.probe(board, rule_free=True)


def best_moves(tablebase: Tablebase, board: Board | str, *, rule: str | None = None,
               counter: int | None = None, rule_free: bool = False, partial: bool = False) -> Ranking:
    """Every legal move with its value for the mover, best first, under the move rule.

    Rule and counter: the keywords, else the board's (a FEN string: "wcdf" at
    counter 0). Tables without the preset's layer give the rule-free ranking
    with ``rule_free`` True; ``rule_free=True`` asks for it. The order is
    :func:`move_order`'s, one rule for master and compact files alike. Raises
    MissingTableError when a move's position is outside the tables, unless
    ``partial``: those moves are then listed in ``outside``.

    >>> ranking = best_moves(Tablebase("/nonexistent"), "B:W14,23:B9", partial=True)
    >>> [(str(m.move), str(m.value)) for m in ranking.moves], ranking.outside
    ([('9x18x27', 'win')], [])
    """
    work = Board(board) if isinstance(board, str) else board.copy()
    if rule is not None or counter is not None:
        work = Board(work.fen(), rule=rule or work.rule.name,
                     quiet_plies=work.quiet_plies if counter is None else counter)
    _check_counter(work)
    ranking = None if rule_free else _ranking(tablebase, work, ruled=True, partial=partial)
    if ranking is None:
        ranking = _ranking(tablebase, work, ruled=False, partial=partial)
    return ranking


def _check_counter(board: Board) -> None:
    """ValueError for a counter outside 0..limit (as a probe says it)."""
    limit = board.rule.limit_plies
    if not 0 <= board.quiet_plies <= limit:
        raise InvalidArgumentError(f"counter {board.quiet_plies} is outside 0..{limit} (the {board.rule.name} limit)")


def _ranking(tablebase: Tablebase, board: Board, *, ruled: bool, partial: bool) -> Ranking | None:
    """The ranking of ``board``'s moves, under its rule when ``ruled`` (None when a table lacks
    the layer)."""
    moves, outside = [], []
    for move in board.legal_moves():
        try:
            moves.append(_move_value(tablebase, board, move, ruled=ruled))
        except MissingRuleLayerError:
            if ruled:
                return None
            raise
        except MissingTableError:
            if not partial:
                raise
            outside.append(move)
    return Ranking(sorted(moves, key=move_order), board.rule.name, board.quiet_plies,
                   rule_free=not ruled, outside=outside)


def _move_value(tablebase: Tablebase, board: Board, move: Move, *, ruled: bool) -> MoveValue:
    """The value of one move for the mover, under the board's rule when ``ruled``."""
    limit = board.rule.limit_plies
    at_limit = board.quiet_plies >= limit
    board.push(move)
    try:
        after = board.quiet_plies
        if not ruled:
            found = tablebase.probe(board, rule_free=True)
        else:
            found = _probe_after(tablebase, board, min(after, limit))
    finally:
        board.pop()
    value = Wdl(-found.value)
    dtw = None if found.dtw is None else 0 if value == Wdl.DRAW else found.dtw + 1
    if not ruled:
        return MoveValue(move, value, dtw)
    outcome = Wdl.DRAW if at_limit else None if found.outcome is None else Wdl(-found.outcome)
    category = Category(-found.category)
    dtz = None if found.dtz is None else 0 if category == Category.DRAW else 1 if after == 0 else found.dtz + 1
    return MoveValue(move, value, dtw, outcome, category, dtz, after)


def _probe_after(tablebase: Tablebase, board: Board, counter: int) -> ProbeResult:
    """The probe of the position a move led to, from ``counter``; where only a compact category
    file answers a win or loss at a counter above 0 (its outcome needs a DTZ no file holds), the
    outcome None with the category at counter 0."""
    try:
        return tablebase.probe(board, counter=counter)
    except MissingRuleLayerError:
        if counter == 0:
            raise
        at_zero = tablebase.probe(board, counter=0)  # raises again when the layer is missing
        return ProbeResult(at_zero.value, at_zero.dtw, None, at_zero.category, None, at_zero.rule, counter)


def move_order(mv: MoveValue) -> tuple:
    """Sort key of :func:`best_moves`, best first; ties by notation.

    The one ranking rule, on what master and compact files both hold (the
    outcome, the category, the DTZ; the DTW only without the rule), so both
    rank alike. Under the rule: wins by smallest DTZ (the next zeroing ply
    soonest, so the counter never runs out and no position repeats); draws
    by the mover's category (a cursed win first), then, for a category won
    without the rule, smallest DTZ, for a lost one largest; losses by largest
    DTZ. A move whose outcome a compact category file could not tell ranks by
    its category's value, after the moves of that value whose outcome is
    known. Rule-free (no category): wins by shortest DTW, draws, losses by
    longest DTW.

    >>> from egtb.rules.board import Move
    >>> b = Board("B:WK14,K26:BK20", quiet_plies=75)
    >>> near, far = (MoveValue(Move.from_pdn(t, b), Wdl.LOSS, None, Wdl.DRAW, Category.LOSS, d, 76)
    ...              for t, d in (("20-16", 10), ("20-24", 24)))
    >>> [str(m.move) for m in sorted([near, far], key=move_order)]  # resist longest
    ['20-24', '20-16']
    """
    notation = str(mv.move)
    if mv.category is None:
        dtw = mv.dtw or 0
        if mv.value == Wdl.WIN:
            return 0, False, dtw, 0, notation
        if mv.value == Wdl.DRAW:
            return 1, False, 0, 0, notation
        return 2, False, -dtw, 0, notation
    dtz = mv.dtz or 0  # None from a compact category file alone: ranked by value
    unknown = mv.outcome is None
    outcome = mv.category.wdl if unknown else mv.outcome
    if outcome == Wdl.WIN:
        return 0, unknown, 0, dtz, notation
    if outcome == Wdl.DRAW:
        return 1, unknown, -int(mv.category), dtz if mv.category > 0 else -dtz, notation
    return 2, unknown, 0, -dtz, notation
