"""The baseline gate's verdict on one figure of one tier: did the new run regress against the baseline?

How it works: each run gives the figure's value and its 95 % confidence interval (the analysis' bootstrap,
or Wilson's interval for an error rate) and how many values are behind it; the figure has a direction
(latencies and the error rate: higher is worse; output tokens/s: lower is worse). The new run REGRESSED (FAIL)
only when both hold:
- it is worse by more than the threshold: new > old x (1 + threshold) (lower is worse: new < old x
  (1 - threshold)); from an old value of 0, any rise is more than the threshold;
- the difference is beyond both runs' intervals: they do not overlap (the new run's low end above the
  baseline's high end; lower is worse: the new run's high end below the baseline's low end), so neither
  run's sampling noise explains it.
Worse by more than the threshold but inside the noise PASSES, and says so. CANNOT JUDGE: the figure or its
interval is missing in either run, or either run has fewer values than the figure needs (`values_needed`: one
in a percentile's tail, never under MIN_VALUES). A tier either run left out of its verdicts (generator
overloaded, too short for its requests, an outage): a timed regression there cannot be judged (the slowdown
may be the generator's or the window's), a pass stands; the error rate is judged as usual.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PASS, FAIL, CANNOT = "PASS", "FAIL", "CANNOT JUDGE"
MIN_VALUES = 20
"""fewer values than this say nothing about a percentile or a rate (as the SLO gate, llmload.rules.gate)"""


@dataclass(frozen=True)
class Figure:
    """One run's figure on one tier."""

    value: float
    low: float
    """the 95 % interval's low end (NaN: none)"""
    high: float
    count: int
    """values behind the figure: successes for a latency percentile or a throughput, attempts for a rate"""


def values_needed(percentile: float | None) -> int:
    """Values needed to judge a percentile: one in its tail, and never fewer than MIN_VALUES."""
    if percentile is None:
        return MIN_VALUES
    tail = min(percentile, 100.0 - percentile) / 100.0
    return max(MIN_VALUES, math.ceil(1.0 / tail - 1e-9))


def change(old: float, new: float) -> float:
    """Relative change new / old - 1 (inf from 0 to more, 0 from 0 to 0)."""
    if old == 0:
        return 0.0 if new == 0 else math.inf
    return new / old - 1.0


def _missing(old: Figure, new: Figure, need: int) -> str:
    for run, fig in (("baseline", old), ("new run", new)):
        if not math.isfinite(fig.value):
            return f"no value in the {run}"
        if fig.count < need:
            return f"{fig.count} values in the {run}, need {need}"
        if not (math.isfinite(fig.low) and math.isfinite(fig.high)):
            return f"no confidence interval in the {run}"
    return ""


def verdict(old: Figure, new: Figure, threshold: float, higher_is_worse: bool, percentile: float | None,
            left_out: bool = False, timed: bool = True) -> tuple[str, str]:
    """(PASS | FAIL | CANNOT, why) of one figure on one tier (module docstring); `threshold` a fraction (0.1: 10 %);
    `left_out`: either run left the tier out of its verdicts."""
    missing = _missing(old, new, values_needed(percentile))
    if missing:
        return CANNOT, missing
    worse = change(old.value, new.value) if higher_is_worse else -change(old.value, new.value)
    beyond = new.low > old.high if higher_is_worse else new.high < old.low
    if worse <= threshold:
        return PASS, "better" if worse < 0 else "within the threshold"
    if not beyond:
        return PASS, "worse by more than the threshold, but within the runs' confidence intervals (noise)"
    if left_out and timed:
        return CANNOT, "worse beyond the noise, but the tier is left out of a run's verdicts (generator " \
                       "overloaded, too short for its requests or a server outage)"
    return FAIL, "worse by more than the threshold and beyond both runs' confidence intervals"


def status_of(statuses: list[str]) -> str:
    """The gate's status: a regression fails it; else it passes when anything was judged; else cannot judge."""
    return FAIL if FAIL in statuses else PASS if PASS in statuses else CANNOT
