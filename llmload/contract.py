"""The contract between the load generator and the analysis: file columns and event names.

Dependency-free on purpose: `analysis/` may import this module (and nothing else of llmload),
since importing locust or gevent would monkey-patch the analysing process. Columns are never
renamed silently; new ones are appended (the analysis reads by name and treats missing
optional columns as empty).
"""

from __future__ import annotations

SAMPLE_COLUMNS = (
    "ts_start_s", "request_id", "worker", "user", "scenario", "endpoint", "transport", "users_now", "tier",
    "phase", "status", "error", "error_detail", "ttft_ms", "reasoning_ttft_ms", "e2e_ms", "headers_ms",
    "connect_ms", "conn_reused", "input_tokens", "output_tokens", "output_tokens_client", "cached_tokens",
    "tokens_source", "itl_mean_ms", "itl_p50_ms", "itl_p99_ms", "itl_max_ms", "tpot_ms", "out_tps",
    "model_requested", "model_returned", "retry_of", "retry_after_s", "schedule_lag_ms", "loop_lag_ms",
    "retry_after_source", "ratelimit_remaining_requests", "ratelimit_remaining_tokens",
)
"""samples.csv: one row per request attempt"""

HEALTH_COLUMNS = ("ts_s", "worker", "loop_lag_ms_max", "loop_lag_ms_p50", "cpu_percent", "users", "inflight")
"""health.csv: one row per generator process per second"""

SERVER_METRICS_COLUMNS = ("ts_s", "name", "value")
"""server_metrics.csv: one row per kept sample of each scrape of the target's /metrics (ts_s unix,
name with its labels as the server wrote them, value)"""

TIERS_COLUMNS = ("tier", "start_s", "end_s", "target_users", "target_rps", "warmup_s", "dropped")
"""tiers.csv: one row per tier of a load shape"""

PHASES = ("warmup", "measure", "after")

ERROR_KINDS = ("rate_limited", "http_4xx", "http_5xx", "timeout", "connect", "stream_broken", "protocol",
               "stream_error", "retry_after_too_long")
"""samples.csv `error` values ('' for success); `retry_after_too_long`: a 429 whose retry hint
exceeded --max-retry-wait-s (status 429, the hint in retry_after_s), not slept through"""

REQUEST_TYPE = "LLM"
"""Locust request_type of one attempt: e2e ms, output tokens"""
TTFT_TYPE = "TTFT"
"""ms to the first generated token, input tokens"""
ITL_TYPE = "ITL"
"""mean inter-token gap of a request, output tokens"""
DROPPED_TYPE = "SCHED"
"""open loop: an arrival not sent (in-flight cap), a failure event with response_time 0"""
METRIC_TYPES = frozenset({TTFT_TYPE, ITL_TYPE, DROPPED_TYPE})
"""request_types that are derived metrics or bookkeeping, not requests"""
RATE_LIMITED_PREFIX = "RateLimited"
"""how a 429 failure's repr starts in Locust's error table"""
