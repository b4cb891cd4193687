"""`python -m analysis check RUN --baseline OLD`: the baseline gate, tier by tier and figure by figure.

How it works: both runs come as summary.json tier records (`tiers[]`, docs/summary.md; `report/baseline.py`
reads a run folder or a summary.json file). Tiers are matched by the load asked (`load_target`: users, or req/s
open loop), the k-th tier at a load with the k-th at the same load in the other run; tiers cut too short are
left out; runs in different load units cannot be compared. On every matched tier each figure of METRICS
(TTFT p50/p99, per-request mean ITL p50/p99, e2e p99 with their bootstrap intervals, output tokens/s with its
batch-means interval, the error rate with Wilson's interval from its counts) is judged by the rule book
(`llmload.rules.regression`: a FAIL needs worse by more than the threshold *and* beyond both intervals). The gate
fails on any regression, passes when something was judged and nothing regressed, and cannot judge (exit 2)
when nothing could be judged (no common tier, no figure with enough values). `junit` writes one test case per
tier x figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

from llmload.analysis.tables.stats import wilson
from llmload.rules import regression
from llmload.rules.regression import CANNOT, FAIL, PASS, Figure

EXIT = {PASS: 0, FAIL: 1, CANNOT: 2}


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    group: str
    """the tier record's field (`ttft_ms`), or '' for a top-level figure"""
    name: str
    """the figure in it (`p99`), or the top-level field (`out_tok_s`)"""
    percentile: float | None
    higher_is_worse: bool = True
    unit: str = "ms"


METRICS = (
    Metric("ttft_p50", "TTFT p50", "ttft_ms", "p50", 50),
    Metric("ttft_p99", "TTFT p99", "ttft_ms", "p99", 99),
    Metric("itl_p50", "ITL p50", "itl_mean_ms", "p50", 50),
    Metric("itl_p99", "ITL p99", "itl_mean_ms", "p99", 99),
    Metric("e2e_p99", "e2e p99", "e2e_ms", "p99", 99),
    Metric("out_tok_s", "output tok/s", "", "out_tok_s", None, higher_is_worse=False, unit="tok/s"),
    Metric("error_rate", "error rate", "", "error_rate", None, unit="%"),
)
"""what the gate compares (ITL: the percentile over requests of each request's mean gap, as the SLO's ITL)"""


def figure(record: dict, m: Metric) -> Figure:
    """One metric of one tier record (None fields are NaN)."""
    def num(value) -> float:
        return float(value) if isinstance(value, (int, float)) else math.nan

    if m.key == "error_rate":
        sent = int(record.get("sent") or 0)
        rate = num(record.get("error_rate"))
        low, high = wilson(round(rate * sent), sent) if math.isfinite(rate) else (math.nan, math.nan)
        return Figure(rate, low, high, sent)
    part = (record.get(m.group) or {}) if m.group else record
    count = int(record.get("ok") or 0)
    return Figure(num(part.get(m.name)), num(part.get(f"{m.name}_ci_low")), num(part.get(f"{m.name}_ci_high")), count)


@dataclass(frozen=True)
class Line:
    tier: int
    load: str
    metric: Metric
    old: Figure
    new: Figure
    status: str
    why: str

    def shown(self, fig: Figure) -> str:
        def fmt(v: float) -> str:
            if not math.isfinite(v):
                return "-"
            return f"{100 * v:.2f}%" if self.metric.unit == "%" else f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"

        unit = "" if self.metric.unit == "%" else f" {self.metric.unit}"
        return f"{fmt(fig.value)}{unit} [{fmt(fig.low)}-{fmt(fig.high)}]"

    def text(self) -> str:
        ch = regression.change(self.old.value, self.new.value)
        delta = f"{100 * ch:+.1f}%" if math.isfinite(ch) else "+inf" if ch > 0 else "-"
        where = f"tier {self.tier} ({self.load})"
        return (f"{self.status:<12}  {where:<20} {self.metric.label:<13} "
                f"{self.shown(self.old)} -> {self.shown(self.new)}  {delta}  [{self.why}]")


@dataclass(frozen=True)
class Regression:
    baseline: str
    run: str
    threshold: float
    lines: tuple[Line, ...]
    status: str
    headline: str


def match(old: list[dict], new: list[dict]) -> list[tuple[dict, dict]]:
    """(baseline record, new record) pairs at the same load asked, in the new run's tier order (module docstring)."""
    def keyed(records: list[dict]) -> dict[tuple[float, int], dict]:
        seen: dict[float, int] = {}
        out = {}
        for r in records:
            if r.get("short") or not isinstance(r.get("load_target"), (int, float)):
                continue
            load = float(r["load_target"])
            seen[load] = seen.get(load, 0) + 1
            out[(load, seen[load])] = r
        return out

    olds, news = keyed(old), keyed(new)
    return [(olds[k], r) for k, r in news.items() if k in olds]


def judge(baseline: tuple[str, str, list[dict]], run: tuple[str, str, list[dict]], threshold: float) -> Regression:
    """The gate: `baseline` and `run` are (name, load unit, tier records)."""
    (old_name, old_unit, old_tiers), (name, unit, tiers) = baseline, run
    head = f"against baseline {old_name} (max regression {100 * threshold:g}%)"
    if old_unit != unit:
        return Regression(old_name, name, threshold, (), CANNOT, f"cannot judge {name} {head}: the baseline's load "
                          f"is in {old_unit}, this run's in {unit}")
    pairs = match(old_tiers, tiers)
    if not pairs:
        asked = ", ".join(f"{r.get('load_target'):g}" for r in tiers if isinstance(r.get("load_target"), (int, float)))
        was = ", ".join(f"{r.get('load_target'):g}" for r in old_tiers
                        if isinstance(r.get("load_target"), (int, float)))
        return Regression(old_name, name, threshold, (), CANNOT, f"cannot judge {name} {head}: no tier at a load "
                          f"both runs asked (this run: {asked or 'none'}; baseline: {was or 'none'} {unit})")
    lines = []
    for old, new in pairs:
        left_out = not (old.get("judged", True) and new.get("judged", True))
        load = f"{float(new['load_target']):g} {unit}"
        for m in METRICS:
            a, b = figure(old, m), figure(new, m)
            status, why = regression.verdict(a, b, threshold, m.higher_is_worse, m.percentile, left_out,
                                             timed=m.key != "error_rate")
            lines.append(Line(int(new["tier"]), load, m, a, b, status, why))
    status = regression.status_of([line.status for line in lines])
    word = {FAIL: "REGRESSION", PASS: "PASS", CANNOT: "CANNOT JUDGE"}[status]
    return Regression(old_name, name, threshold, tuple(lines), status, f"{name} {head}: {word}")


def render(result: Regression) -> str:
    """The headline, then one line per tier x figure: old -> new with their 95 % intervals, the change, why."""
    return "\n".join([result.headline, *(line.text() for line in result.lines)])


def junit(result: Regression) -> str:
    """The lines as a JUnit XML test suite: one test case per tier x figure (failure: a regression, skipped:
    cannot judge); an error case when nothing could be compared."""
    cases = []
    for line in result.lines:
        body = f"<failure message={quoteattr(line.text())}/>" if line.status == FAIL else \
            f"<skipped message={quoteattr(line.text())}/>" if line.status == CANNOT else ""
        cases.append(f"  <testcase classname={quoteattr(f'regression.tier{line.tier}')} "
                     f"name={quoteattr(f'{line.metric.label} at tier {line.tier} ({line.load})')}>{body}</testcase>")
    if not result.lines:
        cases.append(f'  <testcase classname="regression" name="baseline"><error message={quoteattr(result.headline)}'
                     "/></testcase>")
    fails = sum(line.status == FAIL for line in result.lines)
    skipped = sum(line.status == CANNOT for line in result.lines)
    head = (f'<testsuite name={quoteattr(f"llmload regression against {result.baseline}")} tests="{len(cases)}" '
            f'failures="{fails}" errors="{0 if result.lines else 1}" skipped="{skipped}">')
    return "\n".join(['<?xml version="1.0" encoding="utf-8"?>', head, *cases, "</testsuite>"]) + "\n"
