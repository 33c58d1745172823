"""A tournament's settings as one serialisable value (fastchess's ``config::Tournament``).

:class:`TournamentConfig` is everything that decides which games are played and
how: the engines, the openings, the pairing, the number of games, the seed, how
each game is played (:class:`GameSettings`) and an optional SPRT
(:class:`SprtSettings`), plus the PDN event name and the Elo anchor. It is
what :func:`tournament.schedule.run_tournament` plays, and it is saved with the
run as ``settings.json``: a second start with the same config resumes the run,
one with other game-defining fields is refused.

How the games are run (worker processes, a Dask cluster, a progress bar) is no
part of it: it changes no game.

>>> config = TournamentConfig(("random", "easy"), games=4, seed=3)
>>> [e.label for e in config.engines], config.games
(['random', 'easy'], 4)
>>> TournamentConfig.from_json(config.to_json()) == config
True
>>> config.to_json()["game"]["limit"]
{'time': None, 'clock': None, 'increment': 0.0, 'depth': None, 'nodes': None}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from egtb.rules.draw_rules import DEFAULT_RULE
from tournament.engines.base import Limit
from tournament.engines.config import EngineConfig
from tournament.openings import Opening
from tournament.stats import SprtResult, sprt

if TYPE_CHECKING:  # the adjudicators load the prober (numba, h5py): GameSettings.from_json imports them
    from tournament.adjudicate import ResignRule, ScoreDrawRule

__all__ = ["DEFAULT_TIME_MARGIN", "GameSettings", "STANDARD_START", "SprtSettings", "TournamentConfig"]

DEFAULT_TIME_MARGIN = 0.25
"""Seconds an engine may overrun its move time or clock before it forfeits (cutechess's
``timemargin``). It leaves room for what the runner cannot see from the engine's side: the
hand-off of the move (at most 34 ms measured at load 13 on 2 cores through a CheckerBoard
library's Hub process, bench/bench_deadlines.py) and an engine timing itself on a busy machine
(Simple Checkers, which reads CPU time, overran 0.1 s moves by 4-250 ms; docs/checkerboard.md)."""

STANDARD_START = Opening("start", (), None)
"""The opening used when none is given: the standard start position."""


@dataclass(frozen=True)
class GameSettings:
    """How each game is played (the same for every game of the run)."""

    rule: str = DEFAULT_RULE
    """Draw-rule preset."""
    limit: Limit = field(default_factory=Limit)
    """Thinking limit per move (time per move, clock + increment, depth or nodes)."""
    time_margin: float = DEFAULT_TIME_MARGIN
    """Seconds an engine may overrun before it forfeits."""
    tables_dir: str | None = None
    """Endgame tables for adjudication and for engines that probe them."""
    adjudicate_pieces: int | None = None
    """Adjudicate by the tables at this many pieces or fewer (default: all the tables have)."""
    max_plies: int | None = None
    """Draw a game that reaches this many plies."""
    heuristics: bool = False
    """Also use the heuristic material and draw adjudicators."""
    draw_adjudication: ScoreDrawRule | None = None
    """Draw by the engines' scores (cutechess's -draw)."""
    resign_adjudication: ResignRule | None = None
    """Resignation by the engines' scores (cutechess's -resign)."""

    def to_json(self) -> dict[str, Any]:
        """JSON data; ``moves`` of the limit and the score rules only when set (older runs resume).

        >>> GameSettings(max_plies=80).to_json()["max_plies"]
        80
        """
        data = asdict(self)
        data["limit"] = {k: v for k, v in asdict(self.limit).items() if k != "moves" or v is not None}
        for later in ("draw_adjudication", "resign_adjudication"):
            if data[later] is None:
                del data[later]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "GameSettings":
        """The settings :meth:`to_json` wrote.

        >>> GameSettings.from_json(GameSettings(limit=Limit(time=0.5)).to_json()).limit.time
        0.5
        """
        from tournament.adjudicate import ResignRule, ScoreDrawRule
        data = dict(data)
        data["limit"] = Limit(**data.get("limit", {}))
        for key, kind in (("draw_adjudication", ScoreDrawRule), ("resign_adjudication", ResignRule)):
            data[key] = None if data.get(key) is None else kind(**data[key])
        return cls(**data)


@dataclass(frozen=True)
class SprtSettings:
    """An SPRT on the first engine against the second: stop when decided."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    @classmethod
    def parse(cls, text: str) -> "SprtSettings":
        """From ``"elo0,elo1,alpha,beta"`` (alpha and beta optional).

        >>> SprtSettings.parse("0,10,0.05,0.1")
        SprtSettings(elo0=0.0, elo1=10.0, alpha=0.05, beta=0.1)
        """
        values = [float(v) for v in text.split(",")]
        if not 2 <= len(values) <= 4:
            raise ValueError(f"SPRT needs elo0,elo1[,alpha[,beta]], got {text!r}")
        return cls(*values)

    def test(self, records: Sequence[Any], a: str, b: str) -> SprtResult:
        """The SPRT on a's pentanomial counts against b."""
        from tournament.records import pair_counts

        return sprt(self.elo0, self.elo1, self.alpha, self.beta, pentanomial=pair_counts(records, a, b))


@dataclass(frozen=True)
class TournamentConfig:
    """One tournament: who plays, from where, how many games and how; see the module docstring.

    ``engines`` and ``openings`` may be given as any sequences, engines as specs or
    :class:`EngineConfig`: they are stored as tuples of EngineConfig and Opening.
    """

    engines: tuple[EngineConfig, ...]
    """The participants (specs or settings); with ``gauntlet`` the first is the champion."""
    openings: tuple[Opening, ...] = (STANDARD_START,)
    """Start positions, each played with both colours (default: the standard start)."""
    gauntlet: bool = False
    """Pair the first engine with each other one instead of round-robin."""
    rounds: int = 1
    """Times through the openings (unless ``games`` is set)."""
    games: int | None = None
    """Exactly this many games, the openings cycled (None: ``rounds``)."""
    seed: int = 0
    """Run seed; each game's seed derives from it and the game id."""
    game: GameSettings = field(default_factory=GameSettings)
    """How each game is played: rule, limits, adjudication."""
    sprt: SprtSettings | None = None
    """Stop a two-engine match once this SPRT decides."""
    event: str = "tournament"
    """PDN Event tag."""
    anchor: str | None = None
    """With three or more engines, the engine rated 0 (None: the average is 0)."""

    SCHEDULE_KEYS = ("engines", "openings", "gauntlet", "rounds", "games", "seed", "game", "sprt")
    """The fields that decide the games: a run resumes only with the same values of these."""

    def __post_init__(self) -> None:
        engines = tuple(e if isinstance(e, EngineConfig) else EngineConfig(e) for e in self.engines)
        object.__setattr__(self, "engines", engines)
        object.__setattr__(self, "openings", tuple(self.openings) or (STANDARD_START,))
        if self.games is not None:
            object.__setattr__(self, "rounds", 1)  # games, not rounds, sets the length

    def replace(self, **changes: Any) -> "TournamentConfig":
        """A copy with some fields changed.

        >>> TournamentConfig(("random", "random")).replace(seed=5).seed
        5
        """
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """JSON data of every field (settings.json of a run)."""
        return {
            "engines": [e.to_json() for e in self.engines],
            "openings": [[o.name, list(o.moves), o.fen] for o in self.openings],
            "gauntlet": self.gauntlet, "rounds": None if self.games is not None else self.rounds,
            "games": self.games, "seed": self.seed, "game": self.game.to_json(),
            "sprt": None if self.sprt is None else asdict(self.sprt),
            "event": self.event, "anchor": self.anchor,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TournamentConfig":
        """The config :meth:`to_json` wrote (a run's settings.json; older runs lack event and anchor)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"tournament settings: unknown field(s) {', '.join(unknown)}")
        return cls(
            engines=tuple(EngineConfig.from_json(e) for e in data["engines"]),
            openings=tuple(Opening(name, tuple(moves), fen) for name, moves, fen in data.get("openings", [])),
            gauntlet=bool(data.get("gauntlet", False)), rounds=data.get("rounds") or 1, games=data.get("games"),
            seed=int(data.get("seed", 0)), game=GameSettings.from_json(data.get("game", {})),
            sprt=None if data.get("sprt") is None else SprtSettings(**data["sprt"]),
            event=data.get("event", "tournament"), anchor=data.get("anchor"),
        )

    def schedule_json(self) -> dict[str, Any]:
        """The game-defining part of :meth:`to_json` (:attr:`SCHEDULE_KEYS`)."""
        data = self.to_json()
        return {key: data[key] for key in self.SCHEDULE_KEYS}

    def differences(self, stored: dict[str, Any]) -> list[str]:
        """The game-defining fields in which a run's stored settings differ from this config.

        >>> config = TournamentConfig(("random", "random"), games=2)
        >>> config.differences(config.to_json()), config.differences(config.replace(seed=9).to_json())
        ([], ['seed'])
        """
        ours = json.loads(json.dumps(self.schedule_json()))  # as it reads back from the file
        return [key for key, value in ours.items() if stored.get(key) != value]
