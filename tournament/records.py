"""What a tournament leaves behind: game records, PDN, a JSON summary and standings.

A :class:`GameRecord` is one finished game with its place in the schedule; the
runner appends each as a JSON line the moment it ends. From the records come
the PDN file (``[GameType "21"]``, a FEN tag for a non-standard start, Event,
Round, Black, White, Result with "1-0" meaning Black won, Termination), the
JSON summary and the standings table with Elo, error bars, LOS and pentanomial
counts over the colour-reversed pairs.

>>> from tournament.result import GameResult, GameTermination
>>> a = GameRecord("g1", 0, 1, "p0", "start", "alpha", "beta", 7,
...                GameResult(0, GameTermination.NORMAL, "White has no legal move"))
>>> b = GameRecord("g2", 1, 1, "p0", "start", "beta", "alpha", 8,
...                GameResult(None, GameTermination.NORMAL, "draw by threefold repetition"))
>>> pair_counts([a, b], "alpha", "beta").as_list()
[0, 0, 0, 1, 0]
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from egtb.rules.pdn import Game, write_game
from tournament.result import GameResult
from tournament.stats import (
    EloEstimate, Pentanomial, Rating, Standings, fit_ratings, pentanomial_counts, pentanomial_elo, score_elo,
)

__all__ = [
    "GameRecord",
    "game_to_pdn",
    "clock_text",
    "crosstable",
    "elo_fields",
    "engine_names",
    "head_to_head",
    "move_comments",
    "pdn_date",
    "pair_counts",
    "ratings",
    "ratings_text",
    "standings_text",
    "summarize",
    "write_atomic",
    "write_pdn",
]


@dataclass(frozen=True)
class GameRecord:
    """One finished game of a tournament, with its place in the schedule."""

    game_id: str
    """Deterministic id, the same every time the same command runs."""
    index: int
    """Position in the schedule (0-based)."""
    round: int
    """Round number (1-based): one pass over the openings."""
    pair_id: str
    """Id shared by the two colour-reversed games of one opening and pairing."""
    opening: str
    """Opening name."""
    black: str
    """Player label of the engine that moved first."""
    white: str
    """Player label of the other engine."""
    seed: int
    """Seed the engines of this game were built with."""
    result: GameResult
    """How the game went."""
    black_engine: str = ""
    """The Black engine's own name (its ``reported_name``: a program's id, a library's name); "" unknown."""
    white_engine: str = ""
    """The White engine's own name; "" unknown."""
    date: str = ""
    """The day the game was played (UTC), as PDN writes it: ``"2026.12.03"``; "" unknown (a record
    from before dates were kept)."""

    @property
    def black_score(self) -> float:
        """Black's points: 1, 0.5 or 0."""
        return {"1-0": 1.0, "0-1": 0.0}.get(self.result.result, 0.5)

    def score_of(self, player: str) -> float:
        """The points ``player`` scored in this game."""
        if player == self.black:
            return self.black_score
        if player == self.white:
            return 1.0 - self.black_score
        raise ValueError(f"{player!r} did not play game {self.game_id}")

    def to_json(self) -> str:
        """One JSON line (no newline)."""
        data = {k: getattr(self, k) for k in ("game_id", "index", "round", "pair_id", "opening", "black", "white",
                                              "seed")}
        data["result"] = self.result.to_dict()
        data.update({k: getattr(self, k) for k in ("black_engine", "white_engine", "date") if getattr(self, k)})
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> "GameRecord":
        """The record :meth:`to_json` wrote (ValueError/KeyError when it is not one)."""
        data = json.loads(line)
        data["result"] = GameResult.from_dict(data["result"])
        return cls(**data)


#: PDN's Date of a game whose day is unknown.
UNKNOWN_DATE = "????.??.??"


def pdn_date(moment: datetime | None = None) -> str:
    """A day as PDN 3.0 writes it, ``YYYY.MM.DD`` (UTC; default: now).

    >>> pdn_date(datetime(2026, 3, 7, 23, 59, tzinfo=timezone.utc))
    '2026.03.07'
    """
    return (moment or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y.%m.%d")


def game_to_pdn(record: GameRecord, *, event: str = "tournament") -> str:
    """The PDN text of one game.

    >>> from tournament.result import GameResult, GameTermination
    >>> r = GameRecord("g1", 0, 1, "p0", "x", "a", "b", 1,
    ...                GameResult(1, GameTermination.CRASH, "Black (a) crashed", moves=()), black_engine="Tiny CB",
    ...                date="2026.12.03")
    >>> print(game_to_pdn(r, event="demo").splitlines()[:7])
    ['[Event "demo"]', '[Site "?"]', '[Date "2026.12.03"]', '[Round "1.1"]', '[Black "a"]', '[White "b"]', '[BlackEngine "Tiny CB"]']

    Site is "?" (unknown, as PDN and PGN write it; cutechess and fastchess do so too), Date
    "????.??.??" for a record without a date.
    """
    result = record.result
    headers = {
        "Event": event,
        "Site": "?",
        "Date": record.date or UNKNOWN_DATE,
        "Round": f"{record.round}.{record.index + 1}",
        "Black": record.black,
        "White": record.white,
        **({"BlackEngine": record.black_engine} if record.black_engine else {}),
        **({"WhiteEngine": record.white_engine} if record.white_engine else {}),
        "Opening": record.opening,
        "Termination": result.termination.value,
        "TerminationDetails": result.reason,
        "PlyCount": str(result.plies),
        "GameId": record.game_id,
    }
    return write_game(Game(headers=headers, fen=result.start_fen, moves=list(result.moves), result=result.result,
                           comments=move_comments(result)))


def move_comments(result: GameResult) -> list[str]:
    """A PDN comment per move: the clock left (``[%clock 0:00:59.5]``, as PGN viewers read it), the
    time the move took (``[%emt 0:00:00.4]``) and the engine's score in men (``[%eval 0.25]``).

    >>> from tournament.result import GameTermination
    >>> r = GameResult(None, GameTermination.NORMAL, "", moves=("11-15", "23-19", "8-11"), opening_plies=1,
    ...                move_times=(0.42, 1.0), clocks=(59.5, None), scores=(25, None))
    >>> move_comments(r)
    ['', '[%clock 0:00:59.5] [%emt 0:00:00.4] [%eval 0.25]', '[%emt 0:00:01.0]']
    """
    comments = [""] * result.opening_plies
    for i, elapsed in enumerate(result.move_times):
        parts = []
        if i < len(result.clocks) and result.clocks[i] is not None:
            parts.append(f"[%clock {clock_text(result.clocks[i])}]")
        parts.append(f"[%emt {clock_text(elapsed)}]")
        if i < len(result.scores) and result.scores[i] is not None:
            parts.append(f"[%eval {result.scores[i] / 100:.2f}]")
        comments.append(" ".join(parts))
    return comments


def clock_text(seconds: float) -> str:
    """``H:MM:SS.s`` as the ``%clock`` convention writes it (a negative clock reads as 0).

    >>> clock_text(59.54), clock_text(3725.0), clock_text(-0.2)
    ('0:00:59.5', '1:02:05.0', '0:00:00.0')
    """
    tenths = max(0, round(seconds * 10))
    hours, rest = divmod(tenths, 36000)
    minutes, rest = divmod(rest, 600)
    return f"{hours}:{minutes:02d}:{rest // 10:02d}.{rest % 10}"


def write_atomic(path: str | Path, text: str) -> Path:
    """Write text to a temporary file beside ``path`` and rename it (never half-written)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


def write_pdn(records: Iterable[GameRecord], path: str | Path, *, event: str = "tournament") -> Path:
    """Write every game, in schedule order, to one PDN file."""
    ordered = sorted(records, key=lambda r: r.index)
    return write_atomic(path, "\n".join(game_to_pdn(r, event=event) for r in ordered))


def _pairs_of(records: Iterable[GameRecord]) -> dict[str, list[GameRecord]]:
    """Records grouped by pair id."""
    pairs: dict[str, list[GameRecord]] = defaultdict(list)
    for record in records:
        pairs[record.pair_id].append(record)
    return pairs


def pair_counts(records: Iterable[GameRecord], player: str, opponent: str | None = None) -> Pentanomial:
    """Pentanomial counts of ``player`` over its complete colour-reversed pairs (against ``opponent`` only if given)."""
    totals = []
    for games in _pairs_of(records).values():
        if len(games) != 2 or player not in (games[0].black, games[0].white):
            continue
        if opponent is not None and opponent not in (games[0].black, games[0].white):
            continue
        totals.append(tuple(g.score_of(player) for g in games))
    return pentanomial_counts(totals)


def head_to_head(records: Sequence[GameRecord], a: str, b: str) -> dict[str, Any]:
    """W/L/D, Elo and pentanomial statistics of ``a`` against ``b`` (JSON-ready: only finite numbers)."""
    games = [r for r in records if {r.black, r.white} == {a, b}]
    scores = [r.score_of(a) for r in games]
    wins, losses = scores.count(1.0), scores.count(0.0)
    draws = len(scores) - wins - losses
    penta = pair_counts(games, a, b)
    return {
        "engine": a, "opponent": b, "games": len(games), "wins": wins, "losses": losses, "draws": draws,
        **elo_fields(score_elo(wins, losses, draws)),
        "pentanomial": penta.as_list(), **elo_fields(pentanomial_elo(penta), prefix="pentanomial_"),
    }


def elo_fields(estimate: EloEstimate, *, prefix: str = "") -> dict[str, Any]:
    """An Elo estimate as JSON fields, every number finite (None where undefined).

    ``elo`` is None for a perfect score; ``elo_low``/``elo_high`` are the 95% interval's
    ends, the one-sided 95% bound for a perfect score, None where unbounded; ``elo_text``
    is what the standings table prints, ``elo_interval_text`` what the head-to-head line
    prints (the Elo and its error bar, or the bound and what it is).

    >>> from tournament.stats import score_elo
    >>> fields = elo_fields(score_elo(12, 0, 0))
    >>> fields["elo"], round(fields["elo_low"], 1), fields["elo_high"], fields["elo_text"]
    (None, 218.9, None, '> +218.9')
    """
    low, high = estimate.elo_low, estimate.elo_high
    if math.isinf(estimate.elo):
        low, high = (estimate.bound, math.inf) if estimate.elo > 0 else (-math.inf, estimate.bound)
    fields = {
        "elo": _num(estimate.elo), "elo_error": estimate.finite_error, "elo_low": _num(low), "elo_high": _num(high),
        "elo_text": estimate.elo_text(), "elo_interval_text": estimate.interval_text(), "los": _num(estimate.los),
    }
    return {prefix + key: value for key, value in fields.items()}


def _num(value: float) -> float | None:
    """A float for JSON: None for NaN and the infinities (JSON has no such numbers)."""
    return value if math.isfinite(value) else None
def _standings(records: Iterable[GameRecord]) -> Standings:
    return Standings.from_games((r.black, r.white, r.result.result) for r in records)


def summarize(records: Sequence[GameRecord], *, players: Sequence[str], settings: dict[str, Any] | None = None,
              sprt: Any = None, anchor: str | None = None) -> dict[str, Any]:
    """The JSON summary: settings, per-engine standings (our label ``engine`` and the engine's own
    ``engine_name``), head-to-head results, terminations."""
    names = engine_names(records)
    rows = []
    for row in _standings(records).rows():
        rows.append({
            "engine": row.engine, "engine_name": names.get(row.engine, ""), "games": row.games, "wins": row.wins, "losses": row.losses, "draws": row.draws,
            "score": row.score, **elo_fields(row.elo), "pentanomial": pair_counts(records, row.engine).as_list(),
        })
    terminations: dict[str, int] = defaultdict(int)
    for record in records:
        terminations[record.result.termination.value] += 1
    return {
        "settings": settings or {},
        "games": len(records),
        "standings": rows,
        "head_to_head": [head_to_head(records, a, b) for i, a in enumerate(players) for b in players[i + 1:]],
        "terminations": dict(sorted(terminations.items())),
        "sprt": None if sprt is None else str(sprt),
        **(_ratings_fields(records, players, anchor) if len(players) >= 3 and records else {}),
    }


def engine_names(records: Iterable[GameRecord]) -> dict[str, str]:
    """Each player label's engine name, as the engine last gave it.

    >>> from tournament.result import GameResult, GameTermination
    >>> r = GameRecord("g1", 0, 1, "p0", "x", "a", "b", 1, GameResult(None, GameTermination.NORMAL, ""),
    ...                black_engine="Tiny CB", white_engine="search(depth=2)")
    >>> engine_names([r])
    {'a': 'Tiny CB', 'b': 'search(depth=2)'}
    """
    names: dict[str, str] = {}
    for record in records:
        for label, name in ((record.black, record.black_engine), (record.white, record.white_engine)):
            if name:
                names[label] = name
    return names


def _ratings_fields(records: Sequence[GameRecord], players: Sequence[str], anchor: str | None) -> dict[str, Any]:
    """The ratings and the crosstable as JSON fields."""
    return {
        "ratings": [{"engine": r.engine, "elo": r.elo, "elo_error": r.error, "games": r.games, "score": r.score}
                    for r in ratings(records, anchor=anchor)],
        "ratings_anchor": anchor,
        "crosstable": {me: {other: {"points": cell[0], "games": cell[1]} for other, cell in row.items()}
                       for me, row in crosstable(records, players).items()},
    }


def ratings(records: Sequence[GameRecord], *, anchor: str | None = None) -> list[Rating]:
    """Maximum-likelihood ratings over every game (see :func:`tournament.stats.fit_ratings`)."""
    return fit_ratings(((r.black, r.white, r.black_score) for r in records), anchor=anchor)


def crosstable(records: Sequence[GameRecord], players: Sequence[str]) -> dict[str, dict[str, list[float]]]:
    """``{engine: {opponent: [points, games]}}`` over every pairing that met."""
    table: dict[str, dict[str, list[float]]] = {p: {} for p in players}
    for record in records:
        for me, other in ((record.black, record.white), (record.white, record.black)):
            cell = table.setdefault(me, {}).setdefault(other, [0.0, 0])
            cell[0] += record.score_of(me)
            cell[1] += 1
    return table


def ratings_text(records: Sequence[GameRecord], *, players: Sequence[str], anchor: str | None = None) -> str:
    """The crosstable (points/games against each opponent) beside the maximum-likelihood ratings.

    >>> from tournament.result import GameResult, GameTermination
    >>> g = lambda i, b, w, winner: GameRecord(f"g{i}", i, 1, f"p{i}", "o", b, w, i,
    ...                                        GameResult(winner, GameTermination.NORMAL, "r"))
    >>> games = [g(0, "a", "b", 0), g(1, "b", "a", 0), g(2, "a", "c", None), g(3, "b", "c", 0)]
    >>> print(ratings_text(games, players=["a", "b", "c"], anchor="c"))
    Rank  Engine     Elo    +/-  Games  Score      b      a      c
       1  b       +229.9  611.6      3    2.0      -  1.0/2  1.0/1
       2  a       +155.8  593.6      3    1.5  1.0/2      -  0.5/1
       3  c         +0.0    0.0      2    0.5  0.0/1  0.5/1      -
    <BLANKLINE>
    Ratings: maximum likelihood over all games, 95% intervals, anchored at c = 0.
    """
    rows = ratings(records, anchor=anchor)
    table = crosstable(records, players)
    order = [r.engine for r in rows]
    width = max([len("Engine")] + [len(name) for name in order])
    cell_width = max([5] + [len(name) for name in order])
    header = (f"{'Rank':>4}  {'Engine':<{width}}  {'Elo':>6}  {'+/-':>5}  {'Games':>5}  {'Score':>5}  "
              + "  ".join(f"{name:>{cell_width}}" for name in order))
    lines = [header]
    for rank, row in enumerate(rows, start=1):
        cells = []
        for other in order:
            cell = table.get(row.engine, {}).get(other)
            text = "-" if other == row.engine or cell is None else f"{cell[0]:.1f}/{cell[1]}"
            cells.append(f"{text:>{cell_width}}")
        lines.append(f"{rank:>4}  {row.engine:<{width}}  {row.elo:>+6.1f}  {row.error:>5.1f}  {row.games:>5}  "
                     f"{row.score:>5.1f}  " + "  ".join(cells))
    where = f"anchored at {anchor} = 0" if anchor else "the average is 0"
    lines += ["", f"Ratings: maximum likelihood over all games, 95% intervals, {where}."]
    return "\n".join(lines)


def standings_text(records: Sequence[GameRecord], *, players: Sequence[str] = (), anchor: str | None = None) -> str:
    """The standings table, then one head-to-head line per pairing of ``players``; with three or
    more players also the crosstable and the maximum-likelihood ratings (:func:`ratings_text`).

    >>> from tournament.result import GameResult, GameTermination
    >>> g = lambda i, b, w, winner: GameRecord(f"g{i}", i, 1, f"p{i // 2}", "o", b, w, i,
    ...                                        GameResult(winner, GameTermination.NORMAL, "r"))
    >>> print(standings_text([g(0, "a", "b", 0), g(1, "b", "a", None)], players=["a", "b"]))
    Rank  Engine  Games  W  L  D  Score  Score%     Elo    +/-   LOS%  Pairs [LL LD DD/WL WD WW]
       1  a           2  1  0  1    1.5    75.0  +190.8  258.7   84.1  [0, 0, 0, 1, 0]
       2  b           2  0  1  1    0.5    25.0  -190.8  258.7   15.9  [0, 1, 0, 0, 0]
    <BLANKLINE>
    a vs b: 2 games, +1 -0 =1, Elo +190.8 +/- 258.7, LOS 84.1% (normal approximation), pairs [0, 0, 0, 1, 0], pentanomial Elo +190.8 +/- 0.0
    """
    table = _standings(records).format_table().splitlines()
    lines = [table[0] + "  Pairs [LL LD DD/WL WD WW]"]
    for line, row in zip(table[1:], _standings(records).rows()):
        lines.append(f"{line}  {pair_counts(records, row.engine)}")
    matchups = [head_to_head(records, a, b) for i, a in enumerate(players) for b in players[i + 1:]]
    if matchups:
        lines.append("")
        lines += [_head_to_head_line(m) for m in matchups if m["games"]]
        if any(m["games"] and m["elo"] is None and m["elo_low"] != m["elo_high"] for m in matchups):
            lines.append(PERFECT_SCORE_NOTE)
    if len(players) >= 3 and records:
        lines += ["", ratings_text(records, players=players, anchor=anchor)]
    return "\n".join(lines)


#: Under the head-to-head lines when a match has a perfect score: its Elo bound and its LOS come
#: from two methods, and with few games they seem to disagree (4-0: "Elo > -18.9", "LOS 97.7%").
PERFECT_SCORE_NOTE = (
    "A perfect score has no Elo estimate: 'Elo > X' is a one-sided 95% lower bound from the exact "
    "binomial test, cautious with few games; LOS, the chance of being the stronger engine, comes from "
    "the normal approximation over wins and losses, which is not. The two answer different questions.")


def _head_to_head_line(m: dict[str, Any]) -> str:
    los = "-" if m["los"] is None else f"{100 * m['los']:.1f}%"
    return (f"{m['engine']} vs {m['opponent']}: {m['games']} games, +{m['wins']} -{m['losses']} ={m['draws']}, "
            f"Elo {m['elo_interval_text']}, LOS {los} (normal approximation), pairs {m['pentanomial']}, "
            f"pentanomial Elo {m['pentanomial_elo_interval_text']}")
