"""The Locust event contract, the per-request sample row, and the crash-safe CSV writer.

How it works:
- `fire_events` turns one StreamResult into Locust `request` events, so the web UI, the
  CSVs, the HTML report and master/worker aggregation need no extra code. Only durations go
  in `response_time` (ms), counts in `response_length`:
      LLM  <scenario>  e2e ms (or ms until the failure)   output tokens
      TTFT <scenario>  ms to first content token           input tokens
      ITL  <scenario>  mean gap between text chunks, ms    output tokens
  A failed attempt fires only `LLM` with its exception (RateLimited, HTTP5xx, ...), which
  Locust's failures table groups by kind.
- `precise_bucket_response_time` replaces `locust.stats.bucket_response_time` (Locust >=
  2.43.4 looks it up at call time): Locust rounds to ~2 significant digits (147 -> 150 ms,
  3432 -> 3400 ms); we keep whole milliseconds, so the UI and Locust CSV percentiles are
  exact to 1 ms. Cost: one histogram key per distinct ms value (a few thousand per entry
  instead of ~310), which also grows the worker -> master stats messages a little.
  Installed on every process (workers bucket before they report).
- `sample_row` flattens a StreamResult into the samples.csv contract (COMMON.md); empty
  string for unknown numbers. `CsvLog` appends rows and flushes at least every
  `flush_interval_s` (a periodic `flush()` call covers quiet periods): each row is written
  whole with one write call, so a SIGKILLed run leaves a readable file.
"""

from __future__ import annotations

import csv
import io
import os
import time
from pathlib import Path

from llmload.client.request import StreamResult

SAMPLE_COLUMNS = (
    "ts_start_s", "request_id", "worker", "user", "scenario", "endpoint", "transport", "users_now", "tier",
    "phase", "status", "error", "error_detail", "ttft_ms", "reasoning_ttft_ms", "e2e_ms", "headers_ms",
    "connect_ms", "conn_reused", "input_tokens", "output_tokens", "output_tokens_client", "cached_tokens",
    "tokens_source", "itl_mean_ms", "itl_p50_ms", "itl_p99_ms", "itl_max_ms", "tpot_ms", "out_tps",
    "model_requested", "model_returned", "retry_of", "retry_after_s", "schedule_lag_ms", "loop_lag_ms",
)
HEALTH_COLUMNS = ("ts_s", "worker", "loop_lag_ms_max", "loop_lag_ms_p50", "cpu_percent", "users", "inflight")


def precise_bucket_response_time(response_time: int | float) -> int:
    """1 ms histogram buckets (replacement for locust.stats.bucket_response_time)."""
    return round(response_time)


def use_precise_buckets() -> None:
    import locust.stats

    locust.stats.bucket_response_time = precise_bucket_response_time


def fire_events(request_event, name: str, result: StreamResult) -> None:
    """Fire the LLM / TTFT / ITL events of one attempt (see the module docstring)."""
    start_time = result.ts_start_s
    figures = result.timing
    if result.exception is not None:
        request_event.fire(request_type="LLM", name=name, response_time=result.elapsed_ms or 0.0,
                           response_length=0, exception=result.exception, context={}, start_time=start_time)
        return
    e2e_ms = figures.e2e_ms if figures and figures.e2e_ms is not None else result.elapsed_ms
    request_event.fire(request_type="LLM", name=name, response_time=e2e_ms or 0.0,
                       response_length=result.output_tokens or 0, exception=None, context={},
                       start_time=start_time)
    if figures is None:
        return
    if figures.ttft_ms is not None:
        request_event.fire(request_type="TTFT", name=name, response_time=figures.ttft_ms,
                           response_length=result.input_tokens or 0, exception=None, context={},
                           start_time=start_time)
    if figures.itl_mean_ms is not None:
        request_event.fire(request_type="ITL", name=name, response_time=figures.itl_mean_ms,
                           response_length=result.output_tokens or 0, exception=None, context={},
                           start_time=start_time)


def _num(value, digits: int = 3):
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return round(value, digits)
    return value


def sample_row(result: StreamResult, *, worker: str, user: str, scenario: str, users_now: int,
               schedule_lag_ms: float | None = None, loop_lag_ms: float | None = None) -> dict:
    """One samples.csv row (tier and phase are stamped by the writer from tierstate)."""
    f = result.timing
    exc = result.exception
    return {
        "ts_start_s": round(result.ts_start_s, 6), "request_id": result.request_id, "worker": worker,
        "user": user, "scenario": scenario, "endpoint": result.endpoint, "transport": result.transport,
        "users_now": users_now, "status": result.status, "error": result.error,
        "error_detail": (exc.detail or str(exc)) if exc else "",
        "ttft_ms": _num(f.ttft_ms if f else None), "reasoning_ttft_ms": _num(f.reasoning_ttft_ms if f else None),
        "e2e_ms": _num(f.e2e_ms if f else None), "headers_ms": _num(f.headers_ms if f else None),
        "connect_ms": _num(result.connect_ms), "conn_reused": _num(result.conn_reused),
        "input_tokens": _num(result.input_tokens), "output_tokens": _num(result.output_tokens),
        "output_tokens_client": _num(result.output_tokens_client), "cached_tokens": _num(result.cached_tokens),
        "tokens_source": result.tokens_source,
        "itl_mean_ms": _num(f.itl_mean_ms if f else None), "itl_p50_ms": _num(f.itl_p50_ms if f else None),
        "itl_p99_ms": _num(f.itl_p99_ms if f else None), "itl_max_ms": _num(f.itl_max_ms if f else None),
        "tpot_ms": _num(f.tpot_ms if f else None), "out_tps": _num(f.out_tps if f else None),
        "model_requested": result.model_requested, "model_returned": result.model_returned,
        "retry_of": result.retry_of, "retry_after_s": _num(result.retry_after_s),
        "schedule_lag_ms": _num(schedule_lag_ms), "loop_lag_ms": _num(loop_lag_ms),
    }


class CsvLog:
    """Append-only CSV with a fixed column order, flushed to the OS at least every interval."""

    def __init__(self, path: Path, columns: tuple[str, ...], flush_interval_s: float = 1.0) -> None:
        self.path = Path(path)
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
        self._csv.writerow([row.get(c, "") for c in self.columns])
        self.rows += 1
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
        os.write(self._file.fileno(), data.encode("utf-8"))

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()
