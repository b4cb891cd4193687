"""Everything the report says about one run, computed once: `analyze(run, ...) -> Analysis`.

How it works: the per-tier table is computed first; the knee, queueing fit, capacity under
the chosen SLO (and under every stock profile), saturation behaviour, replica plan,
provider checklist and warnings are then pure functions of it and of the loader's notes.
The shape kind (`shape.py`) decides what is asked: step and open-loop rate runs get the
knee, the queueing model and the capacity curve; spike, soak and schedule runs get a
phase comparison (`phases.py`) instead. Run totals (`totals.py`) and the per-scenario
table (`scenarios.py`) are computed for every run.
The SLO profile is the one named on the command line, else run.json's `slo_profile` when
the run recorded a known one, else the API's (embeddings, rerank: `slo.default_profile`), else
chat; `Analysis.profile_source` says which.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import pandas as pd

from llmload.analysis.read.run import Run, run_api
from llmload.analysis.read.shape import climbs, shape_kind
from llmload.analysis.tables import (
    concurrency,
    hist_figures,
    outages,
    samples,
    scenarios,
    splits,
    tiers,
    totals,
    workers,
)
from llmload.analysis.tables import delivery as delivery_mod
from llmload.analysis.tables import phases as phases_mod
from llmload.analysis.tables.cost import Prices
from llmload.analysis.tables.judged import tiers_of
from llmload.analysis.tables.workload_view import WorkloadView, workload_view
from llmload.analysis.verdicts import ending as ending_mod
from llmload.analysis.verdicts import goodput, headers, health, model_check, queueing
from llmload.analysis.verdicts.ceiling import run_ceiling
from llmload.analysis.verdicts.checklist import checklist
from llmload.analysis.verdicts.confirm import confirmation
from llmload.rules import agreement, confirm, knees, latency, replicas, saturation
from llmload.rules import capacity as cap_mod
from llmload.rules import plan as plan_mod
from llmload.rules.ceiling import Ceiling
from llmload.rules.limiter import RateLimiter
from llmload.rules.limits import DEFAULT_HEADROOM, LATE_MS
from llmload.rules.slo import (
    NOT_STREAMED_PROFILES,
    PROFILES,
    Objective,
    SloProfile,
    default_profile,
    objective_for,
    profile_from,
)
from llmload.rules.text import load_with_unit, tier_load
from llmload.rules.tier import Tier
from llmload.rules.verdicts import judge


@dataclass(frozen=True)
class Target:
    value: float
    kind: str
    """'rps', 'users' or 'tok_s'"""
    headroom: float = DEFAULT_HEADROOM


@dataclass(frozen=True)
class Analysis:
    run: Run
    table: pd.DataFrame
    kinds: pd.DataFrame
    breakdown: pd.DataFrame
    fit: queueing.QueueFit | None
    profile: SloProfile
    capacity: cap_mod.Capacity
    all_capacities: tuple[cap_mod.Capacity, ...]
    saturation: saturation.Saturation
    plan: replicas.ReplicaPlan | None
    checklist: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    compute: knees.KneePoint
    """compute saturation: where added load stops adding throughput"""
    onset: knees.KneePoint
    """queueing onset: where requests start to wait"""
    header_mode: headers.HeaderMode
    objective: Objective
    """the profile's full objective (`llmload.rules.slo.objective_for`): what the goodput column counts"""
    totals: totals.Totals
    ending: ending_mod.Ending
    """how the run ended; when it stopped early, which verdicts that makes unsafe"""
    kind: str = "step"
    """shape kind: step, rate, spike, soak or schedule (shape.py)"""
    fit_note: str | None = None
    """why the queueing model is not identifiable (None when `fit` is usable)"""
    profile_source: str = "default"
    """'--slo', 'run.json' or 'default'"""
    scenario_table: pd.DataFrame | None = None
    scenario_sentence: str = ""
    phases: pd.DataFrame | None = None
    phase_sentences: tuple[str, ...] = ()
    agreement: str = ""
    """does the fitted model agree with the queueing onset (rules/agreement.py)"""
    workload: WorkloadView | None = None
    """the workload tables and the prefill line (`workload_view.py`)"""
    model_check: model_check.ModelCheck | None = None
    """the fitted model's p95 TTFT against each tier's, and the capacity line's clause (None: no fit)"""
    planning_capacity: cap_mod.Capacity | None = None
    """what replicas are planned on: the capacity with the per-replica figures of the plan (`per_replica`) before
    headroom (None: no rate to plan on)"""
    limiter: RateLimiter | None = None
    """the rate limiter behind the 429s (llmload.rules.limiter), or None"""
    prices: Prices | None = None
    """prices the report was given (`tables/cost.py`); None: run.json's, if any"""
    no_first_token: bool = False
    """the run's answers have no first token (embeddings, rerank): judged on e2e latency (llmload.rules.latency)"""
    ceiling: Ceiling | None = None
    """what the server accepted per second once it refused (llmload.rules.ceiling; None: it never refused)"""
    basis: plan_mod.Basis | None = None
    """what the plan is taken below (llmload.rules.plan.basis; None: nothing to plan on)"""
    proof: confirm.Outcome | None = None
    """the confirmation windows' verdicts and the plan they prove (llmload.rules.confirm)"""
    per_replica: plan_mod.PerReplica | None = None
    """the plan per replica: the confirmed rate (unconfirmed: the planned one; None: no rate)"""
    peak: Tier | None = None
    """the throughput peak within the SLO when more load did less work past it (saturation.peak_within_slo)"""
    peak_drop: str = ""
    """... that drop's sentence"""

    @property
    def climbs(self) -> bool:
        return climbs(self.kind)


def profile_source(run: Run, name: str | None) -> str:
    """Where the SLO profile comes from: '--slo', 'run.json' (a known slo_profile recorded), else 'default'."""
    if name:
        return "--slo"
    return "run.json" if str(run.info.get("slo_profile") or "") in PROFILES else "default"


def choose_profile(run: Run, name: str | None, ttft_p95_ms: float | None = None,
                   max_error_rate: float | None = None, max_429_rate: float | None = None) -> SloProfile:
    source = profile_source(run, name)
    chosen = str(name) if source == "--slo" else (str(run.info["slo_profile"]) if source == "run.json" else
                                                  default_profile(run_api(run)))
    return profile_from(chosen, ttft_p95_ms, max_error_rate, max_429_rate)


def _capacities(run: Run, table: pd.DataFrame, judged: pd.DataFrame, profile: SloProfile,
                capacity: cap_mod.Capacity, lim: RateLimiter | None,
                ceiling: Ceiling | None) -> tuple[cap_mod.Capacity, ...]:
    """The capacity under every stock profile on the verdicts' tiers (`judged`), each with its own goodput at the
    capacity (`capacity`: the chosen profile's, from the verdicts)."""
    rows = samples.verdict_rows(run) if run.per_request else None
    tested = int((table["sent"] > 0).sum())  # tiers with requests, judged or not: one load level is worded as one
    caps = []
    for name in profiles_shown(table, profile):
        if name == profile.name:
            caps.append(capacity)
            continue
        other = profile_from(name, None, profile.max_error_rate, profile.max_429_rate)
        own = goodput.goodput_rps(table, rows, objective_for(other)) if rows is not None else table["goodput_rps"]
        cap = cap_mod.capacity_under_slo(tiers_of(judged.assign(goodput_rps=own[judged.index])), other, tested,
                                         run.load_unit)
        caps.append(plan_mod.sustained_capacity(cap, lim, ceiling))
    return tuple(caps)


def profiles_shown(table: pd.DataFrame, profile: SloProfile) -> list[str]:
    """The profiles whose capacity the report gives: those that judge the run's answers (with no first token,
    embeddings and rerank: llmload.rules.latency; else the streamed ones), and the chosen one."""
    e2e = latency.no_first_token(tiers_of(table))
    return [name for name in PROFILES if name == profile.name or (name in NOT_STREAMED_PROFILES) == e2e]


def _add_goodput(run: Run, table: pd.DataFrame, profile: SloProfile) -> None:
    """Goodput per tier under the chosen profile; unknown from histograms (a request meets an objective by all
    its figures at once: histograms keep them apart)."""
    if run.per_request:
        table["goodput_rps"] = goodput.goodput_rps(table, samples.verdict_rows(run), objective_for(profile))
    else:
        table["goodput_rps"] = math.nan


def analyze(run: Run, profile: SloProfile, target: Target | None = None,
            source: str | None = None, stall_ms: float = tiers.STALL_MS) -> Analysis:
    """`source`: where `profile` came from (see profile_source); guessed from run.json when None."""
    if source is None:
        source = "run.json" if str(run.info.get("slo_profile") or "") == profile.name else "default"
    kind = shape_kind(run)
    table = tiers.tier_table(run, stall_ms)
    _add_goodput(run, table, profile)
    judged = table[table["judged"]]  # tiers cut too short or generator-overloaded are shown but never judged
    tested = int(table["tested"].sum())
    kept = set(judged["tier"])
    ceiling = run_ceiling(run) if climbs(kind) else None
    v = judge(tiers_of(table), run.load_unit, profile, lambda t: t.tier in kept, tested,
              totals.recorded(run, judged["tier"]), climbs(kind), ceiling)
    judged = judged[judged["tier"].isin({t.tier for t in v.judged})]  # the fit and every profile: the same tiers
    compute, onset, sat, capacity = v.compute, v.onset, v.saturation, v.capacity
    all_caps = _capacities(run, table, judged, profile, capacity, v.limiter, ceiling)
    proof = confirmation(run, profile) if climbs(kind) else confirm.outcome(math.nan, [])
    headroom = target.headroom if target is not None else DEFAULT_HEADROOM
    per = plan_mod.per_replica(v.basis, proof, headroom)
    planning = None if per is None else dataclasses.replace(
        capacity, load=per.load / (1 - headroom), ok_rps=per.rps / (1 - headroom),
        out_tok_s=per.out_tok_s / (1 - headroom))
    plan = None
    if target is not None and climbs(kind):
        plan = (replicas.plan_replicas(planning, target.value, target.kind, run.load_unit, target.headroom)
                if planning is not None else replicas.ReplicaPlan(target.value, target.kind, math.nan, headroom, None))
    rows = run.per_request  # per-request tables and splits exist only with rows (hist_run.CANNOT_SHOW)
    breakdown = tiers.breakdown_table(run)
    fit_note = queueing.not_identifiable(judged, run.load_unit, compute, "sheds" in sat.kind, climbs(kind), kind,
                                         tested, v.limiter)
    fit = queueing.fit_queue(judged, run.load_unit) if fit_note is None else None
    phase_frame = phases_mod.phase_table(run, table, kind) if not climbs(kind) else None
    return Analysis(
        run=run, table=table, kinds=tiers.error_kinds(run), breakdown=breakdown,
        fit=fit, profile=profile, capacity=capacity,
        all_capacities=all_caps, saturation=sat, plan=plan,
        checklist=tuple(checklist(run, table, breakdown, sat, latency.no_first_token(list(v.tiers)))),
        warnings=tuple(warnings(run, table)),
        kind=kind, fit_note=fit_note, profile_source=source, totals=totals.run_totals(run),
        scenario_table=scenarios.scenario_table(run) if rows else None,
        scenario_sentence=scenarios.comparison_sentence(run, table) if rows else "",
        phases=phase_frame,
        phase_sentences=tuple(phases_mod.describe(run, table, phase_frame, kind)) if phase_frame is not None else (),
        compute=compute, onset=onset, planning_capacity=planning,
        header_mode=headers.header_mode(judged, tested, samples.measured(run) if rows else None),
        ending=ending_mod.run_ending(run, table),
        agreement=" ".join(filter(None, (agreement.model_agreement(fit.slots if fit else None, onset, run.load_unit),
                                         queueing.server_slots(judged)))) if climbs(kind) else "",
        objective=objective_for(profile), workload=workload_view(run) if rows else None,
        model_check=model_check.check(fit, judged, capacity, run.load_unit) if climbs(kind) else None,
        limiter=v.limiter, no_first_token=latency.no_first_token(list(v.tiers)),
        ceiling=ceiling, basis=v.basis, proof=proof, per_replica=per, peak=v.peak, peak_drop=v.peak_drop,
    )


def warnings(run: Run, table: pd.DataFrame) -> list[str]:
    out = []
    unit = run.load_unit
    for row in table.itertuples():
        where = f"Tier {row.tier} ({tier_load(row, unit)})"
        if row.dropped:
            out.append(f"{where}: {row.dropped} arrivals ({row.drop_rate:.0%} of the tier's) were dropped at the "
                       f"in-flight cap (--max-inflight): the generator sent {row.rps:.1f} req/s of the "
                       f"{row.load:g} asked. The server did not keep up; raise --max-inflight only to measure "
                       "the queue, not to hide it.")
        if row.schedule_lag_p99_ms > LATE_MS:
            out.append(f"{where}: schedule lag p99 {row.schedule_lag_p99_ms:.0f} ms: requests left later than "
                       "intended (the generator fell behind the arrival schedule).")
        if not row.tested:
            out.append(f"{where}: no request was measured in it.")
        if row.overloaded:
            out.append(health.warning(where, row))
    too_short = delivery_mod.warning(table, unit)
    if too_short:
        out.append(too_short)
    hinted = hist_figures.hinted_refusals_before(run) if not run.per_request else {}
    for row in table[table["parked_unknown"]].itertuples():
        out.append(f"Tier {row.tier} ({load_with_unit(row.load, unit)}): {hinted.get(row.tier, 0)} refused attempts "
                   f"of its warm-up carried a retry hint, and only {row.inflight:.1f} requests were in flight on "
                   "average: users waiting out the hint may have sent nothing in its measure window, and histograms "
                   "cannot tell how many, so it is left out of the knees, the capacity and the saturation verdict "
                   "(record with --ship rows or both).")
    out.extend(outages.sentences(outages.outages(run.samples) if run.per_request else (), table, unit))
    out.extend(_retry_sentence(run, int(table["retries"].sum())))
    out.extend(filter(None, [totals.empty_sentence(table, run.empty_is_error)]))
    out.extend(concurrency.notes(table))
    out.extend(workers.lost_sentences(run))
    clocks = workers.clock_sentence(run)
    if clocks:
        out.append(clocks)
    slo = str(run.info.get("slo_profile") or "")
    if slo and slo not in PROFILES:
        out.append(f"run.json names an unknown SLO profile {slo!r}: used chat (pass --slo).")
    out.extend(run.notes)
    return list(dict.fromkeys(out))  # each sentence once, in its first place (two sources can say the same)


def _retry_sentence(run: Run, retries: int) -> list[str]:
    """The note on measured retries, naming the retry table only when the report shows it."""
    if not retries:
        return []
    shown = run.per_request and bool(splits.retry_table(run).get("retried", pd.Series(dtype=int)).sum())
    table = ", and 'Latency with and without retries' shows first attempt vs final outcome" if shown else ""
    if retries == 1:
        return [f"1 measured attempt was a retry of an earlier one; it is its own row in the tier tables{table}."]
    return [f"{retries} measured attempts were retries of earlier ones; each is its own row in the tier tables"
            f"{table}."]
