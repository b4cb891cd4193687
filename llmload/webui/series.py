"""The charts' time series: a bounded ring of 1 s samples built from Locust's stats on the UI process.

How it works: a greenlet on the process with the web UI (local runner or master) wakes every
`period_s` while a run is active and reads `environment.stats` (merged from the workers on a
master, so there the series moves in ~3 s steps): cumulative LLM requests, failures, output
tokens, the TTFT and ITL histograms (sink/window.py) and the LLM (end-to-end) histogram. It keeps
the last few cumulative readings (`recent`) and appends one small point to `points` (a deque of
`max_points`, ~2 h at 1 s: the oldest fall off): requests/s, failures/s and output tokens/s
over the last `window_s`, TTFT p50/p95/p99, ITL mean p50/p95/p99 (over requests, of each one's
mean inter-token gap: the `ITL` event) and e2e p50/p95 of the requests completed in that
window, users and the tier. Errors are split by kind (the exception class in Locust's error
table) and the increase since the previous sample is added to the tier running then (so a
tier's error counts are blurred by one sample at its edges). The greenlet also measures its
own wake-up lateness: the event-loop lag of the UI process.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from llmload.contract import METRIC_TYPES
from llmload.run.state import run_state
from llmload.sink.window import StatsSnapshot, diff, error_text, percentile_ms, snapshot

logger = logging.getLogger(__name__)
ACTIVE_STATES = ("spawning", "running")
"""locust.runners.STATE_SPAWNING / STATE_RUNNING (not imported: importing locust patches gevent)"""
ERROR_KINDS = {"RateLimited": "429", "RetryAfterTooLong": "429", "HTTP4xx": "http_4xx", "HTTP5xx": "http_5xx",
               "ConnectError": "connect", "ServerGone": "server_gone", "Timeout": "timeout",
               "StreamBroken": "stream_broken", "ProtocolError": "protocol", "StreamError": "stream_error",
               "EmptyAnswer": "empty_answer", "Redirect": "redirect"}
"""exception class name (llmload/client/errors.py) -> kind shown on the errors chart"""


def error_kind(error: Any) -> str:
    name = error_text(error).split("(", 1)[0].strip()
    return ERROR_KINDS.get(name, "other")


def error_counts(stats: Any) -> Counter[str]:
    """Cumulative failures of the LLM requests by kind."""
    counts: Counter[str] = Counter()
    for error in stats.errors.values():
        if error.method not in METRIC_TYPES:
            counts[error_kind(error.error)] += error.occurrences
    return counts


def e2e_counts(stats: Any) -> Counter[int]:
    counts: Counter[int] = Counter()
    for entry in stats.entries.values():
        if entry.method not in METRIC_TYPES:
            counts.update(entry.response_times)
    return counts


@dataclass
class Reading:
    t_s: float
    snap: StatsSnapshot
    e2e: Counter[int] = field(default_factory=Counter)


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


class Sampler:
    def __init__(self, environment: Any, period_s: float = 1.0, window_s: float = 5.0,
                 max_points: int = 7200) -> None:
        self.environment = environment
        self.period_s = period_s
        self.window_s = window_s
        self.points: deque[dict] = deque(maxlen=max_points)
        self.recent: deque[Reading] = deque(maxlen=int(12 / period_s) + 2)
        self.tier_errors: dict[int, Counter[str]] = {}
        self.loop_lag_ms = 0.0
        """how late this greenlet woke last (the UI process's event-loop lag)"""
        self.generation = 0
        """bumped at every reset: the page starts its series over when it changes"""
        self._errors: Counter[str] = Counter()
        self._greenlet: Any = None

    def reset(self) -> None:
        """A new run: the series starts over."""
        self.points.clear()
        self.recent.clear()
        self.tier_errors = {}
        self._errors = Counter()
        self.generation += 1

    def start(self) -> None:
        import gevent

        if self._greenlet is None or self._greenlet.dead:
            self._greenlet = gevent.spawn(self._run)

    def _run(self) -> None:
        import gevent

        while True:
            before = time.perf_counter()
            gevent.sleep(self.period_s)
            self.loop_lag_ms = max(0.0, (time.perf_counter() - before - self.period_s) * 1000.0)
            runner = self.environment.runner
            if runner is None or runner.state not in ACTIVE_STATES:
                continue
            try:
                self.sample()
            except Exception:  # the charts must never take the UI down
                logger.exception("llmload web UI: could not sample the stats")

    def reading_before(self, age_s: float, now_s: float) -> Reading | None:
        """The newest kept reading at least `age_s` old (the oldest one if none is that old)."""
        for reading in reversed(self.recent):
            if now_s - reading.t_s >= age_s:
                return reading
        return self.recent[0] if self.recent else None

    def sample(self, now_s: float | None = None) -> dict:
        now_s = time.time() if now_s is None else now_s
        stats = self.environment.stats
        reading = Reading(now_s, snapshot(stats), e2e_counts(stats))
        self._add_errors(stats, now_s)
        before = self.reading_before(self.window_s, now_s)
        self.recent.append(reading)
        point = self._point(reading, before)
        self.points.append(point)
        return point

    def _add_errors(self, stats: Any, now_s: float) -> None:
        counts = error_counts(stats)
        if sum(counts.values()) < sum(self._errors.values()):
            self._errors = Counter()  # stats were reset
        grown = counts - self._errors
        self._errors = counts
        if grown:
            tier = run_state(self.environment).timeline.tier_at(now_s)[0].tier
            self.tier_errors.setdefault(tier, Counter()).update(grown)

    def _point(self, reading: Reading, before: Reading | None) -> dict:
        base = before.snap if before is not None else StatsSnapshot()
        window = diff(base, reading.snap)
        seconds = reading.t_s - before.t_s if before is not None else 0.0
        e2e = reading.e2e
        if before is not None and sum(before.e2e.values()) <= sum(e2e.values()):
            e2e = e2e - before.e2e
        runner = self.environment.runner
        tier, _phase = run_state(self.environment).timeline.tier_at(reading.t_s)
        per_s = (lambda n: round(n / seconds, 2)) if seconds > 0 else (lambda n: None)
        return {
            "t": round(reading.t_s, 3), "users": runner.user_count if runner is not None else 0,
            "tier": tier.tier, "rps": per_s(window.requests), "fail_ps": per_s(window.failures),
            "out_tps": per_s(window.output_tokens),
            "ttft_p50": _round(window.ttft_ms(0.5)), "ttft_p95": _round(window.ttft_ms(0.95)),
            "ttft_p99": _round(window.ttft_ms(0.99)),
            "itl_mean_p50": _round(window.itl_ms(0.5)), "itl_mean_p95": _round(window.itl_ms(0.95)),
            "itl_mean_p99": _round(window.itl_ms(0.99)),
            "e2e_p50": _round(percentile_ms(dict(e2e), 0.5)), "e2e_p95": _round(percentile_ms(dict(e2e), 0.95)),
        }

    def current_e2e_ms(self, q: float, now_s: float | None = None, window_s: float = 10.0) -> float | None:
        """LLM end-to-end percentile q over about the last `window_s` (Locust's "current" window)."""
        now_s = time.time() if now_s is None else now_s
        counts = e2e_counts(self.environment.stats)
        before = self.reading_before(window_s, now_s)
        if before is not None and sum(before.e2e.values()) <= sum(counts.values()):
            counts = counts - before.e2e
        return percentile_ms(dict(counts), q)
