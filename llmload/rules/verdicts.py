"""The verdicts on a set of tiers, in one call: the live web UI, `--stop-at-knee` and the report make it.

How it works: `judge(tiers, ...)` takes every tier measured so far (the report: all of them), applies
the waiting rule over all of them (the lowest load is the baseline), keeps the tiers that can be
judged (in a climbing run, at a load tested twice, the one with the most attempts: `tier.one_per_load`), and returns the
two knees, the saturation verdict, the capacity under the SLO profile, the rate limiter behind its 429s and the
basis of the plan (`plan.py`), capped by the model-free ceiling the caller measured on its rows (`ceiling.py`):
the same functions on the same tiers, so a sentence the web UI shows for a set of tiers is the one
the report prints for them. `stop_reason` is `--stop-at-knee`'s rule on those verdicts (`stop.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llmload.rules import capacity, knees, limiter, plan, saturation, waiting
from llmload.rules.ceiling import Ceiling
from llmload.rules.slo import SloProfile
from llmload.rules.tier import Tier, one_per_load


@dataclass(frozen=True)
class Verdicts:
    tiers: tuple[Tier, ...]
    """every tier given, in the order given, with the waiting rule applied"""
    judged: tuple[Tier, ...]
    """the tiers the verdicts judged"""
    compute: knees.KneePoint
    onset: knees.KneePoint
    saturation: saturation.Saturation
    capacity: capacity.Capacity
    limiter: limiter.RateLimiter | None = None
    """the rate limiter behind the judged tiers' 429s (`limiter.recognise`), or None"""
    ceiling: Ceiling | None = None
    """what the server accepted per second once it refused (`ceiling.py`; None: it never refused)"""
    peak: Tier | None = None
    """the throughput peak within the SLO when more load did less work past it (`saturation.peak_within_slo`)"""
    peak_drop: str = ""
    """... the sentence of that drop ('' without a peak)"""
    basis: plan.Basis | None = None
    """what the plan is taken below (`plan.basis`; None: nothing to plan on)"""


def judge(tiers: list[Tier], unit: str, profile: SloProfile, judged: Callable[[Tier], bool] = lambda _t: True,
          tested: int | None = None, recorded: str = "", climbing: bool = True,
          ceiling: Ceiling | None = None) -> Verdicts:
    """`judged`: which tiers count (the report leaves out tiers cut too short or measured by an overloaded
    generator); `tested`: tiers with requests, judged or not (default: those of `tiers`); `recorded`: what
    the run holds when no attempt was measured (for the saturation verdict's first row); `climbing`: a step or
    rate run, where a load tested twice is judged once (spike, soak and schedule runs repeat loads on purpose)."""
    waited = waiting.estimate(tiers)
    kept = [t for t in waited if judged(t)]
    kept = one_per_load(kept) if climbing else kept
    tested = sum(t.tested for t in tiers) if tested is None else tested
    compute = knees.compute_saturation(kept, unit, tested, ceiling)
    onset = knees.queueing_onset(kept, unit, tested)
    cap = capacity.capacity_under_slo(kept, profile, tested, unit)
    lim = limiter.recognise(kept, unit, ceiling)
    drop, peak = saturation.peak_within_slo(list(waited), cap, unit, ceiling)
    basis = plan.basis(cap, peak, lim, ceiling, unit) if climbing else None
    return Verdicts(tuple(waited), tuple(kept), compute, onset,
                    saturation.classify(kept, onset, compute, unit, recorded, tested, ceiling),
                    plan.sustained_capacity(cap, lim, ceiling), lim, ceiling, peak, drop, basis)
