"""The Hub codec: positions, moves, message fields and limits as Hub text, both ways.

Pure functions, no process and no state: the client
(:mod:`tournament.engines.hub.client`) and the server
(:mod:`tournament.engines.hub.server`) both speak through them.
docs/hub-protocol.md lists the messages.

Positions travel in pydraughts' English encoding: the side to move, then one
letter per square, the board seen from White's side with the colours named as
in international draughts (where White moves first). Moves are in PDN
numbering: ``from-to``, or ``fromxto`` followed by ``x`` and every captured
square.

>>> from egtb import Board
>>> hub_position(Board("B:W18,24,K27:B12,16,K22"))
'WeeeeeBeebeWeeebeweeeweeeeeeeeeee'
>>> parse_hub_position('WeeeeeBeebeWeeebeweeeweeeeeeeeeee').fen()
'B:W18,24,K27:B12,16,K22'
>>> board = Board("B:W18,24,K27:B12,16,K22")
>>> hub_move(board.legal_moves()[0])
'22x15x18'
>>> parse_hub_move("22x15x18", board)
Move.from_pdn('22x15')
"""

from __future__ import annotations

import re

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from egtb.rules.draw_rules import DEFAULT_RULE, DRAW_RULES
from tournament.engines.base import GameState, Limit

if TYPE_CHECKING:  # the board loads the move generator's numba kernels: the functions that make one import it
    from egtb.rules.board import Board, Move

__all__ = [
    "MOVE_RULE_PARAM", "format_info", "hub_move", "hub_position", "level_line", "limit_from_level",
    "move_rule_param", "parse_fields", "parse_hub_move", "parse_hub_position", "parse_rule_fields", "parse_score",
    "parse_pv", "position_line", "quote",
]

MOVE_RULE_PARAM = "move-rule"
"""The ``param`` an engine announces when it reads the move rule and its counter in ``pos``
(``rule=`` and ``counter=``, an extension of ours): a client sends them only to such an engine."""

_TOKEN = re.compile(r'(\S+?)=("[^"]*"|\S*)|(\S+)')


# --- encodings ----------------------------------------------------------------

_HUB_PIECE = {"b": "w", "B": "W", "w": "b", "W": "B"}  # our piece -> pydraughts' hub letter


def hub_position(board: Board) -> str:
    """A position in pydraughts' English hub encoding (33 letters).

    Letter 0: "W" when Black (who starts) is to move, "B" for White. Letter i
    (1-32): the piece on square 33 - i, with "w"/"W" for a black man/king,
    "b"/"B" for a white man/king, "e" for an empty square.

    >>> from egtb import Board
    >>> hub_position(Board())[:5], hub_position(Board())[-4:]
    ('Wbbbb', 'wwww')
    """
    from egtb.rules.board import BLACK
    letters = ["W" if board.turn == BLACK else "B"]
    for i in range(1, 33):
        piece = board.piece_at(33 - i)
        letters.append("e" if piece is None else _HUB_PIECE[piece])
    return "".join(letters)


def parse_hub_position(text: str, *, rule: str = DEFAULT_RULE, quiet_plies: int = 0) -> Board:
    """A Board from a hub position (see :func:`hub_position`) or a PDN FEN (contains ':').

    ``rule`` and ``quiet_plies`` are the move-rule preset and its counter in that position.

    >>> parse_hub_position("B:W18:B14").fen()
    'B:W18:B14'
    >>> parse_hub_position("B:WK18:BK14", rule="crowning", quiet_plies=9).quiet_plies
    9
    """
    from egtb.rules.board import Board
    text = text.strip().strip('"')
    if ":" in text:
        return Board(text, rule=rule, quiet_plies=quiet_plies)
    if len(text) != 33 or text[0] not in "WB" or any(c not in "wbWBe" for c in text[1:]):
        raise ValueError(f"bad hub position {text!r}: want W or B then 32 letters from w, b, W, B, e")
    squares: dict[str, list[str]] = {"B": [], "W": []}
    for i, letter in enumerate(text[1:], start=1):
        if letter == "e":
            continue
        ours = _HUB_PIECE[letter]  # the mapping is its own inverse
        colour = "B" if ours.lower() == "b" else "W"
        squares[colour].append(("K" if ours.isupper() else "") + str(33 - i))
    turn = "B" if text[0] == "W" else "W"
    return Board(f"{turn}:W{','.join(squares['W'])}:B{','.join(squares['B'])}", rule=rule, quiet_plies=quiet_plies)


def hub_move(move: Move) -> str:
    """A move in hub notation: "11-15", or "22x15x18" (from, to, then the captured squares).

    >>> from egtb import Move
    >>> hub_move(Move((9, 18, 27), captured=frozenset({14, 23})))
    '9x27x14x23'
    """
    if not move.captured:
        return f"{move.start}-{move.end}"
    return "x".join(str(s) for s in (move.start, move.end, *sorted(move.captured)))


def parse_hub_move(text: str, board: Board) -> Move:
    """The legal move of ``board`` written in hub notation (or as a PDN path); ValueError if none.

    >>> from egtb import Board
    >>> parse_hub_move("11-15", Board())
    Move.from_pdn('11-15')
    """
    from egtb.rules.board import Move
    text = text.strip().strip('"')
    separator = "x" if "x" in text else "-"
    try:
        squares = [int(part) for part in text.split(separator)]
    except ValueError:
        raise ValueError(f"move {text!r} is not hub notation (like 11-15 or 22x15x18)") from None
    if len(squares) < 2 or any(not 1 <= s <= 32 for s in squares):
        raise ValueError(f"move {text!r} is not hub notation (like 11-15 or 22x15x18)")
    start, end, captured = squares[0], squares[1], frozenset(squares[2:])
    capture = separator == "x"
    matches = [m for m in board.legal_moves() if m.start == start and m.end == end
               and m.is_capture == capture and (not captured or m.captured == captured)]
    if len(matches) == 1:
        return matches[0]
    if not matches and capture and len(squares) > 2:
        return Move.from_pdn(text, board)  # a full PDN path "9x18x27"
    if matches:
        raise ValueError(f"move {text!r} is ambiguous in {board.fen()}: {', '.join(map(hub_move, matches))}")
    raise ValueError(f"move {text!r} is not legal in {board.fen()}")


def position_line(state: GameState, *, move_rule: bool = False) -> str:
    """The ``pos`` command of a game: its start, the moves played since, and with ``move_rule`` the
    preset and the counter at the start (``rule=``, ``counter=``: only for an engine that announced
    :data:`MOVE_RULE_PARAM`).

    >>> position_line(GameState("B:W18:B14", ("14x23",)))
    'pos pos=Weeeeeeeeeeeeeebeeeweeeeeeeeeeeee moves="14x23x18"'
    >>> position_line(GameState("B:WK18:BK14", rule="crowning", start_quiet_plies=7), move_rule=True)
    'pos pos=WeeeeeeeeeeeeeeBeeeWeeeeeeeeeeeee rule=crowning counter=7'
    """
    from egtb.rules.board import Board
    board = Board(state.start_fen, rule=state.rule)
    line = f"pos pos={hub_position(board)}"
    moves = [hub_move(board.push_pdn(text)) for text in state.moves]
    if moves:
        line += f' moves="{" ".join(moves)}"'
    if move_rule:
        line += f" rule={state.rule} counter={state.start_quiet_plies}"
    return line


def move_rule_param(rule: str = DEFAULT_RULE) -> str:
    """The ``param`` line announcing that the engine reads ``rule=`` and ``counter=`` in ``pos``.

    >>> move_rule_param()
    'param name=move-rule value=wcdf type=enum values="wcdf crowning forty-plies"'
    """
    return f'param name={MOVE_RULE_PARAM} value={rule} type=enum values="{" ".join(DRAW_RULES)}"'


def parse_rule_fields(fields: Mapping[str, str], *, default_rule: str) -> tuple[str, int]:
    """The preset and counter of a ``pos`` command's fields (``rule=``, ``counter=``); ValueError when bad.

    >>> parse_rule_fields({"rule": "crowning", "counter": "7"}, default_rule="wcdf")
    ('crowning', 7)
    >>> parse_rule_fields({}, default_rule="forty-plies")
    ('forty-plies', 0)
    """
    rule = fields.get("rule", default_rule)
    if rule not in DRAW_RULES:
        raise ValueError(f"unknown move rule {rule!r}; choose from {', '.join(DRAW_RULES)}")
    text = fields.get("counter", "0")
    if not text.isdigit():
        raise ValueError(f"counter={text!r} is not a whole number of plies")
    return rule, int(text)


def parse_fields(text: str) -> dict[str, str]:
    """``name=x value="a b" flag`` -> {"name": "x", "value": "a b", "flag": ""}.

    >>> parse_fields('pos pos=Wbe moves="11-15 22-18"')
    {'pos': 'Wbe', 'moves': '11-15 22-18'}
    """
    fields: dict[str, str] = {}
    for match in _TOKEN.finditer(text):
        key, value, bare = match.groups()
        if bare is not None:
            fields.setdefault(bare, "")
        else:
            fields[key] = value.strip('"')
    return fields


def quote(value: object) -> str:
    """A field value as Hub writes it: quoted when it holds a space.

    >>> quote("a b"), quote(64)
    ('"a b"', '64')
    """
    return f'"{value}"' if " " in str(value) else str(value)


def level_line(limit: Limit) -> str:
    """The ``level`` command for a Limit ("" for no limit).

    >>> level_line(Limit(clock=10.1, increment=0.1)), level_line(Limit(time=0.5))
    ('level time=10 inc=0.1', 'level move-time=0.5')
    """
    if limit.clock is not None:
        # as pydraughts sends it: the engine adds the increment itself
        moves = f"moves={limit.moves} " if limit.moves else ""
        return f"level {moves}time={limit.clock - limit.increment:g} inc={limit.increment:g}"
    if limit.time is not None:
        return f"level move-time={limit.time:g}"
    if limit.depth is not None:
        return f"level depth={limit.depth}"
    if limit.nodes is not None:
        return f"level nodes={limit.nodes}"
    return ""


def limit_from_level(fields: dict[str, str]) -> Limit:
    """A Limit from the fields of a ``level`` command (the inverse of :func:`level_line`).

    >>> limit_from_level(parse_fields("time=10 inc=0.1"))
    Limit(time=None, clock=10.1, increment=0.1, depth=None, nodes=None, moves=None)
    """
    if "infinite" in fields:
        return Limit()
    inc = float(fields.get("inc", 0) or 0)
    return Limit(
        time=float(fields["move-time"]) if "move-time" in fields else None,
        clock=float(fields["time"]) + inc if "time" in fields else None,
        increment=inc,
        depth=int(fields["depth"]) if "depth" in fields else None,
        nodes=int(fields["nodes"]) if "nodes" in fields else None,
        moves=int(fields["moves"]) if fields.get("moves") else None,
    )


def format_info(score: int | None, depth: int = 0, *, nodes: int = 0, source: str = "",
                pv: Sequence[str] = ()) -> str:
    """The ``info`` line of a search: depth, score in hundredths of a man (Hub sends men, as Scan does),
    nodes, ``pv``, the principal variation (hub moves, as Scan sends it), and ``source``, where the move
    came from (an extension of ours: ``tables``, ``search``, ``forced``, ``fallback``); "" when there is
    nothing to say. Fields without a value are left out.

    >>> format_info(-125, 6), format_info(None, source="tables"), format_info(None)
    ('info depth=6 score=-1.25', 'info source=tables', '')
    >>> format_info(5, 2, pv=["11-15", "22x15x18"])
    'info depth=2 score=0.05 pv="11-15 22x15x18"'
    """
    fields = [f"depth={depth}" if depth else "", "" if score is None else f"score={score / 100:.2f}",
              f"nodes={nodes}" if nodes else "", f'pv="{" ".join(pv)}"' if pv else "",
              f"source={quote(source)}" if source else ""]
    text = " ".join(field for field in fields if field)
    return f"info {text}" if text else ""


def parse_score(fields: dict[str, str]) -> int | None:
    """The ``score`` of an ``info`` line's fields in hundredths of a man, None when absent or garbled.

    >>> parse_score(parse_fields("depth=6 score=-1.25")), parse_score({})
    (-125, None)
    """
    try:
        return round(float(fields["score"]) * 100)
    except (KeyError, ValueError):
        return None


def parse_pv(text: str, board: Board) -> list[Move]:
    """The moves of an ``info`` line's ``pv`` (hub moves, or PDN paths) from ``board``, as far as they are
    legal: an engine's line is shown, never trusted.

    >>> from egtb import Board
    >>> [str(m) for m in parse_pv("9x27x14x23 11-15", Board("B:W14,23:B9"))]
    ['9x18x27']
    """
    replay = board.copy()
    moves: list[Move] = []
    for part in text.split():
        if replay.is_game_over():
            break
        try:
            move = parse_hub_move(part, replay)
        except ValueError:
            break
        replay.push(move)
        moves.append(move)
    return moves
