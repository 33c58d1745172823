"""The Dask worker plugin of :mod:`egtb.dask.cluster` (imports Dask, so only loaded when a cluster is used)."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from distributed import WorkerPlugin

log = logging.getLogger("egtb.dask.cluster")


class WorkerEnvironment(WorkerPlugin):
    """Set environment variables that the worker's own environment leaves unset.

    Dask runs :meth:`setup` in each worker process when it joins (also a worker
    restarted after a crash) before it runs a task, so HDF5 sees
    ``HDF5_USE_FILE_LOCKING`` when it first loads (egtb loads h5py lazily).
    """

    idempotent = True

    def __init__(self, variables: dict[str, str]) -> None:
        self.variables = dict(variables)

    def setup(self, worker: Any) -> None:
        """Set the variables that are still unset; warn when HDF5 is already loaded."""
        for name, value in self.variables.items():
            if name in os.environ:
                continue
            os.environ[name] = value
            if name.startswith("HDF5") and "h5py" in sys.modules:
                log.warning("%s set after h5py was loaded in worker process %d; set it in the "
                            "worker's environment instead", name, os.getpid())
