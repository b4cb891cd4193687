"""`python -m analysis check RUN_DIR --slo NAME`: the SLO gate, with exit codes CI can act on.

How it works: the run is loaded and tabulated (`tiers.tier_table`, goodput from `goodput.py`);
only tiers that ran long enough count (not cut too short, `windows.py`); a tier where the load
generator itself was overloaded (`tiers.py`) cannot be judged: its criteria say so. Which tier is judged:
- `--at-load N`: the tier whose target (or applied) load is N; none -> cannot judge;
- `--capacity-at-least N`: tiers in load order; the capacity is the highest load up to which
  every tier meets every criterion; pass when it is >= N; the criteria are shown at the first
  tier that broke one (or at the capacity tier when none broke);
- `--plan-at-least RPS`: the plan the run proved (report/plan_gate.py: it needs the whole analysis);
- neither, on a run of one tier: that tier; on a run of several: its capacity under the objective (as
  `--capacity-at-least` the lowest load): PASS when the lowest load met every criterion, the headline naming
  the highest load up to which every tier did and the first that did not, the criteria shown at the capacity
  tier (at the lowest tier when even that broke one). A step run that found its knee passes: the question
  is where the SLO holds, not whether the load past the knee meets it (`--at-load` asks that).
Each criterion is PASS, FAIL or CANNOT JUDGE (too few successes for its percentile:
`llmload.rules.gate`, which decides every criterion: a tier with no success at all fails its latency
criteria once 20 attempts were sent). Exit code: 0 every criterion passed, 1 one failed, 2 nothing failed but
something could not be judged (or the folder is not a run). `--junit PATH` writes the
verdicts as a JUnit XML test suite, one test case per criterion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

import pandas as pd

from llmload.analysis.read.histograms import Histograms
from llmload.analysis.read.run import counting_empty_as_error, load_run, run_api
from llmload.analysis.tables import samples, tiers
from llmload.analysis.text import load_with_unit
from llmload.analysis.verdicts import goodput
from llmload.rules import gate
from llmload.rules.slo import HIST_METRICS, LATENCY, POOLED, STOCK, Criterion, Objective, default_profile

PASS, FAIL, CANNOT, EXIT = gate.PASS, gate.FAIL, gate.CANNOT, gate.EXIT


@dataclass(frozen=True)
class Verdict:
    criterion: Criterion
    status: str
    value: float
    tier: int | None
    load: str
    why: str = ""

    def line(self) -> str:
        c = self.criterion
        shown = c.unit_text(self.value) if not math.isnan(self.value) else "-"
        rel = ">=" if c.at_least else "<="
        where = f"tier {self.tier} ({self.load})" if self.tier is not None else "no tier"
        tail = f"  [{self.why}]" if self.why else ""
        return f"{self.status:<12}  {c.label:<28} {shown:>12}  {rel} {c.unit_text(c.limit):<12} {where}{tail}"


def measure(row: pd.Series, measured: pd.DataFrame | None, c: Criterion,
            hists: Histograms | None) -> tuple[float, int, str, str]:
    """A criterion's value on one tier: (value, how many values are behind it, what they are, why it cannot be
    had at all or ''). `measured` None: a run recorded with --ship histograms (every latency from `hists`)."""
    tier = int(row["tier"])
    if c.metric in POOLED:
        if hists is None or not hists.has(POOLED[c.metric]):
            return math.nan, 0, "gaps", "the run has no histograms.csv of inter-token gaps"
        metric = POOLED[c.metric]
        return hists.percentile(tier, metric, goodput.percentile_of(c)), hists.count(tier, metric), "gaps", ""
    if c.metric in LATENCY and measured is None:
        value = hists.percentile(tier, HIST_METRICS[c.metric], goodput.percentile_of(c)) if hists else math.nan
        return value, int(row["ok"]), "successes", ""
    if c.metric == "goodput_rps" and measured is None:
        return math.nan, int(row["sent"]), "requests", "goodput needs per-request rows (record with --ship rows)"
    value = float(goodput.criterion_values(pd.DataFrame([row]), measured, c).iloc[0])
    return value, int(row["ok"] if c.metric in LATENCY else row["sent"]), \
        "successes" if c.metric in LATENCY else "requests", ""


def judge_tier(row: pd.Series, measured: pd.DataFrame | None, obj: Objective, unit: str,
               hists: Histograms | None = None) -> list[Verdict]:
    """Every criterion of the objective on one tier (llmload.rules.gate decides each)."""
    out = []
    load = load_with_unit(row["load"], unit)
    for c in obj.criteria:
        value, have, what, missing = measure(row, measured, c, hists)
        status, why = gate.criterion_status(c, value, have, what, missing, int(row["ok"]), int(row["sent"]),
                                            bool(row.get("lag_material", False)))
        out.append(Verdict(c, status, value, int(row["tier"]), load, why))
    return out


def status_of(verdicts: list[Verdict]) -> str:
    return gate.status_of([v.status for v in verdicts])


@dataclass(frozen=True)
class Check:
    objective: Objective
    verdicts: tuple[Verdict, ...]
    status: str
    headline: str


def run_check(run_dir: str, obj: Objective | None, at_load: float | None = None,
              capacity_at_least: float | None = None, empty_is_error: bool = False) -> Check:
    """The gate on a run folder; `obj` None: the stock objective of the run's API (chat; embeddings, rerank:
    theirs); `empty_is_error`: count its empty answers as errors whatever run.json says."""
    run = load_run(run_dir)
    obj = obj if obj is not None else STOCK[default_profile(run_api(run))]
    if empty_is_error:
        run = counting_empty_as_error(run)
    table = tiers.tier_table(run)
    measured = samples.verdict_rows(run) if run.per_request else None  # --ship histograms: from the histograms
    if measured is not None:
        goodput.add_goodput(table, measured, obj)
    return judge(run.name, run.load_unit, table, measured, obj, at_load, capacity_at_least, run.histograms)


def judge(name: str, unit: str, table: pd.DataFrame, measured: pd.DataFrame | None, obj: Objective,
          at_load: float | None = None, capacity_at_least: float | None = None,
          hists: Histograms | None = None) -> Check:
    """The gate on a tier table that already has the objective's goodput (`goodput.add_goodput`); `measured`
    None and `hists`: a run recorded with --ship histograms."""
    rows = table[~table["short"].astype(bool) & (table["sent"] > 0)].sort_values("load", kind="stable")
    if rows.empty:
        return Check(obj, (), CANNOT, f"cannot judge {name}: no tier with measured requests")
    if capacity_at_least is not None:
        return _capacity(rows, measured, obj, unit, capacity_at_least, hists)
    if at_load is None and rows["load"].nunique() > 1:
        return _where_it_holds(rows, measured, obj, unit, hists)
    if at_load is not None:
        hit = rows[(rows["load_target"] == at_load) | (rows["load"] == at_load)]
        if hit.empty:
            tested = ", ".join(f"{v:g}" for v in rows["load_target"])
            return Check(obj, (), CANNOT, f"cannot judge: no tier at {load_with_unit(at_load, unit)} "
                                          f"(tested: {tested} {unit})")
        row = hit.iloc[-1]
    else:
        row = rows.iloc[-1]
    verdicts = judge_tier(row, measured, obj, unit, hists)
    status = status_of(verdicts)
    return Check(obj, tuple(verdicts), status, f"SLO {obj.name} at tier {int(row['tier'])} "
                 f"({load_with_unit(row['load'], unit)}): {status}")


def _capacity(rows: pd.DataFrame, measured: pd.DataFrame | None, obj: Objective, unit: str, need: float,
              hists: Histograms | None) -> Check:
    capacity, shown = None, []
    for _, row in rows.iterrows():
        shown = judge_tier(row, measured, obj, unit, hists)
        if status_of(shown) != PASS:
            break
        capacity = float(row["load"])
    reached = capacity is not None and capacity >= need
    status = PASS if reached else CANNOT if status_of(shown) == CANNOT else FAIL
    have = load_with_unit(capacity, unit) if capacity is not None else "below the lowest tested load"
    return Check(obj, tuple(shown), status, f"SLO {obj.name} capacity: {have} (required: at least "
                 f"{load_with_unit(need, unit)}): {status}")


def _where_it_holds(rows: pd.DataFrame, measured: pd.DataFrame | None, obj: Objective, unit: str,
                    hists: Histograms | None) -> Check:
    """The default of a run of several tiers (module docstring)."""
    held: tuple[pd.Series, list[Verdict]] | None = None
    broke: tuple[pd.Series, list[Verdict]] | None = None
    for _, row in rows.iterrows():
        verdicts = judge_tier(row, measured, obj, unit, hists)
        if status_of(verdicts) != PASS:
            broke = (row, verdicts)
            break
        held = (row, verdicts)
    if held is None:
        assert broke is not None  # rows is not empty (judge)
        row, verdicts = broke  # the lowest load: it broke a criterion, or could not be judged
        status = status_of(verdicts)
        return Check(obj, tuple(verdicts), status, f"SLO {obj.name}: not met at the lowest load, "
                     f"{load_with_unit(row['load'], unit)} (tier {int(row['tier'])}): {status}")
    row, verdicts = held
    past = (f"; {load_with_unit(broke[0]['load'], unit)} (tier {int(broke[0]['tier'])}) "
            f"{'misses it' if status_of(broke[1]) == FAIL else 'cannot be judged'}" if broke is not None
            else "; every tested load meets it")
    return Check(obj, tuple(verdicts), PASS, f"SLO {obj.name} holds up to {load_with_unit(row['load'], unit)} "
                 f"(tier {int(row['tier'])}){past}: {PASS}")


def render(check: Check) -> str:
    lines = [check.headline]
    lines += [v.line() for v in check.verdicts]
    if check.objective.source:
        lines.append(f"objective {check.objective.name}: {check.objective.source}")
    return "\n".join(lines)


def junit(check: Check) -> str:
    """The verdicts as a JUnit XML test suite (one test case per criterion)."""
    fails = sum(v.status == FAIL for v in check.verdicts)
    skipped = sum(v.status == CANNOT for v in check.verdicts)
    cases = []
    for v in check.verdicts:
        name = quoteattr(f"{v.criterion.label} at tier {v.tier}")
        body = ""
        if v.status == FAIL:
            body = f"<failure message={quoteattr(v.line())}/>"
        elif v.status == CANNOT:
            body = f"<skipped message={quoteattr(v.line())}/>"
        cases.append(f'  <testcase classname={quoteattr("slo." + check.objective.name)} name={name}>{body}'
                     "</testcase>")
    if not check.verdicts:
        cases.append(f'  <testcase classname="slo" name="run"><error message={quoteattr(check.headline)}/>'
                     "</testcase>")
    head = (f'<testsuite name={quoteattr("llmload SLO " + check.objective.name)} tests="{max(len(cases), 1)}" '
            f'failures="{fails}" errors="{0 if check.verdicts else 1}" skipped="{skipped}">')
    return "\n".join(['<?xml version="1.0" encoding="utf-8"?>', head, *cases, "</testsuite>"]) + "\n"
