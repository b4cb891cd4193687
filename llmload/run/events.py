"""The Locust event contract: one StreamResult -> Locust `request` events.

Every metric rides Locust's `request` event, so the web UI, the CSVs, the HTML report and
master/worker aggregation need no extra code. Only durations go in `response_time` (ms),
counts in `response_length`:

    LLM  <scenario>  e2e ms (or ms until the failure)   output tokens
    TTFT <scenario>  ms to first content token           input tokens
    ITL  <scenario>  mean gap between text chunks, ms    output tokens

A failed attempt fires only `LLM` with its exception (RateLimited, HTTP5xx, ...), which
Locust's failures table groups by kind.
"""

from __future__ import annotations

from typing import Any

from llmload.client.request import StreamResult
from llmload.contract import ITL_TYPE, REQUEST_TYPE, TTFT_TYPE


def fire_events(request_event: Any, name: str, result: StreamResult) -> None:
    """Fire the LLM / TTFT / ITL events of one attempt (see the module docstring)."""
    start_time = result.ts_start_s
    figures = result.timing
    fire = request_event.fire
    if result.exception is not None:
        fire(request_type=REQUEST_TYPE, name=name, response_time=result.elapsed_ms or 0.0, response_length=0,
             exception=result.exception, context={}, start_time=start_time)
        return
    e2e_ms = figures.e2e_ms if figures and figures.e2e_ms is not None else result.elapsed_ms
    fire(request_type=REQUEST_TYPE, name=name, response_time=e2e_ms or 0.0,
         response_length=result.output_tokens or 0, exception=None, context={}, start_time=start_time)
    if figures is None:
        return
    if figures.ttft_ms is not None:
        fire(request_type=TTFT_TYPE, name=name, response_time=figures.ttft_ms,
             response_length=result.input_tokens or 0, exception=None, context={}, start_time=start_time)
    if figures.itl_mean_ms is not None:
        fire(request_type=ITL_TYPE, name=name, response_time=figures.itl_mean_ms,
             response_length=result.output_tokens or 0, exception=None, context={}, start_time=start_time)
