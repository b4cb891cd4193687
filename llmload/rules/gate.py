"""The SLO gate's verdict on one criterion of one tier: PASS, FAIL or CANNOT JUDGE, and why.

How it works (the value and how many values are behind it come from the run: the report's tier table,
`python -m analysis check`, `--check-slo`):
- a value the run cannot give (no histograms for a pooled criterion, goodput without rows): CANNOT;
- a timed criterion (a latency percentile) of a tier with no success once MIN_ATTEMPTS were sent: FAIL;
- fewer successes than its percentile needs (`samples_needed`: one in its tail, never under
  MIN_ATTEMPTS), or fewer than MIN_ATTEMPTS attempts: CANNOT;
- else PASS or FAIL against the limit (at least / at most).
A generator that lagged materially (llmload.rules.trust) only adds latency and lowers the rates it
measures: a timed FAIL becomes CANNOT (the miss may be the generator's), a PASS stands, said so.
The gate fails when any criterion failed, else cannot judge when any could not be judged.
"""

from __future__ import annotations

import math

from llmload.rules.slo import LATENCY, POOLED, Criterion

PASS, FAIL, CANNOT = "PASS", "FAIL", "CANNOT JUDGE"
EXIT = {PASS: 0, FAIL: 1, CANNOT: 2}
"""the gate's exit codes"""
MIN_ATTEMPTS = 20
"""fewer attempts (or successes) than this say nothing about a percentile or a rate"""
UNTIMED = ("error_rate", "rate_429")
"""criteria a lagging generator cannot distort"""


def samples_needed(c: Criterion) -> int:
    """Successes needed to judge a percentile: at least one in its tail, and never fewer than MIN_ATTEMPTS."""
    if c.percentile is None:
        return MIN_ATTEMPTS
    tail = min(c.percentile, 100.0 - c.percentile) / 100.0
    return max(MIN_ATTEMPTS, math.ceil(1.0 / tail - 1e-9))


def criterion_status(c: Criterion, value: float, have: int, what: str, missing: str, ok: int, sent: int,
                     lag_material: bool) -> tuple[str, str]:
    """(PASS | FAIL | CANNOT, why) of one criterion on one tier (module docstring); `have`: the values behind
    `value` (`what` they are: successes, gaps, requests), `missing`: why the run cannot give it ('' when it can)."""
    timed = c.metric in LATENCY or c.metric in POOLED
    need = samples_needed(c)
    if missing:
        status, why = CANNOT, missing
    elif timed and ok == 0 and sent >= MIN_ATTEMPTS:
        status, why = FAIL, "no request succeeded"
    elif (timed and have < need) or sent < MIN_ATTEMPTS:
        have, what = (have, what) if timed else (sent, "requests")
        status, why = CANNOT, f"{have} {what}, need {need}"
    else:
        met = value >= c.limit if c.at_least else value <= c.limit
        status, why = (PASS if met else FAIL), ""
    if lag_material and c.metric not in UNTIMED:
        if status == FAIL and ok > 0:
            return CANNOT, "the load generator was overloaded"
        if status == PASS:
            return PASS, "the load generator lagged: the true figure is at least this good"
    return status, why


def status_of(statuses: list[str]) -> str:
    """The gate's status over its criteria."""
    return FAIL if FAIL in statuses else CANNOT if CANNOT in statuses else PASS
