"""Which table directory a command means: the one given, else $EGTB_DIR, else data/egtb.

No h5py, numpy or numba here, so that both command lines can name the default in
their ``--tables`` help without loading them; :mod:`egtb.formats.master`
re-exports all of it.

>>> resolve_dir("/tables"), resolve_dir(None) == default_dir()
(PosixPath('/tables'), True)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_DIR", "ENV_DIR", "default_dir", "resolve_dir"]

#: Environment variable naming the default table directory.
ENV_DIR = "EGTB_DIR"
DEFAULT_DIR = Path("data/egtb")


def default_dir() -> Path:
    """Table directory: $EGTB_DIR if set, else data/egtb.

    >>> isinstance(default_dir(), Path)
    True
    """
    return Path(os.environ.get(ENV_DIR) or DEFAULT_DIR)


def resolve_dir(directory: os.PathLike | str | None = None) -> Path:
    """The table directory: the one given, else $EGTB_DIR, else data/egtb (:func:`default_dir`).

    The one place that answers it, for both command lines, the builder, the
    verifier, the prober and the page.

    >>> resolve_dir("/tables"), resolve_dir(None) == default_dir()
    (PosixPath('/tables'), True)
    """
    return Path(directory) if directory else default_dir()
