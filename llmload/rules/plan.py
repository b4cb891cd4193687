"""The rate a planner acts on: per replica, what the tiers measured within the SLO, less headroom, never above what
the server accepted once it refused.

How it works: the *basis* is the highest rate the tiers measured within the SLO profile:
  * the SLO capacity's successful req/s (the last tier that met the SLO; the highest tested when nothing broke,
    then a lower bound), or
  * the throughput peak within the SLO when more load did less work past it (`saturation.peak_within_slo`);
  * with no load shown to meet the SLO (`capacity` status 'unshown': within it on the point estimate only, too
    few samples), the highest such load: the confirmation's window gets the samples that prove it or not;
  * when even the lowest load broke the SLO and the server refused (a quota a single user exceeds), the ceiling:
    the rate it accepted once it refused, which the confirmation then proves or lowers;
  * when nothing got through once it refused (a quota's window outlasts the tiers), the quota's first window
    (`ceiling.window_rate`: what it let through before, over its retry hint): a rate to try, nothing more;
and it is capped by what the server sustained once it refused: a recognised rate limiter's sustained rate
(`limiter.py`) and the model-free ceiling (`ceiling.py`), whichever is lower, whatever the limiter's kind. A capped
basis keeps its load and tokens in proportion. The *planned rate* is the basis less the headroom
(DEFAULT_HEADROOM): the rate the confirmation phase (`confirm.py`) sends open loop, and which the report states
only as the run confirmed it. No basis (the SLO broke at every tested load, or a limiter let nothing through once
its quota ran out): no rate is planned, and the run has nothing to confirm.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from llmload.rules import ceiling as ceiling_mod
from llmload.rules.capacity import Capacity
from llmload.rules.ceiling import Ceiling
from llmload.rules.confirm import Outcome
from llmload.rules.limiter import RateLimiter
from llmload.rules.limits import DEFAULT_HEADROOM, SAME_LOAD_SHARE
from llmload.rules.text import load_with_unit
from llmload.rules.tier import Tier


@dataclass(frozen=True)
class Basis:
    rps: float
    """successful req/s the plan is taken below"""
    out_tok_s: float
    load: float
    """the load that measured it (users or req/s; scaled down with a cap)"""
    kind: str
    """'capacity', 'peak', 'rate limiter', 'ceiling' or 'quota window'"""
    text: str
    """what it is, for the sentence: 'its SLO capacity (5 users, 7.8 req/s)'"""
    lower_bound: bool = False
    """the capacity is a lower bound (nothing broke, or the bracket is wider than a step)"""
    measured_rps: float = math.nan
    """capped: the tier's own rate, above what the server sustained once it refused"""
    window_s: float = math.nan
    """the measure window of the tier it was measured in"""

    def planned(self, headroom: float = DEFAULT_HEADROOM) -> float:
        """The per-replica rate: the basis less the headroom."""
        return self.rps * (1.0 - headroom)


def sustained(lim: RateLimiter | None, ceiling: Ceiling | None) -> tuple[float, str]:
    """The lowest rate the server was measured to sustain once it refused, and what measured it ((NaN, '') when
    neither a limiter's sustained rate nor a ceiling exists)."""
    options = []
    if lim is not None and lim.measured:
        options.append((lim.sustained_rps, "rate limiter"))
    if ceiling is not None:
        options.append((ceiling.rps, "ceiling"))
    return min(options, default=(math.nan, ""))


def capped(cap: Capacity, rps: float, burst: bool) -> Capacity:
    """The capacity with its rates (tokens and goodput in proportion) capped at `rps`, what the server sustained once
    it refused (as is when within it); `burst`: the tier's rate lay measurably above it (`ceiling.above`), an initial
    burst, and the sentence says so; its load stays the tier's."""
    if rps != rps or not cap.ok_rps > rps:
        return cap
    share = rps / cap.ok_rps
    return dataclasses.replace(cap, ok_rps=rps, out_tok_s=cap.out_tok_s * share,
                               goodput_rps=min(cap.goodput_rps, rps) if cap.goodput_rps == cap.goodput_rps
                               else cap.goodput_rps, burst=burst, sustained=True)


def sustained_capacity(cap: Capacity, lim: RateLimiter | None, ceiling: Ceiling | None) -> Capacity:
    """The capacity whose named rates never exceed what the server sustained once it refused (`sustained`),
    marked a burst when its tier's rate lay measurably above that (a limiter's, or `ceiling.above`)."""
    rate, kind = sustained(lim, ceiling)
    window = cap.met.rate_window_s if cap.met is not None else 0.0
    return capped(cap, rate, kind == "rate limiter" or ceiling_mod.above(cap.ok_rps, window, ceiling))


def basis(cap: Capacity, peak: Tier | None, lim: RateLimiter | None, ceiling: Ceiling | None,
          unit: str) -> Basis | None:
    """What the plan is taken below (module docstring); None: nothing to plan on."""
    window = ceiling_mod.window_rate(ceiling)
    if window == window and ceiling is not None:  # nothing got through once it refused: a rate to try
        return Basis(window, math.nan, math.nan, "quota window",
                     f"the {ceiling.before} requests it let through before its first refusal, over the "
                     f"{max(ceiling.longest_hint_s, ceiling.before_s):.0f} s its retry hint names ({window:.2f} req/s; "
                     "nothing got through after it within the tiers)")
    if lim is not None and not lim.measured:
        return None
    if cap.status == "unshown":  # within on the point estimate only: the confirmation gets the samples
        top = cap.unshown[-1]
        own = Basis(top.ok_rps, top.out_tok_s, top.load, "capacity",
                    f"the highest load within the SLO on its point estimate ({load_with_unit(top.load, unit)}, "
                    f"{top.ok_rps:.1f} req/s: too few samples to show it)", lower_bound=True,
                    window_s=top.rate_window_s)
    elif cap.status == "below" and ceiling is not None and ceiling.rps > 0 and cap.missed is not None:
        low = cap.missed  # every tested load was refused in part: what it accepted once it refused is the basis
        per_request = low.out_tok_s / low.ok_rps if low.ok_rps == low.ok_rps and low.ok_rps > 0 else math.nan
        return Basis(ceiling.rps, ceiling.rps * per_request, math.nan, "ceiling",
                     f"the {ceiling.rps:.2f} req/s it accepted once it refused ({ceiling_mod.window_text(ceiling)}); "
                     f"{load_with_unit(low.target, unit)}, the lowest load tested, already sent more than it accepts",
                     lower_bound=True)
    elif cap.status not in ("within", "beyond"):
        return None
    elif peak is not None and abs(peak.load - cap.load) > SAME_LOAD_SHARE * peak.load:
        own = Basis(peak.ok_rps, peak.out_tok_s, peak.load, "peak",
                    f"its throughput at the peak within the SLO ({load_with_unit(peak.load, unit)}, "
                    f"{peak.ok_rps:.1f} req/s)", window_s=peak.rate_window_s)
    else:
        at = f" ({load_with_unit(cap.load, unit)}, {cap.ok_rps:.1f} req/s)"
        lower = cap.status == "beyond" or not cap.measured
        own = Basis(cap.ok_rps, cap.out_tok_s, cap.load, "capacity",
                    ("its highest tested load within the SLO" if cap.status == "beyond" else "its SLO capacity") + at,
                    lower_bound=lower, window_s=cap.met.rate_window_s if cap.met is not None else math.nan)
    rate, kind = sustained(lim, ceiling)
    if own.rps != own.rps or own.rps <= 0:
        return None
    if not (rate == rate and own.rps > rate):
        return own
    if rate <= 0:
        return None
    share = rate / own.rps
    if lim is None and not ceiling_mod.above(own.rps, own.window_s, ceiling):  # no limiter, within noise of it
        return dataclasses.replace(own, rps=rate, out_tok_s=own.out_tok_s * share, load=own.load * share,
                                   text=own.text.replace(f"{own.rps:.1f} req/s", f"{rate:.1f} req/s sustained once "
                                                                                 "it refused"))
    what = (f"the rate limiter's sustained {rate:.2f} req/s" if kind == "rate limiter" else
            f"the {rate:.2f} req/s it accepted once it refused ({ceiling_mod.window_text(ceiling)})"
            if ceiling is not None else f"{rate:.2f} req/s")
    return Basis(rate, own.out_tok_s * share, own.load * share, kind,
                 f"{what}; {load_with_unit(own.load, unit)} got {own.rps:.1f} req/s"
                 + (", an initial burst" if ceiling_mod.above(own.rps, own.window_s, ceiling) or kind == "rate limiter"
                    else " before the first refusal"),
                 measured_rps=own.rps, window_s=own.window_s)


def headroom_text(b: Basis, headroom: float = DEFAULT_HEADROOM) -> str:
    """'30% below its SLO capacity (5 users, 7.8 req/s)'."""
    return f"{headroom:.0%} below {b.text}"


@dataclass(frozen=True)
class PerReplica:
    """What one replica is planned to carry: the confirmed rate (or, unconfirmed, the planned one)."""

    rps: float
    out_tok_s: float
    load: float
    """the load that carries it (users or req/s), in proportion to the basis"""
    confirmed: bool | None
    """True: the run confirmed it; None: the confirmation was skipped (the planned rate, unproved)"""


def per_replica(b: Basis | None, proof: Outcome, headroom: float = DEFAULT_HEADROOM) -> PerReplica | None:
    """The per-replica figures of the plan (None: no rate to plan on: no basis, or no rate held)."""
    if b is None:
        return None
    if proof.source == "skipped":
        rps = b.planned(headroom)
    elif proof.rps == proof.rps:
        rps = proof.rps
    else:
        return None
    share = rps / b.rps
    return PerReplica(rps, b.out_tok_s * share, b.load * share, proof.confirmed)


def sentence(b: Basis | None, proof: Outcome, cap: Capacity, lim: RateLimiter | None, skipped: str = "",
             headroom: float = DEFAULT_HEADROOM) -> str:
    """The plan in one sentence, the report's first answer (the web UI's plan line): what to plan on per replica
    and how the run proved it. `skipped`: why no confirmation ran, when none did."""
    slo = f"the {cap.profile.name} SLO"
    if b is None:
        if lim is not None and not lim.measured:
            return ("none: a rate limiter let nothing through once its quota ran out (its window outlasts the tiers), "
                    "so no sustained rate was measured.")
        if cap.status == "unshown":
            return f"none: no tested load was shown to meet {slo} (too few samples to bound its p95)."
        return f"none: {slo} is not met at any tested load ({cap.limited_by})."
    quota = (" If the limit is a quota (one API key, one proxy), replicas behind it share it: more of them add "
             "nothing." if b.kind in ("rate limiter", "ceiling", "quota window") else "")
    held, above = proof.holding, proof.above
    if proof.source == "skipped":
        why = skipped or "the run sent no confirmation window"
        return (f"{b.planned(headroom):.2f} req/s per replica under {slo}, {headroom_text(b, headroom)}; not "
                f"confirmed: {why}.{quota}")
    if proof.source == "not confirmed":
        cut = [w for w in proof.windows if w.status == "cut"]
        tried = "; ".join(f"{w.rate:.2f} req/s: {w.what}" for w in proof.windows if w.status != "cut")
        if not tried:
            return (f"none confirmed: the run was cut while it confirmed {proof.planned_rps:.2f} req/s per replica "
                    f"({headroom_text(b, headroom)}); run it again to confirm a rate.")
        tail = " (the run was cut during the last window)" if cut else ""
        return (f"none: no rate held when the run sent it ({tried}){tail}. The tiers' {b.rps:.2f} req/s did not "
                "hold over a longer window at a lower rate: do not plan on it.")
    assert held is not None  # confirmed or lowered: a window held
    if proof.source == "confirmed":
        return (f"{held.rate:.2f} req/s per replica under {slo}, {headroom_text(b, headroom)}. Confirmed: "
                f"{held.figures}.{quota}")
    broke = f" ({above.what})" if above is not None else ""
    return (f"{held.rate:.2f} req/s per replica under {slo}, lowered by confirmation: the planned "
            f"{proof.planned_rps:.2f} req/s ({headroom_text(b, headroom)}) did not hold{broke}; "
            f"{held.rate:.2f} req/s held: {held.figures}.{quota}")
