"""Capacity under an SLO profile: a bracket of two measured tiers, and the SLO verdict of one tier.

How it works:
- A tier meets a profile (`slo.py`) when its p95 TTFT, error rate and 429 rate are within the
  bounds (answers with no first token, embeddings and rerank: p95 e2e latency, `latency.py`); open
  loop, the share of arrivals dropped at the in-flight cap counts against the error bound (a request
  never sent is a request not served), and users refused before the window (parked on a
  Retry-After) against the 429 bound. `broken(tier, profile)` lists what a
  tier broke: the live SLO column and the capacity use the same list.
- A claim is bounded by its samples (`bounds.py`): a tier *meets* the latency bound only when the 95 %
  upper bound of its p95 is within it. A tier within it on the point estimate alone (too few successes,
  or a bound above the limit) is *unshown*: neither met nor missed; `unshown(tier, profile)` says why.
  A tier shown to meet it shows every lower load too (latency does not fall as load rises), so an unshown
  tier below a met one is passed over; unshown tiers above the last met one are named (`Capacity.unshown`)
  and refinement measures them again, longer (rules/refine.py), instead of deciding on them.
- Tiers are ordered by load. The first tier that breaks any bound ends the search: the capacity
  is the bracket between the last tier that met the SLO (`met`, the capacity a plan uses) and that
  tier (`missed`). With no tier shown to meet it below that one, status 'unshown' (lower tiers within on
  the point estimate only) or 'below' (the lowest tier broke). It is *measured* when the two are one
  user apart (closed loop) or RESOLUTION of the rate (open loop): refinement tiers (`--refine`,
  shaping/refine.py) narrow it inside the run.
- A wider bracket is never a line drawn across a step: p95 jumps as soon as more than 5 % of the
  requests wait, and a limit that starts refusing refuses at once. So it is interpolated (at the load
  where the first broken figure crosses its bound) only when both tiers are on the same side of the
  queueing onset (both waited, or neither) and the bound broken is the latency one (p95 TTFT or
  e2e); else `why_not` says why and the sentence says how to narrow the bracket. If the lowest
  tier already fails, the capacity is below the tested range; if no tier fails, it is at least the
  highest tested load.
The replica plan is replicas.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmload.rules import bounds
from llmload.rules.latency import LATENCY_FIGURES, bound
from llmload.rules.slo import SloProfile, slo_text
from llmload.rules.text import none_judged
from llmload.rules.tier import Tier, with_load

RESOLUTION = 0.05
"""open loop: a bracket of rates within this share of the lower one is measured (closed loop: one user)"""


@dataclass(frozen=True)
class Capacity:
    profile: SloProfile
    status: str
    """'within' (a bracket: `met` and `missed`), 'beyond' (no tier failed), 'below' (the lowest tier failed),
    'unshown' (no tier shown to meet it: those within are so on the point estimate only), 'none'"""
    load: float
    """the capacity a plan uses: the load of the last tier that met the SLO (the highest tested when nothing broke)"""
    ok_rps: float
    out_tok_s: float
    limited_by: str
    """what broke first, e.g. 'p95 TTFT 512 ms > 500 ms at tier 5'"""
    lowest_load: float = math.nan
    """status 'below': the lowest tested load, where the SLO already broke"""
    goodput_rps: float = math.nan
    """requests/s meeting every per-request criterion of the profile's objective, at `goodput_load` (the last
    tier within the SLO, or the highest tested when nothing broke); NaN when unknown"""
    goodput_load: float = math.nan
    tiers: int = 0
    """tiers with requests that the search looked at (1: one load level)"""
    met: Tier | None = None
    """status 'within' / 'beyond': the last tier that met the SLO"""
    missed: Tier | None = None
    """status 'within' / 'below': the first tier that missed it"""
    measured: bool = False
    """the bracket is one user (closed loop) or RESOLUTION of the rate (open loop) wide"""
    interpolated: float = math.nan
    """status 'within', not measured: the load where the broken figure crosses its bound, when both tiers lie on
    the same side of the queueing onset and the bound is the latency one (NaN otherwise)"""
    why_not: str = ""
    """why a wide bracket is not interpolated: 'waiting starts in this interval', ..."""
    unshown: tuple[Tier, ...] = ()
    """tiers above `met` (below `missed`) within the latency bound on the point estimate only (n too small)"""
    sustained: bool = False
    """its rates were capped at what the server sustained once it refused (llmload.rules.plan.capped)"""
    burst: bool = False
    """... and the tier's own rate lay measurably above it: an initial burst"""

    @property
    def high(self) -> float:
        """The load the first tier that missed the SLO asked (NaN when none did): users refused before its
        window are users a plan would send."""
        return self.missed.target if self.missed is not None else math.nan


@dataclass(frozen=True)
class Broken:
    what: str
    """what broke, with '{at}' where the tier goes ('p95 TTFT 512 ms > 500 ms' gets ' at tier 5' appended)"""
    figure: str
    """the Tier field that crossed its bound"""
    limit: float


def broken(row: Tier, profile: SloProfile) -> list[Broken]:
    """Every bound of `profile` the tier breaks (none: it meets the SLO)."""
    out = []
    latency = bound(profile, row)
    if latency is not None:
        p95 = _figure(row, latency.figure)
        if math.isnan(p95) or p95 > latency.limit_ms:
            what = (f"{{at}} no request succeeded, so {latency.label} is unknown (limit {latency.limit_ms:g} ms)"
                    if math.isnan(p95) else f"{latency.label} {p95:.0f} ms > {latency.limit_ms:g} ms")
            out.append(Broken(what, latency.figure, latency.limit_ms))
    if row.error_rate > profile.max_error_rate:
        out.append(Broken(f"error rate {row.error_rate:.1%} > {profile.max_error_rate:.1%}", "error_rate",
                          profile.max_error_rate))
    if row.drop_rate == row.drop_rate and row.drop_rate > profile.max_error_rate:
        out.append(Broken(f"drop rate {row.drop_rate:.1%} > {profile.max_error_rate:.1%} {{at}} (arrivals not "
                          "sent: in-flight cap reached)", "drop_rate", profile.max_error_rate))
    if row.rate_429 > profile.max_429_rate:
        out.append(Broken(f"429 rate {row.rate_429:.1%} > {profile.max_429_rate:.1%}", "rate_429",
                          profile.max_429_rate))
    if row.refused_load_share > profile.max_429_rate:
        out.append(Broken(f"{row.parked_refused} of the {row.target:g} users asked refused ({row.parked_codes}) "
                          "and idle through the measure window", "refused_load_share", profile.max_429_rate))
    return out


def unshown(row: Tier, profile: SloProfile) -> str:
    """Why a tier that breaks no bound is not shown to meet the latency bound ('' when it is, module docstring):
    'p95 TTFT 475 ms within 500 ms, but not shown (its 95 % bound 530 ms > 500 ms)'."""
    latency = bound(profile, row)
    if latency is None:
        return ""
    p95 = _figure(row, latency.figure)
    upper = _figure(row, latency.figure.replace("_p95_", "_p95_upper_"))
    if bounds.shown(p95, upper, latency.limit_ms) != "unshown":
        return ""
    why = (f"{row.ok} successes cannot bound it, want >= {bounds.min_samples(0.95)}" if math.isinf(upper)
           else f"its 95 % bound {upper:.0f} ms > {latency.limit_ms:g} ms")
    return f"{latency.label} {p95:.0f} ms within {latency.limit_ms:g} ms, but not shown ({why})"


def at_tier(what: str, row: Tier) -> str:
    """'p95 TTFT 512 ms > 500 ms at tier 5', or 'at tier 5 no request succeeded ...'."""
    where = f"at tier {row.tier}"
    return what.replace("{at}", where) if "{at}" in what else f"{what} {where}"


def _figure(row: Tier, name: str) -> float:
    return float(getattr(row, name))


def _fraction(before: float, after: float, limit: float) -> float:
    if math.isnan(before) or math.isnan(after) or after == before:
        return 0.0
    return min(1.0, max(0.0, (limit - before) / (after - before)))


def is_measured(met: Tier, missed: Tier, unit: str) -> bool:
    """The bracket is as narrow as a load can be told apart: one user, or RESOLUTION of the rate."""
    if unit == "users":
        return missed.target - met.load <= 1.0 + 1e-9
    return missed.target - met.load <= RESOLUTION * met.load + 1e-9


def why_not_interpolated(met: Tier, missed: Tier, bounds: list[Broken], pending: list[Tier] | None = None) -> str:
    """'' when a line between the two tiers is honest, else why not (module docstring)."""
    if pending:
        loads = " and ".join(f"{t.load:g}" for t in pending)
        return f"{loads} met it on the point estimate only (too few samples to show it)"
    if missed.ok == 0:
        return f"no request succeeded at {missed.target:g}, so what lies between is unknown"
    if any(b.figure not in LATENCY_FIGURES for b in bounds):
        return "the server starts refusing or failing in this interval"
    if met.waits != missed.waits:
        return "waiting starts in this interval"
    return ""


def capacity_under_slo(tiers: list[Tier], profile: SloProfile, tested: int | None = None,
                       unit: str = "users") -> Capacity:
    """`tested`: tiers with requests in the whole run (judged or not; default: those of `tiers`), for the wording
    of one load level; `unit`: 'users' or 'req/s' (the bracket's resolution)."""
    rows = with_load(tiers)
    tested = len(rows) if tested is None else tested
    if not rows:
        return Capacity(profile, "none", math.nan, math.nan, math.nan, none_judged(tested))
    met: Tier | None = None
    pending: list[Tier] = []  # within on the point estimate only, above the last met tier
    for row in rows:
        bounds_broken = broken(row, profile)
        if not bounds_broken:
            if unshown(row, profile):
                pending.append(row)
            else:
                met, pending = row, []
            continue
        if met is None:
            if pending:
                return Capacity(profile, "unshown", 0.0, 0.0, 0.0, at_tier(bounds_broken[0].what, row),
                                pending[0].load, tiers=tested, missed=row, unshown=tuple(pending))
            return Capacity(profile, "below", 0.0, 0.0, 0.0, at_tier(bounds_broken[0].what, row), row.load,
                            tiers=tested, missed=row)
        frac, text = min((_fraction(_figure(met, b.figure), _figure(row, b.figure), b.limit), at_tier(b.what, row))
                         for b in bounds_broken)
        measured = is_measured(met, row, unit)
        why = "" if measured else why_not_interpolated(met, row, bounds_broken, pending)
        line = met.load + frac * (row.load - met.load) if not measured and not why else math.nan
        return Capacity(profile, "within", met.load, met.ok_rps, met.out_tok_s, text, goodput_rps=met.goodput_rps,
                        goodput_load=met.load, tiers=tested, met=met, missed=row, measured=measured,
                        interpolated=line, why_not=why, unshown=tuple(pending))
    if met is None:
        return Capacity(profile, "unshown", 0.0, 0.0, 0.0, unshown(pending[0], profile), pending[0].load,
                        tiers=tested, unshown=tuple(pending))
    return Capacity(profile, "beyond", met.load, met.ok_rps, met.out_tok_s, nothing_broke(tested),
                    goodput_rps=met.goodput_rps, tiers=tested, met=met, unshown=tuple(pending))


def narrowing_loads(cap: Capacity, unit: str, most: int = 4) -> list[float]:
    """Loads that would measure a wide bracket: the met tier and up to `most` - 1 steps towards the missed one."""
    if cap.met is None or cap.missed is None:
        return []
    lo, hi = cap.met.load, cap.high
    if unit == "users":
        step = max(1.0, math.ceil((hi - lo) / most))
        return [lo + k * step for k in range(most) if lo + k * step < hi]
    return [float(f"{lo + k * (hi - lo) / most:.3g}") for k in range(most)]


def nothing_broke(tiers: int) -> str:
    return "nothing broke at the only load tested" if tiers == 1 else "nothing broke in the tested range"


def phase_verdict(tiers: list[Tier], profile: SloProfile) -> str:
    """For runs that do not climb (spike, soak, schedule): which tiers met the SLO, which broke it."""
    rows = [t for t in tiers if t.sent > 0]
    e2e = any(t.no_first_token for t in rows)
    if not rows:
        return f"under the {profile.name} SLO ({slo_text(profile)}): unknown (no requests measured)."
    held = [str(r.tier) for r in rows if not broken(r, profile)]
    broke = [at_tier(b[0].what, r) for r in rows if (b := broken(r, profile))]
    text = f"under the {profile.name} SLO ({slo_text(profile, e2e)}): "
    text += f"met in tier(s) {', '.join(held)}" if held else "met in no tier"
    text += f"; broken: {'; '.join(broke)}." if broke else "; broken in none."
    return text + " This shape does not measure a capacity: run step tiers for that."
