"""One bounded cache of loaded tables, shared by the builder, the verifier and the prober.

Each process has one, :func:`process_cache`, with one byte budget for every user: a build
worker's dependency tables, the verifier's tables, the prober's blocks (each under keys of
its own).

Entries are kept least recently used first and dropped from that end while
there are more than ``max_entries`` of them or they take more than
``max_bytes`` (the entry just asked for always stays). Each entry remembers the
modification time and size of the file it was read from: a file replaced since
(a rebuilt table) is read again instead of served stale. The check costs one
``stat``; ``recheck_seconds`` spares it for an entry checked that recently (the
prober's hot path).

>>> import tempfile, numpy as np
>>> path = Path(tempfile.mkdtemp()) / "t.npy"
>>> np.save(path, np.arange(3))
>>> cache = TableCache(max_entries=2)
>>> cache.get("t", path, np.load).tolist()
[0, 1, 2]
>>> np.save(path, np.arange(5))                  # the file changes: its size differs
>>> cache.get("t", path, np.load).tolist()
[0, 1, 2, 3, 4]
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from egtb.errors import InvalidArgumentError

__all__ = ["DEFAULT_PROCESS_BYTES", "ENV_BUDGET", "TableCache", "file_stamp", "process_cache", "release_evicted"]

#: Environment variable: bytes of table blocks one process keeps in memory, every prober together.
ENV_BUDGET = "EGTB_CACHE_BYTES"
#: The default of that budget.
DEFAULT_PROCESS_BYTES = 2 << 30


def file_stamp(path: os.PathLike | str) -> list[int] | None:
    """[size, modification time in ns] of a file, or None when it does not exist: how a cache
    entry, or a record kept as JSON (:class:`egtb.formats.master.JsonRecord`), tells that the
    file changed since (a list, as JSON gives it back)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def nbytes_of(value: Any) -> int:
    """Memory of a cached value: its ``nbytes``, or the sum over a tuple's items."""
    if isinstance(value, tuple):
        return sum(nbytes_of(item) for item in value)
    return int(getattr(value, "nbytes", 0))


@dataclass
class _Entry:
    value: Any
    path: Path
    stamp: tuple[int, int] | None
    nbytes: int
    checked: float


@dataclass(kw_only=True)
class TableCache:
    """A least-recently-used cache of tables read from files, bounded by count and bytes."""

    max_entries: int | None = None
    """Most entries kept (None: no bound)."""
    max_bytes: int | None = None
    """Most bytes kept (None: no bound); one entry larger than that still stays."""
    recheck_seconds: float = 0.0
    """An entry whose file was checked less than this long ago is served without a ``stat``."""
    on_evict: Callable[[Hashable, Any], None] | None = None
    """Called as ``on_evict(key, value)`` for each entry dropped (by the bounds, a reload or :meth:`clear`)."""
    _entries: OrderedDict[Hashable, _Entry] = field(default_factory=OrderedDict, init=False, repr=False)
    _nbytes: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_entries is not None and self.max_entries < 1:
            raise InvalidArgumentError(f"max_entries must be at least 1, not {self.max_entries}")

    def get(self, key: Hashable, path: os.PathLike | str | Callable[[], os.PathLike | str],
            load: Callable[[Path], Any]) -> Any:
        """The value cached under ``key``, or ``load(path)`` when absent or the file changed since.

        ``path`` may be a function that finds the file (called only when it is
        read). ``load`` raises what it raises (a missing file is its error to name).
        """
        entry = self._entries.get(key)
        now = time.monotonic()
        if entry is not None:
            if now - entry.checked < self.recheck_seconds or file_stamp(entry.path) == entry.stamp:
                entry.checked = now
                self._entries.move_to_end(key)
                return entry.value
            self._drop(key)
        path = Path(path() if callable(path) else path)
        stamp = file_stamp(path)  # before reading: a file replaced meanwhile is read again
        value = load(path)
        self._insert(key, _Entry(value, path, stamp, nbytes_of(value), now))
        return value

    def put(self, key: Hashable, path: os.PathLike | str, value: Any) -> None:
        """Cache `value` as what ``load(path)`` gives now (e.g. a table this process just
        wrote, still in memory), replacing any entry under `key`.

        >>> import tempfile, numpy as np
        >>> path = Path(tempfile.mkdtemp()) / "t.npy"
        >>> np.save(path, np.arange(2))
        >>> cache = TableCache()
        >>> cache.put("t", path, np.arange(2))
        >>> cache.get("t", path, lambda p: "read again").tolist()
        [0, 1]
        """
        if key in self._entries:
            self._drop(key)
        path = Path(path)
        self._insert(key, _Entry(value, path, file_stamp(path), nbytes_of(value), time.monotonic()))

    def _insert(self, key: Hashable, entry: _Entry) -> None:
        self._entries[key] = entry
        self._nbytes += entry.nbytes
        self._trim()

    @contextmanager
    def bounded(self, max_bytes: int) -> Iterator["TableCache"]:
        """Keep at most `max_bytes` (or the cache's own bound, when smaller) until the block ends
        (a build holds its workers' share of the process's budget to its memory plan; workers
        forked inside the block keep the bound).

        >>> cache = TableCache(max_bytes=100)
        >>> with cache.bounded(10):
        ...     cache.max_bytes
        10
        >>> cache.max_bytes
        100
        """
        old = self.max_bytes
        self.max_bytes = max_bytes if old is None else min(old, max_bytes)
        self._trim()
        try:
            yield self
        finally:
            self.max_bytes = old

    def drop_if(self, matches: Callable[[Hashable], bool]) -> None:
        """Drop every entry whose key `matches` (e.g. one user's entries in the process's cache).

        >>> cache = TableCache()
        >>> cache.put(("verify", 1), "/nonexistent", 1); cache.put(("probe", 2), "/nonexistent", 2)
        >>> cache.drop_if(lambda key: key[0] == "verify"); list(cache.values())
        [2]
        """
        for key in [key for key in self._entries if matches(key)]:
            self._drop(key)

    def touch(self, key: Hashable) -> None:
        """Mark a cached entry as just used (it is dropped last)."""
        self._entries.move_to_end(key)

    def peek(self, key: Hashable) -> Any | None:
        """The value cached under ``key`` (None if absent), without checking its file or using it."""
        entry = self._entries.get(key)
        return None if entry is None else entry.value

    def discard(self, key: Hashable) -> None:
        """Drop the entry under ``key`` if there is one (its ``on_evict`` is called).

        >>> cache = TableCache()
        >>> cache.put("t", "/nonexistent", 1); cache.discard("t"); cache.discard("t"); len(cache)
        0
        """
        if key in self._entries:
            self._drop(key)

    def clear(self) -> None:
        """Drop every entry."""
        for key in list(self._entries):
            self._drop(key)

    @property
    def nbytes(self) -> int:
        """Bytes the cached values take."""
        return self._nbytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def keys(self) -> Iterator[Hashable]:
        """The keys, least recently used first."""
        return iter(list(self._entries))

    def values(self) -> Iterator[Any]:
        """The cached values, least recently used first."""
        return (entry.value for entry in self._entries.values())

    def _over(self) -> bool:
        return ((self.max_entries is not None and len(self._entries) > self.max_entries)
                or (self.max_bytes is not None and self._nbytes > self.max_bytes))

    def _trim(self) -> None:
        """Drop least recently used entries while over a bound, keeping the newest."""
        while len(self._entries) > 1 and self._over():
            self._drop(next(iter(self._entries)))

    def _drop(self, key: Hashable) -> None:
        entry = self._entries.pop(key)
        self._nbytes -= entry.nbytes
        if self.on_evict is not None:
            self.on_evict(key, entry.value)


_PROCESS: list[TableCache] = []


def process_cache() -> TableCache:
    """This process's cache of loaded tables: one budget (bytes, $EGTB_CACHE_BYTES, default
    :data:`DEFAULT_PROCESS_BYTES`) for every user in the process: the probers' blocks, a build
    worker's dependency tables, the verifier's tables.

    An entry's value may have a ``release()`` method, called when it is dropped
    (a prober's block map then forgets the block). A forked child inherits it
    with the blocks it holds, as it inherits the probers.

    >>> process_cache() is process_cache()
    True
    """
    if not _PROCESS:
        budget = int(os.environ.get(ENV_BUDGET) or DEFAULT_PROCESS_BYTES)
        _PROCESS.append(TableCache(max_bytes=budget, on_evict=release_evicted))
    return _PROCESS[0]


def release_evicted(key: Hashable, value: Any) -> None:
    """Tell a dropped value it is gone (when it cares)."""
    release = getattr(value, "release", None)
    if release is not None:
        release()
