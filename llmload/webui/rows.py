"""Rows of the LLM tab: one per tier (with a shape) or per scenario (without), from Locust's stats.

A tier's row is the difference between the stats snapshots the shape took at the end of its
warm-up (or its start, while it warms up) and at its end (or now) (`sink.timeline.TierRecord`);
once the tier measures, verdicts.tier_row puts the live verdicts' figures in it, and the users really
applied in its Target cell when they fell below its target ('8 users (5.7 applied)', the report's rule).
Without a shape, one row per scenario, plus "all" when there are several, over what was measured: the stretches
between the run's warm-up windows (sink/warmup.py: each ramp and every user's first request), from
the per-scenario snapshots taken when each window opened and closed; while the first warm-up still
goes on, its figures so far, labelled "warm-up". Percentiles are `window.percentile_ms` over
Locust's 1 ms buckets: TTFT of the `TTFT` events, ITL mean of the `ITL` events (each request's mean
inter-token gap; p50/p99 over requests, the report's "ITL mean" figures), e2e of the LLM events' own response
times (every answer, embeddings and rerank included: their latency); output tokens/s is output
tokens (the LLM events' response_length) over the window's wall-clock seconds; empty answers (HTTP 200, no text)
are the `EMPTY` events, named in their own column (also in Other errors with --empty-answer-is-error).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from llmload.contract import EMPTY_TYPE, ITL_TYPE, METRIC_TYPES, TTFT_TYPE
from llmload.rules.applied import applied_text
from llmload.sink.timeline import Tier, TierRecord
from llmload.sink.warmup import RampWarmup
from llmload.sink.window import StatsSnapshot, TierWindow, diff, is_rate_limited, scenario_snapshots

E2E = "e2e"
"""run_rows' key for an LLM entry's own response times: the e2e latency of its requests"""

MISSING = "-"

COLUMNS = (
    ("tier", "Tier"),
    ("scenario", "Scenario"),
    ("target", "Target"),
    ("phase", "Window"),
    ("window_s", "Seconds"),
    ("requests", "Requests"),
    ("ttft_p50_ms", "TTFT p50 ms"),
    ("ttft_p95_ms", "TTFT p95 ms"),
    ("ttft_p99_ms", "TTFT p99 ms"),
    ("itl_mean_p50_ms", "ITL mean p50 ms"),
    ("itl_mean_p99_ms", "ITL mean p99 ms"),
    ("e2e_p50_ms", "E2E p50 ms"),
    ("e2e_p95_ms", "E2E p95 ms"),
    ("e2e_p99_ms", "E2E p99 ms"),
    ("out_tps", "Output tokens/s"),
    ("rate_limited", "429s"),
    ("other_errors", "Other errors"),
    ("empty_answers", "Empty answers"),
    ("slo", "SLO (p95 TTFT)"),
    ("verdict", "Knees"),
    ("generator", "Generator"),
)


def _ms(value: float | None) -> Any:
    return MISSING if value is None else round(value)


def gap_ms(value: float | None) -> Any:
    """An inter-token gap for a cell: 0.1 ms below 100 ms (gaps are often a few ms), whole ms above."""
    if value is None or value != value:
        return MISSING
    return round(value, 1) if value < 100 else round(value)


def _users(count: int) -> str:
    return f"{count} user" if count == 1 else f"{count} users"


def target_text(tier: Tier, applied: float | None = None) -> str:
    """'8 users', '2.5 req/s'; a tier --refine added says so: '6 users (refined)', '5 users (hold)', a confirmation
    window '5.33 req/s (confirm)'; `applied`:
    the users really applied to an under-applied tier (llmload.rules.applied): '8 users (5.7 applied)',
    '6 users (refined, 4.2 applied)'."""
    notes = [tier.refined if tier.refined in ("hold", "confirm") else "refined"] if tier.refined else []
    if tier.target_rps is not None:
        return f"{tier.target_rps:g} req/s" + (f" ({notes[0]})" if notes else "")
    if tier.target_users is None:
        return MISSING
    if applied is not None:
        notes.append(applied_text(applied))
    return _users(tier.target_users) + (f" ({', '.join(notes)})" if notes else "")


def tier_load(tier: Tier) -> float | None:
    """The tier's load on the knee plot's x axis: target req/s (open loop) or users."""
    if tier.target_rps is not None:
        return float(tier.target_rps)
    return float(tier.target_users) if tier.target_users is not None else None


@dataclass(frozen=True)
class TierFigures:
    """One tier's window as the tab, the charts and the verdicts see it."""

    record: TierRecord
    window: TierWindow
    phase: str
    """'warm-up' or 'measure', ' (done)' appended once the tier ended"""
    seconds: float

    @property
    def done(self) -> bool:
        return self.record.at_end is not None

    @property
    def measuring(self) -> bool:
        return self.phase.startswith("measure")

    @property
    def rps(self) -> float | None:
        return self.window.requests / self.seconds if self.seconds > 0 else None

    @property
    def out_tps(self) -> float | None:
        return self.window.output_tokens / self.seconds if self.seconds > 0 else None


def tier_figures(record: TierRecord, current: StatsSnapshot, now_s: float) -> TierFigures:
    """One tier's measure window, or the warm-up so far while it is still warming up."""
    if record.at_warm is not None:
        before, since_s, phase = record.at_warm, record.warm_s or record.tier.start_s, "measure"
    else:
        before, since_s, phase = record.at_start, record.tier.start_s, "warm-up"
    after, until_s = (record.at_end, record.end_s) if record.at_end is not None else (current, now_s)
    if record.at_end is not None:
        phase += " (done)"
    return TierFigures(record, diff(before, after), phase, max(0.0, (until_s or now_s) - since_s))


def _row(tier: str, scenario: str, target: str, phase: str, seconds: float, w: TierWindow) -> dict:
    return {
        "name": f"{tier}/{scenario}",
        "tier": tier, "scenario": scenario, "target": target, "phase": phase,
        "window_s": round(seconds, 1), "requests": w.requests,
        "ttft_p50_ms": _ms(w.ttft_ms(0.50)), "ttft_p95_ms": _ms(w.ttft_ms(0.95)), "ttft_p99_ms": _ms(w.ttft_ms(0.99)),
        "itl_mean_p50_ms": gap_ms(w.itl_ms(0.50)), "itl_mean_p99_ms": gap_ms(w.itl_ms(0.99)),
        "e2e_p50_ms": _ms(w.e2e_ms(0.50)), "e2e_p95_ms": _ms(w.e2e_ms(0.95)), "e2e_p99_ms": _ms(w.e2e_ms(0.99)),
        "out_tps": round(w.output_tokens / seconds, 1) if seconds > 0 else MISSING,
        "rate_limited": w.rate_limited, "other_errors": max(0, w.failures - w.rate_limited), "empty_answers": w.empty,
        "slo": MISSING, "verdict": "", "generator": MISSING,
    }


def figures_row(fig: TierFigures) -> dict:
    return _row(str(fig.record.tier.tier), "all", target_text(fig.record.tier), fig.phase, fig.seconds, fig.window)


def window_row(record: TierRecord, current: StatsSnapshot, now_s: float) -> dict:
    """One tier's row (see tier_figures)."""
    return figures_row(tier_figures(record, current, now_s))


def run_rows(stats: Any, users: int, seconds: float) -> list[dict]:
    """Whole-run rows (no shape): one per scenario, plus "all" when there are several."""
    per: dict[str, dict] = {}
    hists: dict[tuple[str, str], Counter[int]] = {}
    for entry in stats.entries.values():
        if entry.method in (TTFT_TYPE, ITL_TYPE):
            hists.setdefault((entry.name, entry.method), Counter()).update(entry.response_times)
        elif entry.method not in METRIC_TYPES:
            hists.setdefault((entry.name, E2E), Counter()).update(entry.response_times)  # the LLM entry: e2e
            row = per.setdefault(entry.name, {"requests": 0, "failures": 0, "tokens": 0, "limited": 0, "empty": 0})
            row["requests"] += entry.num_requests
            row["failures"] += entry.num_failures
            row["tokens"] += entry.total_content_length
    for entry in stats.entries.values():
        if entry.method == EMPTY_TYPE and entry.name in per:
            per[entry.name]["empty"] += entry.num_requests
    for error in stats.errors.values():
        if error.name in per and is_rate_limited(error):
            per[error.name]["limited"] += error.occurrences
    windows = {name: TierWindow(r["requests"], r["failures"], r["limited"], r["tokens"], 0,
                                dict(hists.get((name, TTFT_TYPE), {})), dict(hists.get((name, ITL_TYPE), {})),
                                r["empty"], dict(hists.get((name, E2E), {})))
               for name, r in sorted(per.items())}
    target = _users(users)
    rows = [_row("run", name, target, "whole run", seconds, w) for name, w in windows.items()]
    if len(rows) > 1:
        rows.append(_row("run", "all", target, "whole run", seconds, _summed(windows.values())))
    return rows


def measured_rows(warmup: RampWarmup, stats: Any, users: int, now_s: float) -> list[dict] | None:
    """No shape: per scenario, what was sent outside the warm-up windows (None: nothing measured yet)."""
    spans = warmup.measure_spans(scenario_snapshots(stats), now_s)
    if not spans:
        return None
    waiting = warmup.progress()
    phase = "measure (warm-up excluded" + (f"; new ramp warming up: {waiting})" if waiting else ")")
    names = sorted({name for before, after, _ in spans for name in (*before, *after)})
    totals = {name: _summed(diff(before.get(name, StatsSnapshot()), after.get(name, StatsSnapshot()))
                            for before, after, _ in spans) for name in names}
    seconds = sum(span_s for _, _, span_s in spans)
    rows = [_window_row(name, _users(users), phase, seconds, w) for name, w in totals.items() if w.requests]
    if len(rows) > 1:
        rows.append(_window_row("all", _users(users), phase, seconds, _summed(totals.values())))
    return rows


def _summed(windows: Any) -> TierWindow:
    ttft: Counter[int] = Counter()
    itl: Counter[int] = Counter()
    e2e: Counter[int] = Counter()
    requests = failures = limited = tokens = dropped = empty = 0
    for w in windows:
        ttft.update(w.ttft_counts)
        itl.update(w.itl_counts)
        e2e.update(w.e2e_counts)
        requests, failures, limited = requests + w.requests, failures + w.failures, limited + w.rate_limited
        tokens, dropped, empty = tokens + w.output_tokens, dropped + w.dropped, empty + w.empty
    return TierWindow(requests, failures, limited, tokens, dropped, dict(ttft), dict(itl), empty, dict(e2e))


def _window_row(name: str, target: str, phase: str, seconds: float, w: TierWindow) -> dict:
    return _row("run", name, target, phase, seconds, w)
