"""Engines kept alive between games: one per worker process and player.

External engines (``Engine.persistent``: Hub programs, CheckerBoard libraries) are
expensive to start, so a worker starts each once, tells it about every new game
(``new_game``) and reuses it. After a fault of its own (a crash, a garbage answer,
a time forfeit) the engine is closed and started afresh for its next game, and the
restart is logged. In-process engines are cheap and seeded per game: they are built
for every game and closed after it, as before.

Each process has its own pool (:func:`worker_pool`); a forked child never reuses
its parent's engines.

>>> from tournament.engines.random import RandomEngine
>>> pool = EnginePool()
>>> engine = pool.acquire("a", lambda: RandomEngine(seed=1))
>>> pool.release("a", engine, fault=None)   # not persistent: closed, not kept
>>> len(pool)
0
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Hashable

from tournament.engines.base import Engine
from tournament.result import GameTermination

__all__ = ["RESTART_AFTER", "EnginePool", "close_worker_pool", "worker_pool"]

logger = logging.getLogger(__name__)

RESTART_AFTER = frozenset({GameTermination.CRASH, GameTermination.TIME_FORFEIT})
"""Faults after which a kept engine is started afresh (its state is unknown). An illegal
move leaves a working process: it is kept."""


class EnginePool:
    """Persistent engines of one process, by player key."""

    def __init__(self, *, reuse: bool = True) -> None:
        self.reuse = reuse
        """False: start every engine for every game (to measure what reuse saves)."""
        self._engines: dict[Hashable, Engine] = {}
        self._faults: dict[Hashable, str] = {}
        self.starts = 0
        """Engines started by this pool."""
        self.restarts = 0
        """Engines started again after a fault."""

    def __len__(self) -> int:
        return len(self._engines)

    def acquire(self, key: Hashable, build: Callable[[], Engine]) -> Engine:
        """The kept engine of ``key`` if it is still running, else a new one from ``build``."""
        engine = self._engines.pop(key, None)
        if engine is not None:
            if _alive(engine):
                return engine
            logger.warning("engine %s died between games; starting it again", key)
            _close_quietly(engine)
        reason = self._faults.pop(key, None)
        engine = build()
        self.starts += 1
        if reason is not None:
            self.restarts += 1
            logger.warning("engine %s restarted after a fault: %s", key, reason)
        return engine

    def release(self, key: Hashable, engine: Engine, *, fault: GameTermination | None, reason: str = "") -> None:
        """Give an engine back after a game; ``fault`` is the termination when this engine lost by a fault."""
        keep = self.reuse and getattr(engine, "persistent", False)
        if keep and fault in RESTART_AFTER:
            self._faults[key] = reason or fault.value
            keep = False
        if keep and _alive(engine):
            self._engines[key] = engine
        else:
            _close_quietly(engine)

    def close(self) -> None:
        """Close every kept engine."""
        engines, self._engines = list(self._engines.values()), {}
        for engine in engines:
            _close_quietly(engine)


def _alive(engine: Engine) -> bool:
    alive = getattr(engine, "alive", None)
    return bool(alive()) if callable(alive) else True


def _close_quietly(engine: Engine) -> None:
    try:
        engine.close()
    except Exception:  # noqa: BLE001 - a crashed engine may fail to close
        logger.debug("closing %r failed", engine, exc_info=True)


_POOL: tuple[int, EnginePool] | None = None


def worker_pool(*, reuse: bool = True) -> EnginePool:
    """This process's pool (a new, empty one in a forked child)."""
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), EnginePool(reuse=reuse))
    _POOL[1].reuse = reuse
    return _POOL[1]


def close_worker_pool() -> None:
    """Close this process's kept engines (the end of a run, or of a worker)."""
    global _POOL
    if _POOL is not None and _POOL[0] == os.getpid():
        _POOL[1].close()
    _POOL = None
