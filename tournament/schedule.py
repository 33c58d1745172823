"""Schedule and run a tournament: pairings, openings, games on an executor, resumable records.

The schedule is deterministic: for each round, each opening, each pairing, two
games with colours reversed (a *pair*). Every game has an id and a seed that
depend only on the command's settings, so a run that was interrupted is resumed
by starting the same command again: the finished games are read back from
``games.jsonl`` in the run directory and only the missing ones are played.
Each finished game is appended to that file at once (flush + fsync); a
half-written last line left by a kill is dropped and the game replayed.

The games run as tasks of an executor (:mod:`egtb.executor`): the local pool
of forked processes by default, or a Dask cluster; a task plays a batch of
game pairs (:mod:`tournament.batches`). Engines are built inside the workers
from their specs: in-process engines afresh for every game; external engines
once per worker, reused for every game and restarted only after a fault
(:mod:`tournament.engines.pool`); a cluster's long-lived workers close them
after each batch.

>>> import tempfile
>>> out = tempfile.mkdtemp()
>>> config = TournamentConfig(("random", "random"), games=4)
>>> result = run_tournament(config, out_dir=out, concurrency=1, progress=False)
>>> len(result.records), [p for p in result.players]
(4, ['random', 'random#2'])
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from egtb.executor import Executor, LocalPool, Task
from egtb.rules.board import Board
from egtb.rules.notation import START_FEN
from tournament.adjudicate import build_adjudicators, open_tablebase
from tournament.batches import BatchSize, group_pairs
from tournament.config import STANDARD_START, GameSettings, SprtSettings, TournamentConfig
from tournament.engines.base import Engine, EngineSetupError
from tournament.engines.config import EngineConfig
from tournament.engines.pool import close_worker_pool, worker_pool
from tournament.game import play_game
from tournament.result import GameResult, GameTermination, color_name
from tournament.openings import Opening
from tournament.records import GameRecord, pdn_date, standings_text, summarize, write_atomic, write_pdn
from tournament.stats import SprtResult

__all__ = [
    "GameJob",
    "GameSettings",
    "check_engines",
    "SprtSettings",
    "TournamentConfig",
    "TournamentResult",
    "derive_seed",
    "gauntlet",
    "load_records",
    "make_players",
    "opening_start",
    "play_batch",
    "play_games",
    "play_job",
    "player_labels",
    "round_robin",
    "run_tournament",
    "schedule",
]

logger = logging.getLogger(__name__)

RECORDS_FILE = "games.jsonl"
LOG_FILE = "run.log"
"""Warnings of the run (a refused engine option, a restarted engine), appended across resumes."""
SETTINGS_FILE = "settings.json"
PDN_FILE = "games.pdn"
SUMMARY_FILE = "summary.json"
STANDINGS_FILE = "standings.txt"


# --- pairings and schedule ---------------------------------------------------


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


# --- playing one game -------------------------------------------------------


def _make_engine(player: Player, settings: GameSettings, seed: int) -> Engine:
    """Build an engine in this process from its spec and settings."""
    from tournament.engines.registry import make_engine

    config = player.engine_config()
    return make_engine(config.spec, tables_dir=config.tables or settings.tables_dir, seed=seed,
                       options=config.option_kwargs())


def check_engines(players: Sequence[Player], settings: GameSettings, *, keep: bool = False) -> None:
    """Build and close each engine once, here, before any game: a bad spec raises EngineSetupError naming it.

    With ``keep`` (the games are played in this process, engines reused), an external engine
    that started goes to this process's pool and plays the first game, instead of being closed
    and started again; :func:`close_worker_pool` closes it. An engine that starts here but
    fails later still loses its games (see :func:`play_job`).
    """
    pool = worker_pool() if keep else None
    for player in players:
        try:
            engine = _make_engine(player, settings, seed=0)
        except Exception as exc:  # noqa: BLE001 - whatever a plug-in raises, the setup is bad
            raise EngineSetupError(f"engine {player.spec!r} ({player.label}) cannot be started: {exc}") from None
        if pool is not None and getattr(engine, "persistent", False):
            pool.release(_pool_key(player), engine, fault=None)
        else:
            _close_quietly(engine)


def play_job(job: GameJob, settings: GameSettings, *, reuse_engines: bool = True) -> GameRecord:
    """Get both engines, play the game, give them back; faults become results, never exceptions.

    External engines are kept between games in this process's pool and restarted only
    after a fault (:mod:`tournament.engines.pool`); ``reuse_engines=False`` starts them
    for every game.
    """
    start_fen, moves = opening_start(job.opening)
    pool = worker_pool(reuse=reuse_engines)
    engines: list[tuple[Any, Engine]] = []
    result: GameResult | None = None
    try:
        for color, player in enumerate((job.black, job.white)):
            key = _pool_key(player)
            try:
                engines.append((key, pool.acquire(key, lambda: _make_engine(player, settings,
                                                                            derive_seed(job.seed, color)))))
            except Exception as exc:  # noqa: BLE001 - a plug-in that cannot start loses
                result = GameResult(1 - color, GameTermination.CRASH,
                                    f"{color_name(color)} ({player.label}) could not be started: {exc}",
                                    start_fen=start_fen, rule=settings.rule)
                return _record(job, result, [engine for _, engine in engines])
        result = play_game(engines[0][1], engines[1][1], start_fen=start_fen, opening_moves=moves, rule=settings.rule,
                           limit=job.black.engine_config().limit(settings.limit),
                           white_limit=job.white.engine_config().limit(settings.limit), time_margin=settings.time_margin,
                           adjudicators=_adjudicators(settings), names=(job.black.label, job.white.label))
        return _record(job, result, [engine for _, engine in engines])
    finally:
        for color, (key, engine) in enumerate(engines):
            faulted = result is not None and result.is_fault and result.winner == 1 - color
            pool.release(key, engine, fault=result.termination if faulted else None,
                         reason=result.reason if faulted else "")


def _pool_key(player: Player) -> tuple[str, str]:
    """The key of a player's kept engine: its label and everything that builds it."""
    return player.label, repr(player.engine_config())


def _record(job: GameJob, result: GameResult, engines: Sequence[Engine]) -> GameRecord:
    """The game's record, with the engines' own names (of those that started)."""
    names = [_reported_name(engine) for engine in engines] + ["", ""]
    return GameRecord(job.game_id, job.index, job.round, job.pair_id, job.opening.name, job.black.label,
                      job.white.label, job.seed, result, black_engine=names[0], white_engine=names[1],
                      date=pdn_date())


def _reported_name(engine: Engine) -> str:
    """The engine's own name; a plug-in whose property fails gives none."""
    try:
        return str(getattr(engine, "reported_name", "") or "")
    except Exception:  # noqa: BLE001 - a name is a courtesy, never a fault
        return ""


def _adjudicators(settings: GameSettings) -> list[Any]:
    tablebase = open_tablebase(settings.tables_dir) if settings.tables_dir else None
    return build_adjudicators(tablebase=tablebase, max_pieces=settings.adjudicate_pieces,
                              max_plies=settings.max_plies, heuristics=settings.heuristics,
                              draw_rule=settings.draw_adjudication, resign_rule=settings.resign_adjudication)


def _close_quietly(engine: Engine) -> None:
    try:
        engine.close()
    except Exception:  # noqa: BLE001 - a crashed engine may fail to close; the game is over
        logger.debug("closing %r failed", engine, exc_info=True)


def play_batch(jobs: Sequence[GameJob], settings: GameSettings, *, reuse_engines: bool = True,
               close_engines: bool = False) -> dict:
    """Play a batch's games in a worker: their records and the seconds they took.

    External engines are reused within the batch (and after it unless ``close_engines``: a
    cluster's worker outlives the run, so no engine process may outlive its batch there).
    """
    start = time.perf_counter()
    try:
        records = [play_job(job, settings, reuse_engines=reuse_engines) for job in jobs]
    finally:
        if close_engines:
            close_worker_pool()
    return {"records": records, "seconds": time.perf_counter() - start}


#: Tasks an executor takes ahead of its free workers, per worker slot (an SPRT stop wastes little).
WINDOW_PER_SLOT = 4


def play_games(jobs: Sequence[GameJob], settings: GameSettings, *, executor: Executor,
               reuse_engines: bool = True, pairs_per_task: int | None = None) -> Iterator[GameRecord]:
    """Yield each game's record once, as its batch completes on `executor`; stop the rest when
    closed. Batches hold whole game pairs, ``pairs_per_task`` of them or as many as take about
    :data:`tournament.batches.TARGET_TASK_SECONDS` (None). The same seeds give the same games
    on any executor; a task rerun after its worker died hands over no game twice.
    """
    pairs = deque(group_pairs(jobs))
    size = BatchSize(pairs_per_task)
    seen: set[str] = set()

    def tasks() -> Iterator[Task]:
        while pairs:
            batch = [job for _ in range(min(size.pairs, len(pairs))) for job in pairs.popleft()]
            yield Task(f"games-{batch[0].pair_id}", play_batch, (batch, settings),
                       {"reuse_engines": reuse_engines, "close_engines": executor.remote})

    directories = [settings.tables_dir] if settings.tables_dir else []
    try:
        with closing(executor.run(tasks(), window=WINDOW_PER_SLOT, directories=directories)) as done:
            for finished in done:  # closed early (an SPRT stop): the executor stops its tasks
                records = finished.result["records"]
                size.update(finished.result["seconds"], len({r.pair_id for r in records}))
                for record in records:
                    if record.game_id not in seen:
                        seen.add(record.game_id)
                        yield record
    finally:
        close_worker_pool()  # the engines this process kept (a pool of one job plays here)


# --- the records file ---------------------------------------------------------


def load_records(path: str | Path) -> list[GameRecord]:
    """The records of a games.jsonl file; a half-written last line is cut off the file.

    A broken line elsewhere raises ValueError naming the file and line.
    """
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    records = []
    for number, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            records.append(GameRecord.from_json(line.decode()))
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(complete) and not tail:
                return _truncate(path, data, len(data) - len(line) - 1, records)
            raise ValueError(f"{path}:{number}: broken game record: {exc}") from None
    if tail:
        return _truncate(path, data, len(data) - len(tail), records)
    return records


def _truncate(path: Path, data: bytes, size: int, records: list[GameRecord]) -> list[GameRecord]:
    """Cut a half-written line off the end of the records file."""
    logger.warning("%s: dropping a half-written last record (%d bytes); that game is replayed", path,
                   len(data) - size)
    with open(path, "r+b") as handle:
        handle.truncate(size)
        handle.flush()
        os.fsync(handle.fileno())
    return records


class _RecordLog:
    """Appends records to games.jsonl, each flushed and fsynced at once."""

    def __init__(self, path: Path) -> None:
        self._handle = open(path, "a", encoding="utf-8")

    def append(self, record: GameRecord) -> None:
        self._handle.write(record.to_json() + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()


# --- the tournament -------------------------------------------------------------


@dataclass
class TournamentResult:
    """What a run produced."""

    players: list[str]
    """Player labels in the order given."""
    records: list[GameRecord]
    """Every finished game (earlier runs' included), in schedule order."""
    scheduled: int
    """Games in the full schedule."""
    out_dir: Path
    """Run directory."""
    pdn_path: Path
    """PDN file of every game."""
    summary_path: Path
    """JSON summary."""
    standings: str
    """The printed standings table."""
    sprt: SprtResult | None = None
    """SPRT state at the end, when one was asked for."""

    @property
    def complete(self) -> bool:
        """Whether every scheduled game was played (or the SPRT stopped the match)."""
        return len(self.records) == self.scheduled or (self.sprt is not None and self.sprt.decision is not None)


@contextmanager
def _closing_worker_pool() -> Iterator[None]:
    """Close this process's kept engines on the way out (those :func:`check_engines` kept too)."""
    try:
        yield
    finally:
        close_worker_pool()


def run_tournament(
    config: TournamentConfig,
    *,
    out_dir: str | Path,
    concurrency: int | None = None,
    progress: bool = True,
    reuse_engines: bool = True,
    executor: Executor | None = None,
) -> TournamentResult:
    """Play (or resume) the tournament ``config`` describes and write its records into ``out_dir``.

    Args:
        config: the engines, openings, pairing, length, seed, game settings and SPRT
            (:class:`~tournament.config.TournamentConfig`); saved as settings.json.
        out_dir: run directory: games.jsonl, settings.json, games.pdn, summary.json, standings.txt.
        concurrency: worker processes (default: os.cpu_count(); 1 plays in this process).
        progress: show a progress bar.
        reuse_engines: keep external engines running between games (False: start them for every game).
        executor: where the games run: None is the local pool of ``concurrency`` processes, else an
            :class:`egtb.executor.Executor` such as :class:`egtb.dask.executor.DaskPool` (a Dask
            cluster).

    Raises ValueError when ``out_dir`` holds a run with other settings or the table directory
    does not exist, and EngineSetupError (a ValueError) when an engine cannot be started;
    all before the first game.
    """
    settings = config.game
    players = make_players(config.engines)
    jobs = schedule(players, config.openings, pairing=gauntlet if config.gauntlet else round_robin,
                    rounds=config.rounds, games=config.games, seed=config.seed)
    if settings.tables_dir:
        open_tablebase(settings.tables_dir)  # fail early, in the parent, on a bad directory
    if config.anchor is not None and config.anchor not in [p.label for p in players]:
        raise ValueError(f"anchor {config.anchor!r} is not one of the engines ({', '.join(p.label for p in players)})")
    out = Path(out_dir)
    here = executor is None and (concurrency or os.cpu_count() or 1) == 1  # the games are played here
    with _RunLog() as run_log, _closing_worker_pool():
        # what an engine warns about at its start is logged, kept until ...
        check_engines(players, settings, keep=here and reuse_engines)
        out.mkdir(parents=True, exist_ok=True)
        _check_settings(out, config, jobs)
        run_log.open(out / LOG_FILE)  # ... the run's directory exists
        records = load_records(out / RECORDS_FILE)
        done = {r.game_id for r in records}
        todo = [job for job in jobs if job.game_id not in done]
        labels = [p.label for p in players]
        try:
            records += _play_missing(todo, settings, out, labels, records, concurrency=concurrency,
                                     progress=progress, sprt_settings=config.sprt, scheduled=len(jobs),
                                     reuse_engines=reuse_engines, executor=executor)
        except KeyboardInterrupt:  # Ctrl-C: the games finished so far get their PDN, summary and standings
            _finish(out, labels, load_records(out / RECORDS_FILE), len(jobs), config)
            raise
    return _finish(out, labels, records, len(jobs), config)


class _RunLog(logging.Handler):
    """The run's log: the warnings logged while it is installed (the workers' too), appended to a file
    once :meth:`open` names it and kept in memory until then."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(processName)s %(name)s: %(message)s"))
        self._pending: list[str] = []
        self._file: Any = None

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        if self._file is None:
            self._pending.append(text)
        else:
            self._file.write(text + "\n")
            self._file.flush()

    def open(self, path: Path) -> None:
        """Write what was kept to ``path`` and what follows as it comes."""
        self.acquire()
        try:
            self._file = open(path, "a", encoding="utf-8")
            for text in self._pending:
                self._file.write(text + "\n")
            self._file.flush()
            self._pending.clear()
        finally:
            self.release()

    def __enter__(self) -> "_RunLog":
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self)
        if self._file is not None:
            self._file.close()
        self.close()


#: The settings that only say how long a run is: a run may be extended by changing them.
LENGTH_KEYS = frozenset({"games", "rounds"})


def _check_settings(out: Path, config: TournamentConfig, jobs: Sequence[GameJob]) -> None:
    """Write settings.json on a new run; refuse to resume a run made with other settings.

    A run whose settings differ in its length alone (``--games``, ``--rounds``) is extended
    when every game it holds is one of the new schedule's (the schedule of a longer run
    begins with the shorter one's games): settings.json then takes the new length.
    """
    path = out / SETTINGS_FILE
    if path.exists():
        changed = config.differences(json.loads(path.read_text(encoding="utf-8")))
        if changed and set(changed) <= LENGTH_KEYS:
            played = [r.game_id for r in load_records(out / RECORDS_FILE)]
            outside = sorted(set(played) - {job.game_id for job in jobs})
            if outside:
                raise ValueError(f"{out} holds {len(played)} games, {len(outside)} of them beyond the "
                                 f"{len(jobs)} games asked for (e.g. {outside[0]}); a run can be extended, "
                                 "not shortened: use another --out directory or a length of at least "
                                 f"{len(played)} games")
            write_atomic(path, json.dumps(config.to_json(), indent=2) + "\n")
            return
        if changed:
            raise ValueError(f"{out} holds a run with other settings ({', '.join(changed)}); "
                             "use another --out directory or the same options")
        return
    if (out / RECORDS_FILE).exists():
        raise ValueError(f"{out} holds {RECORDS_FILE} without {SETTINGS_FILE}; use another --out directory")
    write_atomic(path, json.dumps(config.to_json(), indent=2) + "\n")


def _play_missing(todo: list[GameJob], settings: GameSettings, out: Path, labels: list[str],
                  previous: list[GameRecord], *, concurrency: int | None, progress: bool,
                  sprt_settings: SprtSettings | None, scheduled: int,
                  reuse_engines: bool = True, executor: Executor | None = None) -> list[GameRecord]:
    """Play the missing games, appending each to the records file as it ends."""
    new: list[GameRecord] = []
    if not todo or _sprt_decided(sprt_settings, previous, labels):
        return new
    log = _RecordLog(out / RECORDS_FILE)
    bar = _progress_bar(scheduled, scheduled - len(todo), progress)
    workers = min(concurrency or os.cpu_count() or 1, len(todo))
    results = play_games(todo, settings, executor=executor or LocalPool(workers),
                         reuse_engines=reuse_engines)
    try:
        for record in results:
            log.append(record)
            new.append(record)
            bar.update(1)
            bar.set_postfix_str(_running_score(previous + new, labels), refresh=False)
            if _sprt_decided(sprt_settings, previous + new, labels):
                break
    finally:
        results.close()
        bar.close()
        log.close()
    return new


def _progress_bar(total: int, initial: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, unit="game", dynamic_ncols=True)


def _running_score(records: Sequence[GameRecord], labels: list[str]) -> str:
    """'a 3.5 - 2.5 b' for two engines, else the leader's points."""
    points = {label: 0.0 for label in labels}
    for record in records:
        points[record.black] += record.black_score
        points[record.white] += 1.0 - record.black_score
    if len(labels) == 2:
        a, b = labels
        return f"{a} {points[a]:g} - {points[b]:g} {b}"
    leader = max(labels, key=lambda label: points[label])
    return f"leader {leader} {points[leader]:g}"


def _sprt_decided(sprt_settings: SprtSettings | None, records: Sequence[GameRecord], labels: list[str]) -> bool:
    if sprt_settings is None or len(labels) != 2:
        return False
    return sprt_settings.test(records, labels[0], labels[1]).decision is not None


def _finish(out: Path, labels: list[str], records: list[GameRecord], scheduled: int,
            config: TournamentConfig) -> TournamentResult:
    """Write the PDN, the summary and the standings; return the result."""
    records = sorted(records, key=lambda r: r.index)
    anchor = config.anchor
    state = config.sprt.test(records, labels[0], labels[1]) if config.sprt and len(labels) == 2 else None
    pdn_path = write_pdn(records, out / PDN_FILE, event=config.event)
    summary = summarize(records, players=labels, settings=config.to_json(), sprt=state, anchor=anchor)
    summary.update(scheduled=scheduled, complete=len(records) == scheduled)
    summary_path = write_atomic(out / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    table = standings_text(records, players=labels, anchor=anchor)
    if state is not None:
        table += f"\nSPRT {state}"
    write_atomic(out / STANDINGS_FILE, table + "\n")
    return TournamentResult(labels, records, scheduled, out, pdn_path, summary_path, table, state)
