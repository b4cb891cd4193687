"""One request attempt -> one samples.csv row (columns: `llmload.contract.SAMPLE_COLUMNS`).

Numbers are rounded to the microsecond; unknown numbers are empty strings; booleans 0/1.
`tier` and `phase` are left to the sink, which stamps them where the load shape runs.
The attempt's inter-token gaps ride along under GAPS_KEY (not a column): the sink takes them off
for the run's pooled ITL histogram (histograms.py) before the row is written or shipped.
"""

from __future__ import annotations

from llmload.client.errors import empty_detail
from llmload.client.request import StreamResult

GAPS_KEY = "_itl_gaps_ms"
"""the attempt's ascending inter-token gaps (ms) on its row, until the sink takes them off"""


def _num(value, digits: int = 3):
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return round(value, digits)
    return value


def sample_row(result: StreamResult, *, worker: str, user: str, scenario: str, users_now: int,
               schedule_lag_ms: float | None = None, loop_lag_ms: float | None = None,
               workload: dict | None = None) -> dict:
    """One samples.csv row (tier and phase are stamped by the sink from the run's tier timeline);
    `workload`: the prompt source's columns (prompt_tokens_target, turn, prompt_repeat)."""
    f = result.timing
    exc = result.exception
    row = {
        "ts_start_s": round(result.ts_start_s, 6), "request_id": result.request_id, "worker": worker,
        "user": user, "scenario": scenario, "endpoint": result.endpoint, "transport": result.transport,
        "users_now": users_now, "status": result.status, "error": result.error,
        "error_detail": (exc.detail or str(exc)) if exc else (
            empty_detail(result.finish_reason, result.output_tokens) if result.empty_answer else ""),
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
        "retry_after_source": result.retry_after_source,
        "ratelimit_remaining_requests": _num(result.ratelimit_remaining_requests),
        "ratelimit_remaining_tokens": _num(result.ratelimit_remaining_tokens),
        "finish_reason": result.finish_reason, "streamed": int(result.streamed),
        "reasoning_tokens": _num(result.reasoning_tokens), "max_tokens": _num(result.max_tokens),
        "prompt_tokens_target": "", "turn": "", "prompt_repeat": "", "elapsed_ms": _num(result.elapsed_ms),
        "session": "", "parent_session": "", "images": result.images, "target": result.target,
        "documents": _num(result.documents),
        "output_tokens_client_source": result.output_tokens_client_source, "length_asked": result.length_asked,
        GAPS_KEY: result.itl_gaps_ms,
    }
    if workload:
        row.update(workload)
    return row
