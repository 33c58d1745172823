"""JSON-ready records of positions and games for the play page (no HTTP here).

The page keeps a game as its start FEN, its move-rule preset, the counter at
the start and the list of moves played; every answer below is computed from
those by the rules core (:mod:`egtb.rules`), so the browser never decides
what is legal.

>>> record = game_record(game_board("B:W14,23:B9"))
>>> [(m["move"], m["captured"]) for m in record["moves"]], record["capture"]
([('9x18x27', [14, 23])], True)
"""

from __future__ import annotations

from collections.abc import Iterable

from egtb.errors import MissingRuleLayerError, MissingTableError
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import DRAW_RULES, Board, Move
from egtb.rules.notation import START_FEN
from egtb.rules.pdn import game_from_board, write_game

__all__ = [
    "BadRequest", "COLOR_NAMES", "ballots_record", "game_board", "game_record", "move_record",
    "parse_counter", "parse_move_list", "parse_rule", "probe_record",
]

#: Names of the two sides in every record.
COLOR_NAMES = ("black", "white")
DEFAULT_RULE = "wcdf"


class BadRequest(ValueError):
    """Input the page (or an API caller) got wrong; the message says what."""


def parse_rule(text: str | None) -> str:
    """The move-rule preset named by ``text`` (default "wcdf").

    >>> parse_rule(None), parse_rule("forty-plies")
    ('wcdf', 'forty-plies')
    """
    if text is None or text == "":
        return DEFAULT_RULE
    if text not in DRAW_RULES:
        raise BadRequest(f"unknown move rule {text!r}; choose from {', '.join(DRAW_RULES)}")
    return text


def parse_counter(text: str | int | None, *, rule: str) -> int:
    """The move-rule counter (quiet plies already played): 0 to the preset's limit.

    >>> parse_counter("12", rule="wcdf")
    12
    >>> parse_counter("81", rule="wcdf")
    Traceback (most recent call last):
    ...
    tournament.web.state.BadRequest: counter 81 is outside 0..80 for the wcdf rule
    """
    if text is None or text == "":
        return 0
    try:
        counter = int(text)
    except (TypeError, ValueError):
        raise BadRequest(f"counter {text!r} is not a whole number") from None
    limit = DRAW_RULES[rule].limit_plies
    if not 0 <= counter <= limit:
        raise BadRequest(f"counter {counter} is outside 0..{limit} for the {rule} rule")
    return counter


def parse_move_list(moves: str | Iterable[str] | None) -> list[str]:
    """Moves given as a list or as one string separated by spaces or commas.

    >>> parse_move_list("11-15, 23-19 8-11")
    ['11-15', '23-19', '8-11']
    """
    if moves is None:
        return []
    if isinstance(moves, str):
        return moves.replace(",", " ").split()
    if not all(isinstance(m, str) for m in moves):
        raise BadRequest(f"moves must be PDN strings, got {moves!r}")
    return [m.strip() for m in moves if m.strip()]


def game_board(fen: str | None, moves: Iterable[str] = (), *, rule: str = DEFAULT_RULE,
               counter: int = 0) -> Board:
    """The Board after ``moves`` played from ``fen`` (default: the start) under ``rule``.

    Raises BadRequest naming the FEN or the move (with its number) at fault.

    >>> game_board(None, ["11-15", "23-19"]).fen()
    'B:W19,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15'
    >>> game_board(None, ["11-15", "11-16"])
    Traceback (most recent call last):
    ...
    tournament.web.state.BadRequest: move 2 (11-16): move '11-16' is not legal in W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15
    """
    try:
        board = Board(fen or START_FEN, rule=rule, quiet_plies=counter)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    for number, text in enumerate(moves, start=1):
        if board.is_game_over():
            raise BadRequest(f"move {number} ({text}): the game is already over")
        try:
            board.push_pdn(text)
        except ValueError as exc:
            raise BadRequest(f"move {number} ({text}): {exc}") from None
    return board


def move_record(board: Board, move: Move) -> dict:
    """A legal move as the page uses it: notation, squares, captures, the FEN it leads to.

    >>> move_record(Board("B:W14,23:B9"), Move.from_pdn("9x27", Board("B:W14,23:B9")))
    {'move': '9x18x27', 'from': 9, 'to': 27, 'path': [9, 18, 27], 'captured': [14, 23], 'crowns': False, 'fen': 'W:W:B27'}
    """
    was_man = board.piece_at(move.start) in ("b", "w")
    board.push(move)
    try:
        crowns = was_man and board.piece_at(move.end) in ("B", "W")
        fen = board.fen()
    finally:
        board.pop()
    return {"move": str(move), "from": move.start, "to": move.end, "path": list(move.path),
            "captured": sorted(move.captured), "crowns": crowns, "fen": fen}


def pieces_record(board: Board) -> dict[str, list[int]]:
    """Squares of each kind of piece.

    >>> pieces_record(Board("W:WK32:B1"))
    {'black_men': [1], 'black_kings': [], 'white_men': [], 'white_kings': [32]}
    """
    found: dict[str, list[int]] = {"black_men": [], "black_kings": [], "white_men": [], "white_kings": []}
    kinds = {"b": "black_men", "B": "black_kings", "w": "white_men", "W": "white_kings"}
    for square in range(1, 33):
        piece = board.piece_at(square)
        if piece is not None:
            found[kinds[piece]].append(square)
    return found


def outcome_record(board: Board) -> dict | None:
    """How the game has ended (result, winner, reason in words), or None.

    >>> outcome_record(Board("B:W5,6,10:B1"))["text"]
    'White wins: Black has no legal move'
    """
    outcome = board.outcome()
    if outcome is None:
        return None
    loser = COLOR_NAMES[board.turn].capitalize()
    reason = outcome.termination.value
    if outcome.winner is None:
        limit = board.rule.limit_plies
        detail = (f"{limit} plies without a capture or a man move" if board.rule.man_move_resets
                  else f"{limit} plies without a capture or a crowning")
        text = f"Draw by the move rule ({board.rule.name}: {detail})" if reason == "move rule" \
            else f"Draw by {reason}"
    else:
        how = "has no pieces left" if reason == "no pieces" else "has no legal move"
        text = f"{COLOR_NAMES[outcome.winner].capitalize()} wins: {loser} {how}"
    return {"result": outcome.result(), "reason": reason, "text": text,
            "winner": None if outcome.winner is None else COLOR_NAMES[outcome.winner]}


def game_record(board: Board, *, headers: dict[str, str] | None = None) -> dict:
    """Everything the page shows about a game: position, legal moves, counter, end, PDN.

    >>> r = game_record(game_board(None, ["11-15"], rule="crowning"))  # a man move is quiet here
    >>> r["turn"], r["counter"], r["limit"], len(r["moves"]), r["outcome"]
    ('white', 1, 80, 7, None)
    """
    legal = board.legal_moves()
    game = game_from_board(board, headers=headers)
    return {
        "start_fen": board.start_fen,
        "fen": board.fen(),
        "turn": COLOR_NAMES[board.turn],
        "rule": board.rule.name,
        "limit": board.rule.limit_plies,
        "counter": board.quiet_plies,
        "played": [str(m) for m in board.move_stack],
        "pieces": pieces_record(board),
        "piece_count": board.piece_count(),
        "capture": any(m.is_capture for m in legal),
        "moves": [move_record(board, m) for m in legal],
        "outcome": outcome_record(board),
        "pdn": write_game(game),
    }


def probe_record(tablebase: Tablebase, fen: str, *, rule: str = DEFAULT_RULE, counter: int = 0) -> dict:
    """The answer of ``egtb probe --json --rule RULE --counter N`` for one FEN.

    Uses the command line's own answer function. Raises BadRequest for a bad
    FEN and MissingTableError (MissingRuleLayerError for a missing preset) when
    the position is outside the tables.

    >>> record = probe_record(Tablebase("/nonexistent"), "B:W5,6,10:B1", rule="crowning", counter=3)
    >>> record["value"], record["outcome"], record["rule"], record["counter"]
    ('loss', 'loss', 'crowning', 3)
    """
    from egtb.cli import answer
    try:
        Board(fen, rule=rule)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return answer(tablebase, fen, rule=rule, counter=counter)


def missing_record(tablebase: Tablebase, fen: str, error: MissingTableError) -> dict:
    """What the probe API says about a position outside the tables."""
    board = Board(fen)
    return {"fen": fen, "error": str(error), "outside_tables": True,
            "rule_layer_missing": isinstance(error, MissingRuleLayerError),
            "piece_count": board.piece_count(), "max_pieces": tablebase.max_pieces}


def ballots_record() -> dict[str, list[dict]]:
    """The shipped ballot decks (3-move and 2-move) as lists of openings.

    >>> deck = ballots_record()["3-move"]
    >>> len(deck), deck[0]["moves"]
    (156, ['9-13', '21-17', '5-9'])
    """
    from tournament.openings import BALLOT_KINDS, load_ballots
    return {kind: [{"number": o.number, "name": o.name, "moves": list(o.moves), "fen": o.fen}
                   for o in load_ballots(kind)] for kind in BALLOT_KINDS}

