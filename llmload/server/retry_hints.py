"""How a refusal states its wait, and how every answer states the quota left.

Real stacks disagree on the header that carries a retry hint, so the server can speak each
dialect (`--retry-after-header`, comma-separated styles):

| style | header sent | value for a 1.5 s wait |
|---|---|---|
| `retry-after` | `Retry-After` | `2` (whole seconds, rounded up) |
| `retry-after-ms` | `retry-after-ms` | `1500` |
| `retry-after-date` | `Retry-After` | an HTTP-date at least 1.5 s ahead |
| `llm_provider-retry-after` | `llm_provider-retry-after` | `2` (LiteLLM's proxy) |
| `x-ratelimit-reset-requests` | `x-ratelimit-reset-requests` (1) | `1.5s` (OpenAI's format: `6m0s`, `20ms`) |
| `none` | nothing | |

(1) `x-ratelimit-reset-tokens` instead when the token bucket refused.

With rate limits on, every answer (success or refusal) also carries OpenAI's
`x-ratelimit-limit-requests|tokens` and `x-ratelimit-remaining-requests|tokens` for the
buckets in use, so a client can watch the quota drain. Computed once per request.
"""

from __future__ import annotations

import math
from email.utils import formatdate
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llmload.server.ratelimit import Decision, RateLimiter


def openai_duration(wait_s: float) -> str:
    """A wait in OpenAI's reset format, rounded up to the millisecond: `20ms`, `1.5s`, `6m0s`, `1h2m3s`."""
    total_ms = math.ceil(wait_s * 1000)
    if total_ms < 1000:
        return f"{total_ms}ms"
    hours, rest_ms = divmod(total_ms, 3_600_000)
    minutes, seconds_ms = divmod(rest_ms, 60_000)
    text = f"{seconds_ms / 1000:g}s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    if minutes:
        return f"{minutes}m{text}"
    return text


def retry_headers(styles: tuple[str, ...], wait_s: float, limit: str, now_unix: float) -> dict[str, str]:
    """The headers stating `wait_s` in each style; `limit` is 'requests' or 'tokens'."""
    if wait_s <= 0:
        return {}
    whole_s = str(max(1, math.ceil(wait_s)))
    headers: dict[str, str] = {}
    for style in styles:
        if style == "retry-after":
            headers["retry-after"] = whole_s
        elif style == "retry-after-ms":
            headers["retry-after-ms"] = str(math.ceil(wait_s * 1000))
        elif style == "retry-after-date":
            headers["retry-after"] = formatdate(math.ceil(now_unix + wait_s), usegmt=True)
        elif style == "llm_provider-retry-after":
            headers["llm_provider-retry-after"] = whole_s
        elif style == "x-ratelimit-reset-requests":
            name = "tokens" if limit == "tokens" else "requests"
            headers[f"x-ratelimit-reset-{name}"] = openai_duration(wait_s)
    return headers


def quota_headers(limiter: RateLimiter, decision: Decision) -> dict[str, str]:
    """OpenAI's limit and remaining headers for the buckets in use (empty when none are)."""
    headers: dict[str, str] = {}
    if limiter.requests is not None:
        headers["x-ratelimit-limit-requests"] = str(int(limiter.requests.per_minute))
        headers["x-ratelimit-remaining-requests"] = str(max(0, decision.remaining_requests))
    if limiter.tokens is not None:
        headers["x-ratelimit-limit-tokens"] = str(int(limiter.tokens.per_minute))
        headers["x-ratelimit-remaining-tokens"] = str(max(0, decision.remaining_tokens))
    return headers
