"""Token-bucket rate limiting, as hosted APIs do (requests/min and tokens/min).

How it works: each bucket holds up to `burst_s` seconds of allowance (60: a whole
minute's worth may be spent at once) and refills continuously (`per_minute / 60` per
second). A request takes one unit from the request bucket and
`prompt + max output` tokens from the token bucket; if either lacks, the request is
refused and the wait until both would hold enough is returned, which the server sends as
`Retry-After` (whole seconds, rounded up) and `retry-after-ms`. A refused request takes
nothing. The clock is injected so tests need no sleeping.
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

    def wait_s(self, amount: float) -> float:
        """Seconds until `amount` is available (0 if it is now); inf if it never can be."""
        if self.level >= amount:
            return 0.0
        if amount > self.capacity:
            return float("inf")
        return (amount - self.level) * 60.0 / self.per_minute


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after_s: float = 0.0
    limit: str = ""
    """which limit refused: 'requests' or 'tokens'"""
    remaining_requests: int = 0
    remaining_tokens: int = 0


class RateLimiter:
    def __init__(self, rpm: float, tpm: float, now_s: float, burst_s: float = 60.0):
        self.requests = self._bucket(rpm, burst_s, now_s)
        self.tokens = self._bucket(tpm, burst_s, now_s)

    @staticmethod
    def _bucket(per_minute: float, burst_s: float, now_s: float) -> Bucket | None:
        if per_minute <= 0:
            return None
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
                waits.append((bucket.wait_s(amount), name))
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
