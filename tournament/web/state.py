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

import datetime
from collections.abc import Iterable

from egtb.errors import MissingRuleLayerError, MissingTableError
from egtb.probe.moves import best_moves
from egtb.probe.results import answer, move_value_record
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import Board, Move
from egtb.rules.notation import START_FEN
from egtb.rules.squares import coords_to_square, square_to_coords
from egtb.rules.pdn import game_from_board, write_game
from tournament.engines.search import MATE, MATE_BOUND, MAX_PLY, TB_WIN
from tournament.web.inputs import DEFAULT_RULE, BadRequest

__all__ = ["COLOR_NAMES", "analysis_record", "ballots_record", "forced_line", "score_record", "game_board", "game_record", "missing_record", "move_record",
           "probe_record"]

#: Names of the two sides in every record.
COLOR_NAMES = ("black", "white")
#: The PDN Site tag of a game played on the page.
SITE = "tournament play (local)"


def game_board(fen: str | None, moves: Iterable[str] = (), *, rule: str = DEFAULT_RULE,
               counter: int = 0) -> Board:
    """The Board after ``moves`` played from ``fen`` (default: the start) under ``rule``.

    Raises BadRequest naming the FEN or the move (with its number) at fault.

    >>> game_board(None, ["11-15", "23-19"]).fen()
    'B:W19,21,22,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15'
    >>> game_board(None, ["11-15", "11-16"])
    Traceback (most recent call last):
    ...
    tournament.web.inputs.BadRequest: move 2 (11-16): move '11-16' is not legal in W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15
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

    ``routes`` lists every capture path of the move (the notation's first): a
    king that takes four pieces round a square can go either way round, and
    both are this one move.

    >>> move_record(Board("B:W14,23:B9"), Move.from_pdn("9x27", Board("B:W14,23:B9")))
    {'move': '9x18x27', 'from': 9, 'to': 27, 'path': [9, 18, 27], 'routes': [[9, 18, 27]], 'captured': [14, 23], \
'crowns': False, 'fen': 'W:W:B27'}
    """
    was_man = board.piece_at(move.start) in ("b", "w")
    board.push(move)
    try:
        crowns = was_man and board.piece_at(move.end) in ("B", "W")
        fen = board.fen()
    finally:
        board.pop()
    return {"move": str(move), "from": move.start, "to": move.end, "path": list(move.path),
            "routes": capture_routes(board, move), "captured": sorted(move.captured), "crowns": crowns,
            "fen": fen}


def capture_routes(board: Board, move: Move) -> list[list[int]]:
    """Every path of jumps that plays ``move`` on ``board``, the move's own path first.

    >>> board = Board("W:WK10:B14,15,22,23")  # the king goes round and back to 10, either way
    >>> capture_routes(board, board.legal_moves()[0])
    [[10, 17, 26, 19, 10], [10, 19, 26, 17, 10]]
    """
    if len(move.captured) < 2:
        return [list(move.path)]
    piece = board.piece_at(move.start)
    forward = 1 if piece == "b" else -1 if piece == "w" else 0
    directions = [(dr, dc) for dr in (1, -1) for dc in (1, -1) if not forward or dr == forward]
    found: list[list[int]] = []

    def extend(path: list[int], taken: frozenset[int]) -> None:
        if taken == move.captured:
            if path[-1] == move.end:
                found.append(list(path))
            return
        row, column = square_to_coords(path[-1])
        for dr, dc in directions:
            over = coords_to_square(row + dr, column + dc)
            land = coords_to_square(row + 2 * dr, column + 2 * dc)
            free = land is not None and (land == move.start or board.piece_at(land) is None)
            crowned_early = forward and land is not None and square_to_coords(land)[0] in (0, 7) \
                and taken | {over} != move.captured  # a man stops where it is crowned
            if over in move.captured and over not in taken and free and not crowned_early:
                extend(path + [land], taken | {over})

    extend([move.start], frozenset())
    own = list(move.path)
    return [own] + [path for path in found if path != own]


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


#: Each of inputs.ENDINGS: the PDN result, the winner and the words.
ENDING_RECORDS = {"black-resigns": ("0-1", "white", "White wins: Black resigns"),
           "white-resigns": ("1-0", "black", "Black wins: White resigns"),
           "draw-agreed": ("1/2-1/2", None, "Draw agreed")}


def outcome_record(board: Board, *, end: str | None = None) -> dict | None:
    """How the game has ended (result, winner, reason in words), or None.

    ``end`` (one of inputs.ENDINGS) ends a game the rules have not ended yet.

    >>> outcome_record(Board("B:W5,6,10:B1"))["text"]
    'White wins: Black has no legal move'
    >>> outcome_record(Board(), end="black-resigns")
    {'result': '0-1', 'reason': 'resignation', 'text': 'White wins: Black resigns', 'winner': 'white'}
    """
    outcome = board.outcome()
    if outcome is None and end is not None:
        result, winner, text = ENDING_RECORDS[end]
        reason = "agreement" if winner is None else "resignation"
        return {"result": result, "reason": reason, "text": text, "winner": winner}
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


def pdn_headers(board: Board, given: dict[str, str], *, today: datetime.date | None = None) -> dict[str, str]:
    """The PDN tags of a page game: Event, Site, Date, Round, the players, and its move rule and counter.

    The rule and the counter at the start go in ``MoveRule`` and ``MoveRuleCounter``, so
    that the game can be replayed under the rule it was played by.

    >>> pdn_headers(Board(rule="crowning", quiet_plies=30), {"Black": "You"}, today=datetime.date(2026, 12, 1))
    {'Event': 'Casual game', 'Site': 'tournament play (local)', 'Date': '2026.12.01', 'Round': '-', \
'Black': 'You', 'White': '?', 'MoveRule': 'crowning', 'MoveRuleCounter': '30'}
    """
    day = today or datetime.date.today()
    return {"Event": given.get("Event", "Casual game"), "Site": SITE, "Date": day.strftime("%Y.%m.%d"),
            "Round": "-", "Black": given.get("Black", "?"), "White": given.get("White", "?"),
            "MoveRule": board.rule.name, "MoveRuleCounter": str(board.start_quiet_plies)}


def game_record(board: Board, *, headers: dict[str, str] | None = None, end: str | None = None) -> dict:
    """Everything the page shows about a game: position, legal moves, counter, end, PDN.

    >>> r = game_record(game_board(None, ["11-15"], rule="crowning"))  # a man move is quiet here
    >>> r["turn"], r["counter"], r["limit"], len(r["moves"]), r["outcome"]
    ('white', 1, 80, 7, None)
    """
    outcome = outcome_record(board, end=end)
    legal = [] if outcome is not None else board.legal_moves()
    game = game_from_board(board, headers=pdn_headers(board, headers or {}),
                           result=outcome["result"] if outcome is not None else None)
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
        "outcome": outcome,
        "pdn": write_game(game),
    }


def probe_record(tablebase: Tablebase, fen: str, *, rule: str = DEFAULT_RULE, counter: int = 0) -> dict:
    """The answer of ``egtb probe --json --rule RULE --counter N`` for one FEN.

    Uses the prober's JSON form of a result (:func:`egtb.probe.results.answer`), as the command line does. Raises BadRequest for a bad
    FEN and MissingTableError (MissingRuleLayerError for a missing preset) when
    the position is outside the tables.

    >>> record = probe_record(Tablebase("/nonexistent"), "B:W5,6,10:B1", rule="crowning", counter=3)
    >>> record["value"], record["outcome"], record["rule"], record["counter"]
    ('loss', 'loss', 'crowning', 3)
    """
    try:
        Board(fen, rule=rule)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return answer(tablebase, fen, rule=rule, counter=counter)


def missing_record(tablebase: Tablebase, fen: str, error: MissingTableError, *, rule: str = DEFAULT_RULE,
                   counter: int = 0) -> dict:
    """What the probe API says about a position outside the tables.

    ``moves`` still gives the value of each move whose position is inside them
    (a capture from 6 pieces into 5-piece tables), the rest with ``value`` None.

    >>> tb = Tablebase("/nonexistent")
    >>> record = missing_record(tb, "B:W14,23:B9", MissingTableError("no table"))
    >>> record["outside_tables"], record["moves"][0]["move"], record["moves"][0]["value"]
    (True, '9x18x27', 'win')
    """
    board = Board(fen, rule=rule, quiet_plies=counter)
    return {"fen": fen, "error": str(error), "outside_tables": True,
            "rule_layer_missing": isinstance(error, MissingRuleLayerError),
            "piece_count": board.piece_count(), "max_pieces": tablebase.max_pieces,
            "moves": successor_records(tablebase, board)}


def successor_records(tablebase: Tablebase, board: Board) -> list[dict]:
    """Each legal move with the table value of the position it leads to, seen by the mover.

    The moves in the tables come first, ranked as everywhere else
    (:func:`egtb.probe.moves.best_moves`); a move whose position is outside the
    tables follows with ``value`` None.
    """
    ranking = best_moves(tablebase, board, partial=True)
    blank = {"value": None, "dtw": None, "outcome": None, "category": None, "dtz": None}
    return [move_value_record(mv) for mv in ranking.moves] + [
        {"move": str(move), **blank} for move in ranking.outside]


def ballots_record() -> dict[str, list[dict]]:
    """The shipped ballot decks (3-move and 2-move) as lists of openings.

    >>> deck = ballots_record()["3-move"]
    >>> len(deck), deck[0]["moves"]
    (156, ['9-13', '21-17', '5-9'])
    """
    from tournament.openings import BALLOT_KINDS, load_ballots
    return {kind: [{"number": o.number, "name": o.name, "moves": list(o.moves), "fen": o.fen}
                   for o in load_ballots(kind)] for kind in BALLOT_KINDS}



#: Forced moves the explorer plays before it asks the engine (one with a single move is not searched).
MAX_FORCED = 40


def forced_line(board: Board, *, in_tables=lambda board: False) -> list[Move]:
    """The moves ``board`` is forced to play (one legal move each) until a choice, the end of the game,
    a position ``in_tables`` says the tables hold, or MAX_FORCED; they are pushed on ``board``.

    >>> board = Board("B:W14,23:B9,1")  # two captures to choose from? no: a capture is compulsory
    >>> [str(m) for m in forced_line(board)], board.fen()
    (['9x18x27'], 'W:W:B1,27')
    """
    line: list[Move] = []
    while len(line) < MAX_FORCED and not board.is_game_over() and not (line and in_tables(board)):
        legal = board.legal_moves()
        if len(legal) != 1:
            break
        board.push(legal[0])
        line.append(legal[0])
    return line


def score_record(score: int, turn: int) -> dict:
    """An engine's score for the side to move (``turn``) as the explorer shows it: the score, the score
    from Black's side, the winner when it found a win, and the words.

    The units are the searcher's (:mod:`tournament.engines.search`): hundredths of a man; beyond
    MATE - 1000 a win it found to the end of the game (MATE minus its plies), from TB_WIN - MAX_PLY a
    win of the endgame tables reached in TB_WIN minus that many plies.

    >>> score_record(35, 0)["text"], score_record(35, 1)["text"], score_record(0, 0)["text"]
    ('+0.35 for Black', '+0.35 for White', '0.00: even')
    >>> score_record(-(MATE - 7), 1)
    {'score': -29993, 'black_score': 29993, 'winner': 'black', 'plies': 7, 'text': 'Black wins in 7 plies'}
    >>> score_record(TB_WIN - 3, 0)["text"]
    'Black wins: a won ending of the tables is reached in 3 plies'
    """
    black = score if turn == 0 else -score
    record = {"score": score, "black_score": black, "winner": None, "plies": None}
    size = abs(score)
    side = COLOR_NAMES[0] if black > 0 else COLOR_NAMES[1]
    if size > MATE_BOUND:
        plies = MATE - size
        return {**record, "winner": side, "plies": plies, "text": f"{side.capitalize()} wins in {_plies(plies)}"}
    if TB_WIN - MAX_PLY <= size <= TB_WIN:
        plies = TB_WIN - size
        return {**record, "winner": side, "plies": plies,
                "text": f"{side.capitalize()} wins: a won ending of the tables is reached in {_plies(plies)}"}
    if black == 0:
        return {**record, "text": "0.00: even"}
    return {**record, "text": f"+{size / 100:.2f} for {side.capitalize()}"}


def _plies(n: int) -> str:
    return f"{n} ply" if n == 1 else f"{n} plies"


def line_text(board: Board, moves: Iterable[str]) -> str:
    """Moves from ``board`` as PDN move text, numbered from 1 (``1...`` when White moves first).

    >>> line_text(Board(), ["11-15", "23-19", "8-11"])
    '1. 11-15 23-19 2. 8-11'
    >>> line_text(Board("W:W18:B14"), ["18x9"])
    '1... 18x9'
    """
    parts: list[str] = []
    turn = board.turn
    number = 1
    for index, move in enumerate(moves):
        if turn == 0:
            parts.append(f"{number}. {move}")
        else:
            parts.append(f"{number}... {move}" if index == 0 else move)
            number += 1
        turn = 1 - turn
    return " ".join(parts)


def analysis_record(board: Board, forced: list[Move], *, score: int | None, pv: Iterable[str] = (),
                    depth: int = 0, seconds: float = 0.0, source: str = "search") -> dict:
    """What ``POST /api/analysis`` answers for ``board``: the engine's score and principal variation.

    ``forced`` are the moves played from ``board`` before the search (each the only legal move);
    ``score`` is the engine's score after them (for the side to move there; None: it gave none, or
    the game ended), ``pv`` its line from there. The score is turned to the side to move in
    ``board``, and its distances count the forced moves.

    >>> record = analysis_record(Board("B:W14,23:B9,1"), [], score=-12, pv=["9x18x27"], depth=4)
    >>> record["score_text"], record["pv_text"], record["turn"]
    ('+0.12 for White', '1. 9x18x27', 'black')
    """
    after = board.copy()
    for move in forced:
        after.push(move)
    line = [str(m) for m in forced] + list(pv)
    outcome = after.outcome()
    if outcome is not None and outcome.winner is not None:
        score = -MATE  # the side to move after the forced moves has lost
    record = {"fen": board.fen(), "turn": COLOR_NAMES[board.turn], "depth": depth, "seconds": round(seconds, 3),
              "source": source, "forced": len(forced), "pv": line, "pv_text": line_text(board, line)}
    if score is None:
        drawn = outcome is not None
        return {**record, "score": 0 if drawn else None, "black_score": 0 if drawn else None, "winner": None,
                "plies": None, "score_text": outcome_record(after)["text"] if drawn else "no score"}
    if len(forced) % 2:
        score = -score
    if abs(score) > MATE_BOUND:
        score += (-1 if score > 0 else 1) * len(forced)
    elif TB_WIN - MAX_PLY <= abs(score) <= TB_WIN:
        score += (-1 if score > 0 else 1) * len(forced)
    scored = score_record(score, board.turn)
    return {**record, "score": scored["score"], "black_score": scored["black_score"], "winner": scored["winner"],
            "plies": scored["plies"], "score_text": scored["text"]}
