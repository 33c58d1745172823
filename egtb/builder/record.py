"""What building one pair did and took: the per-pair log of a build (:class:`PairRecord`),
which :func:`egtb.builder.pipeline.build_pair` and :func:`egtb.builder.split.finish` return,
the driver collects in its report and ``egtb build`` prints (and gives in ``--json``).
"""

from __future__ import annotations

from dataclasses import dataclass

from egtb.builder.budget import GB


@dataclass(frozen=True)
class PairRecord:
    """What building one pair did and took (:func:`build_pair`, :func:`egtb.builder.split.finish`):
    the per-pair log of a build."""

    key: str
    """The pair (:attr:`egtb.builder.plan.Pair.key`)."""
    units: int
    """Units solved."""
    positions: int
    """Positions of the pair."""
    seconds: float
    """Wall seconds, load to write."""
    cpu_seconds: float
    """CPU seconds of the thread (of every unit task for a split pair)."""
    started: float
    """Wall-clock epoch seconds at the start."""
    finished: float
    """Wall-clock epoch seconds at the end."""
    tables: list[dict]
    """Each material's summary (counts, layers), with its file's CRC-32 ``checksum``."""
    rules: tuple[str, ...]
    """The rule layers solved."""
    dtw: bool
    """Whether DTW was solved."""
    on_disk: bool
    """Whether its values were memory-mapped on scratch files."""
    per_pass: int = 0
    """Tables a regenerating pass solved (0: the edge-list kernel)."""
    estimated_bytes: int = 0
    """The plan's memory estimate (:class:`egtb.builder.budget.PairPlan`)."""
    scratch_bytes: int = 0
    """The plan's scratch files on disk."""
    peak_rss: int = 0
    """The worker's peak resident memory so far, bytes."""
    disk_used: int = 0
    """Bytes the table directory took once the pair was written."""
    load_seconds: float = 0.0
    """Wall seconds loading its dependencies."""
    solve_seconds: float = 0.0
    """Wall seconds solving."""
    split: int = 0
    """Unit tasks it ran as (0: one task)."""
    workers: tuple = ()
    """(host, pid) of the workers that solved units of a split pair."""
    host: str = ""
    """The host that wrote it (set by the driver)."""
    pid: int = 0
    """The process that wrote it (set by the driver)."""

    def text(self) -> str:
        """One line of the per-pair log (the form bench/seven_log.py reads from build.log).

        >>> print(PairRecord("4k-4k", 9, 10**6, 2.0, 1.5, 0.0, 2.0, [], ("wcdf",), False, False,
        ...                  peak_rss=3 << 30, disk_used=5 << 30, load_seconds=0.5, solve_seconds=1.0).text())
        4k-4k: 9 units, 1000000 positions in 2.00s (load 0.50s, solve 1.00s, write 0.50s); 1.5 CPU s (1.50 us a position), worker peak RSS 3072 MB, table directory 5.00 GB
        """
        write = self.seconds - self.load_seconds - self.solve_seconds
        phases = (f"{self.split} unit tasks on {len(set(self.workers))} workers, then write {write:.2f}s"
                  if self.split else
                  f"load {self.load_seconds:.2f}s, solve {self.solve_seconds:.2f}s, write {write:.2f}s")
        return (f"{self.key}: {self.units} units, {self.positions} positions in {self.seconds:.2f}s ({phases}); "
                f"{self.cpu_seconds:.1f} CPU s ({1e6 * self.cpu_seconds / max(self.positions, 1):.2f} us a "
                f"position), worker peak RSS {self.peak_rss >> 20} MB, table directory {self.disk_used / GB:.2f} GB")
