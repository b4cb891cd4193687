"""Generator health on the charts page: the newest health.csv row of each load generator.

How it works: every load-generating process (the local runner, or each worker, whose rows the
master writes) appends a row per second to `<run dir>/health.csv` (run/watch/health.py). The page
reads the file's last TAIL_BYTES (~15 min of one generator): per worker its newest row and a
warning when, over the last RECENT_S, its loop lag or CPU passed the rule book's limits
(llmload.rules.limits). Which tiers the verdicts leave out is the rule book's (llmload.rules.trust,
run/watch/verdicts.py).
The UI process's own loop lag (series.Sampler) is shown beside them.
"""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

from llmload.rules.limits import CPU_LIMIT_PERCENT, LOOP_LAG_LIMIT_MS

TAIL_BYTES = 64 * 1024
STALE_S = 10.0
"""a worker whose newest row is older than this is shown as silent"""
RECENT_S = 10.0
"""a generator's current warning looks at its rows of the last RECENT_S"""


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


def tail_rows(path: Path, tail_bytes: int = TAIL_BYTES) -> list[dict]:
    """The complete CSV rows among the last `tail_bytes` of `path` (header read from the top)."""
    try:
        with open(path, "rb") as f:
            header = f.readline().decode("utf-8", "replace").strip()
            size = f.seek(0, 2)
            start = max(len(header) + 1, size - tail_bytes)
            f.seek(start)
            chunk = f.read().decode("utf-8", "replace")
    except OSError:
        return []
    lines = chunk.splitlines()
    if start > len(header) + 1 and lines:
        lines = lines[1:]  # the first line may be cut
    if lines and not chunk.endswith("\n"):
        lines = lines[:-1]  # the last line may be half written
    return list(csv.DictReader(io.StringIO("\n".join([header, *lines]))))


def read_health(run_dir: Path | None) -> list[dict]:
    return tail_rows(Path(run_dir) / "health.csv") if run_dir is not None else []


def limits_warning(lag_ms: float | None, cpu_percent: float | None) -> str:
    """'' or what passed the report's limits."""
    warnings = []
    if lag_ms is not None and lag_ms > LOOP_LAG_LIMIT_MS:
        warnings.append(f"loop lag {lag_ms:.0f} ms > {LOOP_LAG_LIMIT_MS:.0f} ms")
    if cpu_percent is not None and cpu_percent > CPU_LIMIT_PERCENT:
        warnings.append(f"CPU {cpu_percent:.0f}% > {CPU_LIMIT_PERCENT:.0f}%")
    return "; ".join(warnings)


def _worst(rows: list[dict]) -> tuple[float | None, float | None]:
    lags = [v for v in (_float(r.get("loop_lag_ms_max")) for r in rows) if v is not None]
    cpus = [v for v in (_float(r.get("cpu_percent")) for r in rows) if v is not None]
    return (max(lags) if lags else None), (max(cpus) if cpus else None)


def generator_health(rows: list[dict], now_s: float | None = None, since_s: float | None = None) -> list[dict]:
    """Per generator: its newest lag and CPU, and a warning from its rows of the last RECENT_S (and none from
    before `since_s`, the current run's start: an ended run's rows warn of nothing)."""
    now_s = time.time() if now_s is None else now_s
    start_s = max(now_s - RECENT_S, since_s or 0.0)
    by_worker: dict[str, list[dict]] = {}
    for row in rows:
        by_worker.setdefault(row.get("worker") or "?", []).append(row)
    out = []
    for worker, mine in sorted(by_worker.items()):
        newest, ts = mine[-1], _float(mine[-1].get("ts_s"))
        recent = [r for r in mine if (_float(r.get("ts_s")) or 0.0) >= start_s]
        warning = limits_warning(*_worst(recent))
        if ts is not None and now_s - ts > STALE_S:
            warning = "; ".join(filter(None, [warning, f"silent for {now_s - ts:.0f} s"]))
        out.append({"worker": worker, "loop_lag_ms": _float(newest.get("loop_lag_ms_max")),
                    "cpu_percent": _float(newest.get("cpu_percent")), "warning": warning})
    return out
