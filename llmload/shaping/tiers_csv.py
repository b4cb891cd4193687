"""`reports/<run>/tiers.csv`: one row per tier, rewritten at every change.

How it works: the file is tiny, so the writer keeps every row in memory and rewrites the whole
file (temporary file + `os.replace`, flushed to disk) whenever a tier begins or ends. A run
killed in the middle of a tier therefore leaves a complete, readable file whose last `end_s` is
empty. Columns (unix seconds): tier, start_s, end_s, target_users, target_rps, warmup_s, then
`dropped` (open-loop arrivals not sent because of the in-flight cap, from the master's stats), then
the load really applied over the measure window when the tier ends (`users_min`, `users_mean`,
`users_max`, `workers_min`, `workers_max`: run/distributed/applied.py, given as `applied(start_s, end_s)`), then
`refined` (1: a tier `--refine` added after the planned sweep, shaping/refine.py), `confirm` (1: a
confirmation window, shaping/confirm.py).
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Callable
from pathlib import Path

from llmload.contract import TIERS_APPLIED_COLUMNS
from llmload.contract import TIERS_COLUMNS as COLUMNS
from llmload.sink.timeline import Tier

logger = logging.getLogger("llmload")

_INSTANTS = ("start_s", "end_s")
"""unix times, written to the µs: at ms precision a request sent within 0.5 ms of a tier's edge read as on the
other side of it (samples.csv stamps tier and phase from the exact time)"""


def _cell(value: object, column: str) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if column in _INSTANTS:  # as samples.csv's ts_start_s: a row's tier and phase re-read from here agree
            return f"{value:.6f}"
        return f"{value:.3f}" if column.endswith("_s") else f"{value:g}"
    return str(value)


class TiersCsv:
    def __init__(self, path: Path, applied: Callable[[float, float], dict] | None = None) -> None:
        self.path = Path(path)
        self.applied = applied
        self.rows: list[dict[str, object]] = []
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def begin(self, tier: Tier) -> None:
        """A tier starts: append its row (end_s empty) and rewrite the file."""
        self.rows.append(
            {
                "tier": tier.tier,
                "start_s": tier.start_s,
                "end_s": None,
                "target_users": tier.target_users,
                "target_rps": tier.target_rps,
                "warmup_s": tier.warmup_s,
                "dropped": None,
                **dict.fromkeys(TIERS_APPLIED_COLUMNS),
                "refined": int(bool(tier.refined) and tier.refined != "confirm"),
                "confirm": int(tier.refined == "confirm"),
            }
        )
        self._write()

    def end(self, end_s: float, dropped: int | None = None) -> None:
        """The current tier ends at unix time `end_s` (no-op if it already ended)."""
        if not self.rows or self.rows[-1]["end_s"] is not None:
            return
        self.rows[-1]["end_s"] = end_s
        self.rows[-1]["dropped"] = dropped
        if self.applied is not None:
            row = self.rows[-1]
            row.update(self.applied(float(row["start_s"]) + float(row["warmup_s"]), end_s))  # type: ignore[arg-type]
        self._write()

    def _write(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(COLUMNS)
                for row in self.rows:
                    writer.writerow([_cell(row[c], c) for c in COLUMNS])
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:  # a full disk: the rows stay in memory, written again at the next change
            tmp.unlink(missing_ok=True)
            logger.error("llmload: could not write %s (%s); it is written again when the next tier changes",
                         self.path, exc.strerror or exc)
