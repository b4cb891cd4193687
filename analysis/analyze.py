"""Everything the report says about one run, computed once: `analyze(run, ...) -> Analysis`.

How it works: the per-tier table is computed first; the knee, queueing fit, capacity under
the chosen SLO (and under every stock profile), saturation behaviour, replica plan,
provider checklist and warnings are then pure functions of it and of the loader's notes.
The SLO profile is the one named on the command line, else run.json's `slo_profile`,
else chat.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import capacity as cap_mod
from analysis import knee as knee_mod
from analysis import queueing, saturation, tiers
from analysis.checklist import checklist
from analysis.loader import Run
from analysis.text import load_with_unit


@dataclass(frozen=True)
class Target:
    value: float
    kind: str
    """'rps', 'users' or 'tok_s'"""
    headroom: float = cap_mod.DEFAULT_HEADROOM


@dataclass(frozen=True)
class Analysis:
    run: Run
    table: pd.DataFrame
    kinds: pd.DataFrame
    breakdown: pd.DataFrame
    knee: knee_mod.Knee
    fit: queueing.QueueFit | None
    profile: cap_mod.SloProfile
    capacity: cap_mod.Capacity
    all_capacities: tuple[cap_mod.Capacity, ...]
    saturation: saturation.Saturation
    plan: cap_mod.ReplicaPlan | None
    checklist: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]


def choose_profile(run: Run, name: str | None, ttft_p95_ms: float | None = None,
                   max_error_rate: float | None = None, max_429_rate: float | None = None) -> cap_mod.SloProfile:
    chosen = name or str(run.info.get("slo_profile") or "chat")
    if chosen not in cap_mod.PROFILES:
        chosen = "chat"
    return cap_mod.profile_from(chosen, ttft_p95_ms, max_error_rate, max_429_rate)


def analyze(run: Run, profile: cap_mod.SloProfile, target: Target | None = None) -> Analysis:
    table = tiers.tier_table(run)
    knee = knee_mod.find_knee(table)
    capacity = cap_mod.capacity_under_slo(table, profile)
    all_caps = tuple(
        capacity if name == profile.name else
        cap_mod.capacity_under_slo(table, cap_mod.profile_from(name, None, profile.max_error_rate,
                                                               profile.max_429_rate))
        for name in cap_mod.PROFILES
    )
    sat = saturation.classify(table, knee, run.load_unit)
    plan = None
    if target is not None:
        plan = cap_mod.plan_replicas(capacity, target.value, target.kind, run.load_unit, target.headroom)
    breakdown = tiers.breakdown_table(run)
    return Analysis(
        run=run, table=table, kinds=tiers.error_kinds(run), breakdown=breakdown, knee=knee,
        fit=queueing.fit_queue(table, run.load_unit), profile=profile, capacity=capacity,
        all_capacities=all_caps, saturation=sat, plan=plan,
        checklist=tuple(checklist(run, table, breakdown, sat)), warnings=tuple(warnings(run, table, knee)),
    )


def warnings(run: Run, table: pd.DataFrame, knee: knee_mod.Knee) -> list[str]:
    out = []
    unit = run.load_unit
    for row in table.itertuples():
        where = f"Tier {row.tier} ({load_with_unit(row.load, unit)})"
        if row.sent == 0:
            out.append(f"{where}: no request was measured in it.")
        elif row.too_few:
            out.append(f"{where}: only {row.ok} successful requests; p99 needs at least {tiers.MIN_SAMPLES_P99} "
                       "to be stable. Hold the tier longer.")
        if row.overloaded:
            figures = [f"{label} {value:.0f}{suffix}" for label, value, suffix in (
                ("loop lag p99", row.loop_lag_p99_ms, " ms"), ("loop lag (health) p95", row.health_lag_ms, " ms"),
                ("schedule lag p99", row.schedule_lag_p99_ms, " ms"), ("CPU p95", row.cpu_p95, "%"),
            ) if value == value]
            out.append(f"{where}: the load generator was overloaded ({', '.join(figures)}); its latencies are "
                       "not trustworthy. Add workers or lower the load per worker.")
    if knee.first_past_tier is not None:
        suspect = table[table["tier"].isin([knee.knee_tier, knee.first_past_tier]) & table["overloaded"]]
        if len(suspect):
            out.append("The knee call rests on a tier where the generator was overloaded: re-run with more workers.")
    retries = int(table["retries"].sum())
    if retries:
        out.append(f"{retries} measured attempts were retries of earlier ones; each is its own row, "
                   "never folded into the latency of the first attempt.")
    out.extend(run.notes)
    return out
