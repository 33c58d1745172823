"""The schedule of a tournament: players, pairings and the games to play, in a fixed order.

The schedule is deterministic: for each round, each opening, each pairing, two
games with colours reversed (a *pair*). Every game has an id and a seed that
depend only on the command's settings, so that a resumed run plays the same games
(:mod:`tournament.schedule` plays them, :mod:`tournament.run_directory` keeps them).

>>> players = make_players(["random", "easy"])
>>> [(job.game_id, job.black.label, job.white.label) for job in schedule(players)]
[('r1-o000-0v1-a', 'random', 'easy'), ('r1-o000-0v1-b', 'easy', 'random')]
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from egtb.rules.board import Board
from egtb.rules.notation import START_FEN
from tournament.config import STANDARD_START
from tournament.engines.base import EngineSetupError
from tournament.engines.config import EngineConfig
from tournament.openings import Opening

__all__ = ["GameJob", "Player", "derive_seed", "gauntlet", "make_players", "opening_start",
           "player_labels", "round_robin", "schedule"]


def round_robin(count: int) -> Iterator[tuple[int, int]]:
    """Every pairing of ``count`` players once, as (i, j) with i < j.

    >>> list(round_robin(3))
    [(0, 1), (0, 2), (1, 2)]
    """
    for i in range(count):
        for j in range(i + 1, count):
            yield i, j


def gauntlet(count: int) -> Iterator[tuple[int, int]]:
    """Player 0 against each of the others.

    >>> list(gauntlet(3))
    [(0, 1), (0, 2)]
    """
    for j in range(1, count):
        yield 0, j


def player_labels(specs: Sequence[str]) -> list[str]:
    """Display labels of the engines: the spec, with ``#2``, ``#3``... for repeats.

    >>> player_labels(["random", "easy", "random"])
    ['random', 'easy', 'random#2']
    """
    labels, seen = [], {}
    for spec in specs:
        seen[spec] = seen.get(spec, 0) + 1
        labels.append(spec if seen[spec] == 1 else f"{spec}#{seen[spec]}")
    return labels


def derive_seed(*parts: object) -> int:
    """A 32-bit seed from any values, the same in every process and run.

    >>> derive_seed(1, "g1") == derive_seed(1, "g1") != derive_seed(2, "g1")
    True
    """
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big")


@dataclass(frozen=True)
class Player:
    """A participant: its label in the records and the spec (and settings) that build its engine."""

    label: str
    """Name in standings and PDN."""
    spec: str
    """Engine spec given to tournament.engines.registry.make_engine."""
    config: EngineConfig | None = None
    """Its own time control, options and tables (None: the spec alone)."""

    def engine_config(self) -> EngineConfig:
        """The settings of this player's engine."""
        return self.config or EngineConfig(self.spec)


def make_players(engines: Sequence[str | EngineConfig]) -> list[Player]:
    """Players from specs or engine settings; labels from the names, else the specs (``#2`` for repeats).

    >>> [p.label for p in make_players(["easy", EngineConfig("easy", name="odds", tc="0.5"), "easy"])]
    ['easy', 'odds', 'easy#2']
    """
    configs = [e if isinstance(e, EngineConfig) else EngineConfig(e) for e in engines]
    names = [c.name for c in configs if c.name]
    for name in names:
        if names.count(name) > 1:
            raise EngineSetupError(f"two engines are named {name!r}; give each its own name=")
    labels = player_labels([c.label for c in configs])
    return [Player(label, c.spec, c) for label, c in zip(labels, configs)]


@dataclass(frozen=True)
class GameJob:
    """One scheduled game."""

    game_id: str
    """Deterministic id, e.g. ``r1-o005-0v1-b``."""
    index: int
    """Position in the schedule."""
    round: int
    """Round (1-based)."""
    pair_id: str
    """Shared by the two colour-reversed games."""
    opening: Opening
    """Start of the game."""
    black: Player
    """Moves first."""
    white: Player
    """Moves second."""
    seed: int
    """Seed for both engines of the game."""


def schedule(
    players: Sequence[Player],
    openings: Sequence[Opening] = (STANDARD_START,),
    *,
    pairing: Callable[[int], Iterator[tuple[int, int]]] = round_robin,
    rounds: int = 1,
    games: int | None = None,
    seed: int = 0,
) -> list[GameJob]:
    """The games to play, in order: rounds x openings x pairings x both colours.

    With ``games`` the openings are cycled (round after round) until that many
    games are scheduled; otherwise all openings are played ``rounds`` times.

    >>> ps = [Player("a", "random"), Player("b", "random")]
    >>> [(j.game_id, j.black.label) for j in schedule(ps, rounds=1)]
    [('r1-o000-0v1-a', 'a'), ('r1-o000-0v1-b', 'b')]
    >>> len(schedule(ps, games=5))
    5
    """
    if len(players) < 2:
        raise ValueError(f"a tournament needs at least two engines, got {len(players)}")
    if not openings:
        raise ValueError("no openings to play")
    return list(_iterate_jobs(players, openings, pairing, rounds, games, seed))


def _iterate_jobs(players: Sequence[Player], openings: Sequence[Opening], pairing: Callable[[int], Iterator[tuple[int, int]]],
                  rounds: int, games: int | None, seed: int) -> Iterator[GameJob]:
    """Generate the jobs of :func:`schedule`."""
    index, round_number = 0, 0
    while games is not None or round_number < rounds:
        round_number += 1
        for o, opening in enumerate(openings):
            for a, b in pairing(len(players)):
                pair_id = f"r{round_number}-o{o:03d}-{a}v{b}"
                for leg, (black, white) in (("a", (a, b)), ("b", (b, a))):
                    if games is not None and index >= games:
                        return
                    game_id = f"{pair_id}-{leg}"
                    yield GameJob(game_id, index, round_number, pair_id, opening, players[black], players[white],
                                  derive_seed(seed, game_id))
                    index += 1


def opening_start(opening: Opening) -> tuple[str, tuple[str, ...]]:
    """Start FEN and moves to play for an opening.

    Ballots give the moves from the standard start (their FEN is the position
    after them); a user FEN with moves plays the moves from that FEN.

    >>> from tournament.openings import load_ballots
    >>> opening_start(load_ballots("3-move")[0])
    ('B:W21,22,23,24,25,26,27,28,29,30,31,32:B1,2,3,4,5,6,7,8,9,10,11,12', ('9-13', '21-17', '5-9'))
    >>> opening_start(Opening("mine", ("18x9",), "W:W18:B14"))
    ('W:W18:B14', ('18x9',))
    """
    if not opening.moves:
        return (opening.fen or START_FEN), ()
    if opening.fen is None or _replays_to(START_FEN, opening.moves, opening.fen):
        return START_FEN, tuple(opening.moves)
    return opening.fen, tuple(opening.moves)


def _replays_to(start: str, moves: Sequence[str], fen: str) -> bool:
    """Whether playing moves from start gives the position fen (False when not legal or unparsable)."""
    try:
        board = Board(start)
        for text in moves:
            board.push_pdn(text)
        return board.fen() == Board(fen).fen()
    except ValueError:
        return False
