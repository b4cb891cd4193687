"""The Locust event contract: one StreamResult -> Locust `request` events.

Every metric rides Locust's `request` event, so the web UI, the CSVs, the HTML report and
master/worker aggregation need no extra code. Only durations go in `response_time` (ms),
counts in `response_length`:

    LLM   <scenario>  e2e ms (or ms until the failure)   output tokens
    TTFT  <scenario>  ms to first content token           input tokens
    ITL   <scenario>  mean gap between text chunks, ms    output tokens
    EMPTY <scenario>  e2e ms of an answer with no text    0

A failed attempt fires only `LLM` with its exception (RateLimited, HTTP5xx, ...), which
Locust's failures table groups by kind. An empty answer (HTTP 200, no text: `empty_answer`) has no
first token, so no TTFT or ITL, and its output tokens are not counted (0, as the report's output tokens/s
counts answers with text only): its `LLM` event is a success (it was answered), and an `EMPTY` event
names it in the statistics table; with --empty-answer-is-error its `LLM` event is a failure instead
(`EmptyAnswer`, named in the failures table), as the report and the verdicts then count it.
"""

from __future__ import annotations

from typing import Any

from llmload.client.errors import EmptyAnswer, empty_detail
from llmload.client.request import StreamResult
from llmload.contract import EMPTY_TYPE, ITL_TYPE, REQUEST_TYPE, TTFT_TYPE


def fire_events(request_event: Any, name: str, result: StreamResult, empty_is_error: bool = False) -> None:
    """Fire the LLM / TTFT / ITL / EMPTY events of one attempt (see the module docstring)."""
    start_time = result.ts_start_s
    figures = result.timing
    fire = request_event.fire
    if result.exception is not None:
        fire(request_type=REQUEST_TYPE, name=name, response_time=result.elapsed_ms or 0.0, response_length=0,
             exception=result.exception, context={}, start_time=start_time)
        return
    e2e_ms = figures.e2e_ms if figures and figures.e2e_ms is not None else result.elapsed_ms
    if result.empty_answer:
        failure = EmptyAnswer(empty_detail(result.finish_reason, result.output_tokens)) if empty_is_error else None
        fire(request_type=REQUEST_TYPE, name=name, response_time=e2e_ms or 0.0, response_length=0,
             exception=failure, context={}, start_time=start_time)
        fire(request_type=EMPTY_TYPE, name=name, response_time=e2e_ms or 0.0, response_length=0, exception=None,
             context={}, start_time=start_time)
        return
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
