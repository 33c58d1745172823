"""The built-in searcher's named strengths, apart from its kernels.

``easy``, ``medium`` and ``hard`` are engine specs (:mod:`tournament.engines.registry`)
and keyword arguments of :class:`~tournament.engines.search.SearchEngine`. They live
here, with no import of ours, so that the registry can tell a strength from any other
spec without loading numba and the search kernels (an engine process playing
``random`` or a plug-in never loads them).

>>> STRENGTHS["medium"]
{'depth': 6}
"""

from __future__ import annotations

from typing import Any

__all__ = ["STRENGTHS"]

#: Named strengths: keyword arguments of SearchEngine.
STRENGTHS: dict[str, dict[str, Any]] = {
    "easy": {"depth": 2, "noise": 60},
    "medium": {"depth": 6},
    "hard": {"depth": 10, "time": 5.0},
}
