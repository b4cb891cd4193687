"""Capacity under an SLO and the replica plan.

How it works:
- An SLO profile bounds p95 TTFT (voice 250 ms, chat 500 ms, ide 300 ms, batch none; any
  threshold can be overridden) and the error and 429 rates (1 % each by default). Open
  loop: the share of arrivals dropped at the in-flight cap counts against the error bound
  (a request never sent is a request not served).
- Tiers are ordered by load. The first tier that breaks any bound ends the search; the
  capacity is interpolated linearly between the last passing tier and that tier, at the
  load where the first broken figure crosses its bound (the smallest such load when
  several break). Throughput and output tokens/s at the capacity are interpolated the same
  way. If the lowest tier already fails, the capacity is below the tested range; if no
  tier fails, it is at least the highest tested load.
- Replica plan: replicas = ceil(target / (capacity x (1 - headroom))), for a target in
  requests/s, concurrent users or output tokens/s, always on the SLO capacity (never on the
  fitted queueing model). When the capacity is only a lower bound (nothing broke), the
  replica count is an upper bound and says so ("at most").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.text import load_with_unit

DEFAULT_HEADROOM = 0.30


@dataclass(frozen=True)
class SloProfile:
    name: str
    ttft_p95_ms: float | None
    max_error_rate: float = 0.01
    max_429_rate: float = 0.01


PROFILES = {
    "voice": SloProfile("voice", 250.0),
    "chat": SloProfile("chat", 500.0),
    "ide": SloProfile("ide", 300.0),
    "batch": SloProfile("batch", None),
}


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
    """requests/s meeting every per-request criterion of the profile's objective (`goodput.py`): at the
    highest tested load when nothing broke, else at `goodput_load`, the last tier within the SLO (not
    interpolated: per-request goodput falls off a cliff where p95 crosses the limit, so a value between
    the tiers would read as most requests missing the SLO at the capacity); NaN without a goodput column"""
    goodput_load: float = math.nan
    tiers: int = 0
    """tiers with requests that the search looked at (1: one load level, nothing to interpolate)"""


def profile_from(name: str, ttft_p95_ms: float | None = None, max_error_rate: float | None = None,
                 max_429_rate: float | None = None) -> SloProfile:
    base = PROFILES.get(name)
    if base is None:
        raise ValueError(f"unknown SLO profile {name!r}; choose one of {', '.join(PROFILES)}")
    return SloProfile(
        name, ttft_p95_ms if ttft_p95_ms is not None else base.ttft_p95_ms,
        max_error_rate if max_error_rate is not None else base.max_error_rate,
        max_429_rate if max_429_rate is not None else base.max_429_rate,
    )


def capacity_under_slo(table: pd.DataFrame, profile: SloProfile, tested: int | None = None) -> Capacity:
    """`tested`: tiers with requests in the whole run (judged or not; default: those of `table`), for the wording
    of one load level."""
    rows = table[table["sent"] > 0].sort_values("load", kind="stable").reset_index(drop=True)
    tested = len(rows) if tested is None else tested
    if rows.empty:
        return Capacity(profile, "none", math.nan, math.nan, math.nan, "no requests measured")
    for i, row in rows.iterrows():
        broken = _broken(row, profile)
        if not broken:
            continue
        if i == 0:
            return Capacity(profile, "below", 0.0, 0.0, 0.0, _at(broken[0][0], row), float(row["load"]),
                            tiers=tested)
        prev = rows.iloc[i - 1]
        fractions = [(_fraction(prev[col], row[col], limit), _at(text, row)) for text, col, limit in broken]
        frac, text = min(fractions)
        def at(col: str, frac: float = frac, prev=prev, row=row) -> float:
            if col not in row:
                return math.nan
            after = float(row[col])
            if math.isnan(after) and row.get("ok", 1) == 0:
                after = 0.0  # a tier with no successful request served nothing (0 tok/s), not an unknown amount
            return float(prev[col]) if frac == 0.0 else float(prev[col] + frac * (after - prev[col]))
        return Capacity(profile, "within", at("load"), at("ok_rps"), at("out_tok_s"), text,
                        goodput_rps=float(prev.get("goodput_rps", math.nan)), goodput_load=float(prev["load"]),
                        tiers=tested)
    top = rows.iloc[-1]
    return Capacity(profile, "beyond", float(top["load"]), float(top["ok_rps"]), float(top["out_tok_s"]),
                    nothing_broke(tested), goodput_rps=float(top.get("goodput_rps", math.nan)), tiers=tested)


def nothing_broke(tiers: int) -> str:
    return "nothing broke at the only load tested" if tiers == 1 else "nothing broke in the tested range"


def phase_verdict(table: pd.DataFrame, profile: SloProfile) -> str:
    """For runs that do not climb (spike, soak, schedule): which tiers met the SLO, which broke it."""
    rows = table[table["sent"] > 0]
    if rows.empty:
        return f"under the {profile.name} SLO ({slo_text(profile)}): unknown (no requests measured)."
    held = [str(int(r["tier"])) for _, r in rows.iterrows() if not _broken(r, profile)]
    broke = [_at(b[0][0], r) for _, r in rows.iterrows() if (b := _broken(r, profile))]
    text = f"under the {profile.name} SLO ({slo_text(profile)}): "
    text += f"met in tier(s) {', '.join(held)}" if held else "met in no tier"
    text += f"; broken: {'; '.join(broke)}." if broke else "; broken in none."
    return text + " This shape does not measure a capacity: run step tiers for that."


def _broken(row: pd.Series, profile: SloProfile) -> list[tuple[str, str, float]]:
    """(what broke, column, limit) per broken bound; `what` names no tier: `_at` puts it at {at} or the end."""
    out = []
    p95 = row["ttft_p95_ms"]
    if profile.ttft_p95_ms is not None and (math.isnan(p95) or p95 > profile.ttft_p95_ms):
        what = (f"{{at}} no request succeeded, so p95 TTFT is unknown (limit {profile.ttft_p95_ms:g} ms)"
                if math.isnan(p95)
                else f"p95 TTFT {p95:.0f} ms > {profile.ttft_p95_ms:g} ms")
        out.append((what, "ttft_p95_ms", profile.ttft_p95_ms))
    if row["error_rate"] > profile.max_error_rate:
        out.append((f"error rate {row['error_rate']:.1%} > {profile.max_error_rate:.1%}", "error_rate",
                    profile.max_error_rate))
    drop = row.get("drop_rate", 0.0)
    if drop == drop and drop > profile.max_error_rate:
        out.append((f"drop rate {drop:.1%} > {profile.max_error_rate:.1%} {{at}} (arrivals not sent: in-flight "
                    "cap reached)", "drop_rate", profile.max_error_rate))
    if row["rate_429"] > profile.max_429_rate:
        out.append((f"429 rate {row['rate_429']:.1%} > {profile.max_429_rate:.1%}", "rate_429",
                    profile.max_429_rate))
    if row.get("refused_load_share", 0.0) > profile.max_429_rate:  # users parked on a refusal (concurrency.py)
        out.append((f"{int(row['parked_refused'])} of the {row['load_target']:g} users asked refused "
                    f"({row['parked_codes']}) and idle through the measure window", "refused_load_share",
                    profile.max_429_rate))
    return out


def _at(what: str, row: pd.Series) -> str:
    """'p95 TTFT 512 ms > 500 ms at tier 5', or 'at tier 5 no request succeeded ...'."""
    where = f"at tier {int(row['tier'])}"
    return what.replace("{at}", where) if "{at}" in what else f"{what} {where}"


def _fraction(before: float, after: float, limit: float) -> float:
    if math.isnan(before) or math.isnan(after) or after == before:
        return 0.0
    return min(1.0, max(0.0, (limit - before) / (after - before)))


def slo_text(profile: SloProfile) -> str:
    slo = f"p95 TTFT <= {profile.ttft_p95_ms:g} ms, " if profile.ttft_p95_ms is not None else ""
    return slo + f"errors <= {profile.max_error_rate:.0%}, 429s <= {profile.max_429_rate:.0%}"


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
