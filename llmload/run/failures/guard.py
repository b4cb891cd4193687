"""When a run must stop at once instead of recording thousands of identical failures.

How it works: every process keeps one `RunGuard` per run (reset at test start). Each
finished attempt is shown to `observe(result, now_s)`, which returns a one-line reason the
first time the evidence says the target cannot be load-tested as configured, and None
otherwise. Only runs that have not shown the target working are stopped:

- HTTP 401 before any success: the API key was refused.
- A redirect (3xx) before any success: the load never follows one (client/outbound.py); the line names the
  target's origin ("the endpoint redirects to https://other.example: point --host at it").
- Cannot connect: no attempt has reached the server (no HTTP status ever came back) and
  the first `CONNECT_FAILURES` (5) attempts failed to connect, or connect failures have
  lasted `CONNECT_WINDOW_S` (3 s): a wrong --host stops in about two seconds. A connect timeout
  counts as a connect failure. Once the server has answered, refused connects are an outage,
  not this rule's: run/failures/outage.py.
- Not streaming: the first `NOT_SSE_LIMIT` (5) answers with status 200 were all not
  `text/event-stream` (a non-streaming endpoint, an HTML page, a wrong path behind a proxy).
- The same 4xx every time: the first `SAME_4XX_LIMIT` (20) attempts of the process all failed
  with one 4xx status (a wrong --model answered 404, a bad parameter 400, ...), or every attempt
  did for `SAME_4XX_WINDOW_S` (10 s, at least `SAME_4XX_MIN` (5) attempts: a single user in
  failure backoff needs a minute for 20); the line quotes the server's message (secrets
  masked, client/errors.error_message).

The caller (users.py) stops the run once with that line (exit code 2) and lets its users
idle. Two per-user pauses keep a broken target from being hammered:
- `next_connect_backoff_s`: after a failed connect, 0.1 s doubling to 2 s, reset by any
  attempt that reached the server.
- `FailureBackoff` (`--failure-backoff on`, the default): after `FAILURE_BACKOFF_AFTER` (3)
  consecutive failures other than connect, 401 and 429 (those have their own rules), the user
  pauses 0.1 s doubling to 5 s, times U(0.5, 1.5) jitter (at most 5 s), before its next
  request; a success resets it. A server that fails now and then is not slowed down.
Pure logic, no I/O: the clock and the random source are passed in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llmload.client.request import StreamResult

CONNECT_FAILURES = 5
CONNECT_WINDOW_S = 3.0
NOT_SSE_LIMIT = 5
CONNECT_BACKOFF_FIRST_S = 0.1
CONNECT_BACKOFF_MAX_S = 2.0
SAME_4XX_LIMIT = 20
SAME_4XX_WINDOW_S = 10.0
SAME_4XX_MIN = 5
FAILURE_BACKOFF_AFTER = 3
FAILURE_BACKOFF_FIRST_S = 0.1
FAILURE_BACKOFF_MAX_S = 5.0
NOT_BACKED_OFF = ("connect", "server_gone", "rate_limited", "retry_after_too_long")
"""failure kinds with their own pause rule (connect backoff, --on-429)"""


def failed_to_connect(result: StreamResult) -> bool:
    """The attempt never got a connection (refused, unresolvable, TLS refused, connect timeout)."""
    exc = result.exception
    return exc is not None and (exc.kind in ("connect", "server_gone") or getattr(exc, "phase", "") == "connect")


def next_connect_backoff_s(previous_s: float) -> float:
    """Pause after a failed connect, given the previous pause (0 = none yet)."""
    if previous_s <= 0:
        return CONNECT_BACKOFF_FIRST_S
    return min(CONNECT_BACKOFF_MAX_S, previous_s * 2)


def counts_as_failure_streak(result: StreamResult) -> bool:
    """A failure the failure backoff counts (not connect, 401 or 429: they have their own rules)."""
    return (not result.ok and result.error not in NOT_BACKED_OFF and not failed_to_connect(result)
            and result.status != 401)


@dataclass
class FailureBackoff:
    """One user's failure streak and the pause it earns (module docstring)."""

    streak: int = 0

    def pause_s(self, result: StreamResult, rng: random.Random) -> float:
        """Count one finished request; how long to pause before the next one."""
        if result.ok:
            self.streak = 0
            return 0.0
        if not counts_as_failure_streak(result):
            return 0.0
        self.streak += 1
        if self.streak < FAILURE_BACKOFF_AFTER:
            return 0.0
        base_s = FAILURE_BACKOFF_FIRST_S * 2 ** min(self.streak - FAILURE_BACKOFF_AFTER, 16)
        return min(FAILURE_BACKOFF_MAX_S, base_s * rng.uniform(0.5, 1.5))


@dataclass
class RunGuard:
    base_url: str = ""
    successes: int = 0
    reached: bool = False
    """some attempt got an HTTP status back (the host is reachable)"""
    connect_failures: int = 0
    first_connect_failure_s: float | None = None
    event_stream_seen: bool = False
    not_sse: int = 0
    attempts: int = 0
    same_4xx: int | None = None
    """the one 4xx status of every attempt so far (0: the first attempts were not all one 4xx)"""
    first_attempt_s: float | None = None
    halted: str = ""
    """the reason the run was stopped ('' while it runs)"""

    def observe(self, result: StreamResult, now_s: float) -> str | None:
        """Count one attempt; the stop line the first time the run must stop, else None."""
        if self.halted:
            return None
        reason = self._verdict(result, now_s)
        if reason:
            self.halted = reason
        return reason

    def _verdict(self, result: StreamResult, now_s: float) -> str | None:
        self.attempts += 1
        if self.first_attempt_s is None:
            self.first_attempt_s = now_s
        if result.ok:
            self.successes += 1
        same_4xx = self._same_4xx(result, now_s - self.first_attempt_s)
        if same_4xx:
            return same_4xx
        if result.status:
            self.reached = True
        exc = result.exception
        if result.status == 200:
            if exc is not None and getattr(exc, "not_sse", False):
                self.not_sse += 1
                if not self.event_stream_seen and self.successes == 0 and self.not_sse >= NOT_SSE_LIMIT:
                    return (f"{self.base_url} does not stream: HTTP 200 answers are {exc.detail}, not "
                            "text/event-stream; check --host and that the endpoint supports stream=true")
            else:
                self.event_stream_seen = True
        if exc is not None and exc.kind == "redirect" and self.successes == 0:
            return f"HTTP {result.status} from {self.base_url}: {exc.detail}"
        if result.status == 401 and self.successes == 0:
            return (f"HTTP 401 from {self.base_url}: the API key was refused; "
                    "set --api-key or OPENAI_API_KEY")
        if exc is not None and failed_to_connect(result) and not self.reached:
            self.connect_failures += 1
            if self.first_connect_failure_s is None:
                self.first_connect_failure_s = now_s
            if (self.connect_failures >= CONNECT_FAILURES
                    or now_s - self.first_connect_failure_s >= CONNECT_WINDOW_S):
                what = str(exc) if exc.kind == "connect" else f"cannot connect to {self.base_url}: {exc.detail}"
                return what if "certificate verify failed" in what else f"{what}; check --host"
        return None

    def _same_4xx(self, result: StreamResult, since_first_s: float) -> str | None:
        """The stop line once the first attempts all failed with one 4xx status (module docstring)."""
        if self.same_4xx == 0 or self.attempts > SAME_4XX_LIMIT:
            return None
        if result.error != "http_4xx" or self.same_4xx not in (None, result.status):
            self.same_4xx = 0
            return None
        self.same_4xx = result.status
        if self.attempts < SAME_4XX_LIMIT and (self.attempts < SAME_4XX_MIN or since_first_s < SAME_4XX_WINDOW_S):
            return None
        message = (result.exception.detail if result.exception else "") or "(no message in the answer)"
        return (f"the first {self.attempts} requests all failed with HTTP {result.status} from {self.base_url}: "
                f"{message!r}; check --model and the request options")
