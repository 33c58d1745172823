"""What a check of the tables found: :class:`VerifyReport` (of :mod:`egtb.builder.verify` and
:mod:`egtb.builder.verify_compact`, which both fill it).

>>> VerifyReport().ok
False
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_REPORTED", "VerifyReport"]

#: Errors remembered per table.
MAX_REPORTED = 20


@dataclass
class VerifyReport:
    """Outcome of :func:`egtb.builder.verify.verify_directory`."""

    checked: int = 0
    """Positions checked."""
    tables: int = 0
    """Tables checked."""
    errors: int = 0
    """Positions failing a check (or broken/missing files, counted once each)."""
    messages: list[str] = field(default_factory=list)
    """The first offending positions (FEN and reason) and file problems."""

    skipped: list[str] = field(default_factory=list)
    """Materials not checked again: they passed before, their files unchanged (``resume``)."""

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return self.errors == 0 and (self.tables > 0 or bool(self.skipped))

    def add(self, result: Any) -> None:
        """Count one material's result in (a :class:`egtb.builder.verify.MaterialResult`)."""
        self.tables += result.tables
        self.checked += result.checked
        self.errors += result.errors
        self.messages += result.messages[:max(0, MAX_REPORTED - len(self.messages))]
