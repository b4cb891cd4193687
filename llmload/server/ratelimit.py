"""Rate limiting, as hosted APIs do (requests/min and tokens/min): a token bucket or fixed windows.

How it works, token bucket (the default): each bucket holds up to `burst_s` seconds of allowance (60: a whole
minute's worth may be spent at once) and refills continuously (`per_minute / 60` per second). Fixed windows
(`window_s` > 0, a plain per-minute quota): time is cut into windows of `window_s` from the limiter's start, each
allowing `per_minute x window_s / 60`; what a window left unspent is lost at its end, and a refusal's wait is
the time to the next window. A request takes one unit from the request limit and `prompt + max output` tokens
from the token limit; if either lacks, the request is refused and the wait until both would hold enough is
returned, which the server sends as `Retry-After` (whole seconds, rounded up) and `retry-after-ms`. A refused
request takes nothing. The clock is injected so tests need no sleeping.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Bucket:
    per_minute: float
    capacity: float
    level: float
    updated_s: float

    def refill(self, now_s: float) -> None:
        rate_per_s = self.per_minute / 60.0
        self.level = min(self.capacity, self.level + (now_s - self.updated_s) * rate_per_s)
        self.updated_s = now_s

    def wait_s(self, amount: float, now_s: float) -> float:
        """Seconds until `amount` is available (0 if it is now); inf if it never can be."""
        if self.level >= amount:
            return 0.0
        if amount > self.capacity:
            return float("inf")
        return (amount - self.level) * 60.0 / self.per_minute


@dataclass
class Window:
    """A fixed-window quota: `capacity` per window of `window_s`, windows counted from `start_s`."""

    per_minute: float
    capacity: float
    window_s: float
    start_s: float
    level: float = 0.0
    ends_s: float = float("-inf")
    """when the current window ends (the first `refill` opens the first window)"""

    def refill(self, now_s: float) -> None:
        if now_s >= self.ends_s:
            index = (now_s - self.start_s) // self.window_s
            self.level, self.ends_s = self.capacity, self.start_s + (index + 1) * self.window_s

    def wait_s(self, amount: float, now_s: float) -> float:
        """Seconds until `amount` is available: 0 now, else the next window's start (inf: it never fits)."""
        if self.level >= amount:
            return 0.0
        if amount > self.capacity:
            return float("inf")
        return self.ends_s - now_s


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after_s: float = 0.0
    limit: str = ""
    """which limit refused: 'requests' or 'tokens'"""
    remaining_requests: int = 0
    remaining_tokens: int = 0


class RateLimiter:
    def __init__(self, rpm: float, tpm: float, now_s: float, burst_s: float = 60.0, window_s: float = 0.0):
        """`window_s` > 0: fixed windows of that length instead of token buckets (`burst_s` unused)."""
        self.requests = self._limit(rpm, burst_s, window_s, now_s)
        self.tokens = self._limit(tpm, burst_s, window_s, now_s)

    @staticmethod
    def _limit(per_minute: float, burst_s: float, window_s: float, now_s: float) -> Bucket | Window | None:
        if per_minute <= 0:
            return None
        if window_s > 0:
            return Window(per_minute, max(1.0, per_minute * window_s / 60.0), window_s, now_s)
        capacity = max(1.0, per_minute * burst_s / 60.0)
        return Bucket(per_minute, capacity, capacity, now_s)

    @property
    def enabled(self) -> bool:
        return self.requests is not None or self.tokens is not None

    def take(self, token_cost: int, now_s: float) -> Decision:
        waits = []
        for name, bucket, amount in (("requests", self.requests, 1), ("tokens", self.tokens, token_cost)):
            if bucket is not None:
                bucket.refill(now_s)
                waits.append((bucket.wait_s(amount, now_s), name))
        wait_s, limit = max(waits, default=(0.0, ""))
        if wait_s > 0:
            if wait_s == float("inf"):  # larger than the bucket: never fits
                wait_s = 60.0
            return Decision(False, wait_s, limit, *self._remaining())
        if self.requests is not None:
            self.requests.level -= 1
        if self.tokens is not None:
            self.tokens.level -= token_cost
        return Decision(True, 0.0, "", *self._remaining())

    def _remaining(self) -> tuple[int, int]:
        return (int(self.requests.level) if self.requests else 0,
                int(self.tokens.level) if self.tokens else 0)
