"""`CsvLog`: an append-only CSV with a fixed column order that a killed process leaves readable.

Rows are buffered and handed to the OS at least every `flush_interval_s` (a periodic
`flush()` covers quiet periods), each flush one `os.write` of whole lines, so a SIGKILLed
run loses at most the last interval and never leaves half a row behind. A write that fails (a full
disk) is not raised: its `WriteGuard` (diskfull.py) stops the load and frees its reserve, the rows of that
write are tried once more, and from then on the log writes nothing and counts every row it could not
write (`lost`).
"""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

from llmload.sink.diskfull import WriteGuard, write_all


class CsvLog:
    """Append-only CSV with a fixed column order, flushed to the OS at least every interval."""

    def __init__(self, path: Path, columns: tuple[str, ...], flush_interval_s: float = 1.0,
                 guard: WriteGuard | None = None) -> None:
        self.path = Path(path)
        self.guard = guard if guard is not None else WriteGuard()
        self.guard.logs.append(self)
        self.lost = 0
        """rows that could not be written (a failed write: diskfull.py)"""
        self._pending = 0
        self.columns = columns
        self.flush_interval_s = flush_interval_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        new = not self.path.exists() or self.path.stat().st_size == 0
        self._file = open(self.path, "a", newline="", encoding="utf-8")
        self._buf = io.StringIO()
        self._csv = csv.writer(self._buf)
        self._last_flush = time.monotonic()
        self.rows = 0
        if new:
            self._csv.writerow(columns)
            self.flush()

    def write(self, row: dict) -> None:
        if self.guard.error is not None:
            self.lost += 1
            return
        self._csv.writerow([row.get(c, "") for c in self.columns])
        self.rows += 1
        self._pending += 1
        if time.monotonic() - self._last_flush >= self.flush_interval_s:
            self.flush()

    def flush(self) -> None:
        """Hand buffered complete lines to the OS in one write (survives SIGKILL of this process)."""
        self._last_flush = time.monotonic()
        data = self._buf.getvalue()
        if not data or self._file.closed:
            return
        self._buf.seek(0)
        self._buf.truncate()
        pending, self._pending = self._pending, 0
        try:
            write_all(self._file.fileno(), data.encode("utf-8"))
        except OSError as exc:
            self.guard.failed(self, exc)  # the load stops and the reserve is freed: these rows may fit now
            try:
                write_all(self._file.fileno(), data.encode("utf-8"))
            except OSError:
                self.rows -= pending
                self.lost += pending

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()
