"""Run a tournament: its games played on an executor, each record kept as it ends, resumable.

The games come from :func:`tournament.pairings.schedule` (ids and seeds fixed by the
command's settings), so a run that was interrupted is resumed by starting the same
command again: the finished games are read back from the run directory
(:mod:`tournament.run_directory`) and only the missing ones are played.

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

import logging
import os
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from egtb.executor import Executor, LocalPool, Task
from tournament.adjudicate import build_adjudicators, open_tablebase
from tournament.batches import BatchSize, group_pairs
from tournament.config import GameSettings, SprtSettings, TournamentConfig
from tournament.engines.base import Engine, EngineSetupError
from tournament.engines.pool import close_worker_pool, worker_pool
from tournament.game import play_game
from tournament.pairings import GameJob, Player, derive_seed, gauntlet, make_players, opening_start, round_robin, schedule
from tournament.records import GameRecord, pdn_date
from tournament.result import GameResult, GameTermination, color_name
from tournament.run_directory import RunDirectory, RunLog, TournamentResult

__all__ = ["TournamentResult", "check_engines", "play_batch", "play_games", "play_job", "run_tournament"]

logger = logging.getLogger(__name__)


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
        limits = (job.black.engine_config().limit(settings.limit), job.white.engine_config().limit(settings.limit))
        result = play_game(engines[0][1], engines[1][1], settings=settings, start_fen=start_fen,
                           opening_moves=moves, limits=limits, adjudicators=_adjudicators(settings),
                           names=(job.black.label, job.white.label))
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


# --- the tournament -------------------------------------------------------------


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
    run = RunDirectory(out_dir)
    here = executor is None and (concurrency or os.cpu_count() or 1) == 1  # the games are played here
    with RunLog() as run_log, _closing_worker_pool():
        # what an engine warns about at its start is logged, kept until ...
        check_engines(players, settings, keep=here and reuse_engines)
        run.check_settings(config, [job.game_id for job in jobs])
        run_log.open(run.log_path)  # ... the run's directory exists
        records = run.records()
        done = {r.game_id for r in records}
        todo = [job for job in jobs if job.game_id not in done]
        labels = [p.label for p in players]
        try:
            records += _play_missing(todo, settings, run, labels, records, concurrency=concurrency,
                                     progress=progress, sprt_settings=config.sprt, scheduled=len(jobs),
                                     reuse_engines=reuse_engines, executor=executor)
        except KeyboardInterrupt:  # Ctrl-C: the games finished so far get their PDN, summary and standings
            run.finish(labels, run.records(), len(jobs), config)
            raise
    return run.finish(labels, records, len(jobs), config)


def _play_missing(todo: list[GameJob], settings: GameSettings, run: RunDirectory, labels: list[str],
                  previous: list[GameRecord], *, concurrency: int | None, progress: bool,
                  sprt_settings: SprtSettings | None, scheduled: int,
                  reuse_engines: bool = True, executor: Executor | None = None) -> list[GameRecord]:
    """Play the missing games, appending each to the records file as it ends."""
    new: list[GameRecord] = []
    if not todo or _sprt_decided(sprt_settings, previous, labels):
        return new
    log = run.appender()
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
