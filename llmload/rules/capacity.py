"""Capacity under an SLO profile, the SLO verdict of one tier, and the replica plan.

How it works:
- A tier meets a profile (`slo.py`) when its p95 TTFT, error rate and 429 rate are within the
  bounds; open loop, the share of arrivals dropped at the in-flight cap counts against the
  error bound (a request never sent is a request not served), and users refused before the
  window (parked on a Retry-After) against the 429 bound. `broken(tier, profile)` lists what a
  tier broke: the live SLO column and the capacity use the same list.
- Tiers are ordered by load. The first tier that breaks any bound ends the search; the
  capacity is interpolated linearly between the last passing tier and that tier, at the
  load where the first broken figure crosses its bound (the smallest such load when
  several break). Throughput and output tokens/s at the capacity are interpolated the same
  way. If the lowest tier already fails, the capacity is below the tested range; if no
  tier fails, it is at least the highest tested load.
- Replica plan: replicas = ceil(target / (capacity x (1 - headroom))), for a target in
  requests/s, concurrent users or output tokens/s, always on the SLO capacity (never on a
  fitted queueing model). When the capacity is only a lower bound (nothing broke), the
  replica count is an upper bound and says so ("at most").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llmload.rules.limits import DEFAULT_HEADROOM
from llmload.rules.slo import SloProfile, slo_text
from llmload.rules.text import load_with_unit
from llmload.rules.tier import Tier, with_sent


@dataclass(frozen=True)
class Capacity:
    profile: SloProfile
    status: str
    """'within' (interpolated), 'beyond' (no tier failed), 'below' (the lowest tier failed), 'none'"""
    load: float
    ok_rps: float
    out_tok_s: float
    limited_by: str
    """what broke first, e.g. 'p95 TTFT 512 ms > 500 ms at tier 5'"""
    lowest_load: float = math.nan
    """status 'below': the lowest tested load, where the SLO already broke"""
    goodput_rps: float = math.nan
    """requests/s meeting every per-request criterion of the profile's objective: at the highest tested load
    when nothing broke, else at `goodput_load`, the last tier within the SLO (not interpolated: per-request
    goodput falls off a cliff where p95 crosses the limit, so a value between the tiers would read as most
    requests missing the SLO at the capacity); NaN when unknown"""
    goodput_load: float = math.nan
    tiers: int = 0
    """tiers with requests that the search looked at (1: one load level, nothing to interpolate)"""


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
    p95 = row.ttft_p95_ms
    if profile.ttft_p95_ms is not None and (math.isnan(p95) or p95 > profile.ttft_p95_ms):
        what = (f"{{at}} no request succeeded, so p95 TTFT is unknown (limit {profile.ttft_p95_ms:g} ms)"
                if math.isnan(p95) else f"p95 TTFT {p95:.0f} ms > {profile.ttft_p95_ms:g} ms")
        out.append(Broken(what, "ttft_p95_ms", profile.ttft_p95_ms))
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


def _between(prev: Tier, row: Tier, name: str, frac: float) -> float:
    before, after = _figure(prev, name), _figure(row, name)
    if math.isnan(after) and row.ok == 0:
        after = 0.0  # a tier with no successful request served nothing (0 tok/s), not an unknown amount
    return before if frac == 0.0 else before + frac * (after - before)


def capacity_under_slo(tiers: list[Tier], profile: SloProfile, tested: int | None = None) -> Capacity:
    """`tested`: tiers with requests in the whole run (judged or not; default: those of `tiers`), for the wording
    of one load level."""
    rows = with_sent(tiers)
    tested = len(rows) if tested is None else tested
    if not rows:
        return Capacity(profile, "none", math.nan, math.nan, math.nan, "no requests measured")
    for i, row in enumerate(rows):
        bounds = broken(row, profile)
        if not bounds:
            continue
        if i == 0:
            return Capacity(profile, "below", 0.0, 0.0, 0.0, at_tier(bounds[0].what, row), row.load, tiers=tested)
        prev = rows[i - 1]
        frac, text = min((_fraction(_figure(prev, b.figure), _figure(row, b.figure), b.limit), at_tier(b.what, row))
                         for b in bounds)
        return Capacity(profile, "within", _between(prev, row, "load", frac), _between(prev, row, "ok_rps", frac),
                        _between(prev, row, "out_tok_s", frac), text, goodput_rps=prev.goodput_rps,
                        goodput_load=prev.load, tiers=tested)
    top = rows[-1]
    return Capacity(profile, "beyond", top.load, top.ok_rps, top.out_tok_s, nothing_broke(tested),
                    goodput_rps=top.goodput_rps, tiers=tested)


def nothing_broke(tiers: int) -> str:
    return "nothing broke at the only load tested" if tiers == 1 else "nothing broke in the tested range"


def phase_verdict(tiers: list[Tier], profile: SloProfile) -> str:
    """For runs that do not climb (spike, soak, schedule): which tiers met the SLO, which broke it."""
    rows = [t for t in tiers if t.sent > 0]
    if not rows:
        return f"under the {profile.name} SLO ({slo_text(profile)}): unknown (no requests measured)."
    held = [str(r.tier) for r in rows if not broken(r, profile)]
    broke = [at_tier(b[0].what, r) for r in rows if (b := broken(r, profile))]
    text = f"under the {profile.name} SLO ({slo_text(profile)}): "
    text += f"met in tier(s) {', '.join(held)}" if held else "met in no tier"
    text += f"; broken: {'; '.join(broke)}." if broke else "; broken in none."
    return text + " This shape does not measure a capacity: run step tiers for that."


def describe(cap: Capacity, load_unit: str) -> str:
    head = f"Capacity under the {cap.profile.name} SLO ({slo_text(cap.profile)}): "
    if cap.status == "none":
        return head + "unknown (no requests measured)."
    if cap.status == "below":
        lowest = f" of {load_with_unit(cap.lowest_load, load_unit)}" if cap.lowest_load == cap.lowest_load else ""
        if cap.tiers == 1 and lowest:
            return head + f"below {load_with_unit(cap.lowest_load, load_unit)}, the only load tested: {cap.limited_by}."
        return head + f"below the lowest tested load{lowest}: {cap.limited_by}."
    figures = f"{cap.ok_rps:.1f} {'ok ' if load_unit == 'req/s' else ''}req/s, {cap.out_tok_s:.0f} output tok/s"
    if cap.goodput_rps == cap.goodput_rps:
        figures += f", goodput {cap.goodput_rps:.1f} req/s"
        if cap.goodput_load == cap.goodput_load:
            figures += f" at {load_with_unit(cap.goodput_load, load_unit)}, the last tier within it"
    unit = "req/s offered" if load_unit == "req/s" else load_unit
    if cap.status == "beyond":
        return head + f"at least {load_with_unit(cap.load, unit)} ({figures}); {nothing_broke(cap.tiers)}."
    return head + f"{cap.load:.1f} {unit} ({figures}), interpolated; limited by {cap.limited_by}."


@dataclass(frozen=True)
class ReplicaPlan:
    target: float
    target_kind: str
    per_replica: float
    headroom: float
    replicas: int | None


TARGET_KINDS = {"rps": "req/s", "users": "users", "tok_s": "output tok/s"}


def plan_replicas(cap: Capacity, target: float, target_kind: str, load_unit: str,
                  headroom: float = DEFAULT_HEADROOM) -> ReplicaPlan:
    """Replicas of the tested deployment needed for `target` under the capacity's SLO."""
    if target_kind == "rps":
        per = cap.ok_rps
    elif target_kind == "tok_s":
        per = cap.out_tok_s
    elif target_kind == "users":
        if load_unit != "users":
            raise ValueError("a users target needs a closed-loop run (tiers in users); plan by --target-rps")
        per = cap.load
    else:
        raise ValueError(f"unknown target kind {target_kind!r}")
    usable = per * (1.0 - headroom)
    replicas = math.ceil(target / usable - 1e-9) if usable > 0 and not math.isnan(usable) else None
    return ReplicaPlan(target, target_kind, usable, headroom, replicas)


def describe_plan(plan: ReplicaPlan, cap: Capacity, peak_load: str = "") -> str:
    """`peak_load` (e.g. '8 users'): the plan is on the throughput peak within the SLO, not the capacity point."""
    unit = TARGET_KINDS[plan.target_kind]
    if plan.replicas is None:
        return f"Replica plan for {plan.target:g} {unit}: impossible, the SLO is not met at any tested load."
    lower = cap.status == "beyond" and not peak_load
    extra = f" (capacity is a lower bound: {nothing_broke(cap.tiers)})" if lower else ""
    count = f"at most {plan.replicas}" if lower else str(plan.replicas)
    each = "at least " if lower else ""
    below = f"its throughput at the peak, {peak_load}, within the SLO" if peak_load else "its SLO capacity"
    return (f"Replica plan for {plan.target:g} {unit} under the {cap.profile.name} SLO: {count} replicas "
            f"of the tested deployment, each loaded to {each}{plan.per_replica:.1f} {unit} "
            f"({plan.headroom:.0%} headroom below {below}){extra}.")
