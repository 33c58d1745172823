"""PDN 3.0 games of English draughts: read and write.

A game is its tags, the start position, the moves as PDN text and the result.
Results follow CheckerBoard: "1-0" means Black (who moves first) won, "0-1"
White, "1/2-1/2" a draw and "*" an unfinished game. ``[GameType "21"]`` marks
English draughts; a ``[FEN "..."]`` tag with ``[SetUp "1"]`` gives a start that
is not the standard one.

>>> game = Game(headers={"Event": "Demo"}, moves=["11-15", "23-19"], result="*")
>>> print(write_game(game))
[Event "Demo"]
[GameType "21"]
[Result "*"]
<BLANKLINE>
1. 11-15 23-19 *
<BLANKLINE>
>>> read_games(write_game(game)) == [game]
True
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import IO, Iterator

from egtb.errors import IllegalMoveError, InvalidArgumentError, InvalidFenError, PdnError
from egtb.rules.board import BLACK, DEFAULT_RULE, Board
from egtb.rules.notation import START_FEN, format_fen, parse_fen

__all__ = ["Game", "PdnError", "RESULTS", "game_from_board", "read_games", "write_game"]


#: Results a game may end with, as written by us.
RESULTS = ("1-0", "0-1", "1/2-1/2", "*")
#: Result spellings of other programs (PDN 3.0 draughts scoring) mapped to ours.
_RESULT_ALIASES = {"2-0": "1-0", "0-2": "0-1", "1-1": "1/2-1/2", "0-0": "*"}
#: Tags this module writes itself from the Game's fields.
_STRUCTURAL_TAGS = ("GameType", "FEN", "SetUp", "Result")
#: The usual order of the leading tags (PDN's seven-tag roster).
_ROSTER = ("Event", "Site", "Date", "Round", "Black", "White")
GAME_TYPE = "21"
LINE_WIDTH = 79

_TOKEN = re.compile(
    r"""
      (?P<tag>\[\s*(?P<name>[A-Za-z0-9_]+)\s+"(?P<value>(?:[^"\\]|\\.)*)"\s*\])
    | (?P<comment>\{[^}]*\})
    | (?P<line_comment>;[^\n]*)
    | (?P<escape>^%[^\n]*)
    | (?P<result>(?:1/2-1/2|1-0|0-1|2-0|0-2|1-1|0-0|\*)(?![\w/-]))
    | (?P<number>[0-9]+\s*\.(?:\s*\.\.|\.\.)?)
    | (?P<move>[0-9]+(?:[-x:][0-9]+)+)[!?]*
    | (?P<nag>\$[0-9]+)
    | (?P<open>\()
    | (?P<close>\))
    | (?P<space>\s+)
    | (?P<other>\S+)
    """,
    re.VERBOSE | re.MULTILINE,
)


@dataclass
class Game:
    """One game of English draughts as recorded in PDN.

    >>> Game(moves=["11-15"]).board().fen()
    'W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15'
    """

    headers: dict[str, str] = field(default_factory=dict)
    """Tag pairs other than GameType, FEN, SetUp and Result (kept in their order)."""
    fen: str = START_FEN
    """FEN of the start position."""
    moves: list[str] = field(default_factory=list)
    """The moves in PDN notation ("11-15", "9x18x27"), Black's and White's in turn."""
    result: str = "*"
    """"1-0" (Black won), "0-1" (White won), "1/2-1/2" or "*"."""
    line: int = field(default=0, compare=False, repr=False)
    """Line (1-based) where the game starts in the text it was read from (0: not read)."""
    comments: list[str] = field(default_factory=list, compare=False, repr=False)
    """Comment written after each move (``""``: none), e.g. ``"[%clock 0:00:59.5]"``; not read back."""

    def name(self) -> str:
        """A short description for messages: event, round and players when known.

        >>> Game(headers={"Black": "A", "White": "B"}).name()
        'game A vs B'
        """
        parts = [self.headers[tag] for tag in ("Event", "Round") if self.headers.get(tag, "?") != "?"]
        players = [self.headers.get(tag, "?") for tag in ("Black", "White")]
        if players != ["?", "?"]:
            parts.append(" vs ".join(players))
        return "game " + (", ".join(parts) if parts else "without tags")

    def board(self, *, rule: str = DEFAULT_RULE) -> Board:
        """A Board at the end of the game, its moves replayed from the start position.

        Raises IllegalMoveError (a ValueError) naming the game and the move number on an illegal move.

        >>> Game(moves=["11-15", "11-16"]).board()
        Traceback (most recent call last):
        ...
        egtb.errors.IllegalMoveError: game without tags: move 1... 11-16 is illegal: move '11-16' is not legal in W:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,12,15
        """
        try:
            board = Board(self.fen, rule=rule)
        except ValueError as exc:
            raise InvalidFenError(f"{self.name()}: bad start position: {exc}") from None
        for text in self.moves:
            label = _move_label(board)
            try:
                board.push_pdn(text)
            except ValueError as exc:
                raise IllegalMoveError(f"{self.name()}: move {label} {text} is illegal: {exc}") from None
        return board


def _move_label(board: Board) -> str:
    """The PDN move number of the next move: "3." for Black, "3..." for White."""
    number = len(board.move_stack) // 2 + 1
    if parse_fen(board.start_fen).turn != BLACK:
        number = (len(board.move_stack) + 1) // 2 + 1
    return f"{number}." if board.turn == BLACK else f"{number}..."


def game_from_board(board: Board, *, headers: dict[str, str] | None = None, result: str | None = None) -> Game:
    """The Game played on board: its start position and move stack.

    ``result`` defaults to the board's outcome ("*" while the game goes on).

    >>> board = Board("B:W6:BK1")
    >>> board.push_pdn("1x10")
    Move.from_pdn('1x10')
    >>> game_from_board(board, headers={"Event": "x"}).result
    '1-0'
    """
    if result is None:
        outcome = board.outcome()
        result = outcome.result() if outcome is not None else "*"
    _check_result(result)
    return Game(headers=dict(headers or {}), fen=board.start_fen,
                moves=[str(move) for move in board.move_stack], result=result)


def _check_result(result: str) -> None:
    if result not in RESULTS:
        raise InvalidArgumentError(f"unknown result {result!r}; expected one of {', '.join(RESULTS)}")


# --- writing ----------------------------------------------------------------


def write_game(game: Game) -> str:
    """The PDN text of a game: tags, a blank line, the movetext (with the moves' comments), a blank line.

    >>> print(write_game(Game(fen="W:W18:B14", moves=["18x9"], result="0-1")))
    [GameType "21"]
    [FEN "W:W18:B14"]
    [SetUp "1"]
    [Result "0-1"]
    <BLANKLINE>
    1... 18x9 0-1
    <BLANKLINE>
    """
    _check_result(game.result)
    tags = "".join(f'[{name} "{_escape(value)}"]\n' for name, value in _tags_to_write(game))
    return f"{tags}\n{_wrap(_movetext_tokens(game))}\n"


def _tags_to_write(game: Game) -> list[tuple[str, str]]:
    """Tag pairs in writing order: the roster, the others, then the structural tags."""
    extra = [name for name in game.headers if name not in _STRUCTURAL_TAGS]
    ordered = [name for name in _ROSTER if name in game.headers]
    ordered += [name for name in extra if name not in _ROSTER]
    tags = [(name, game.headers[name]) for name in ordered]
    tags.append(("GameType", GAME_TYPE))
    fen = format_fen(parse_fen(game.fen))
    if fen != START_FEN:
        tags += [("FEN", fen), ("SetUp", "1")]
    tags.append(("Result", game.result))
    return tags


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _movetext_tokens(game: Game) -> Iterator[str]:
    """Move numbers, moves and the result, as separate tokens."""
    turn = parse_fen(game.fen).turn
    number = 1
    for index, move in enumerate(game.moves):
        if turn == BLACK:
            yield f"{number}."
        elif index == 0:
            yield f"{number}..."
        yield move
        if index < len(game.comments) and game.comments[index]:
            yield "{" + game.comments[index].replace("}", ")") + "}"
        if turn != BLACK:
            number += 1
        turn = 1 - turn
    yield game.result


def _wrap(tokens: Iterator[str]) -> str:
    """Tokens joined by spaces into lines of at most LINE_WIDTH characters."""
    lines: list[str] = []
    line = ""
    for token in tokens:
        if line and len(line) + 1 + len(token) > LINE_WIDTH:
            lines.append(line)
            line = token
        else:
            line = f"{line} {token}" if line else token
    lines.append(line)
    return "\n".join(lines)


# --- reading ----------------------------------------------------------------


def read_games(source: str | os.PathLike | IO[str]) -> list[Game]:
    """Every game in PDN text, a file object, or a file named by a Path.

    Comments ``{...}``, variations ``(...)``, NAGs and move marks are skipped.
    Raises :class:`PdnError` (a ValueError) for text that is not PDN or a game of
    another variant, naming the line (and the file, ``FILE:LINE: ...``, for a path).

    >>> games = read_games('[Event "e"]\\n1. 11-15 {good} 23-19 1/2-1/2\\n\\n1. 9-13 *')
    >>> [(g.headers, g.moves, g.result) for g in games]
    [({'Event': 'e'}, ['11-15', '23-19'], '1/2-1/2'), ({}, ['9-13'], '*')]
    """
    text = _read_text(source)
    games: list[Game] = []
    reader = _GameReader()
    try:
        for match in _TOKEN.finditer(text):
            game = reader.feed(match, text)
            if game is not None:
                games.append(game)
        last = reader.finish()
    except PdnError as exc:
        if not isinstance(source, os.PathLike):
            raise
        raise PdnError(str(exc.args[0]).removeprefix("PDN: ").rsplit(" at line ", 1)[0], line=exc.line,
                       source=os.fspath(source)) from None
    if last is not None:
        games.append(last)
    return games


def _read_text(source: str | os.PathLike | IO[str]) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, os.PathLike):
        with open(source, encoding="utf-8") as handle:
            return handle.read()
    return source.read()


class _GameReader:
    """Collects tokens into games; feed() returns a game when one is complete."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.tags: dict[str, str] = {}
        self.moves: list[str] = []
        self.depth = 0  # nesting of variations being skipped
        self.started = False
        self.line = 0  # line of the game's first tag or move
        self.current = 0  # line of the token being read

    def feed(self, match: re.Match, text: str) -> Game | None:
        kind = match.lastgroup
        if kind in ("space", "comment", "line_comment", "escape", "nag", "number"):
            return None
        self.current = _line_of(text, match.start())
        if not self.started and kind in ("tag", "move"):
            self.line = self.current
        if kind in ("open", "close"):
            self.depth += 1 if kind == "open" else -1
            if self.depth < 0:
                raise PdnError("unbalanced ')'", line=_line_of(text, match.start()))
            return None
        if self.depth:
            return None
        if kind == "tag":
            return self._tag(match)
        if kind == "move":
            self.moves.append(match.group("move").replace(":", "x"))
            self.started = True
            return None
        if kind == "result":
            return self._finish_with(_RESULT_ALIASES.get(match.group(), match.group()))
        foreign = any(c.isdigit() and not c.isascii() for c in match.group())
        raise PdnError(f"cannot read {match.group()!r}"
                       + (": square and move numbers are written with the digits 0-9" if foreign else ""),
                       line=_line_of(text, match.start()))

    def _tag(self, match: re.Match) -> Game | None:
        line = self.current
        finished = self._finish_with(None) if self.moves else None
        if finished is not None:
            self.line = self.current = line
        name = match.group("name")
        self.tags[name] = re.sub(r"\\(.)", r"\1", match.group("value"))
        self.started = True
        return finished

    def _finish_with(self, result: str | None) -> Game:
        tags = self.tags
        if tags.get("GameType", GAME_TYPE).split(",")[0].strip() != GAME_TYPE:
            raise PdnError(f"GameType {tags['GameType']!r} is not English draughts ({GAME_TYPE})", line=self.line)
        if result is None:
            result = _RESULT_ALIASES.get(tags.get("Result", "*"), tags.get("Result", "*"))
        if result not in RESULTS:
            result = "*"
        try:
            fen = format_fen(parse_fen(tags["FEN"])) if "FEN" in tags else START_FEN
        except ValueError as exc:
            raise PdnError(f"bad FEN tag: {exc}", line=self.line) from None
        headers = {name: value for name, value in tags.items() if name not in _STRUCTURAL_TAGS}
        moves, line = self.moves, self.line
        self._reset()
        return Game(headers=headers, fen=fen, moves=moves, result=result, line=line)

    def finish(self) -> Game | None:
        """The last game when the text ends without a result token."""
        if not self.started:
            return None
        return self._finish_with(None)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1
