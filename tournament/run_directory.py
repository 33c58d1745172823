"""A tournament's run directory: the records of its games, its settings, its log and its outputs.

A run directory holds ``games.jsonl`` (one record a finished game, each appended
at once with flush + fsync; a half-written last line left by a kill is dropped
and that game replayed), ``settings.json`` (a run is resumed or extended only
with the same settings), ``run.log`` (the warnings of every session of the run)
and the outputs written from the records: ``games.pdn``, ``summary.json`` and
``standings.txt``.

>>> import tempfile
>>> run = RunDirectory(tempfile.mkdtemp())
>>> run.records(), run.pdn_path.name
([], 'games.pdn')
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tournament.config import TournamentConfig
from tournament.records import GameRecord, standings_text, summarize, write_atomic, write_pdn
from tournament.stats import SprtResult

__all__ = ["RunDirectory", "RunLog", "TournamentResult", "load_records"]

logger = logging.getLogger(__name__)

RECORDS_FILE = "games.jsonl"
LOG_FILE = "run.log"
"""Warnings of the run (a refused engine option, a restarted engine), appended across resumes."""
SETTINGS_FILE = "settings.json"
PDN_FILE = "games.pdn"
SUMMARY_FILE = "summary.json"
STANDINGS_FILE = "standings.txt"

#: The settings that only say how long a run is: a run may be extended by changing them.
LENGTH_KEYS = frozenset({"games", "rounds"})


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


@dataclass(frozen=True)
class RunDirectory:
    """The files of one run (:mod:`tournament.run_directory`), in `path`."""

    path: Path

    def __init__(self, path: str | os.PathLike) -> None:
        object.__setattr__(self, "path", Path(path))

    @property
    def records_path(self) -> Path:
        """``games.jsonl``: a record a finished game."""
        return self.path / RECORDS_FILE

    @property
    def log_path(self) -> Path:
        """``run.log``: the run's warnings."""
        return self.path / LOG_FILE

    @property
    def settings_path(self) -> Path:
        """``settings.json``: the run's settings (:meth:`TournamentConfig.to_json`)."""
        return self.path / SETTINGS_FILE

    @property
    def pdn_path(self) -> Path:
        """``games.pdn``: every finished game."""
        return self.path / PDN_FILE

    def records(self) -> list[GameRecord]:
        """The finished games' records (:func:`load_records`)."""
        return load_records(self.records_path)

    def check_settings(self, config: TournamentConfig, game_ids: Sequence[str]) -> None:
        """Make the directory and write settings.json on a new run; refuse to resume a run made
        with other settings (ValueError naming them), before any game.

        A run whose settings differ in its length alone (``--games``, ``--rounds``) is extended
        when every game it holds is one of the new schedule's `game_ids` (the schedule of a longer
        run begins with the shorter one's games): settings.json then takes the new length.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        if not self.settings_path.exists():
            if self.records_path.exists():
                raise ValueError(f"{self.path} holds {RECORDS_FILE} without {SETTINGS_FILE}; "
                                 "use another --out directory")
            self._save_settings(config)
            return
        changed = config.differences(json.loads(self.settings_path.read_text(encoding="utf-8")))
        if changed and set(changed) <= LENGTH_KEYS:
            played = [r.game_id for r in self.records()]
            outside = sorted(set(played) - set(game_ids))
            if outside:
                raise ValueError(f"{self.path} holds {len(played)} games, {len(outside)} of them beyond "
                                 f"the {len(game_ids)} games asked for (e.g. {outside[0]}); a run can be "
                                 "extended, not shortened: use another --out directory or a length of "
                                 f"at least {len(played)} games")
            self._save_settings(config)
        elif changed:
            raise ValueError(f"{self.path} holds a run with other settings ({', '.join(changed)}); "
                             "use another --out directory or the same options")

    def _save_settings(self, config: TournamentConfig) -> None:
        write_atomic(self.settings_path, json.dumps(config.to_json(), indent=2) + "\n")

    def appender(self) -> RecordAppender:
        """A writer that appends records to ``games.jsonl`` (close it when done)."""
        return RecordAppender(self.records_path)

    def finish(self, labels: list[str], records: list[GameRecord], scheduled: int,
               config: TournamentConfig) -> TournamentResult:
        """Write the PDN, the summary and the standings of `records`; return the run's result."""
        records = sorted(records, key=lambda r: r.index)
        anchor = config.anchor
        state = config.sprt.test(records, labels[0], labels[1]) if config.sprt and len(labels) == 2 else None
        pdn_path = write_pdn(records, self.pdn_path, event=config.event)
        summary = summarize(records, players=labels, settings=config.to_json(), sprt=state, anchor=anchor)
        summary.update(scheduled=scheduled, complete=len(records) == scheduled)
        summary_path = write_atomic(self.path / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
        table = standings_text(records, players=labels, anchor=anchor)
        if state is not None:
            table += f"\nSPRT {state}"
        write_atomic(self.path / STANDINGS_FILE, table + "\n")
        return TournamentResult(labels, records, scheduled, self.path, pdn_path, summary_path, table, state)


def load_records(path: str | Path) -> list[GameRecord]:
    """The records of a games.jsonl file; a half-written last line is cut off the file.

    A broken line elsewhere raises ValueError naming the file and line.

    >>> load_records("/nonexistent/games.jsonl")
    []
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


class RecordAppender:
    """Appends records to games.jsonl, each flushed and fsynced at once."""

    def __init__(self, path: Path) -> None:
        self._handle = open(path, "a", encoding="utf-8")

    def append(self, record: GameRecord) -> None:
        """Write one record and make it durable."""
        self._handle.write(record.to_json() + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file."""
        self._handle.close()


class RunLog(logging.Handler):
    """The run's log: the warnings logged while it is installed (the workers' too), appended to a file
    once :meth:`open` names it and kept in memory until then (an engine warns at its start, before
    the run directory is checked)."""

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

    def __enter__(self) -> RunLog:
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self)
        if self._file is not None:
            self._file.close()
        self.close()
