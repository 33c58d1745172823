"""Where numba keeps the compiled kernels: a directory per state of the source tree.

numba's cache (``cache=True``) checks only the file of the function it compiled (its size
and modification time), while most of our kernels call kernels of other modules, whose
code numba compiles into theirs. After an update that changes only the callee's module
(a ``git pull``), the caller's cached machine code would still hold the old callee: a
wrong answer, not an error. So the kernels go to a directory of their own for each state
of the source, named by a digest of the size and modification time of every source file
of the packages (numba's own test for one file, taken over all of them):
``$XDG_CACHE_HOME/egtb/numba/<digest>`` (``~/.cache`` by default). A ``NUMBA_CACHE_DIR``
the user sets is kept as it is. Directories unused for :data:`KEEP_DAYS` days are removed.

>>> len(source_digest([])) == 16
True
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

__all__ = ["KEEP_DAYS", "cache_root", "set_cache_dir", "source_digest"]

#: Cache directories of other states of the source unused this long are removed.
KEEP_DAYS = 14
#: The packages whose kernels are cached (those beside this one that exist).
PACKAGES = ("egtb", "tournament")


def source_digest(roots: list[Path]) -> str:
    """A digest of the relative path, size and modification time of every ``.py`` file below
    ``roots``."""
    digest = hashlib.blake2b(digest_size=8)
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path.relative_to(root.parent)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def cache_root() -> Path:
    """The directory holding one cache directory per state of the source (under the system's
    temporary directory where there is no home)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (KeyError, RuntimeError):  # no HOME and no password entry
            import tempfile  # here only: every import of egtb runs this module
            base = tempfile.gettempdir()
    return Path(base) / "egtb" / "numba"


def set_cache_dir() -> Path | None:
    """Point numba's cache at this state of the source's directory (unless ``NUMBA_CACHE_DIR`` is
    set), removing those unused for KEEP_DAYS days; return it (None when the user's is kept)."""
    if "NUMBA_CACHE_DIR" in os.environ:
        return None
    here = Path(__file__).resolve().parent.parent
    roots = [here / name for name in PACKAGES if (here / name).is_dir()]
    directory = cache_root() / source_digest(roots)
    os.environ["NUMBA_CACHE_DIR"] = str(directory)
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba imported before us: its config read the environment already
        config.CACHE_DIR = str(directory)
    _prune(directory)
    return directory


def _prune(keep: Path) -> None:
    """Remove the cache directories of other states of the source unused for KEEP_DAYS days, and
    mark ``keep`` as used."""
    try:
        keep.mkdir(parents=True, exist_ok=True)
        os.utime(keep)
        old = time.time() - KEEP_DAYS * 86400
        for other in keep.parent.iterdir():
            if other != keep and other.is_dir() and other.stat().st_mtime < old:
                import shutil  # here only: every import of egtb runs this module
                shutil.rmtree(other, ignore_errors=True)
    except OSError:  # a read-only home: numba then caches where it can (beside the sources, or not at all)
        pass
