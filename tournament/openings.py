"""Opening suites: the balloted openings of English draughts and user opening files.

Tournaments play each opening twice with colours reversed. The suites shipped in
``tournament/data/openings/`` (package data) are the traditional ballots:

- ``"3-move"``: the ACF three-move deck, 156 openings (ACF numbers 1-174; the 18
  others are barred as unsound and live in ``3move_barred.txt``).
- ``"2-move"``: the two-move restriction, 43 openings (49 two-move sequences exist;
  6 are barred and live in ``2move_barred.txt``).

Each data line reads ``number | moves | name | FEN``, for example::

    005 | 9-13 22-18 6-9 | Dreaded Edinburgh | W:W18,21,...:B1,2,...

Example:
    >>> deck = load_ballots("3-move")
    >>> len(deck), deck[0].moves
    (156, ('9-13', '21-17', '5-9'))
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from importlib import resources
from collections.abc import Sequence
from pathlib import Path

from egtb.errors import PdnError

# The rules' notation and PDN reader load the numba kernels: the functions that read openings import
# them, so that ``tournament run --help`` (OPENING_ORDERS) and a run's settings (Opening) do not.

__all__ = [
    "BALLOT_KINDS",
    "OPENING_ORDERS",
    "order_openings",
    "DATA_DIR",
    "Opening",
    "is_valid_fen",
    "is_valid_move",
    "load_ballots",
    "load_openings_file",
]

DATA_DIR = Path(str(resources.files("tournament").joinpath("data", "openings")))
"""Directory holding the shipped ballot files."""

BALLOT_KINDS: dict[str, tuple[str, str]] = {
    "3-move": ("3move.txt", "3move_barred.txt"),
    "2-move": ("2move.txt", "2move_barred.txt"),
}
"""Ballot kind -> (file of the playable deck, file of the barred openings)."""

_TAG_RE = re.compile(r'^\[\s*(\w+)\s+"([^"]*)"\s*\]$')


@dataclass(frozen=True)
class Opening:
    """A start position for a game: moves from the initial position, a FEN, or both."""

    name: str
    """Human-readable label, e.g. ``"ACF 005 Dreaded Edinburgh"``."""
    moves: tuple[str, ...] = ()
    """Moves from the standard start in PDN notation (Black first), e.g. ``("9-14", "22-17")``."""
    fen: str | None = None
    """PDN FEN of the position to start from (after ``moves`` when both are given)."""
    number: int | None = None
    """Ballot number (ACF number for 3-move ballots), None for user openings."""
    barred: bool = False
    """True for ballots barred from the tournament deck."""


def is_valid_move(text: str) -> bool:
    """Tell whether ``text`` is a well-formed PDN move on squares 1-32.

    >>> is_valid_move("11-15"), is_valid_move("9x18x27"), is_valid_move("33-29")
    (True, True, False)
    """
    from egtb.rules.notation import is_move_text
    return is_move_text(text)


def is_valid_fen(text: str) -> bool:
    """Tell whether ``text`` is a PDN FEN the rules core accepts as a position.

    >>> is_valid_fen("B:W18,24,K27:B12,16,K22"), is_valid_fen("B:W18:W19")
    (True, False)
    """
    from egtb.rules.notation import parse_fen
    try:
        parse_fen(text)
    except ValueError:
        return False
    return True


def load_ballots(
    kind: str = "3-move", *, include_barred: bool = False, directory: Path | str | None = None
) -> list[Opening]:
    """Load a shipped ballot deck, in ballot-number order.

    Args:
        kind: ``"3-move"`` (ACF deck, 156 openings) or ``"2-move"`` (43 openings).
        include_barred: also return the barred openings (18 and 6), flagged ``barred``.
        directory: read the files from here instead of ``tournament/data/openings/`` (package data).

    >>> len(load_ballots("2-move")), len(load_ballots("2-move", include_barred=True))
    (43, 49)
    """
    if kind not in BALLOT_KINDS:
        raise ValueError(f"unknown ballot kind {kind!r}; expected one of {sorted(BALLOT_KINDS)}")
    folder = Path(directory) if directory is not None else DATA_DIR
    deck_file, barred_file = BALLOT_KINDS[kind]
    openings = _read_ballot_file(folder / deck_file, barred=False)
    if include_barred:
        openings += _read_ballot_file(folder / barred_file, barred=True)
        openings.sort(key=lambda o: o.number or 0)
    return openings


def _read_ballot_file(path: Path, *, barred: bool) -> list[Opening]:
    """Parse one ``number | moves | name | FEN`` ballot file."""
    openings = []
    for lineno, line in _content_lines(path):
        fields = [f.strip() for f in line.split("|")]
        if len(fields) != 4 or not fields[0].isdigit():
            raise ValueError(f"{path}:{lineno}: expected 'number | moves | name | FEN', got {line!r}")
        number, moves_text, name, fen = fields
        moves = tuple(moves_text.split())
        _check_moves(moves, path, lineno)
        if not is_valid_fen(fen):
            raise ValueError(f"{path}:{lineno}: malformed FEN {fen!r}")
        label = f"ACF {int(number):03d}" if len(number) == 3 else f"2-move {int(number):02d}"
        full_name = f"{label} {name}" if name else label
        openings.append(Opening(full_name, moves, fen, number=int(number), barred=barred))
    return openings


OPENING_ORDERS = ("sequential", "random")
"""How a run walks its opening suite."""


def order_openings(openings: Sequence[Opening], *, order: str = "sequential", start: int = 1,
                   seed: int = 0) -> list[Opening]:
    """The suite in playing order: from opening ``start`` (1-based, wrapping round), or shuffled by ``seed``.

    As cutechess-cli's ``-openings order=random start=N``: the shuffle is fixed by the run
    seed, so a resumed run plays the same order; ``start`` counts in the resulting order.

    >>> deck = [Opening(str(i)) for i in range(1, 6)]
    >>> [o.name for o in order_openings(deck, start=4)]
    ['4', '5', '1', '2', '3']
    >>> shuffled = [o.name for o in order_openings(deck, order="random", seed=1)]
    >>> shuffled == [o.name for o in order_openings(deck, order="random", seed=1)], sorted(shuffled)
    (True, ['1', '2', '3', '4', '5'])
    """
    if order not in OPENING_ORDERS:
        raise ValueError(f"opening order {order!r}: expected one of {', '.join(OPENING_ORDERS)}")
    ordered = list(openings)
    if not ordered:
        return ordered
    if not 1 <= start <= len(ordered):
        raise ValueError(f"--openings-start {start}: the suite has openings 1 to {len(ordered)}")
    if order == "random":
        random.Random(f"openings:{seed}").shuffle(ordered)
    return ordered[start - 1:] + ordered[:start - 1]


def load_openings_file(path: Path | str) -> list[Opening]:
    """Read a user's opening file: one FEN or one move list per line, or PDN games.

    Line format: blank lines and lines starting with ``#`` or ``;`` are skipped; a
    line is either a FEN (``B:W21-32:B1-12``, optionally inside ``[FEN "..."]``)
    or a move list (``1. 9-14 22-17 2. 11-15``). A file containing PDN tag lines
    is read as PDN games (by :func:`egtb.rules.pdn.read_games`): each game gives
    its ``FEN`` tag (if any) and its moves (comments, variations and the result
    are dropped); an opening is named by its Event tag, else ``FILE:LINE``.

    Raises:
        ValueError: naming the file and line number of a malformed line.

    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
    ...     _ = fh.write("9-14 22-17 11-15\\nB:W18,24,K27:B12,16,K22\\n")
    >>> [o.moves or o.fen for o in load_openings_file(fh.name)]
    [('9-14', '22-17', '11-15'), 'B:W18,24,K27:B12,16,K22']
    >>> os.unlink(fh.name)
    """
    path = Path(path)
    lines = list(_content_lines(path))
    if any(line.startswith("[") and not _is_fen_tag_only(line) for _, line in lines):
        return _read_pdn_games(path)
    openings = []
    for lineno, line in lines:
        fen = _fen_from_line(line)
        if fen is not None:
            if not is_valid_fen(fen):
                raise ValueError(f"{path}:{lineno}: malformed FEN {fen!r}")
            openings.append(Opening(f"{path.name}:{lineno}", (), fen))
        else:
            openings.append(Opening(f"{path.name}:{lineno}", _line_moves(line, path, lineno), None))
    return openings


def _content_lines(path: Path) -> list[tuple[int, str]]:
    """Return (line number, stripped text) of the non-blank, non-comment lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read opening file: {exc}") from exc
    result = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith(("#", ";")):
            result.append((lineno, line))
    return result


def _is_fen_tag_only(line: str) -> bool:
    """Tell whether a line is a lone ``[FEN "..."]`` tag (a FEN-per-line file)."""
    match = _TAG_RE.match(line)
    return match is not None and match.group(1).upper() == "FEN"


def _fen_from_line(line: str) -> str | None:
    """Return the FEN on a line (bare or in a FEN tag), or None for a move list."""
    match = _TAG_RE.match(line)
    if match is not None:
        return match.group(2).strip()
    if line[:2] in ("B:", "W:"):
        return line
    return None


def _line_moves(text: str, path: Path, lineno: int) -> tuple[str, ...]:
    """The moves of one line of PDN move text (numbers, comments and a result dropped)."""
    from egtb.rules.pdn import read_games
    try:
        games = read_games(text)
    except PdnError as exc:
        raise ValueError(f"{path}:{lineno}: {str(exc).removeprefix('PDN: ').rsplit(' at line ', 1)[0]} "
                         f"in {text!r}") from None
    moves = tuple(move for game in games for move in game.moves)
    if not moves:
        raise ValueError(f"{path}:{lineno}: no moves and no FEN in {text!r}")
    _check_moves(moves, path, lineno)
    return moves


def _check_moves(moves: Sequence[str], path: Path, lineno: int) -> None:
    """Raise ValueError naming the file and line for the first malformed move."""
    for move in moves:
        if not is_valid_move(move):
            raise ValueError(f"{path}:{lineno}: malformed move {move!r}")


def _read_pdn_games(path: Path) -> list[Opening]:
    """Openings from the PDN games of a file; errors name the file and the line."""
    from egtb.rules.notation import START_FEN
    from egtb.rules.pdn import read_games
    openings: list[Opening] = []
    for game in read_games(path):  # PdnError says FILE:LINE
        _check_moves(game.moves, path, game.line)
        if not game.moves and game.fen == START_FEN:
            raise ValueError(f"{path}:{game.line}: game has neither moves nor a FEN tag")
        name = game.headers.get("Event") or f"{path.name}:{game.line}"
        openings.append(Opening(name, tuple(game.moves), None if game.fen == START_FEN else game.fen))
    return openings
