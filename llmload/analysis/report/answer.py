"""The answer of a report: one line per question, in the order a planner reads them.

How it works: each line is a sentence computed elsewhere (knees, capacity, saturation, queueing
model, rate limit, replica plan, scenarios, run totals); this module only orders them and adds
the "Stopped early" line first when the run was cut (`ending.py`). The capacity table gives the
capacity under every stock profile. The lines are the report's "The answer in detail"; the report
opens with the first of them and short bullets made of the same facts (`short_answer.py`).
"""

from __future__ import annotations

from llmload.analysis import text
from llmload.analysis.analyze import Analysis
from llmload.analysis.read import ramps
from llmload.analysis.read.shape import NAMES
from llmload.analysis.report import resources, unstreamed
from llmload.analysis.report.document import Table
from llmload.analysis.tables import delivery, totals, workers
from llmload.analysis.tables.judged import tiers_of
from llmload.analysis.verdicts import ending, health, queueing, ratelimit, trace_speed
from llmload.rules import capacity as cap_mod
from llmload.rules import capacity_text, limiter, replicas
from llmload.rules import plan as plan_mod
from llmload.rules.text import load_with_unit

PROFILE_SOURCE = {"--slo": "chosen with --slo", "run.json": "from run.json",
                  "default": "the default; choose with --slo"}


def capacity_sentence(a: Analysis) -> str:
    source = f" [profile {PROFILE_SOURCE[a.profile_source]}]"
    if not a.climbs:
        return cap_mod.phase_verdict(tiers_of(a.table), a.profile) + source
    drop, peak = a.peak_drop, a.peak
    sentence = _strip(capacity_text.describe(a.capacity, a.run.load_unit, plan_on=peak is None), "Capacity ")
    if a.model_check is not None and a.model_check.capacity_clause:
        sentence += " " + a.model_check.capacity_clause
    sentence += limiter_clause(a) + trace_speed.clause(a.capacity, a.run.shape)
    if peak is not None:  # past a peak within the SLO more load did less work: the capacity load is not the best
        where = f"{load_with_unit(peak.load, a.run.load_unit)}, {peak.ok_rps:.1f} req/s"
        if a.capacity.status == "beyond":
            sentence += f" Within the SLO, but {drop}: plan on the load of the peak ({where}), not the highest load."
        else:
            sentence += (f" But {drop}: plan on the load of the peak ({where}, within the SLO), not the capacity "
                         "load.")
    return sentence + source


def limiter_clause(a: Analysis) -> str:
    """Behind a rate limiter, a capacity tier that got more than its sustained rate spent its initial burst."""
    lim, cap = a.limiter, a.capacity
    if lim is None or cap.status not in ("within", "beyond") or not cap.ok_rps > lim.sustained_rps:
        return ""
    at = load_with_unit(cap.load, a.run.load_unit)
    if not lim.measured:
        return (f" But {at} got {cap.ok_rps:.1f} req/s only while the rate limiter's quota lasted: it ran out at "
                f"tier {lim.first.tier} and nothing succeeded after, so that is not a sustained rate.")
    return (f" But a rate limiter sustains only {limiter.rate_text(lim, a.run.load_unit)}: the {cap.ok_rps:.1f} "
            f"req/s at {at} spent its initial burst, and a longer tier at that load would be refused; plan on "
            f"{'at most ' if lim.upper_bound else ''}{lim.sustained_rps:.1f} req/s.")


def _limit_items(a: Analysis) -> list[tuple[str, str]]:
    """The 'Rate limit:' line: the rate limiter (when the 429s are one's) and the quota left per tier."""
    quota = ratelimit.quota_sentence(a.table)
    lim = f"{limiter.describe(a.limiter, a.run.load_unit)}." if a.limiter is not None else ""  # with its evidence
    text = " ".join(filter(None, (lim[:1].upper() + lim[1:], quota)))
    return [("Rate limit:", text)] if text else []


def plan_item(a: Analysis) -> tuple[str, str] | None:
    """The 'Plan:' line, the answer's first: the per-replica rate the run confirmed (llmload.rules.plan.sentence);
    None for runs that do not climb (spike, soak, schedule: no capacity to plan on)."""
    if not a.climbs or (a.workload is not None and a.workload.sweep):  # a prefill sweep plans no rate
        return None
    assert a.proof is not None  # analyze() judges the confirmation of every climbing run
    return ("Plan:", plan_mod.sentence(a.basis, a.proof, a.capacity, a.limiter, skipped_reason(a.run.info)))


def skipped_reason(info: dict) -> str:
    """Why a run sent no confirmation window, from run.json's shape `confirm` ('' when it did, or cannot tell)."""
    if ramps.plain(info):
        return "a run without a load shape sends no confirmation window (run step tiers for a confirmed plan)"
    shape = info.get("shape")
    confirm = shape.get("confirm") if isinstance(shape, dict) else None
    confirm = confirm if isinstance(confirm, dict) else {}
    return str(confirm.get("skipped") or "") or ("the run recorded no confirmation (it predates it, or ended "
                                                   "before the tiers did)" if not confirm else "")


def _plan_items(a: Analysis) -> list[tuple[str, str]]:
    """The 'Replica plan:' line (--target-rps and the like): replicas at the plan's per-replica figures."""
    if a.plan is None:
        return []
    return [("Replica plan:", _strip(replicas.describe_plan(a.plan, a.per_replica, a.capacity, a.basis,
                                                                            a.run.load_unit),
                                     "Replica plan "))]


def first_items(a: Analysis) -> list[tuple[str, str]]:
    """What qualifies every verdict, first: a prefill sweep, a cut run, lost workers, tiers left out."""
    view = a.workload
    items = [("Prefill:", view.prefill_sentence)] if view is not None and view.sweep else []
    stopped = ending.sentence(a)
    items += [("Stopped early:", stopped)] if stopped else []
    if a.run.warm_only:
        items.append(("Warm-up only:", ramps.warm_only_sentence(a.run.info)))
    lost = workers.lost_sentences(a.run)
    for label, sentence in (("Workers lost:", " ".join(lost)),
                            ("Generator overloaded:", health.exclusion_sentence(a.table, a.run.load_unit)),
                            ("Tiers too short:", delivery.answer(a.table))):
        if sentence:
            items.append((label, sentence))
    return items


def answer_items(a: Analysis) -> list[tuple[str, str]]:
    view = a.workload
    planned = plan_item(a)
    items = ([planned] if planned else []) + first_items(a)
    if a.climbs:
        items += [("Compute saturation:", a.compute.sentence), ("Queueing onset:", a.onset.sentence)]
    else:
        items += [(f"{a.kind.capitalize()}:", f"a {NAMES[a.kind]} run has no knee; its phases are compared "
                  "instead. " + " ".join(a.phase_sentences))]
    items += [
        ("Capacity:", capacity_sentence(a)),
        ("Saturation:", a.saturation.sentence),
        ("Queueing model:", " ".join(filter(None, (_strip(queueing.describe(a.fit, a.fit_note), "Fitted model: "),
                                                   a.agreement)))),
    ]
    if a.model_check is not None:
        items.append(("Model check:", a.model_check.sentence))
    items += _limit_items(a)
    items += _plan_items(a)
    if resources.answer_line(a):
        items.append(("Cost:", resources.answer_line(a)))
    if a.scenario_table is not None and len(a.scenario_table):
        items.append(("Scenarios:", a.scenario_sentence))
    if view is not None and view.prefill_fit is not None and not view.sweep:
        items.append(("Prefill:", view.prefill_sentence))
    if view is not None and int(view.short_outputs["short"].sum()) > 0:
        items.append(("Short outputs:", view.short_sentence))
    if a.totals is not None and (len(a.totals.by_kind) or a.totals.dropped):
        items.append(("Failures in the run:", " ".join(totals.reconcile_lines(a.totals))))
    if a.warnings:
        items.append(("Trust:", f"{len(a.warnings)} warning(s) at the end of this report qualify these figures."))
    return items


def _strip(sentence: str, prefix: str) -> str:
    return sentence[len(prefix):] if sentence.startswith(prefix) else sentence


def capacity_table(a: Analysis) -> Table:
    """Capacity under every stock profile (climbing runs only)."""
    rows = []
    e2e = a.no_first_token  # answers with no first token: the e2e bound, no output tokens (llmload.rules.latency)
    for cap in a.all_capacities:
        bound = cap.profile.e2e_p95_ms if e2e else cap.profile.ttft_p95_ms
        limit = "none" if bound is None else f"{bound:g} ms"
        rows.append((cap.profile.name, limit, capacity_text.cell(cap),
                     text.num(cap.ok_rps) + (" (sustained)" if cap.sustained else ""), text.num(cap.goodput_rps),
                     *(() if e2e else (text.num(cap.out_tok_s, 0),)), cap.limited_by))
    note = (f"Error and 429 rates bounded at {a.profile.max_error_rate:.0%} and {a.profile.max_429_rate:.0%}; "
            + _interpolation(len(a.table) == 1, a.run.per_request) + _burst_note(a))
    return Table(("SLO profile", "p95 e2e limit" if e2e else "p95 TTFT limit", f"capacity ({a.run.load_unit})",
                  "req/s", "goodput req/s", *(() if e2e else ("out tok/s",)), "limited by"), tuple(rows),
                 numeric_from=1, note=unstreamed.goodput_note(note) if e2e else note)


def _burst_note(a: Analysis) -> str:
    if not any(cap.sustained for cap in a.all_capacities):
        return ""
    rate, kind = plan_mod.sustained(a.limiter, a.ceiling)
    what = (f"the rate limiter's sustained {rate:.2f} req/s" if kind == "rate limiter" else
            f"the {rate:.2f} req/s the server accepted once it refused")
    return (f" '(sustained)': the tier got more, but no rate is named above {what} (an initial burst is not "
            "sustained).")


def _interpolation(one_load: bool, per_request: bool = True) -> str:
    how = "one load level, so nothing to interpolate. " if one_load else BRACKET
    if not per_request:
        return how + "Goodput needs per-request rows: not available from histograms."
    goodput = ("Goodput = requests/s that met every per-request criterion of the profile's objective (TTFT, TPOT, "
               "e2e limits: docs/gates.md), ")
    if one_load:
        return how + goodput + "at that load where it met the SLO."
    return how + goodput + "at the last tier within the SLO, or at the highest load when nothing broke."


BRACKET = ("capacity: the last tier that met the SLO; a-b when the first tier that missed it is more than one step "
           "further (1 user, 5% of the rate), with ~ an interpolation only where p95 TTFT grows smoothly between "
           "them. ")
