"""summary.json: the report's verdicts and figures for machines (schema `llmload.summary/5`).

How it works: `summary(a)` turns one Analysis into plain JSON types, section by section (run
facts, per-tier figures, the two knees with their intervals, capacity per profile, the saturation
branch, replicas, warnings, the gate's verdicts for the run's profile); `clean` makes every
missing figure `null` (never NaN: JSON has none) and every numpy scalar a Python number.
Field-by-field documentation: docs/summary.md; the JSON Schema: `summary_schema.SCHEMA`.
A change that removes or renames a field, or changes its meaning, bumps the version. A run recorded
with --ship histograms gets the same document from its histograms: `source` says so and lists what
histograms cannot show (hist_run.CANNOT_SHOW); what they cannot give is null.
"""

from __future__ import annotations

import json
import math
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from llmload.analysis.analyze import Analysis
from llmload.analysis.read import traffic
from llmload.analysis.read.hist_run import CANNOT_SHOW
from llmload.analysis.report import answer, resources
from llmload.analysis.report.targets import summary_section as target_summary
from llmload.analysis.tables import samples
from llmload.analysis.tables.workload_view import summary_section
from llmload.analysis.text import utc
from llmload.analysis.verdicts import billing, ending, health
from llmload.analysis.verdicts import gate as check
from llmload.contract import HIST_RELATIVE_ERROR
from llmload.rules import limiter
from llmload.rules import plan as plan_mod
from llmload.rules.knees import KneePoint
from llmload.rules.slo import Objective, describe_objective

SCHEMA_ID = "llmload.summary/5"
QUANTILES = ("p50", "p95", "p99")


def clean(value):
    """Plain JSON types: NaN and infinities become None, numpy scalars Python numbers."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def safe_host(host) -> str | None:
    """The target URL without user, password or query string (where keys ride); several targets: each, comma-joined."""
    if not host:
        return None
    out = []
    for one in str(host).split(","):
        parts = urlsplit(one.strip())
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        out.append(urlunsplit((parts.scheme, netloc, parts.path, "", "")))
    return ",".join(out)


def run_facts(a: Analysis) -> dict:
    info, (first, last) = a.run.info, a.run.span_s
    sends = a.run.per_request  # a run recorded with --ship histograms kept no send times
    end = info.get("end") if isinstance(info.get("end"), dict) else None
    shape = a.run.shape
    return {
        "id": a.run.name, "host": safe_host(info.get("host")), "model": info.get("model"),
        "scenario": info.get("scenario"), "transport": info.get("transport"), "shape_kind": a.kind,
        "shape_class": shape.get("class"), "load_unit": a.run.load_unit,
        "start_unix": info.get("started_unix", first), "end_unix": info.get("ended_unix"),
        "first_send_utc": utc(first) if sends else None, "last_send_utc": utc(last) if sends else None,
        "end": {"reason": end.get("reason"), "planned": end.get("planned")} if end else None,
        "stopped_early": bool(a.ending.stopped_early) if a.ending else False,
        "stopped_early_sentence": ending.sentence(a) or None,
        "workers": info.get("workers") if isinstance(info.get("workers"), int) else None,
        "slo_profile": a.profile.name, "slo_profile_source": a.profile_source,
        "latency": "e2e" if a.no_first_token else "ttft",
        "empty_answer_is_error": a.run.empty_is_error, "arrival": _arrival(a),
        "cache": [{"tier": t, "mode": m} for t, m in traffic.tier_modes(a.run, list(a.table["tier"])).items()]
        or None,
    }


def _arrival(a: Analysis) -> dict | None:
    process = traffic.arrival(a.run)
    if process is None:
        return None
    seed = a.run.shape.get("arrival_seed")
    return {"process": process.process, "cv": process.cv, "seed": seed if isinstance(seed, int) else None}


def _quantiles(row, prefix: str, names=QUANTILES) -> dict:
    return {name: row.get(f"{prefix}_{name}_ms") for name in names}


def _cis(row, prefix: str, *names: str) -> dict:
    """`{name}_ci_low` / `{name}_ci_high`: a percentile's 95 % bootstrap CI (tables/samples.add_cis)."""
    return {f"{name}_ci_{end}": row.get(f"{prefix}_{name}_ci_{short}_ms") for name in names
            for end, short in (("low", "lo"), ("high", "hi"))}


def tier_record(row, run_tiers) -> dict:
    """One tier's figures (a tier-table row), as summary.json's `tiers[]` items and `tiers --format json`."""
    window = run_tiers[run_tiers["tier"] == row["tier"]].iloc[0]
    return {
        "tier": row["tier"], "load": row["load"], "load_target": row["load_target"],
        "effective_concurrency": row["concurrency"], "active_users": row["active_users"],
        "judged": row["judged"], "too_few": row["too_few"], "overloaded": row["overloaded"],
        "short": bool(row["short"]), "under_applied": row["under_applied"],
        "parked_refused": int(row["parked_refused"]),
        "short_for_requests": bool(row["short_for_requests"]), "hold_s": row["hold_s"],
        "decode_max_ms": row["decode_max_ms"],
        "refined": bool(window["refined"]) if "refined" in window else False,
        "sent": row["sent"], "ok": row["ok"], "failed": row["failed"], "n_429": row["n_429"],
        "n_empty": row.get("n_empty", 0),
        "rate_429": row["rate_429"], "error_rate": row["error_rate"], "dropped": row["dropped"],
        "drop_rate": row["drop_rate"], "rps": row["rps"], "ok_rps": row["ok_rps"],
        "goodput_rps": row.get("goodput_rps"), "out_tok_s": row["out_tok_s"], "docs_s": row.get("docs_s", 0.0),
        "out_tok_s_ci_low": row.get("out_tok_s_ci_lo"), "out_tok_s_ci_high": row.get("out_tok_s_ci_hi"),
        "ttft_ms": {**_quantiles(row, "ttft"), "p999": row["ttft_p999_ms"], **_cis(row, "ttft", "p50", "p95", "p99")},
        "e2e_ms": {**_quantiles(row, "e2e"), **_cis(row, "e2e", "p99")}, "tpot_ms": _quantiles(row, "tpot"),
        "itl_mean_ms": {**_quantiles(row, "itl_mean"), **_cis(row, "itl_mean", "p50", "p99")},
        "itl_gap_ms": {**_quantiles(row, "itl_gap", (*QUANTILES, "p999")), "gaps": row.get("itl_gaps", 0)},
        "stalls": row["stalls"], "stall_ms": row["stall_ms"],
        "wait_ms": row["wait_ms"],
        "window": {"start_unix": window["start_s"], "measure_start_unix": window["measure_start_s"],
                   "end_unix": window["end_s"], "measure_s": window["measure_s"]},
    }


def queueing_model(a: Analysis) -> dict | None:
    """The fitted model and its check against every judged tier's p95 TTFT (model_check.py)."""
    if a.fit is None:
        return None
    check = a.model_check
    bands = [] if check is None else [
        {"tier": int(r["tier"]), "p95_low_ms": r["model_lo"], "p95_high_ms": r["model_hi"],
         "disagrees": bool(r["disagrees"])} for _, r in check.bands.iterrows()]
    return {"slots": a.fit.slots, "x_max_rps": a.fit.x_max_rps, "service_ms": a.fit.service_s * 1000.0,
            "check": check.sentence if check is not None else None,
            "capacity_agrees": None if check is None or not check.capacity_clause
            or "model cannot tell" in check.capacity_clause else "model agrees" in check.capacity_clause,
            "tolerance_ms": check.tolerance_ms if check is not None else None, "tiers": bands}


def knee_point(point: KneePoint | None, kind: str) -> dict | None:
    """A knee with its interval: compute saturation lies between the tier below and its tier, the queueing
    onset between its tier and the next one."""
    if point is None:
        return None
    low, high = (point.next_load, point.load) if kind == "compute" else (point.load, point.next_load)
    return {"status": point.status, "load": point.load, "tier": point.tier,
            "interval": {"low": low, "high": high} if point.status == "within" else None,
            "how": point.how if kind == "onset" and point.status in ("within", "below") else None,
            "sentence": point.sentence}


def capacities(a: Analysis) -> list[dict]:
    return [{"profile": c.profile.name, "chosen": c.profile.name == a.profile.name,
             "ttft_p95_limit_ms": c.profile.ttft_p95_ms, "e2e_p95_limit_ms": c.profile.e2e_p95_ms,
             "max_error_rate": c.profile.max_error_rate,
             "max_429_rate": c.profile.max_429_rate, "status": c.status,
             "load": c.load if c.status in ("within", "beyond") else None, "ok_rps": c.ok_rps,
             "goodput_rps": c.goodput_rps, "out_tok_s": c.out_tok_s, "limited_by": c.limited_by,
             "low": c.met.load if c.met is not None else None, "high": c.high, "measured": c.measured,
             "interpolated": c.interpolated}
            for c in a.all_capacities]


def rate_limiter(a: Analysis) -> dict | None:
    """The rate limiter behind the 429s (llmload.rules.limiter): its sustained rate is the capacity."""
    lim = a.limiter
    if lim is None:
        return None
    return {"sustained_rps": lim.sustained_rps if lim.measured else None,
            "per_minute": lim.per_minute if lim.measured else None, "measured": lim.measured,
            "upper_bound": lim.upper_bound, "first_refusing_tier": lim.first.tier,
            "measured_over_tiers": [t.tier for t in lim.over], "evidence": lim.evidence,
            "sentence": limiter.describe(lim, a.run.load_unit)}


def plan_section(a: Analysis) -> dict | None:
    """The plan a planner acts on and how the run proved it (llmload.rules.plan, llmload.rules.confirm); None for runs
    that do not climb."""
    if not a.climbs or a.proof is None:
        return None
    proof, held, per, ceiling = a.proof, a.proof.holding, a.per_replica, a.ceiling
    shown = held or (proof.windows[0] if proof.windows else None)
    e2e = a.no_first_token
    return {
        "rps": per.rps if per is not None else None, "confirmed": proof.confirmed,
        "source": proof.source, "planned_rps": (proof.planned_rps if proof.windows else
                                                a.basis.planned() if a.basis is not None else None),
        "basis": {"kind": a.basis.kind, "rps": a.basis.rps, "text": a.basis.text} if a.basis is not None else None,
        "confirm_seconds": held.seconds if held else None, "confirm_requests": held.requests if held else None,
        "p95_ttft_ms": None if e2e or shown is None else shown.p95_ms,
        "p95_ttft_upper_ms": None if e2e or shown is None else shown.p95_upper_ms,
        "p95_e2e_ms": shown.p95_ms if e2e and shown is not None else None,
        "p95_e2e_upper_ms": shown.p95_upper_ms if e2e and shown is not None else None,
        "refused_share": shown.refused_share if shown is not None else None,
        "ceiling_rps": ceiling.rps if ceiling is not None else None,
        "ceiling": None if ceiling is None else {
            "start_unix": ceiling.start_s, "span_s": ceiling.span_s, "accepted": ceiling.accepted,
            "first_refusing_tier": ceiling.tier, "longest_hint_s": ceiling.longest_hint_s,
            "shorter_than_hint": ceiling.short},
        "windows": [{"tier": w.tier, "rate": w.rate, "status": w.status, "what": w.what or None,
                     "seconds": w.seconds, "requests": w.requests, "p95_ms": w.p95_ms, "p95_upper_ms": w.p95_upper_ms,
                     "refused_share": w.refused_share} for w in proof.windows],
        "sentence": plan_mod.sentence(a.basis, proof, a.capacity, a.limiter, answer.skipped_reason(a.run.info)),
    }


def source(kind: str, pooled: bool, cannot_show: tuple[str, ...] = ()) -> dict:
    """Where the figures come from: per-request rows (samples.csv) or histograms only (--ship histograms)."""
    return {"kind": kind, "relative_error": HIST_RELATIVE_ERROR if pooled or kind == "histograms" else None,
            "cannot_show": list(cannot_show)}


def gate(a: Analysis) -> dict:
    """`analysis check` with the run's profile and no load given (same verdicts, same exit status)."""
    measured = samples.verdict_rows(a.run) if a.run.per_request else None
    result = check.judge(a.run.name, a.run.load_unit, a.table, measured, a.objective, hists=a.run.histograms)
    return gate_record(a.objective, result)


def gate_record(objective: Objective, result: check.Check) -> dict:
    return {"objective": objective.name, "status": result.status, "exit_code": check.EXIT[result.status],
            "headline": result.headline,
            "verdicts": [{"criterion": v.criterion.label, "metric": v.criterion.metric, "status": v.status,
                          "value": v.value, "limit": v.criterion.limit, "at_least": v.criterion.at_least,
                          "tier": v.tier, "why": v.why or None} for v in result.verdicts]}


def summary(a: Analysis) -> dict:
    plan = a.plan
    tokens = None if a.no_first_token else billing.summary_section(a.run)  # no output tokens to compare
    optional = {"workload": summary_section(a.workload), "output_tokens": tokens,
                "targets": target_summary(a), "cost": resources.cost_section(a), "gpu": resources.gpu_section(a)}
    return clean({
        "schema": SCHEMA_ID, "source": source(a.run.source, a.run.histograms is not None,
                                              () if a.run.per_request else CANNOT_SHOW), "run": run_facts(a),
        "goodput_counts": describe_objective(a.objective) if a.run.per_request else
        "not available from histograms (needs per-request rows)",
        "tiers": [tier_record(row, a.run.tiers) for _, row in samples.with_gate_cis(a.run, a.table).iterrows()],
        "compute_saturation": knee_point(a.compute, "compute"),
        "queueing_onset": knee_point(a.onset, "onset"), "queueing_model": queueing_model(a),
        "generator_overloaded": health.exclusion_sentence(a.table, a.run.load_unit) or None,
        "capacity": capacities(a),
        "saturation": {"branch": a.saturation.kind, "rule": a.saturation.rule, "tier": a.saturation.tier,
                       "sentence": a.saturation.sentence},
        "rate_limiter": rate_limiter(a), "plan": plan_section(a),
        "replicas": None if plan is None else {"target": plan.target, "target_kind": plan.target_kind,
                                               "per_replica": plan.per_replica, "headroom": plan.headroom,
                                               "replicas": plan.replicas,
                                               "upper_bound": bool(a.per_replica is not None
                                                                   and a.per_replica.confirmed is None
                                                                   and a.basis is not None
                                                                   and a.basis.lower_bound)},
        "warnings": list(a.warnings), "gate": gate(a),
        **{k: v for k, v in optional.items() if v is not None},
    })


def dumps(a: Analysis) -> str:
    return json.dumps(summary(a), indent=2, allow_nan=False) + "\n"
