"""The page's replay and review: a pasted PDN game or move list read, and a game reviewed with the tables.

``POST /api/pdn`` ``{text}`` answers :func:`pasted_game_record`; ``GET /api/review`` (the
parameters of ``/api/moves``) answers :func:`review_record`, the review of
:mod:`tournament.review` as JSON.

>>> pasted_game_record('[Event "e"]\\n1. 11-15 23-19 *')["moves"]
['11-15', '23-19']
>>> pasted_game_record("11-15 24-20")["fen"][:2]
'B:'
"""

from __future__ import annotations

from typing import Any

from egtb.errors import PdnError
from egtb.rules.pdn import Game, read_games
from tournament.review import review_game, review_to_json
from tournament.web.inputs import BadRequest, MovesQuery

__all__ = ["pasted_game_record", "review_record"]

#: Characters of pasted PDN read at most (a long game's movetext is a few thousand).
MAX_PASTE = 100_000


def pasted_game_record(text: object) -> dict:
    """The first game of pasted PDN text (tags optional: a bare move list is a game from the start):
    its start FEN, moves, tags and result; BadRequest naming what is wrong (not PDN, no game, an
    illegal move).

    >>> pasted_game_record("11-15 11-16")
    Traceback (most recent call last):
    ...
    tournament.web.inputs.BadRequest: the pasted game: move 1... 11-16 is illegal: move '11-16' is not legal in W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15
    """
    if not isinstance(text, str) or not text.strip():
        raise BadRequest("text: paste a PDN game or a move list such as 11-15 23-19")
    if len(text) > MAX_PASTE:
        raise BadRequest(f"text is {len(text)} characters long; at most {MAX_PASTE} are read")
    try:
        games = read_games(text)
    except PdnError as exc:
        raise BadRequest(f"the pasted text is not PDN: {exc}") from None
    if not games:
        raise BadRequest("the pasted text holds no game")
    game = games[0]
    try:
        game.board()
    except ValueError as exc:
        raise BadRequest(f"the pasted game: {str(exc).removeprefix(game.name() + ': ')}") from None
    return {"fen": game.fen, "moves": list(game.moves), "headers": dict(game.headers), "result": game.result,
            "games": len(games)}


def review_record(tablebase: Any, query: MovesQuery) -> dict:
    """The review of the game ``query`` gives (start, moves, rule, counter), as JSON-ready data:
    ``entered`` (the ply where it reached the tables, None if never) and ``mistakes`` (each move that
    threw away a win or a draw, with ``ply``, ``before``, ``after`` and the ``best`` move)."""
    game = Game(fen=query.fen, moves=list(query.moves)) if query.fen else Game(moves=list(query.moves))
    try:
        review = review_game(game, tablebase, rule=query.rule, counter=query.counter)
    except ValueError as exc:
        raise BadRequest(str(exc).removeprefix(game.name() + ": ")) from None
    return review_to_json([review])[0]
