"""`python -m analysis check RUN --plan-at-least RPS`: the SLO gate on the plan the run proved.

How it works: the run is analysed as the report analyses it (`analyze`), under the SLO profile of the objective's
name (a custom objective: the run's profile), and its plan (llmload.rules.plan, llmload.rules.confirm: the report's
Plan line) is one verdict, `plan per replica (confirmed)`: PASS when a rate of at least RPS per replica held in the
run's confirmation, FAIL when the windows ran and none held (or only a lower rate did), CANNOT JUDGE when the run
sent no confirmation window (`--no-confirm`, a run without a shape). Same exit codes as every gate.
"""

from __future__ import annotations

import math

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import Run, counting_empty_as_error, load_run, run_api
from llmload.analysis.verdicts.gate import CANNOT, FAIL, PASS, Check, Verdict
from llmload.rules import plan as plan_mod
from llmload.rules.slo import PROFILES, STOCK, Criterion, Objective, default_profile
from llmload.rules.text import load_with_unit


def run_plan_check(run_dir: str, obj: Objective | None, need: float, empty_is_error: bool = False) -> Check:
    run = load_run(run_dir)
    if empty_is_error:
        run = counting_empty_as_error(run)
    return plan_check(run, obj if obj is not None else STOCK[default_profile(run_api(run))], need)


def plan_check(run: Run, obj: Objective, need: float) -> Check:
    """`--plan-at-least`: the report's plan (module docstring), under the profile of the objective's name (a custom
    objective: the run's profile)."""
    a = analyze(run, choose_profile(run, obj.name if obj.name in PROFILES else None))
    proof, per = a.proof, a.per_replica
    criterion = Criterion("plan_rps", need)
    rps = per.rps if per is not None and proof is not None and proof.confirmed else math.nan
    held = proof.holding if proof is not None else None
    if proof is None or proof.source == "skipped":
        status, why = CANNOT, "the run sent no confirmation window"
    else:
        status, why = (PASS, "") if rps == rps and rps >= need else (
            FAIL, "no rate held in the confirmation" if rps != rps else f"{proof.source}, below the rate required")
    verdict = Verdict(criterion, status, rps, held.tier if held else None,
                      load_with_unit(held.rate, "req/s") if held else "no rate held", why)
    return Check(obj, (verdict,), status, f"Plan: {plan_mod.sentence(a.basis, proof, a.capacity, a.limiter)} "
                 f"(required: at least {need:g} req/s per replica): {status}" if proof else f"Plan: none: {status}")


