"""The retry policy of `--retries N`: what is retried, and how long to wait first.

A 429 or a 503 is retried (other failures are answers, not "try later"). The wait is the
server's hint (`client.retry_hints`: Retry-After, retry-after-ms, provider variants, quota
resets), else exponential backoff with jitter: 0.5 s * 2^k * U(0.5, 1.5), at most 30 s.
A wait is capped at RETRY_WAIT_CAP_S and at what is left of --request-timeout-s counted from
the first attempt (no retry once that budget is spent).
"""

from __future__ import annotations

import random

from llmload.client.request import StreamResult

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
RETRY_WAIT_CAP_S = 60.0
"""longest wait before a retry, whatever Retry-After says"""


def backoff_s(attempt: int, rng: random.Random) -> float:
    """Delay before retry number `attempt` (0-based) when the server gave no Retry-After."""
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt) * rng.uniform(0.5, 1.5)


def is_retryable(result: StreamResult) -> bool:
    return result.error == "rate_limited" or (result.error == "http_5xx" and result.status == 503)


def retry_wait_s(result: StreamResult, attempt: int, rng: random.Random, budget_left_s: float) -> float:
    """How long to wait before retrying `result` (0-based retry number `attempt`)."""
    delay_s = result.retry_after_s
    if delay_s is None:
        delay_s = backoff_s(attempt, rng)
    return min(delay_s, RETRY_WAIT_CAP_S, budget_left_s)
