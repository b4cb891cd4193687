"""The web UI's verdicts: the report's, on the tiers measured so far (run/watch/verdicts.py, the rule book).

How it works: `live_view(environment)` asks the run for its verdicts on the ended tiers whose generator
kept up, and words them for the page: the queueing onset (the knee: where requests start to wait; the
charts mark it), the compute saturation (where added load stops adding throughput), the saturation
branch of the highest tier, the capacity under the run's SLO profile, and per tier its SLO cell (what it
broke of the profile, as the capacity judges it). The sentences are the report's own for the same tiers;
the report, which has every row, stays the reference. Beside the verdicts it carries each tier's ITL mean
p50/p99 from the same live book (the LLM tab's columns) and gives the charts the TPOT p95 bound of the
profile's objective (drawn on the ITL chart; no live verdict judges it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llmload.rules import capacity_text, confirm, trust
from llmload.rules import plan as plan_mod
from llmload.rules.slo import SloProfile, objective_for, slo_text
from llmload.rules.verdicts import Verdicts
from llmload.run.state import run_state
from llmload.run.watch.verdicts import live_tiers, live_verdicts, live_windows, load_unit, profile, slo_cell
from llmload.webui.rows import gap_ms, target_text

NOTHING_YET = "no tier has ended yet"


@dataclass(frozen=True)
class LiveView:
    slo: SloProfile
    verdicts: Verdicts | None = None
    """None: no tier of a shape yet"""
    cells: dict[int, tuple[str, str]] = field(default_factory=dict)
    """tier -> its SLO cell ('pass' | 'fail' | 'none', text)"""
    unit: str = "users"
    """the load's unit: 'users' or 'req/s' (open loop)"""
    generator: dict[int, tuple[float, float, float, float]] = field(default_factory=dict)
    """tier -> the generator's lag in its window (sink/live.py LiveBook.generator: loop lag p99 of its attempts,
    schedule lag p99, health.csv's loop lag p95, CPU p95)"""
    itl_mean: dict[int, tuple[float, float]] = field(default_factory=dict)
    """tier -> ITL mean p50 and p99 of its measure window (over its successful requests, of each one's mean
    inter-token gap; the live book's histograms, as the report reads them; NaN: none yet)"""
    windows: dict[int, tuple[str, str]] = field(default_factory=dict)
    """confirmation window tier -> its verdict ('held' | 'broken' | 'unshown' | 'running', text): the rule book's
    (llmload.rules.confirm)"""
    plan: str = ""
    """the plan sentence, the report's first answer on the windows so far (llmload.rules.plan.sentence)"""
    window_tiers: dict[int, Any] = field(default_factory=dict)
    """confirmation window tier -> its live figures (a rule-book Tier: the LLM tab's row, its generator column)"""

    def entry(self, name: str) -> dict:
        """data.json's entry of one verdict: kind, text and tier (the web page's words)."""
        v = self.verdicts
        if v is None or not v.judged:
            return {"kind": "none", "text": f"{LABELS[name]}: {NOTHING_YET}", "tier": None}
        if name == "plan":
            return {"kind": "plan", "text": f"Plan: {self.plan}", "tier": None}
        if name == "saturation":
            return {"kind": v.saturation.kind, "text": f"Saturation: {v.saturation.sentence}",
                    "tier": v.saturation.tier}
        if name == "capacity":
            return {"kind": v.capacity.status, "text": capacity_text.describe(v.capacity, self.unit), "tier": None}
        point = v.onset if name == "knee" else v.compute
        kind = ("knee" if point.reached else "no knee") if name == "knee" else point.status
        return {"kind": kind, "text": f"{LABELS[name]}: {point.sentence}", "tier": point.tier}

    def marks(self, tier_no: int) -> str:
        """The LLM tab's verdict column of a tier: the knees it is."""
        v = self.verdicts
        if v is None:
            return ""
        names = [label for label, point in (("compute saturation", v.compute), ("queueing onset", v.onset))
                 if point.reached and point.tier == tier_no]
        return ", ".join(names)


LABELS = {"knee": "Queueing onset", "compute": "Compute saturation", "saturation": "Saturation",
          "capacity": "Capacity", "plan": "Plan"}


def live_view(environment: Any, now_s: float | None = None) -> LiveView:
    slo = profile(environment)
    records = run_state(environment).timeline.records
    if not records:
        return LiveView(slo)
    v = live_verdicts(environment, now_s, slo)
    done = {r.tier.tier: r.at_warm is not None for r in records}
    cells = {t.tier: slo_cell(t, slo, done.get(t.tier, True)) for t in v.tiers}
    book = run_state(environment).sink.live
    ends = {r.tier.tier: r.end_s for r in records}
    confirming = [r for r in records if r.tier.refined == "confirm"]
    shown = [*v.tiers, *live_tiers(environment, now_s, confirming)] if confirming else list(v.tiers)
    generator = {t.tier: book.generator(t.tier, ends.get(t.tier)) for t in shown}
    itl_mean = {t.tier: (book.measured(t.tier, "itl_mean_ms", 0.5), book.measured(t.tier, "itl_mean_ms", 0.99))
                for t in shown}
    windows, plan = _confirmation(environment, v, slo, now_s)
    load_tiers = [r for r in records if r.tier.refined != "confirm"]
    return LiveView(slo, v, cells, load_unit(load_tiers or records), generator, itl_mean, windows, plan,
                    {t.tier: t for t in shown if t.tier in windows})


def _confirmation(environment: Any, v: Verdicts, slo: SloProfile,
                  now_s: float | None) -> tuple[dict[int, tuple[str, str]], str]:
    """The confirmation windows' verdicts (a window still sending is 'running') and the plan they prove so far."""
    state = run_state(environment)
    windows = live_windows(environment, slo, now_s)
    records = state.timeline.records
    running = bool(windows) and records[-1].tier.refined == "confirm" and records[-1].end_s is None
    judged = windows[:-1] if running else windows
    cells = {w.tier: (w.status, ("held: " + w.figures) if w.held else f"{w.status.upper()}: {w.what}")
             for w in judged}
    if running:
        cells[windows[-1].tier] = ("running", f"running at {windows[-1].rate:.3g} req/s")
    proof = confirm.outcome(judged[0].rate if judged else float("nan"), judged)
    info = (state.shape_info or {}).get("confirm") or {}
    skipped = str(info.get("skipped") or "")
    if not judged and info.get("on") and state.timeline.run_end_s is None:
        skipped = "the run confirms it after its tiers" if not running else "its first window is running"
    return cells, plan_mod.sentence(v.basis, proof, v.capacity, v.limiter, skipped)


def tier_row(row: dict, fig: Any, view: LiveView) -> dict:
    """A tier's LLM-tab row: once the tier measures, its figures are the verdicts' (the live book), its Target
    cell says the users really applied when they fell short ('8 users (5.7 applied)': the load the verdicts
    judge, llmload.rules.applied), its SLO cell and knees the verdicts', and its generator column the rule
    book's trust (llmload.rules.trust)."""
    tier_no = fig.record.tier.tier
    tier = next((t for t in view.verdicts.tiers if t.tier == tier_no), None) if view.verdicts else None
    tier = view.window_tiers.get(tier_no, tier)
    if tier is not None and fig.measuring:
        row.update(requests=tier.sent, ttft_p50_ms=_ms(tier.ttft_p50_ms), ttft_p95_ms=_ms(tier.ttft_p95_ms),
                   ttft_p99_ms=_ms(tier.ttft_p99_ms), e2e_p50_ms=_ms(tier.e2e_p50_ms), e2e_p95_ms=_ms(tier.e2e_p95_ms),
                   e2e_p99_ms=_ms(tier.e2e_p99_ms), rate_limited=tier.n_429,
                   other_errors=tier.failed - tier.n_429, empty_answers=tier.n_empty,
                   out_tps=round(tier.out_tok_s, 1) if tier.out_tok_s == tier.out_tok_s else "-")
        row["rps"] = round(tier.rps, 2) if tier.rps == tier.rps else None
        p50_ms, p99_ms = view.itl_mean.get(tier_no, (float("nan"), float("nan")))
        row.update(itl_mean_p50_ms=gap_ms(p50_ms), itl_mean_p99_ms=gap_ms(p99_ms))
        row["applied_users"] = round(tier.applied_users, 2) if tier.applied_users == tier.applied_users else None
        if tier.under_applied:
            row.update(target=target_text(fig.record.tier, tier.load), load=tier.load, under_applied=True)
    row["slo"] = view.cells.get(tier_no, view.windows.get(tier_no, ("none", "-")))[1]
    row["verdict"] = view.marks(tier_no)
    row["generator"] = _generator(view, tier) if tier is not None else "-"
    return row


def _ms(value: float) -> Any:
    return round(value) if value == value else "-"


def _generator(view: LiveView, tier: Any) -> str:
    nan = float("nan")
    loop_ms, schedule_ms, health_ms, cpu = view.generator.get(tier.tier, (nan, nan, nan, nan))
    if not trust.lag_material(loop_ms, schedule_ms, health_ms, cpu, tier.ttft_p50_ms):
        return "ok"
    figures = [f"{label} {value:.0f}{unit}" for label, value, unit in (
        ("loop lag p99", loop_ms, " ms"), ("schedule lag p99", schedule_ms, " ms"), ("loop lag (health) p95",
                                                                                      health_ms, " ms"),
        ("CPU p95", cpu, "%")) if value == value]
    return "UNTRUSTWORTHY: " + ", ".join(figures) + " (left out of the verdicts)"


def profile_text(slo: SloProfile) -> str:
    """'chat (p95 TTFT <= 500 ms, errors <= 1%, 429s <= 1%)'."""
    return f"{slo.name} ({slo_text(slo)})"


def tpot_p95_bound_ms(slo: SloProfile) -> float | None:
    """The TPOT p95 bound of the profile's objective (llmload.rules.slo.objective_for: what the report's goodput and
    `analysis check` count), None when it has none. The live SLO cells judge the profile only (TTFT, errors, 429s)."""
    criterion = objective_for(slo).get("tpot")
    return criterion.limit if criterion is not None and criterion.percentile == 95.0 else None
