"""Live per-tier figures from Locust's stats: snapshots and the windows between them.

How it works: the shape never sees single requests on a distributed master, only the
`environment.stats` that workers merge into it every ~3 s (a local run updates them at once).
So at every boundary (tier start, warm-up end, tier end) it takes a `StatsSnapshot`: the
TTFT histogram summed over all `TTFT` entries, the ITL histogram (each request's mean inter-token
gap) summed over all `ITL` entries, request/failure counts and output tokens of the
LLM entries (every request_type that is not a derived metric), 429s (errors whose exception is
`RateLimited`), open-loop drops and answers with no text (the `EMPTY` entries). A tier's measure window
is `diff(warmup_end, tier_end)`.
In distributed runs that window is blurred by up to one worker report interval (~3 s): keep
tiers well above that (>= 30 s) when the early stop matters.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from llmload.contract import DROPPED_TYPE, EMPTY_TYPE, ITL_TYPE, METRIC_TYPES, RATE_LIMITED_PREFIX, TTFT_TYPE


@dataclass(frozen=True)
class StatsSnapshot:
    ttft_counts: dict[int, int] = field(default_factory=dict)
    """TTFT histogram (Locust's rounded ms -> count), all TTFT entries summed"""
    requests: int = 0
    failures: int = 0
    rate_limited: int = 0
    output_tokens: int = 0
    dropped: int = 0
    """open-loop arrivals not sent (in-flight cap)"""
    itl_counts: dict[int, int] = field(default_factory=dict)
    """ITL histogram (ms -> count of requests with that mean inter-token gap), all ITL entries summed"""
    empty: int = 0
    """answers with no text (the EMPTY entries): counted in `requests` too, in `failures` with
    --empty-answer-is-error"""
    e2e_counts: dict[int, int] = field(default_factory=dict)
    """e2e histogram of the LLM entries (ms -> count; the latency of answers with no first token)"""


@dataclass(frozen=True)
class TierWindow:
    requests: int
    failures: int
    rate_limited: int
    output_tokens: int
    dropped: int
    ttft_counts: dict[int, int]
    """TTFT histogram of the window (ms -> count)"""
    itl_counts: dict[int, int] = field(default_factory=dict)
    """ITL histogram of the window: each request's mean inter-token gap (ms -> count)"""
    empty: int = 0
    """answers with no text in the window (run/events.py EMPTY)"""
    e2e_counts: dict[int, int] = field(default_factory=dict)
    """e2e histogram of the window's LLM entries (ms -> count)"""

    @property
    def ttft_count(self) -> int:
        return sum(self.ttft_counts.values())

    def ttft_ms(self, q: float) -> float | None:
        """TTFT percentile q (0..1) of the window."""
        return percentile_ms(self.ttft_counts, q)

    @property
    def ttft_p99_ms(self) -> float | None:
        return self.ttft_ms(0.99)

    def latency_p99(self) -> tuple[str, float | None]:
        """('TTFT', its p99), or ('e2e', its p99) when requests succeeded with no first token (embeddings,
        rerank: llmload.rules.latency)."""
        if not self.ttft_counts and self.requests > self.failures and self.e2e_counts:
            return "e2e", self.e2e_ms(0.99)
        return "TTFT", self.ttft_p99_ms

    def e2e_ms(self, q: float) -> float | None:
        """e2e latency percentile q (0..1) of the window's LLM entries."""
        return percentile_ms(self.e2e_counts, q)

    def itl_ms(self, q: float) -> float | None:
        """Percentile q (0..1) over the window's requests of each one's mean inter-token gap."""
        return percentile_ms(self.itl_counts, q)

    @property
    def error_rate(self) -> float:
        return self.failures / self.requests if self.requests else 0.0


def error_text(error: object) -> str:
    """Locally an error is the exception object; on a master it arrives as its repr string."""
    return repr(error) if isinstance(error, BaseException) else str(error)


def is_rate_limited(error: Any) -> bool:
    """Whether an entry of Locust's error table is a 429 of a request (not a derived metric)."""
    return error.method not in METRIC_TYPES and error_text(error.error).startswith(RATE_LIMITED_PREFIX)


def snapshot(stats: Any) -> StatsSnapshot:
    """Totals of a Locust `RequestStats` (local or the master's merged copy) right now."""
    return _totals(stats.entries.values(), stats.errors.values())


def scenario_snapshots(stats: Any) -> dict[str, StatsSnapshot]:
    """`snapshot` per scenario (the entries' name) right now."""
    entries: dict[str, list] = {}
    errors: dict[str, list] = {}
    for entry in stats.entries.values():
        entries.setdefault(entry.name, []).append(entry)
    for error in stats.errors.values():
        errors.setdefault(error.name, []).append(error)
    return {name: _totals(mine, errors.get(name, [])) for name, mine in entries.items()}


def _totals(entries: Any, errors: Any) -> StatsSnapshot:
    ttft: Counter[int] = Counter()
    itl: Counter[int] = Counter()
    e2e: Counter[int] = Counter()
    requests = failures = tokens = dropped = empty = 0
    for entry in entries:
        if entry.method == TTFT_TYPE:
            ttft.update(entry.response_times)
        elif entry.method == ITL_TYPE:
            itl.update(entry.response_times)
        elif entry.method == DROPPED_TYPE:
            dropped += entry.num_failures
        elif entry.method == EMPTY_TYPE:
            empty += entry.num_requests
        elif entry.method not in METRIC_TYPES:
            requests += entry.num_requests  # failures included
            failures += entry.num_failures
            tokens += entry.total_content_length
            e2e.update(entry.response_times)
    limited = sum(e.occurrences for e in errors if is_rate_limited(e))
    return StatsSnapshot(dict(ttft), requests, failures, limited, tokens, dropped, dict(itl), empty, dict(e2e))


def percentile_ms(counts: dict[int, int], q: float) -> float | None:
    """The smallest value with at least q (0..1) of the samples at or below it (None if empty)."""
    total = sum(counts.values())
    if total <= 0:
        return None
    rank = max(1, -(-q * total // 1))  # ceil(q * total), at least the first sample
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= rank:
            return float(value)
    return float(max(counts))


def diff(before: StatsSnapshot, after: StatsSnapshot) -> TierWindow:
    """What happened between two snapshots. Locust clears its stats when a run starts, after
    the shape's first tick: counts going backwards mean `before` was taken before the reset."""
    if after.requests < before.requests or sum(after.ttft_counts.values()) < sum(before.ttft_counts.values()) \
            or sum(after.itl_counts.values()) < sum(before.itl_counts.values()):
        before = StatsSnapshot()
    return TierWindow(
        requests=max(0, after.requests - before.requests),
        failures=max(0, after.failures - before.failures),
        rate_limited=max(0, after.rate_limited - before.rate_limited),
        output_tokens=max(0, after.output_tokens - before.output_tokens),
        dropped=max(0, after.dropped - before.dropped),
        ttft_counts=_grown(before.ttft_counts, after.ttft_counts),
        itl_counts=_grown(before.itl_counts, after.itl_counts),
        empty=max(0, after.empty - before.empty),
        e2e_counts=_grown(before.e2e_counts, after.e2e_counts),
    )


def _grown(before: dict[int, int], after: dict[int, int]) -> dict[int, int]:
    """The histogram of what was added between two cumulative ones (buckets that grew)."""
    counts = {k: n - before.get(k, 0) for k, n in after.items()}
    return {k: n for k, n in counts.items() if n > 0}
