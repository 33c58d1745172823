"""Review a game with the endgame tables: where it entered them, and every move that threw a result away.

Each position of the game is probed under the game's move rule and counter (the
counter the moves themselves leave: a quiet ply adds one, a zeroing ply resets
it), so a win the 40-move rule has already turned into a draw is a draw here.
A move is a mistake when the value for its mover after it is worse than the
value before it: a win given up (to a draw or a loss) or a draw given up (to a
loss). The tables' best move (:func:`egtb.probe.moves.best_moves`,
best first) is named instead. A table file without the rule's layer is used
rule-free for that position, and the review says so. Repetition is not a table
concept: a game the tables call won may still be drawn by it.

>>> from egtb.probe.tablebase import Tablebase
>>> from egtb.rules.pdn import Game
>>> review = review_game(Game(moves=["11-15", "23-19"]), Tablebase("/nonexistent"))
>>> review.entered is None, review.mistakes
(True, ())
>>> with Tablebase("tables") as tb:                         # doctest: +SKIP
...     print(format_review(review_game(Game(fen="W:WK10,K14:BK1", moves=["10-6"]), tb)))
game without tags (*): entered the tables at ply 0 (3 pieces, White to move: White wins)
  ply 1, 1... 10-6 (White) threw away a win: win -> loss; best 14-9
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from egtb.errors import MissingTableError
from egtb.formats.values import Wdl
from egtb.probe.moves import best_moves, probe_position
from egtb.probe.tablebase import ProbeResult, Tablebase
from egtb.rules.board import BLACK, DEFAULT_RULE, Board
from egtb.rules.notation import parse_fen
from egtb.rules.pdn import Game, read_games
from tournament.result import color_name

__all__ = ["GameReview", "Mistake", "format_review", "open_tables", "read_pdn", "review_file", "review_game",
           "review_games", "review_to_json"]

@dataclass(frozen=True)
class Mistake:
    """A move that left its mover a worse value than the position had before it."""

    ply: int
    """The move's place in the game, 1 for the first move."""
    label: str
    """Its PDN move number: "12." for Black, "12..." for White."""
    move: str
    """The move as the game recorded it."""
    mover: str
    """'Black' or 'White'."""
    before: str
    """'win' or 'draw': the mover's value before the move, under the rule from ``counter``."""
    after: str
    """'draw' or 'loss': the mover's value after it."""
    best: str
    """The tables' best move instead (keeps ``before``)."""
    counter: int
    """The move rule's counter before the move."""
    fen: str
    """The position before the move."""
    rule_free: bool = False
    """Whether the rule layer was missing, so the values ignore the move rule."""

    @property
    def kind(self) -> str:
        """'threw away a win' or 'threw away a draw'."""
        return f"threw away a {self.before}"


@dataclass(frozen=True)
class GameReview:
    """What the tables say about one game."""

    name: str
    """The game's short description (event, round, players)."""
    result: str
    """The game's recorded result ("1-0": Black won)."""
    rule: str
    """The move-rule preset the positions were probed under."""
    plies: int
    """Moves in the game."""
    entered: int | None
    """Plies played when the game first reached a position the tables hold (0: its start), None if never."""
    entered_fen: str | None = None
    """That position."""
    entered_value: str | None = None
    """Its value for the side to move there ('win', 'draw' or 'loss'), under the rule."""
    mistakes: tuple[Mistake, ...] = ()
    """Every move that threw away a win or a draw, in the order played."""
    rule_free_plies: int = 0
    """Positions judged without the rule (their table file has no layer for it)."""

    @property
    def entered_side(self) -> str | None:
        """'Black' or 'White': who was to move when the game entered the tables."""
        return None if self.entered_fen is None else color_name(parse_fen(self.entered_fen).turn)


def read_pdn(path: str | os.PathLike) -> list[Game]:
    """The games of a PDN file; ValueError naming the file when it is missing, unreadable, not PDN or empty.

    >>> read_pdn("/nonexistent.pdn")
    Traceback (most recent call last):
    ...
    ValueError: /nonexistent.pdn: no such PDN file
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such PDN file")
    try:
        games = read_games(path)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a PDN text file ({exc.reason})") from None
    if not games:
        raise ValueError(f"{path}: no games in this PDN file")
    return games


def review_game(game: Game, tablebase: Tablebase, *, rule: str = DEFAULT_RULE, counter: int = 0) -> GameReview:
    """Review one game: where it entered the tables and every move that threw away a win or a draw.

    ``tablebase`` is an egtb Tablebase; ``counter`` the move rule's counter at the game's start (a
    PDN game starts at 0). An illegal move raises IllegalMoveError (a ValueError) naming the game
    and the move number. The review stops where the game is over by the rules.
    """
    game.board(rule=rule)  # replays every move once: an illegal one is named here
    board = Board(game.fen, rule=rule, quiet_plies=counter)
    values = [_value(tablebase, board)]  # the side to move's value of each position reached
    playing = [not board.is_game_over()]  # whether the game goes on there (a finished one needs no table)
    mistakes: list[Mistake] = []
    for ply, text in enumerate(game.moves, start=1):
        if board.is_game_over():
            break
        label, counter, fen, mover = _move_label(board), board.quiet_plies, board.fen(), board.turn
        board.push_pdn(text)
        before, after = values[-1], _value(tablebase, board)
        values.append(after)
        playing.append(not board.is_game_over())
        if before is not None and after is not None and -after[0] < before[0]:
            best = _best_move(tablebase, fen, rule, counter, rule_free=before[1])
            mistakes.append(Mistake(ply, label, text, color_name(mover), str(Wdl(before[0])),
                                    str(Wdl(-after[0])), best, counter, fen, before[1] or after[1]))
    entered = next((ply for ply, value in enumerate(values) if value is not None and playing[ply]), None)
    entered_fen = entered_value = None
    if entered is not None:
        entered_fen = Game(fen=game.fen, moves=game.moves[:entered]).board(rule=rule).fen()
        entered_value = str(Wdl(values[entered][0]))
    return GameReview(game.name(), game.result, rule, len(game.moves), entered, entered_fen, entered_value,
                      tuple(mistakes), sum(value[1] for value in values if value is not None))


def review_games(games: Iterable[Game], tablebase: Tablebase, *, rule: str = DEFAULT_RULE) -> list[GameReview]:
    """:func:`review_game` of each game."""
    return [review_game(game, tablebase, rule=rule) for game in games]


def review_file(path: str | os.PathLike, tablebase: Tablebase, *, rule: str = DEFAULT_RULE) -> list[GameReview]:
    """:func:`review_game` of each game of a PDN file; ValueError naming the file (and the game's
    line, ``FILE:LINE: ...``) for a missing file, text that is not PDN or an illegal move."""
    reviews = []
    for game in read_pdn(path):
        try:
            reviews.append(review_game(game, tablebase, rule=rule))
        except ValueError as exc:
            raise ValueError(f"{path}:{game.line}: {exc}") from None
    return reviews


def open_tables(directory: str | os.PathLike | None) -> Tablebase:
    """The Tablebase of a directory (None: $EGTB_DIR or data/egtb); ValueError when the directory
    is missing or holds no table.

    >>> open_tables("/nonexistent")
    Traceback (most recent call last):
    ...
    ValueError: table directory /nonexistent does not exist (--tables)
    """
    tablebase = Tablebase(directory)
    if not tablebase.directory.is_dir():
        raise ValueError(f"table directory {tablebase.directory} does not exist (--tables)")
    if not tablebase.materials():
        raise ValueError(f"table directory {tablebase.directory} holds no tables (--tables)")
    return tablebase


def _value(tablebase: Tablebase, board: Board) -> tuple[int, bool] | None:
    """The side to move's value (+1, 0, -1) under the board's rule and counter, and whether it had
    to be taken rule-free (:func:`egtb.probe.moves.probe_position`); None where the tables do not
    hold the position."""
    try:
        result = probe_position(tablebase, board)
    except MissingTableError:
        return None
    return _outcome(result), result.rule is None


def _outcome(result: ProbeResult) -> int:
    """+1, 0 or -1 from a probe's answer: its outcome under the rule, else its rule-free value."""
    return int(result.value if result.outcome is None else result.outcome)


def _best_move(tablebase: Tablebase, fen: str, rule: str, counter: int, *, rule_free: bool) -> str:
    """The tables' first-ranked move of the position (the one that keeps its value)."""
    board = Board(fen, rule=rule, quiet_plies=counter)
    ranking = best_moves(tablebase, board, rule_free=rule_free, partial=True)
    return str(ranking.moves[0].move) if ranking.moves else ""


def _move_label(board: Board) -> str:
    """The PDN number of the next move of ``board``: "3." for Black, "3..." for White.

    >>> board = Board("W:W18:B14")
    >>> _move_label(board)
    '1...'
    """
    first_black = parse_fen(board.start_fen).turn == BLACK
    number = (len(board.move_stack) + (0 if first_black else 1)) // 2 + 1
    return f"{number}." if board.turn == BLACK else f"{number}..."


# --- output -------------------------------------------------------------------


def format_review(review: GameReview) -> str:
    """A game's review as text: one line for where it entered the tables, one per mistake.

    >>> print(format_review(GameReview("game A vs B", "1-0", "wcdf", 40, None)))
    game A vs B (1-0): never entered the tables (40 plies)
    """
    head = f"{review.name} ({review.result}): "
    if review.entered is None:
        return head + f"never entered the tables ({_plies(review.plies)})"
    pieces = _pieces(review.entered_fen)
    lines = [head + f"entered the tables at ply {review.entered} ({pieces} pieces, {review.entered_side} to move: "
             + _verdict(review.entered_value, review.entered_side) + ")"]
    for mistake in review.mistakes:
        note = " (rule-free: no rule layer)" if mistake.rule_free else ""
        lines.append(f"  ply {mistake.ply}, {mistake.label} {mistake.move} ({mistake.mover}) {mistake.kind}: "
                     f"{mistake.before} -> {mistake.after}; best {mistake.best}{note}")
    if not review.mistakes:
        lines.append("  no move threw away a win or a draw")
    if review.rule_free_plies:
        lines.append(f"  {review.rule_free_plies} positions judged without the {review.rule} rule "
                     "(their tables have no layer for it)")
    return "\n".join(lines)


def _verdict(value: str | None, side: str | None) -> str:
    """'White wins', 'Black wins' or 'draw', from the value of the side to move."""
    if value == "draw" or side is None:
        return "draw"
    other = "White" if side == "Black" else "Black"
    return f"{side if value == 'win' else other} wins"


def _plies(count: int) -> str:
    return f"{count} ply" if count == 1 else f"{count} plies"


def _pieces(fen: str | None) -> int:
    return 0 if fen is None else Board(fen).piece_count()


def review_to_json(reviews: Sequence[GameReview]) -> list[dict]:
    """The reviews as JSON-ready dicts (each mistake with its ``kind``).

    >>> review_to_json([GameReview("g", "*", "wcdf", 0, None)])[0]["mistakes"]
    []
    """
    out = []
    for review in reviews:
        record = asdict(review)
        record["mistakes"] = [{**asdict(m), "kind": m.kind} for m in review.mistakes]
        out.append(record)
    return out
