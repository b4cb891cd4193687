"""Locust's own views made honest: header RPS, failure % and the Charts tab from LLM requests only.

Every llmload request fires three Locust events (LLM end-to-end, TTFT, ITL: DESIGN's event
contract), so Locust's Aggregated entry counts each request three times and blends three
latencies into its percentiles. The React UI (Locust 2.47) reads the header's RPS and failure
%, and the Charts tab's lines, from a few top-level keys of the `/stats/requests` JSON and its
Aggregated row (the last of `stats`), and on a page load from `template_args.history`.
Least invasive fix, in that JSON only (Locust's CSVs, its HTML report and its internal totals
are untouched): those keys are recomputed from the LLM entries (every request_type that is
not a derived metric) with Locust's own formulas (`StatsEntry.current_rps`, `total_rps`, ...),
the Aggregated row is replaced by an LLM-only one named AGGREGATED_NAME (its latencies are
end-to-end), and a reloaded page's chart history comes from our 1 s samples (series.py). So
the Charts tab's "Response Times" are LLM end-to-end percentiles over ~10 s and its RPS line is
LLM requests/s. Locust is never imported here (it would gevent-patch a test process).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from llmload.contract import METRIC_TYPES
from llmload.sink.window import percentile_ms

AGGREGATED_NAME = "Aggregated LLM (e2e; header and Charts)"
PERCENTILE_PREFIX = "response_time_percentile_"


def llm_entries(stats: Any) -> list[Any]:
    return [e for e in stats.entries.values() if e.method not in METRIC_TYPES]


def _per_s(counts: Counter[int], stats: Any) -> float:
    """Locust's `current_rps` arithmetic: mean of the per-second counts of ~the last 10 s."""
    last = stats.last_request_timestamp
    if last is None:
        return 0.0
    start = max(int(last) - 12, int(stats.start_time or 0))
    seconds = range(start, int(last) - 2)
    return sum(counts.get(t, 0) for t in seconds) / max(len(seconds), 1)


def _total_per_s(n: int, stats: Any) -> float:
    last, start = stats.last_request_timestamp, stats.start_time
    if not last or not start or last == start:
        return 0.0
    return n / (last - start)


def llm_row(stats: Any, template: dict) -> dict:
    """An Aggregated row (Locust's `StatsEntry.to_dict` keys, as in `template`) of the LLM entries."""
    entries = llm_entries(stats)
    times: Counter[int] = Counter()
    per_s: Counter[int] = Counter()
    fail_per_s: Counter[int] = Counter()
    for e in entries:
        times.update(e.response_times)
        per_s.update(e.num_reqs_per_sec)
        fail_per_s.update(e.num_fail_per_sec)
    requests, failures = sum(e.num_requests for e in entries), sum(e.num_failures for e in entries)
    timed = sum(e.num_requests - e.num_none_requests for e in entries)
    mins = [e.min_response_time for e in entries if e.min_response_time is not None]
    row = {
        **template, "method": "", "name": AGGREGATED_NAME, "num_requests": requests, "num_failures": failures,
        "min_response_time": round(min(mins)) if mins else 0,
        "max_response_time": round(max((e.max_response_time for e in entries), default=0)),
        "current_rps": _per_s(per_s, stats), "current_fail_per_sec": _per_s(fail_per_s, stats),
        "avg_response_time": sum(e.total_response_time for e in entries) / timed if timed else 0,
        "median_response_time": percentile_ms(dict(times), 0.5) or 0,
        "total_rps": _total_per_s(requests, stats), "total_fail_per_sec": _total_per_s(failures, stats),
        "avg_content_length": sum(e.total_content_length for e in entries) / requests if requests else 0,
    }
    for key in template:
        if key.startswith(PERCENTILE_PREFIX):
            row[key] = percentile_ms(dict(times), float(key[len(PERCENTILE_PREFIX):])) or 0
    return row


def make_honest(payload: dict, stats: Any, current_e2e_ms: Callable[[float], float | None]) -> None:
    """Rewrite the header / Charts keys of a /stats/requests payload from the LLM entries.
    `current_e2e_ms(q)` gives the LLM end-to-end percentile q of the last ~10 s."""
    if not payload.get("stats"):
        return
    row = llm_row(stats, payload["stats"][-1])
    payload["stats"][-1] = row
    for key in ("total_rps", "total_fail_per_sec", "current_rps", "current_fail_per_sec"):
        payload[key] = row[key]
    payload["fail_ratio"] = row["num_failures"] / row["num_requests"] if row["num_requests"] else 0.0
    payload["total_avg_response_time"] = row["avg_response_time"]
    payload["current_response_time_percentiles"] = {
        key: current_e2e_ms(float(key[len(PERCENTILE_PREFIX):]))
        for key in payload.get("current_response_time_percentiles") or {}
    }


def chart_history(points: list[dict], percentiles: list[float]) -> list[dict]:
    """Our 1 s samples in the shape of Locust's `stats.history` (what a reloaded page charts)."""
    history = []
    for p in points:
        stamp = datetime.fromtimestamp(int(p["t"]), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        e2e = {0.5: p.get("e2e_p50"), 0.95: p.get("e2e_p95")}
        history.append({
            **{f"{PERCENTILE_PREFIX}{q}": [stamp, e2e.get(q) or 0] for q in percentiles},
            "current_rps": [stamp, p.get("rps") or 0], "current_fail_per_sec": [stamp, p.get("fail_ps") or 0],
            "total_avg_response_time": [stamp, 0], "user_count": [stamp, p.get("users") or 0], "time": stamp,
        })
    return history
