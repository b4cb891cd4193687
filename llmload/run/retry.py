"""What a user does after an answer that says "try later": retry it, wait, or carry on.

How it works: `next_step(result, attempt, policy, ...)` returns a `NextStep` (retry or not, and
how long to pause first). Only 429s and 503s (and Anthropic's 529 overloaded) say "try later" (other failures
are answers):

- `--retries N`: a 429 or 503 is retried up to N times. The wait before a retry is the server's
  hint (`client.retry_hints`: Retry-After, retry-after-ms, provider variants, quota resets), else
  exponential backoff with jitter, 0.5 s * 2^k * U(0.5, 1.5) (at most 30 s); it never exceeds
  what is left of --request-timeout-s counted from the first attempt (no retry once it is spent).
- `--on-429 wait` (default): after a 429 that is not retried (--retries 0, or retries used up)
  the user still waits the hint (or the backoff, k = consecutive 429s of the user) before its
  next request, as a real client would. `retry`: 429s are only retried (no wait after the last
  one: the next request goes at once). `ignore`: 429s are neither retried nor waited for.
- `--max-retry-wait-s` (default 60): a 429 whose hint is longer is not slept through; with
  `wait` or `retry` its row becomes a failure of kind `retry_after_too_long` (`mark_too_long`),
  it is not retried, and the user pauses only the backoff. A 503's hint is capped at it.
Pure logic: the random source and the time left are passed in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llmload.client.errors import RateLimited, RetryAfterTooLong
from llmload.client.request import StreamResult

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
ON_429_MODES = ("wait", "retry", "ignore")
DEFAULT_MAX_RETRY_WAIT_S = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 0
    """--retries: how many times a 429/503 is retried"""
    on_429: str = "wait"
    """--on-429: wait | retry | ignore"""
    max_retry_wait_s: float = DEFAULT_MAX_RETRY_WAIT_S
    """--max-retry-wait-s: longest server hint that is honoured"""


@dataclass(frozen=True)
class NextStep:
    retry: bool = False
    pause_s: float = 0.0
    """pause before the retry (retry) or before the user's next request (no retry)"""


def backoff_s(attempt: int, rng: random.Random) -> float:
    """Delay before retry number `attempt` (0-based) when the server gave no usable hint."""
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt) * rng.uniform(0.5, 1.5)


def is_retryable(result: StreamResult) -> bool:
    return result.error == "rate_limited" or (result.error == "http_5xx" and result.status in (503, 529))


def mark_too_long(result: StreamResult, policy: RetryPolicy) -> StreamResult:
    """A 429 whose hint exceeds --max-retry-wait-s becomes a `retry_after_too_long` failure
    (unless 429s are ignored); the hint and its source stay on the row."""
    exc = result.exception
    if (isinstance(exc, RateLimited) and policy.on_429 != "ignore" and exc.retry_after_s is not None
            and exc.retry_after_s > policy.max_retry_wait_s):
        result.exception = RetryAfterTooLong(exc.retry_after_s, policy.max_retry_wait_s, exc.detail,
                                             exc.retry_after_source)
    return result


def next_step(result: StreamResult, attempt: int, policy: RetryPolicy, rng: random.Random,
              budget_left_s: float, rate_limited_streak: int = 0) -> NextStep:
    """After attempt number `attempt` (0-based) of a request: retry it, and/or pause how long.

    `rate_limited_streak`: the user's consecutive 429s so far, this one included (backoff exponent).
    """
    error = result.error
    if error == "retry_after_too_long":
        return NextStep(False, backoff_s(max(rate_limited_streak - 1, 0), rng) if policy.on_429 == "wait" else 0.0)
    if error == "rate_limited" and policy.on_429 == "ignore":
        return NextStep()
    if not is_retryable(result):
        return NextStep()
    hint_s = result.retry_after_s
    can_retry = attempt < policy.retries and budget_left_s > 0
    if can_retry:
        wait_s = hint_s if hint_s is not None else backoff_s(attempt, rng)
        return NextStep(True, min(wait_s, policy.max_retry_wait_s, budget_left_s))
    if error == "rate_limited" and policy.on_429 == "wait":
        wait_s = hint_s if hint_s is not None else backoff_s(max(rate_limited_streak - 1, 0), rng)
        return NextStep(False, min(wait_s, policy.max_retry_wait_s))
    return NextStep()
