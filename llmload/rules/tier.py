"""`Tier`: what the rule book knows of one load level's measure window, and nothing else.

The report builds it from its per-tier table (every figure from samples.csv or from shipped
histograms), the live web UI and `--stop-at-knee` from the tiers measured so far: the verdict
functions (`knees`, `saturation`, `capacity`, `waiting`, `verdicts`) see only these fields, so
the same tiers give the same sentences wherever they are judged. A figure that was not measured
is NaN (floats) or its neutral value; the rates are derived here, once, from the counts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

NAN = math.nan


@dataclass(frozen=True)
class Tier:
    tier: int
    load: float
    """the load applied: users (closed loop) or the target req/s (open loop); an under-applied closed-loop
    tier's users really sending"""
    sent: int = 0
    """attempts sent in the measure window"""
    ok: int = 0
    """successful attempts (no error, a first token): answers with text"""
    n_empty: int = 0
    """HTTP 200 answers that ended with no text (`empty_answer`): sent and answered, with no token to time (out of
    every latency figure); failed only when `empty_is_error`"""
    empty_is_error: bool = False
    """the run counts empty answers as errors (--empty-answer-is-error, run.json `empty_answer_is_error`)"""
    load_target: float = NAN
    """the load the shape asked (NaN: the same as `load`)"""
    under_applied: bool = False
    """a closed-loop tier whose applied users fell below UNDER_APPLIED x its target (llmload.rules.applied)"""
    applied_users: float = NAN
    """closed loop: the users really applied over the measure window (NaN: not known, or open loop)"""
    rate_window_s: float = NAN
    """the seconds its rates are per (the measure window)"""
    rps: float = NAN
    """attempts sent per second"""
    ok_rps: float = NAN
    """successful attempts per second"""
    out_tok_s: float = NAN
    """output tokens per second of successful attempts"""
    goodput_rps: float = NAN
    """successful attempts per second that met every per-request criterion of the objective (NaN: unknown)"""
    n_429: int = 0
    n_503: int = 0
    n_stream_error: int = 0
    """HTTP 200 streams that carried an error event (shedding, as vLLM does under bursts)"""
    n_shed: int = 0
    """refused attempts: 429, 503, in-stream error events, a retry hint beyond the client's cap"""
    n_shed_hinted: int = 0
    """refused attempts that carried a retry hint"""
    n_timeout: int = 0
    n_other_fail: int = 0
    """failed attempts that were neither refused nor timed out (5xx but 503, broken streams, protocol)"""
    retry_after_sources: str = ""
    """the headers the retry hints came from, e.g. 'llm_provider-retry-after'"""
    dropped: int = 0
    """open loop: arrivals not sent at the in-flight cap (the whole tier)"""
    drop_rate: float = 0.0
    """dropped / (dropped + attempts sent in the whole tier)"""
    ttft_p50_ms: float = NAN
    ttft_p95_ms: float = NAN
    ttft_p99_ms: float = NAN
    ttft_p95_upper_ms: float = NAN
    """the 95 % upper bound of the true p95 TTFT (llmload.rules.bounds): +inf when too few successes bound it, NaN
    when not computed (judged on the point estimate then)"""
    ttft_mean_ms: float = NAN
    tpot_mean_ms: float = NAN
    e2e_mean_ms: float = NAN
    e2e_p50_ms: float = NAN
    e2e_p95_ms: float = NAN
    e2e_p99_ms: float = NAN
    e2e_p95_upper_ms: float = NAN
    """... of the p95 e2e latency"""
    no_first_token: bool = False
    """the run's answers have no first token (embeddings, rerank): its latency is judged on e2e
    (llmload.rules.latency.mark)"""
    decode_max_ms: float = NAN
    """the longest decode (first token to last) of its successful measured requests (too short for its requests:
    llmload.rules.delivery; NaN without rows)"""
    srv_waiting_mean: float = NAN
    """the server's own queue: requests waiting on average over the window, its waiting gauge sampled at each scrape
    (NaN: no server metrics)"""
    srv_queue_len: float = NAN
    """... by Little's law on its queue-time histogram: seconds waited per second of the window (NaN: no histogram)"""
    wait_ms: float = NAN
    """client estimate of each request's wait (`waiting.estimate`)"""
    queue_len: float = NAN
    """requests waiting on average by Little's law on `wait_ms`"""
    wait_share: float = NAN
    """`wait_ms` as a share of the service time"""
    waits: bool = False
    """its requests waited (`waiting.estimate`)"""
    wait_source: str = ""
    """what says they waited: 'server', 'dropped', 'client' or ''"""
    remaining_requests_min: float = NAN
    """the lowest x-ratelimit-remaining-requests recorded in the window (NaN: none; report only)"""
    remaining_requests_max: float = NAN
    """... the highest"""
    parked_refused: int = 0
    """users of the tier refused before its window (a 429/503 whose Retry-After reached into it) who sent nothing"""
    parked_codes: str = ""
    """their refusals, e.g. '2 x 429'"""
    parked_retry_after_s: float = NAN
    """the longest Retry-After they were given"""

    @property
    def target(self) -> float:
        """The load the shape asked."""
        return self.load if self.load_target != self.load_target else self.load_target

    @property
    def n_empty_failed(self) -> int:
        """Empty answers counted as failures (all of them with `empty_is_error`, else none)."""
        return self.n_empty if self.empty_is_error else 0

    @property
    def failed(self) -> int:
        """Attempts neither answered with text nor, unless `empty_is_error`, answered empty."""
        return self.sent - self.ok - (self.n_empty - self.n_empty_failed)

    def _share(self, count: int) -> float:
        return count / self.sent if self.sent > 0 else 0.0

    @property
    def rate_429(self) -> float:
        return self._share(self.n_429)

    @property
    def error_rate(self) -> float:
        """Failed attempts other than 429s, per attempt sent."""
        return self._share(self.failed - self.n_429)

    @property
    def shed_rate(self) -> float:
        return self._share(self.n_shed)

    @property
    def timeout_rate(self) -> float:
        return self._share(self.n_timeout)

    @property
    def other_fail_rate(self) -> float:
        """Failures neither refused nor timed out per attempt sent: `n_other_fail`, and the empty answers counted as
        failures."""
        return self._share(self.n_other_fail + self.n_empty_failed)

    @property
    def refused_load_share(self) -> float:
        """Users refused before the window, per user asked."""
        return self.parked_refused / self.target if self.target > 0 else 0.0

    @property
    def tested(self) -> bool:
        """Load was offered in its measure window: requests sent, or users refused before it and parked on a retry
        hint through it (refused load: such a tier is judged, at 0 req/s, never dropped)."""
        return self.sent > 0 or self.parked_refused > 0

    @property
    def srv_queue(self) -> float:
        """The server's own queue, requests waiting on average: from its queue-time histogram when scraped (every
        wait counted), else its waiting gauge's mean (a sample per scrape, which misses waits shorter than the
        scrape period: vLLM's read 0.4 where its histogram says 0.7)."""
        return self.srv_queue_len if self.srv_queue_len == self.srv_queue_len else self.srv_waiting_mean

    @property
    def has_server_queue(self) -> bool:
        return self.srv_queue == self.srv_queue


FIELDS = {f.name: f for f in dataclasses.fields(Tier)}


def _plain(value: Any, default: Any) -> Any:
    """A frame's cell as the field's plain Python type (numpy scalars, pandas NA and None handled)."""
    if value is None:
        return default
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, int):
        number = float(value)
        return default if math.isnan(number) else int(number)
    if isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError):
            return default
    return default if isinstance(value, float) and math.isnan(value) else str(value)


def from_mapping(row: Mapping[str, Any]) -> Tier:
    """A Tier from any mapping with the tier table's column names (a pandas row, a dict); others are ignored."""
    values = {}
    for name, field in FIELDS.items():
        if name in row:
            default = field.default if field.default is not dataclasses.MISSING else (0 if name == "tier" else 0.0)
            values[name] = _plain(row[name], default)
    return Tier(**values)


def from_rows(rows: Iterable[Mapping[str, Any]]) -> list[Tier]:
    return [from_mapping(row) for row in rows]


def one_per_load(tiers: Iterable[Tier]) -> list[Tier]:
    """At a load asked more than once (a `--hold-at-capacity` tier), the tier with the most attempts sent: the
    tightest figures; the others are left out. Order kept."""
    tiers = list(tiers)
    best: dict[float, Tier] = {}
    for t in tiers:
        key = round(t.target, 6)  # the load asked: users refused before the window do not make it another load
        if key not in best or t.sent > best[key].sent:
            best[key] = t
    kept = {id(t) for t in best.values()}
    return [t for t in tiers if id(t) in kept]


def with_load(tiers: Iterable[Tier]) -> list[Tier]:
    """Tiers that were offered load (`Tier.tested`), in the order of the load asked, then of the load applied
    (stable: equal loads keep their order): a tier whose users were all refused and parked applies 0 users but
    stays where its shape put it."""
    return sorted((t for t in tiers if t.tested), key=lambda t: (t.target != t.target, t.target, t.load))
