"""The play page's API input, checked into typed values: one dataclass per endpoint.

Every value a request may carry is read here, strictly: a counter is a whole
number (a JSON integer or a string of digits, never a list, a bool, NaN or
1e400), a rule or a strength is a known name, a FEN and each move is a short
string. Anything else raises :class:`BadRequest` (a ValueError), which the app
answers with HTTP 400 and the message.

>>> MovesQuery.from_params({"moves": "11-15 23-19", "rule": "crowning", "counter": "3"})
MovesQuery(fen=None, moves=('11-15', '23-19'), rule='crowning', counter=3, headers={}, ply=None, end=None)
>>> parse_counter(1e400, rule="wcdf")
Traceback (most recent call last):
...
tournament.web.inputs.BadRequest: counter inf is not a whole number
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from egtb.rules.board import DEFAULT_RULE, DRAW_RULES

__all__ = [
    "ANALYSIS_SECONDS", "AnalysisRequest", "BadRequest", "DEFAULT_RULE", "DEFAULT_SECONDS", "ENDINGS", "EngineCancelRequest", "EngineMoveRequest", "MAX_BODY_BYTES",
    "MAX_MOVES", "MAX_SECONDS", "MovesQuery", "PDN_HEADERS", "ProbeQuery", "STRENGTHS", "StaleMove",
    "parse_counter", "parse_end", "parse_game_id", "parse_json_body", "parse_move_list", "parse_rule", "parse_seconds",
    "parse_strength",
]

#: Strength name -> whether its engine probes the endgame tables.
STRENGTHS: dict[str, bool] = {"easy": False, "medium": True, "hard": True, "perfect": True}
#: Seconds per move when the page does not say.
DEFAULT_SECONDS = 1.0
#: Longest think the API accepts.
MAX_SECONDS = 60.0
#: Seconds the explorer's search of a position outside the tables runs when the page does not say.
ANALYSIS_SECONDS = 2.0
#: The most moves a game sent to the API may hold.
MAX_MOVES = 2000
#: The longest FEN, move, PDN tag value or game id accepted (32 squares fit in far less).
MAX_TEXT = 200
#: The largest request body read.
MAX_BODY_BYTES = 256 * 1024
#: PDN tags a game request may set.
PDN_HEADERS = ("Event", "Black", "White")
#: How the players may end a game: the loser resigns, or both agree a draw.
ENDINGS = ("black-resigns", "white-resigns", "draw-agreed")
_GAME_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_DIGITS = re.compile(r"[+-]?[0-9]{1,6}")


class BadRequest(ValueError):
    """Input the page (or an API caller) got wrong; the message says what."""


class StaleMove(BadRequest):
    """A move chosen on a position the game has already left (HTTP 409)."""


def parse_text(value: object, *, name: str, required: bool = False) -> str | None:
    """An optional short string without control characters.

    >>> parse_text(" B:W18:B14 ", name="fen"), parse_text("", name="fen")
    ('B:W18:B14', None)
    """
    if value is None or value == "":
        if required:
            raise BadRequest(f"{name} is missing")
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{name} must be a string, got {_shown(value)}")
    if len(value) > MAX_TEXT:
        raise BadRequest(f"{name} is {len(value)} characters long; at most {MAX_TEXT} are accepted")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise BadRequest(f"{name} {value!r} holds a control character")
    return value.strip() or None


def parse_rule(value: object) -> str:
    """The move-rule preset named by ``value`` (default "wcdf").

    >>> parse_rule(None), parse_rule("forty-plies")
    ('wcdf', 'forty-plies')
    """
    text = parse_text(value, name="rule")
    if text is None:
        return DEFAULT_RULE
    if text not in DRAW_RULES:
        raise BadRequest(f"unknown move rule {text!r}; choose from {', '.join(DRAW_RULES)}")
    return text


def parse_whole(value: object, *, name: str) -> int | None:
    """A whole number given as a JSON integer or a string of digits; None when absent.

    >>> parse_whole("12", name="ply"), parse_whole(None, name="ply")
    (12, None)
    >>> parse_whole(True, name="ply")
    Traceback (most recent call last):
    ...
    tournament.web.inputs.BadRequest: ply True is not a whole number
    """
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        return int(value)
    raise BadRequest(f"{name} {_shown(value)} is not a whole number")


def parse_counter(value: object, *, rule: str) -> int:
    """The move-rule counter (quiet plies already played): 0 to the preset's limit.

    >>> parse_counter("12", rule="wcdf")
    12
    >>> parse_counter("41", rule="forty-plies")
    Traceback (most recent call last):
    ...
    tournament.web.inputs.BadRequest: counter 41 is outside 0..40 for the forty-plies rule
    """
    counter = parse_whole(value, name="counter")
    if counter is None:
        return 0
    limit = DRAW_RULES[rule].limit_plies
    if not 0 <= counter <= limit:
        raise BadRequest(f"counter {counter} is outside 0..{limit} for the {rule} rule")
    return counter


def parse_move_list(moves: object) -> tuple[str, ...]:
    """Moves given as a list of strings or one string separated by spaces or commas, at most MAX_MOVES.

    >>> parse_move_list("11-15, 23-19 8-11")
    ('11-15', '23-19', '8-11')
    """
    if moves is None:
        return ()
    if isinstance(moves, str):
        items = moves.replace(",", " ").split()
    elif isinstance(moves, list):
        if not all(isinstance(m, str) for m in moves):
            raise BadRequest(f"moves must be PDN strings, got {_shown(moves)}")
        items = [m.strip() for m in moves if m.strip()]
    else:
        raise BadRequest(f"moves must be a list of PDN strings or one string, got {_shown(moves)}")
    if len(items) > MAX_MOVES:
        raise BadRequest(f"{len(items)} moves is more than the {MAX_MOVES} a game may hold here")
    for number, text in enumerate(items, start=1):
        parse_text(text, name=f"move {number}")
    return tuple(items)


def parse_strength(value: object) -> str:
    """A strength name (easy, medium, hard, perfect).

    >>> parse_strength("hard")
    'hard'
    >>> parse_strength(["hard"])
    Traceback (most recent call last):
    ...
    tournament.web.inputs.BadRequest: unknown strength ['hard']; choose from easy, medium, hard, perfect
    """
    if not isinstance(value, str) or value not in STRENGTHS:
        raise BadRequest(f"unknown strength {_shown(value)}; choose from {', '.join(STRENGTHS)}")
    return value


def parse_seconds(value: object) -> float:
    """Seconds per move: a positive number up to MAX_SECONDS (default DEFAULT_SECONDS).

    >>> parse_seconds(None), parse_seconds("0.5")
    (1.0, 0.5)
    """
    if value is None or value == "":
        return DEFAULT_SECONDS
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BadRequest(f"time {_shown(value)} is not a number of seconds")
    try:
        seconds = float(value)
    except ValueError:
        raise BadRequest(f"time {_shown(value)} is not a number of seconds") from None
    if not 0 < seconds <= MAX_SECONDS:  # NaN fails this too
        raise BadRequest(f"time {seconds} must be more than 0 and at most {MAX_SECONDS:g} seconds")
    return seconds


def parse_game_id(value: object) -> str:
    """The id a page gives its game (letters, digits, - and _; "" when absent).

    >>> parse_game_id("g-1f3a"), parse_game_id(None)
    ('g-1f3a', '')
    """
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not _GAME_ID.fullmatch(value):
        raise BadRequest(f"game {_shown(value)} is not a game id (1-64 letters, digits, - or _)")
    return value


def parse_end(value: object) -> str | None:
    """How the players ended a game (ENDINGS), or None.

    >>> parse_end("draw-agreed"), parse_end(None)
    ('draw-agreed', None)
    """
    text = parse_text(value, name="end")
    if text is not None and text not in ENDINGS:
        raise BadRequest(f"unknown end {text!r}; choose from {', '.join(ENDINGS)}")
    return text


def parse_json_body(raw: bytes) -> dict:
    """A request body as a JSON object (empty: {}); BadRequest for anything else.

    >>> parse_json_body(b'{"a": 1}'), parse_json_body(b"")
    ({'a': 1}, {})
    >>> parse_json_body(b"[" * 100000)
    Traceback (most recent call last):
    ...
    tournament.web.inputs.BadRequest: the request body is nested too deeply to read
    """
    if len(raw) > MAX_BODY_BYTES:
        raise BadRequest(f"the request body is {len(raw)} bytes; at most {MAX_BODY_BYTES} are read")
    try:
        body = json.loads(raw or b"{}", parse_constant=_refuse_constant)
    except RecursionError:
        raise BadRequest("the request body is nested too deeply to read") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"the request body must be a JSON object, got {type(body).__name__}")
    return body


def _refuse_constant(name: str) -> float:
    raise BadRequest(f"the request body holds {name}, which is not JSON")


def _shown(value: object) -> str:
    """A value quoted in a message, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _parse_headers(params: Mapping[str, object]) -> dict[str, str]:
    found = {name: parse_text(params.get(name), name=name) for name in PDN_HEADERS}
    return {name: value for name, value in found.items() if value is not None}


# --- one record per endpoint ---------------------------------------------------


@dataclass(frozen=True)
class MovesQuery:
    """``GET /api/moves``: a game given by its start, moves, rule and counter."""

    fen: str | None = None
    """Start position (None: the standard start)."""
    moves: tuple[str, ...] = ()
    """Moves played from it, PDN."""
    rule: str = DEFAULT_RULE
    """Move-rule preset."""
    counter: int = 0
    """Move-rule counter at the start."""
    headers: dict[str, str] = field(default_factory=dict)
    """PDN tags given by the page (Event, Black, White)."""
    ply: int | None = None
    """The ply the last move was chosen at (its position's number of moves), to refuse a stale one."""
    end: str | None = None
    """How the players ended the game: "black-resigns", "white-resigns" or "draw-agreed"."""

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> "MovesQuery":
        rule = parse_rule(params.get("rule"))
        query = cls(fen=parse_text(params.get("fen"), name="fen"), moves=parse_move_list(params.get("moves")),
                    rule=rule, counter=parse_counter(params.get("counter"), rule=rule),
                    headers=_parse_headers(params), ply=parse_whole(params.get("ply"), name="ply"),
                    end=parse_end(params.get("end")))
        query.check_not_stale()
        return query

    def check_not_stale(self) -> None:
        """StaleMove when the last move was chosen on a position other than the one before it.

        >>> MovesQuery(moves=("11-15", "9-13"), ply=0).check_not_stale()
        Traceback (most recent call last):
        ...
        tournament.web.inputs.StaleMove: stale move 9-13: chosen at ply 0, but the game had 1 move(s) before it
        """
        if self.ply is not None and self.moves and self.ply != len(self.moves) - 1:
            raise StaleMove(f"stale move {self.moves[-1]}: chosen at ply {self.ply}, but the game had "
                            f"{len(self.moves) - 1} move(s) before it")


@dataclass(frozen=True)
class ProbeQuery:
    """``GET /api/probe``: one position under a rule from a counter."""

    fen: str
    rule: str = DEFAULT_RULE
    counter: int = 0

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> "ProbeQuery":
        fen = parse_text(params.get("fen"), name="fen")
        if fen is None:
            raise BadRequest("probe needs a position: ?fen=...")
        rule = parse_rule(params.get("rule"))
        return cls(fen=fen, rule=rule, counter=parse_counter(params.get("counter"), rule=rule))


@dataclass(frozen=True)
class EngineMoveRequest:
    """``POST /api/engine-move``: the game so far and how the engine should play."""

    strength: str
    fen: str | None = None
    history: tuple[str, ...] = ()
    rule: str = DEFAULT_RULE
    counter: int = 0
    seconds: float = DEFAULT_SECONDS
    game: str = ""
    """The page's id of its game: a cancel names it, and stops only that game's search."""

    @classmethod
    def from_body(cls, body: Mapping[str, object]) -> "EngineMoveRequest":
        rule = parse_rule(body.get("rule"))
        return cls(strength=parse_strength(body.get("strength")), fen=parse_text(body.get("fen"), name="fen"),
                   history=parse_move_list(body.get("history")), rule=rule,
                   counter=parse_counter(body.get("counter"), rule=rule), seconds=parse_seconds(body.get("time")),
                   game=parse_game_id(body.get("game")))


@dataclass(frozen=True)
class EngineCancelRequest:
    """``POST /api/engine-cancel``: stop the search of one game."""

    game: str = ""

    @classmethod
    def from_body(cls, body: Mapping[str, object]) -> "EngineCancelRequest":
        return cls(game=parse_game_id(body.get("game")))


@dataclass(frozen=True)
class AnalysisRequest:
    """``POST /api/analysis``: a position outside the tables, for the ``hard`` engine to search.

    >>> AnalysisRequest.from_body({"fen": "B:W18:B14", "time": 0.5})
    AnalysisRequest(fen='B:W18:B14', rule='wcdf', counter=0, seconds=0.5, game='')
    """

    fen: str | None = None
    """The position (None: the standard start)."""
    rule: str = DEFAULT_RULE
    counter: int = 0
    seconds: float = ANALYSIS_SECONDS
    """How long the search runs."""
    game: str = ""
    """The page's id of this search: a cancel names it."""

    @classmethod
    def from_body(cls, body: Mapping[str, object]) -> "AnalysisRequest":
        rule = parse_rule(body.get("rule"))
        seconds = body.get("time")
        return cls(fen=parse_text(body.get("fen"), name="fen"), rule=rule,
                   counter=parse_counter(body.get("counter"), rule=rule),
                   seconds=ANALYSIS_SECONDS if seconds is None or seconds == "" else parse_seconds(seconds),
                   game=parse_game_id(body.get("game")))
