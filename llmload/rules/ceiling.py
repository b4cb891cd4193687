"""The model-free ceiling: what the server accepted per second once it had started refusing.

How it works: whatever limits a server (a per-minute quota, a token bucket with a large burst, a gateway's per-key
limit, a queue cap), once it refused a request the load offered exceeded what it takes, and what it accepted from
then on is what it sustains. So the ceiling is the successful attempts sent from the run's first refusal (429, 503,
an in-stream error event, a retry hint beyond the client's cap: `outcomes.is_shed`, in a tier whose refusals were
material: more than REJECT_LIMIT of its attempts, or users parked on a retry hint) to the end of its tiers, per
second of that span. No rate the report names (the capacity's, the plateau, the plan, a replica count) may exceed
it: a tier that got more before the first refusal spent an initial burst (a quota's, a bucket's) that a longer
hold would not get. The span should be at least as long as the longest retry hint seen (a quota's window): a
shorter one may still hold a new window's burst, and the ceiling is then an upper bound (`short`). The span ends
with the tiers: a confirmation phase (`confirm.py`) sends a rate chosen below the ceiling, which measures the
plan, not the limit.
With rows (samples.csv, or a local run's live book) the span starts at the refused attempt's send; from histograms
alone, at the start of the first tier that refused (its warm-up included): coarser, it may count the burst before
the first refusal within that tier.
When nothing got through from the first refusal to the end of the tiers (a quota whose window outlasts them), the
ceiling is 0 and says nothing of the rate; what the quota let through before it refused, over the window its retry
hint names, is then the rate a plan can try (`window_rate`: 60 requests before a 60 s hint, 1 req/s), which the
confirmation proves or lowers (a proposal, never a result on its own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmload.rules.limits import REJECT_LIMIT
from llmload.rules.text import load_with_unit
from llmload.rules.tier import Tier

CEILING_NOISE_Z = 3.0
"""a tier's ok req/s exceeds the ceiling when it lies more than this many standard deviations of the two counts
(Poisson) above it"""


@dataclass(frozen=True)
class Ceiling:
    rps: float
    """successful attempts per second from the first refusal to the end of the tiers"""
    accepted: int
    """successful attempts sent in that span"""
    span_s: float
    start_s: float
    """unix time of the first refusal (histograms: the start of its tier)"""
    tier: int
    """the tier of the first refusal"""
    longest_hint_s: float
    """the longest retry hint seen in the run (NaN: none)"""
    before: int = 0
    """successful attempts sent before the first refusal, from the run's first send"""
    before_s: float = math.nan
    """seconds from the run's first send to the first refusal"""

    @property
    def short(self) -> bool:
        """The span is shorter than the longest retry hint: it may hold a new window's burst (an upper bound)."""
        return self.longest_hint_s == self.longest_hint_s and self.span_s < self.longest_hint_s


def refusing(counts: dict[int, tuple[int, int]]) -> set[int]:
    """The tiers whose refusals were material: (attempts, refused) per tier, warm-up included -> the tiers that
    refused more than REJECT_LIMIT of their attempts."""
    return {tier for tier, (attempts, refused) in counts.items() if tier > 0 and refused > REJECT_LIMIT * attempts}


def measured(first_refusal_s: float, end_s: float, accepted: int, tier: int, longest_hint_s: float,
             before: int = 0, before_s: float = math.nan) -> Ceiling | None:
    """The ceiling over [first_refusal_s, end_s] with `accepted` successes sent in it (None: no span); `before`
    successes in the `before_s` seconds before it."""
    span = end_s - first_refusal_s
    if not span > 0:
        return None
    return Ceiling(accepted / span, accepted, span, first_refusal_s, tier, longest_hint_s, before, before_s)


def window_rate(ceiling: Ceiling | None) -> float:
    """Nothing got through once it refused: what it let through before, over the window its retry hint names (at
    least the time it took): a rate to try, NaN when there is none to propose (module docstring)."""
    if ceiling is None or ceiling.accepted > 0 or ceiling.before <= 0:
        return math.nan
    if ceiling.longest_hint_s != ceiling.longest_hint_s:  # no hint: no window to spread it over
        return math.nan
    before_s = ceiling.before_s if ceiling.before_s == ceiling.before_s else 0.0
    return ceiling.before / max(ceiling.longest_hint_s, before_s, 1e-9)


def above(rps: float, seconds: float, ceiling: Ceiling | None) -> bool:
    """A rate measured over `seconds` lies measurably above the ceiling (beyond CEILING_NOISE_Z Poisson
    deviations of both counts)."""
    if ceiling is None or rps != rps or rps <= ceiling.rps or not seconds > 0:
        return False
    noise = (rps / seconds + ceiling.rps / ceiling.span_s) ** 0.5
    return rps - ceiling.rps > CEILING_NOISE_Z * noise


def window_text(ceiling: Ceiling) -> str:
    """'120 requests in the 54 s from its first refusal, in tier 2, to the end of the tiers' (+ 'an upper bound: ...'
    when the span is shorter than the longest retry hint)."""
    text = (f"{ceiling.accepted} requests in the {ceiling.span_s:.0f} s from its first refusal, in tier "
            f"{ceiling.tier}, to the end of the tiers")
    if ceiling.short:
        text += f"; an upper bound: shorter than its longest retry hint, {ceiling.longest_hint_s:.0f} s"
    return text


def burst_sentence(top: Tier, ceiling: Ceiling, unit: str) -> str:
    """Compute saturation when the highest throughput lies measurably above the ceiling: not measured."""
    return (f"not measured: {load_with_unit(top.load, unit)} (tier {top.tier}) got {top.ok_rps:.1f} req/s, but once "
            f"the server refused it accepted only {ceiling.rps:.2f} req/s ({window_text(ceiling)}): that was an "
            "initial burst of a quota or a bucket, not the engine's plateau. Test below that rate, or with the limit "
            "raised, to find the compute limit.")
