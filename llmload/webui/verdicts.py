"""Live verdicts of the web UI, judged on the tiers' windows (`rows.TierFigures`) as they come.

How it works (every sentence below comes from one function and its table; the report's
`python -m analysis` verdicts are the authoritative ones, these are what can be said so far):

* Knee estimate (`knee`): tiers that have ended, in load order; the baseline is the first one's
  p99 TTFT. The knee is the tier *before* the first tier whose p99 TTFT exceeds
  KNEE_LATENCY_FACTOR x the baseline AND whose throughput gain is below KNEE_GAIN_LIMIT of its
  load gain (relative requests/s growth over relative load growth: 1 = linear scaling).
* SLO (`slo_verdict`), per tier: the profile's p95 TTFT bound (voice 250, chat 500, ide 300 ms,
  batch none; analysis/capacity.py), the 429 rate and the other-error rate (1 % each).
* Queue or shed so far (`saturation`), on the highest-load tier that measured anything; first
  match wins:

  | # | condition                                              | verdict               |
  |---|--------------------------------------------------------|-----------------------|
  | 1 | no request measured                                    | cannot tell yet       |
  | 2 | 429s > REJECT_LIMIT of its requests                    | sheds (+ queues if 3) |
  | 3 | p50 TTFT > KNEE_LATENCY_FACTOR x the lowest tier's p50 | queues                |
  | 4 | other errors > REJECT_LIMIT                            | fails                 |
  | 5 | only one tier measured                                 | cannot tell yet       |
  | 6 | otherwise                                              | not saturated so far  |
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from llmload.webui.rows import TierFigures, target_text, tier_load

KNEE_LATENCY_FACTOR = 1.25
KNEE_GAIN_LIMIT = 0.5
REJECT_LIMIT = 0.01
SLO_TTFT_P95_MS = {"voice": 250.0, "chat": 500.0, "ide": 300.0, "batch": None}
"""p95 TTFT bound per --slo-profile (the same numbers as analysis/capacity.py PROFILES)"""
DEFAULT_SLO = "chat"


@dataclass(frozen=True)
class Verdict:
    kind: str
    """machine-readable outcome (e.g. 'knee', 'no knee', 'pass', 'fail', 'queues')"""
    text: str
    tier: int | None = None


def _p(fig: TierFigures, q: float) -> float | None:
    return fig.window.ttft_ms(q)


def _judged(figs: list[TierFigures]) -> list[TierFigures]:
    done = [f for f in figs if f.done and f.window.requests and tier_load(f.record.tier) and _p(f, 0.99)]
    return sorted(done, key=lambda f: tier_load(f.record.tier) or 0.0)


def knee(figs: list[TierFigures]) -> Verdict:
    """The current knee estimate and its evidence (rule in the module docstring)."""
    done = _judged(figs)
    if len(done) < 2:
        return Verdict("no knee", f"no knee yet: {len(done)} tier(s) ended, the rule needs two")
    base = _p(done[0], 0.99) or 0.0
    for before, fig in itertools.pairwise(done):
        p99 = _p(fig, 0.99) or 0.0
        load_gain = (tier_load(fig.record.tier) or 0) / (tier_load(before.record.tier) or 1) - 1
        rps_gain = (fig.rps or 0) / (before.rps or 1) - 1
        gain = rps_gain / load_gain if load_gain > 0 else 0.0
        if p99 > KNEE_LATENCY_FACTOR * base and gain < KNEE_GAIN_LIMIT:
            tier = before.record.tier
            return Verdict("knee", f"knee at tier {tier.tier} ({target_text(tier)}): at tier {fig.record.tier.tier} "
                           f"p99 TTFT {p99:.0f} ms = {p99 / base:.1f}x tier {done[0].record.tier.tier}'s {base:.0f} ms "
                           f"and requests/s {rps_gain:+.0%} for {load_gain:+.0%} load", tier.tier)
    return Verdict("no knee", f"no knee yet: over {len(done)} ended tiers p99 TTFT stayed within "
                   f"{KNEE_LATENCY_FACTOR:g}x {base:.0f} ms or throughput kept growing")


def slo_profile_name(name: str | None) -> str:
    return name if name in SLO_TTFT_P95_MS else DEFAULT_SLO


def slo_verdict(fig: TierFigures, profile: str) -> Verdict:
    """Pass or fail of one tier's window against the profile (which criterion failed)."""
    w, tier = fig.window, fig.record.tier.tier
    if not w.requests:
        return Verdict("none", "-", tier)
    limited, other = w.rate_limited / w.requests, max(0, w.failures - w.rate_limited) / w.requests
    bound, p95 = SLO_TTFT_P95_MS[profile], _p(fig, 0.95)
    fails = []
    if bound is not None and p95 is not None and p95 > bound:
        fails.append(f"p95 {p95:.0f} > {bound:.0f} ms")
    if limited > REJECT_LIMIT:
        fails.append(f"429s {limited:.1%} > {REJECT_LIMIT:.0%}")
    if other > REJECT_LIMIT:
        fails.append(f"errors {other:.1%} > {REJECT_LIMIT:.0%}")
    prefix = "" if fig.measuring else "warm-up: "
    if fails:
        return Verdict("fail", prefix + "FAIL " + ", ".join(fails), tier)
    if bound is None:
        return Verdict("pass", prefix + "pass (no TTFT bound)", tier)
    if p95 is None:
        return Verdict("none", "-", tier)
    return Verdict("pass", prefix + f"pass p95 {p95:.0f} <= {bound:.0f} ms", tier)


def saturation(figs: list[TierFigures]) -> Verdict:
    """Queue or shed so far (decision table in the module docstring)."""
    measured = sorted((f for f in figs if f.window.requests and tier_load(f.record.tier)),
                      key=lambda f: tier_load(f.record.tier) or 0.0)
    if not measured:
        return Verdict("cannot tell", "cannot tell yet: no request measured")
    top, low = measured[-1], measured[0]
    w, where = top.window, f"at tier {top.record.tier.tier} ({target_text(top.record.tier)})"
    p50, base = _p(top, 0.5), _p(low, 0.5)
    waits = len(measured) > 1 and p50 is not None and base and p50 > KNEE_LATENCY_FACTOR * base
    wait_text = f"p50 TTFT {p50:.0f} ms vs {base:.0f} ms at tier {low.record.tier.tier}" if waits else ""
    if w.rate_limited > REJECT_LIMIT * w.requests:
        shed = f"{w.rate_limited} of {w.requests} requests refused with 429"
        if waits:
            return Verdict("queues and sheds", f"queues and sheds {where}: {shed}; {wait_text}", top.record.tier.tier)
        return Verdict("sheds", f"sheds {where}: {shed}", top.record.tier.tier)
    if waits:
        return Verdict("queues", f"queues {where}: {wait_text}", top.record.tier.tier)
    other = w.failures - w.rate_limited
    if other > REJECT_LIMIT * w.requests:
        return Verdict("fails", f"fails {where}: {other} of {w.requests} requests failed (not 429)",
                       top.record.tier.tier)
    if len(measured) == 1:
        return Verdict("cannot tell", "cannot tell yet: one tier gives no low-load baseline")
    upto = f"tier {top.record.tier.tier} ({target_text(top.record.tier)})"
    return Verdict("not saturated", f"not saturated so far: no wait or refusal up to {upto}", top.record.tier.tier)
