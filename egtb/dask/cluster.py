"""Connecting to a Dask cluster: the part shared by table builds and tournaments.

Dask (``pip install .[distributed]``) is optional: nothing here imports it at
module level, and :func:`connect` fails with a message naming the install
command when it is absent. A cluster is given the way Dask's own tools give
it: a scheduler address (``tcp://10.0.0.5:8786``) or a scheduler file written
by ``dask scheduler --scheduler-file PATH``. docs/distributed.md shows how to
start one on a laptop, under SLURM or on Kubernetes.

:func:`connect` checks the setup before any work is sent (bad setup fails
early): the scheduler answers, at least one worker joins, and every worker
can import this package and see the shared directories the work needs. It
also installs a worker plugin (``egtb.dask.plugin.WorkerEnvironment``), which sets
``HDF5_USE_FILE_LOCKING=FALSE`` in each worker process (unless the worker's
environment already sets it) before the worker opens any HDF5 file.

>>> ClusterSpec(scheduler="tcp://10.0.0.5:8786").describe()
'tcp://10.0.0.5:8786'
>>> ClusterSpec().given
False
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from egtb.errors import ClusterError, InvalidArgumentError

__all__ = ["ClusterError", "ClusterSpec", "INSTALL_HINT", "capture_logs", "connect", "require_distributed",
           "replay_logs"]

log = logging.getLogger("egtb.dask.cluster")

#: What to install when Dask is missing.
INSTALL_HINT = "pip install .[distributed]  (or: pip install 'dask[distributed]')"
#: Seconds to wait for the scheduler to answer and for the first worker to join.
CONNECT_TIMEOUT = 30.0
#: Environment every worker process gets unless its own environment already sets the variable.
#: Table files are written once, under a private temporary name, and renamed when complete, so
#: HDF5's advisory file locks protect nothing; on NFS/Lustre without lock support they fail.
WORKER_ENVIRONMENT = {"HDF5_USE_FILE_LOCKING": "FALSE"}
LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


@dataclass(frozen=True)
class ClusterSpec:
    """Where the Dask scheduler is: an address or a scheduler file (neither: run locally)."""

    scheduler: str | None = None
    """Scheduler address, e.g. ``tcp://10.0.0.5:8786``."""
    scheduler_file: str | None = None
    """JSON file written by ``dask scheduler --scheduler-file``."""

    @property
    def given(self) -> bool:
        """Whether a cluster was asked for."""
        return bool(self.scheduler or self.scheduler_file)

    def describe(self) -> str:
        """The address or the scheduler file, for messages."""
        return self.scheduler or f"scheduler file {self.scheduler_file}"


def require_distributed() -> Any:
    """The ``distributed`` module, or :class:`ClusterError` saying what to install.

    >>> require_distributed().__name__  # doctest: +SKIP
    'distributed'
    """
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(f"running on a Dask cluster needs Dask distributed: {INSTALL_HINT} ({exc})") from None
    return distributed


def connect(spec: ClusterSpec, *, directories: Sequence[os.PathLike | str] = (), writable: bool = True,
            timeout: float = CONNECT_TIMEOUT) -> Any:
    """A ``distributed.Client`` on the cluster, checked: a worker is there and sees ``directories``.

    ``writable``: the workers must also be able to write into the directories (a build's tables).

    Raises :class:`ClusterError` naming the scheduler (or the worker) when something is wrong;
    closes the client it opened in that case.
    """
    if not spec.given:
        raise InvalidArgumentError("no Dask scheduler given (use --scheduler ADDRESS or --scheduler-file PATH)")
    distributed = require_distributed()
    if spec.scheduler_file and not Path(spec.scheduler_file).is_file():
        raise ClusterError(f"scheduler file {spec.scheduler_file} does not exist "
                           "(start the scheduler with: dask scheduler --scheduler-file PATH)")
    try:
        if spec.scheduler_file:
            client = distributed.Client(scheduler_file=str(spec.scheduler_file), timeout=timeout)
        else:
            client = distributed.Client(spec.scheduler, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {spec.describe()}: {exc}") from None
    try:
        prepare_workers(client, directories=directories, writable=writable, timeout=timeout)
    except BaseException:
        client.close()
        raise
    return client


def prepare_workers(client: Any, *, directories: Sequence[os.PathLike | str] = (), writable: bool = True,
                    timeout: float = CONNECT_TIMEOUT) -> dict[str, dict]:
    """Wait for a worker, install the environment plugin, check every worker; return their facts."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:
        raise ClusterError(f"no Dask worker joined the scheduler {client.scheduler.address} within "
                           f"{timeout:g}s (start some with: dask worker ADDRESS)") from None
    from egtb.dask.plugin import WorkerEnvironment
    client.register_plugin(WorkerEnvironment(WORKER_ENVIRONMENT), name="egtb-environment")
    paths = [str(Path(d).resolve()) for d in directories]
    try:
        facts = client.run(inspect_worker, paths, writable)
    except Exception as exc:  # noqa: BLE001 - unpickling fails on a worker without this package
        raise ClusterError(f"the Dask workers cannot run egtb ({type(exc).__name__}: {exc}); install this "
                           "package (with the same version) into the workers' environment") from None
    for address, fact in facts.items():
        for path, ok in fact["directories"].items():
            if not ok:
                raise ClusterError(f"Dask worker {address} on {fact['host']} cannot "
                                   f"{'write to' if writable else 'read'} {path}; "
                                   "the directory must be on storage shared by the client and every worker")
    log.info("Dask cluster %s: %d workers %s", client.scheduler.address, len(facts),
             sorted(f"{f['host']}:{f['pid']}" for f in facts.values()))
    return facts


def inspect_worker(directories: Sequence[str], writable: bool = True) -> dict:
    """Facts about the worker process this runs in (run by :func:`prepare_workers` on every worker).

    >>> inspect_worker(["/"], False)["directories"]
    {'/': True}
    """
    from egtb import __version__
    mode = os.W_OK if writable else os.R_OK
    return {"host": socket.gethostname(), "pid": os.getpid(), "version": __version__,
            "python": sys.version.split()[0],
            "directories": {d: os.path.isdir(d) and os.access(d, mode) for d in directories}}


@contextmanager
def capture_logs(logger_name: str = "egtb", *, level: int = logging.INFO) -> Iterator[list[tuple[int, str]]]:
    """Collect (level, formatted line) of each record this thread emits under ``logger_name``
    at ``level`` or above (on a worker).

    >>> with capture_logs("egtb.demo") as lines:
    ...     logging.getLogger("egtb.demo").info("solved %s", "1k-1k")
    >>> lines[0][0] == logging.INFO and "egtb.demo INFO solved 1k-1k [" in lines[0][1]  # then [host:pid]
    True
    """
    lines: list[tuple[int, str]] = []
    handler = _ThreadLines(lines, threading.get_ident())
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.setLevel(level)
    logger = logging.getLogger(logger_name)
    old_level = logger.level
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    logger.addHandler(handler)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


class _ThreadLines(logging.Handler):
    """Append (level, formatted line) of the records of one thread to a list."""

    def __init__(self, lines: list[tuple[int, str]], thread: int) -> None:
        super().__init__()
        self.lines = lines
        self.thread = thread

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.lines.append((record.levelno,
                               f"{self.format(record)} [{socket.gethostname()}:{os.getpid()}]"))


def replay_logs(lines: Sequence[tuple[int, str]], logger: logging.Logger) -> None:
    """Log a worker's captured lines in this process at their levels (they keep their worker time stamps)."""
    for level, line in lines:
        logger.log(level, "worker: %s", line)
