"""A full disk (or any failed write) said once, the load stopped, and every row it cost counted.

How it works: the run's CSV logs (csvlog.py) share one `WriteGuard`. The first write that fails
(ENOSPC, a quota, EIO, a read-only remount) frees the guard's reserve, a RESERVE_BYTES file created
in the run folder when it opened, so the rows of that write (tried once more), run.json and tiers.csv
still fit, and calls `on_first` (the run state stops the load with one line: run/lifecycle/listeners.py). From
then on the logs write nothing and count each row they could not write (`lost`); run.json records the
counts (`unwritten_rows`), the log's last line says them and the report says which share of the
attempts the figures lack.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESERVE_BYTES = 32 * 1024
RESERVE_NAME = ".llmload-reserve"
logger = logging.getLogger("llmload")


def describe(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "disk full"
    return f"cannot write ({exc.strerror or exc})"


class WriteGuard:
    def __init__(self) -> None:
        self.error: OSError | None = None
        """the first failed write (None: all written)"""
        self.where = ""
        self.logs: list[Any] = []
        """the CsvLogs sharing this guard (their `lost` counts)"""
        self.on_first: Callable[[str], None] | None = None
        """called once with the line to stop the load with"""
        self.reserve_path: Path | None = None

    def reset(self, run_dir: Path) -> None:
        """A run folder opened: forget the last run's failure and lay down a fresh reserve."""
        self.error, self.where, self.logs = None, "", []
        self.free_reserve()
        path = Path(run_dir) / RESERVE_NAME
        try:
            with open(path, "wb") as f:
                f.write(b"\0" * RESERVE_BYTES)
            self.reserve_path = path
        except OSError:  # no room even for that: the first real write will say so
            path.unlink(missing_ok=True)

    def free_reserve(self) -> None:
        if self.reserve_path is not None:
            self.reserve_path.unlink(missing_ok=True)
            self.reserve_path = None

    def failed(self, log: Any, exc: OSError) -> None:
        """A log's write failed (its unwritten rows are already in its `lost`)."""
        if self.error is not None:
            return
        self.error, self.where = exc, log.path.name
        self.free_reserve()
        line = (f"llmload: {describe(exc)}: writing {log.path.name} in {log.path.parent} failed "
                f"({exc.strerror or exc}); the load is stopped so no more answers go unrecorded (rows that could not "
                "be written are counted at the end and in run.json)")
        if self.on_first is not None:
            self.on_first(line)
        else:
            logger.error("%s", line)

    def lost(self, kind: str | None = None) -> int:
        return sum(log.lost for log in self.logs if kind is None or log.path.stem == kind)

    def unwritten(self) -> dict[str, int]:
        """run.json's `unwritten_rows`: rows per file that could not be written ({} when none)."""
        counts: dict[str, int] = {}
        for log in self.logs:
            if log.lost:
                counts[log.path.stem] = counts.get(log.path.stem, 0) + log.lost
        return counts

    def summary(self) -> None:
        """At the end: one line with the final count, when a write failed."""
        if self.error is not None:
            counts = ", ".join(f"{n} {kind}" for kind, n in self.unwritten().items()) or "none"
            logger.error("llmload: %s: rows that could not be written: %s", describe(self.error), counts)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte, or none: a short write on a filling disk is completed, and a failure truncates the
    file back, so a row is never left half written."""
    start = os.lseek(fd, 0, os.SEEK_END)
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        try:
            os.ftruncate(fd, start)
        except OSError:
            pass
        raise
