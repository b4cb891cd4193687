"""When a run must stop at once instead of recording thousands of identical failures.

How it works: every process keeps one `RunGuard` per run (reset at test start). Each
finished attempt is shown to `observe(result, now_s)`, which returns a one-line reason the
first time the evidence says the target cannot be load-tested as configured, and None
otherwise. Only runs that have not shown the target working are stopped:

- HTTP 401 before any success: the API key was refused.
- Cannot connect: no attempt has reached the server (no HTTP status ever came back) and
  the first `CONNECT_FAILURES` (20) attempts failed to connect, or connect failures have
  lasted `CONNECT_WINDOW_S` (10 s). A connect timeout counts as a connect failure.
- Not streaming: the first `NOT_SSE_LIMIT` (5) answers with status 200 were all not
  `text/event-stream` (a non-streaming endpoint, an HTML page, a wrong path behind a proxy).

The caller (users.py) stops the run once with that line (exit code 2) and lets its users
idle. `connect_backoff_s` is the per-user pause after a failed connect: 0.1 s doubling to
2 s, reset by any attempt that reached the server, so a down server is not hammered.
Pure logic, no I/O: the clock is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmload.client.request import StreamResult

CONNECT_FAILURES = 20
CONNECT_WINDOW_S = 10.0
NOT_SSE_LIMIT = 5
CONNECT_BACKOFF_FIRST_S = 0.1
CONNECT_BACKOFF_MAX_S = 2.0


def failed_to_connect(result: StreamResult) -> bool:
    """The attempt never got a connection (refused, unresolvable, TLS refused, connect timeout)."""
    exc = result.exception
    return exc is not None and (exc.kind == "connect" or getattr(exc, "phase", "") == "connect")


def next_connect_backoff_s(previous_s: float) -> float:
    """Pause after a failed connect, given the previous pause (0 = none yet)."""
    if previous_s <= 0:
        return CONNECT_BACKOFF_FIRST_S
    return min(CONNECT_BACKOFF_MAX_S, previous_s * 2)


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
        if result.ok:
            self.successes += 1
        if result.status:
            self.reached = True
        exc = result.exception
        if result.status == 200:
            if getattr(exc, "not_sse", False):
                self.not_sse += 1
                if not self.event_stream_seen and self.successes == 0 and self.not_sse >= NOT_SSE_LIMIT:
                    return (f"{self.base_url} does not stream: HTTP 200 answers are {exc.detail}, not "
                            "text/event-stream; check --host and that the endpoint supports stream=true")
            else:
                self.event_stream_seen = True
        if result.status == 401 and self.successes == 0:
            return (f"HTTP 401 from {self.base_url}: the API key was refused; "
                    "set --api-key or OPENAI_API_KEY")
        if failed_to_connect(result) and not self.reached:
            self.connect_failures += 1
            if self.first_connect_failure_s is None:
                self.first_connect_failure_s = now_s
            if (self.connect_failures >= CONNECT_FAILURES
                    or now_s - self.first_connect_failure_s >= CONNECT_WINDOW_S):
                what = str(exc) if exc.kind == "connect" else f"cannot connect to {self.base_url}: {exc.detail}"
                return f"{what}; check --host"
        return None
