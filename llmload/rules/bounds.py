"""How far a percentile of n samples can be trusted: its distribution-free 95 % upper bound.

How it works: of n independent samples of a latency whose true q-quantile is Q, the number below Q is
Binomial(n, q). So the k-th smallest sample (1-based) lies at or above Q with probability
P(Binomial(n, q) <= k - 1), whatever the distribution (the order-statistic interval, as MLPerf LoadGen's early
stopping reasons). `upper_rank(n, q)` is the smallest k for which that probability reaches CONFIDENCE: the k-th
sample is then a 95 % upper bound of the true q-quantile. When even the largest sample is not (n below
`min_samples(q)`: 59 for p95, 299 for p99), no upper bound exists: it is +inf, and a claim "p95 within the limit"
cannot be shown on those samples, only read off the point estimate. The exact binomial sum is used up to
EXACT_N samples, the normal approximation with continuity correction above (within a rank there).

A claim "meets the SLO" needs the upper bound within the limit; a point estimate within the limit whose bound is
not reads "not shown (n too small)" (`llmload.rules.capacity`, `llmload.rules.confirm`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

CONFIDENCE = 0.95
"""one-sided confidence of the upper bound"""
EXACT_N = 5000
"""above this many samples the binomial tail is the normal approximation's (continuity corrected)"""
Z_ONE_SIDED_95 = 1.6448536269514722


def _log_pmf(n: int, k: int, q: float) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(q) + \
        (n - k) * math.log1p(-q)


def upper_rank(n: int, q: float, confidence: float = CONFIDENCE) -> int | None:
    """The 1-based rank of the sample that bounds the q-quantile from above with `confidence` (None: n too
    small: even the largest does not)."""
    if n <= 0 or not 0.0 < q < 1.0:
        return None
    if n > EXACT_N:
        z = Z_ONE_SIDED_95 if confidence == CONFIDENCE else _z_one_sided(confidence)
        k = math.ceil(n * q + z * math.sqrt(n * q * (1.0 - q)) + 0.5)
        return k if k <= n else None
    # P(B <= k - 1) >= confidence  <=>  P(B >= k) <= 1 - confidence: sum the upper tail from the top down
    tail, miss = 0.0, 1.0 - confidence
    for k in range(n, -1, -1):
        tail += math.exp(_log_pmf(n, k, q))  # now P(B >= k)
        if tail > miss:
            return k + 1 if k + 1 <= n else None
    return 1


def min_samples(q: float, confidence: float = CONFIDENCE) -> int:
    """The fewest samples whose largest bounds the q-quantile: q^n <= 1 - confidence (59 for p95)."""
    return math.ceil(math.log(1.0 - confidence) / math.log(q))


def upper_bound(n: int, q: float, value_at: Callable[[int], float]) -> float:
    """The q-quantile's upper bound: `value_at(rank)` (1-based) at `upper_rank`; +inf when n is too small, NaN
    with no samples."""
    if n <= 0:
        return math.nan
    rank = upper_rank(n, q)
    return math.inf if rank is None else float(value_at(rank))


def upper_bound_of(values: Sequence[float], q: float) -> float:
    """`upper_bound` of raw values (NaN ignored)."""
    ordered = sorted(v for v in values if v == v)
    return upper_bound(len(ordered), q, lambda rank: ordered[rank - 1])


def shown(point: float, upper: float, limit: float) -> str:
    """A latency claim against `limit`: 'missed' (the point estimate above it), 'met' (its upper bound within it,
    or no bound computed: NaN), 'unshown' (only the point estimate within it)."""
    if point != point or point > limit:
        return "missed"
    if upper != upper or upper <= limit:
        return "met"
    return "unshown"


def _z_one_sided(confidence: float) -> float:
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if 0.5 * (1.0 + math.erf(mid / math.sqrt(2.0))) < confidence:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
