"""Generator health on the charts page: the newest health.csv row of each load generator.

How it works: every load-generating process (the local runner, or each worker, whose rows the
master writes) appends a row per second to `<run dir>/health.csv` (run/health.py). The page
reads the file's last TAIL_BYTES: per worker, the newest row and the worst loop lag of the
rows read. A generator is flagged when its loop lag or CPU passes the same limits the report
uses (analysis/tiers.py): then its timestamps, and the tier's TTFT, cannot be trusted.
The UI process's own loop lag (series.Sampler) is shown beside them.
"""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path

LOOP_LAG_LIMIT_MS = 50.0
CPU_LIMIT_PERCENT = 90.0
"""the report's limits (analysis/tiers.py LOOP_LAG_LIMIT_MS, CPU_LIMIT_PERCENT)"""
TAIL_BYTES = 64 * 1024
STALE_S = 10.0
"""a worker whose newest row is older than this is shown as silent"""


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


def generator_health(run_dir: Path | None, now_s: float | None = None) -> list[dict]:
    """One entry per generator: newest lag and CPU, worst lag seen in the tail, and a warning."""
    if run_dir is None:
        return []
    now_s = time.time() if now_s is None else now_s
    newest: dict[str, dict] = {}
    worst: dict[str, float] = {}
    for row in tail_rows(Path(run_dir) / "health.csv"):
        worker = row.get("worker") or "?"
        newest[worker] = row
        worst[worker] = max(worst.get(worker, 0.0), _float(row.get("loop_lag_ms_max")) or 0.0)
    out = []
    for worker, row in sorted(newest.items()):
        lag, cpu, ts = _float(row.get("loop_lag_ms_max")), _float(row.get("cpu_percent")), _float(row.get("ts_s"))
        warnings = []
        if worst[worker] > LOOP_LAG_LIMIT_MS:
            warnings.append(f"loop lag {worst[worker]:.0f} ms > {LOOP_LAG_LIMIT_MS:.0f} ms")
        if cpu is not None and cpu > CPU_LIMIT_PERCENT:
            warnings.append(f"CPU {cpu:.0f}% > {CPU_LIMIT_PERCENT:.0f}%")
        if ts is not None and now_s - ts > STALE_S:
            warnings.append(f"silent for {now_s - ts:.0f} s")
        out.append({"worker": worker, "loop_lag_ms": lag, "worst_lag_ms": worst[worker], "cpu_percent": cpu,
                    "warning": "; ".join(warnings)})
    return out
