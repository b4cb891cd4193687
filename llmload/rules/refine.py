"""`--refine`: where to measure next, on the verdicts of the tiers so far, until the boundaries are measured.

The rule, after the planned sweep and after each tier it adds (at most `--refine-max-tiers`):
  1. The capacity bracket first (the sentence a planner acts on): between the last tier that met the
     SLO and the first that missed it, while it is wider than one user (closed loop) or
     `capacity.RESOLUTION` of the rate (open loop). If the lowest tier already missed it, half its load
     (down to 1 user).
  2. Then a load within the SLO on its point estimate only (`capacity.unshown`: too few samples to show it)
     above the capacity: once more, twice as long (kind 'samples'), so the capacity is decided on samples
     that bound its p95, not on a point estimate.
  3. Then the queueing-onset interval: between the last tier whose requests did not wait and the
     first that did, to the same resolution.
  4. Nothing else: a run where nothing broke and nothing waited is not extended upwards (that is the
     planned sweep's job, and more load than the user asked for is not ours to send).
The next load is the middle of the interval: arithmetic for users (4-8: 6, then 5 or 7), geometric
for rates (the resolution is a share of the rate, so 5-40 req/s takes the fewest tiers halved in log
space: 14.1, then 8.41 or 23.8). A load already tested is never tested again (a tier left out of the
verdicts, say for a lagging generator, is not retried: the nearest untested load is); an interval with
no untested load inside is done. With `--hold-at-capacity`, one last tier at the capacity a plan
uses (the load of the last tier that met the SLO) for a tight p95/p99 interval.
Which tier is judged at a load tested twice: the one with the most attempts (`tier.one_per_load`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmload.rules.capacity import RESOLUTION
from llmload.rules.text import load_with_unit
from llmload.rules.verdicts import Verdicts

DEFAULT_MAX_TIERS = 4
"""--refine-max-tiers when not given"""


@dataclass(frozen=True)
class Step:
    load: float
    """users (closed loop) or req/s (open loop) of the tier to add"""
    why: str
    """'capacity between 4 and 8 users', 'queueing onset between 4 and 8 users', 'hold at the capacity, 4 users'"""
    kind: str
    """'capacity', 'samples', 'onset' or 'hold'"""


def _same(a: float, b: float, unit: str) -> bool:
    return abs(a - b) < (0.5 if unit == "users" else 1e-3 * max(abs(a), abs(b), 1e-9))


def wide(low: float, high: float, unit: str) -> bool:
    """The interval is wider than a load can be told apart (one user, RESOLUTION of the rate)."""
    if unit == "users":
        return high - low > 1.0 + 1e-9
    return high - low > RESOLUTION * low + 1e-9


def middle(low: float, high: float, unit: str) -> float:
    """The load to test between two: arithmetic (whole users) or geometric (rates, 3 significant digits)."""
    if unit == "users":
        return float(math.floor((low + high) / 2))
    if low <= 0:
        return float(f"{high / 2:.3g}")
    return float(f"{math.sqrt(low * high):.3g}")


def _inside(low: float, high: float, unit: str, tested: list[float]) -> float | None:
    """The untested load strictly inside a wide (low, high) nearest its middle (users: any whole number between;
    rates: the middle only), None when there is none."""
    if not wide(low, high, unit):
        return None
    mid = middle(low, high, unit)
    candidates = [mid]
    if unit == "users":
        candidates = sorted((float(n) for n in range(int(low) + 1, math.ceil(high))), key=lambda n: abs(n - mid))
    for load in candidates:
        if low < load < high and not any(_same(load, t, unit) for t in tested):
            return load
    return None


def next_step(verdicts: Verdicts, unit: str, tested: list[float], again: list[float] | None = None) -> Step | None:
    """The tier to add after the tiers judged in `verdicts` (module docstring); `tested`: every load the run has
    sent so far (judged or not: a tier left out is not retried at the same load); `again`: loads already measured
    once more for their samples."""
    cap = verdicts.capacity
    if cap.status == "within" and cap.met is not None:
        mid = _inside(cap.met.load, cap.high, unit, tested)
        if mid is not None:
            return Step(mid, f"capacity between {cap.met.load:g} and {load_with_unit(cap.high, unit)}", "capacity")
    if cap.status == "below" and cap.missed is not None:
        lowest = cap.missed.target
        mid = float(math.floor(lowest / 2)) if unit == "users" else float(f"{lowest / 2:.3g}")
        if mid > 0 and not any(_same(mid, t, unit) for t in tested):
            return Step(mid, f"capacity below {load_with_unit(lowest, unit)}", "capacity")
    for tier in reversed(cap.unshown):  # nearest the boundary first
        if not any(_same(tier.load, t, unit) for t in again or []):
            return Step(tier.load, f"more samples at {load_with_unit(tier.load, unit)}: within the SLO on its point "
                        "estimate only", "samples")
    onset = verdicts.onset
    if onset.status == "within" and onset.load is not None and onset.next_load is not None:
        mid = _inside(onset.load, onset.next_load, unit, tested)
        if mid is not None:
            return Step(mid, f"queueing onset between {onset.load:g} and {load_with_unit(onset.next_load, unit)}",
                        "onset")
    return None


def hold_step(verdicts: Verdicts, unit: str) -> Step | None:
    """`--hold-at-capacity`: the capacity a plan uses (None when the SLO broke at every tested load)."""
    cap = verdicts.capacity
    if cap.status not in ("within", "beyond") or cap.met is None:
        return None
    return Step(cap.met.load, f"hold at the capacity, {load_with_unit(cap.met.load, unit)}", "hold")
