"""SLA watching: p99 per fixed window (a minute by default) against a threshold.

How it works: `timeline.windows` cuts the run into windows of `window_s` from the first
request; each window's p99 of the chosen latency (successful requests, warm-up included:
an SLA holds all the time) is compared with the threshold. A breach keeps its evidence:
window start (UTC), p99, p50, request count, and the tier(s) the window overlaps with
their target load (users, or req/s open loop), both from tiers.csv. Windows with fewer than
MIN_WINDOW_REQUESTS successes are marked "few" (their p99 is one or two requests) but
still judged.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from llmload.analysis import text
from llmload.analysis.read.run import Run
from llmload.analysis.tables import timeline
from llmload.analysis.text import utc

MIN_WINDOW_REQUESTS = 30
METRICS = {"ttft": "ttft_ms", "e2e": "e2e_ms"}


@dataclass(frozen=True)
class Watch:
    frame: pd.DataFrame
    """windows with a `breach` column"""
    threshold_ms: float
    metric: str
    window_s: float

    @property
    def breaches(self) -> pd.DataFrame:
        return self.frame[self.frame["breach"]]


def watch(run: Run, threshold_ms: float, metric: str = "ttft", window_s: float = 60.0) -> Watch:
    frame = timeline.windows(run, window_s, METRICS[metric])
    frame["breach"] = frame["p99_ms"] > threshold_ms
    return Watch(frame, threshold_ms, metric, window_s)


def watch_text(w: Watch, profile_name: str | None, load_unit: str = "users") -> str:
    where = f" ({profile_name} profile)" if profile_name else ""
    lines = [f"SLA watch: p99 {w.metric.upper()} per {w.window_s:g} s window against {w.threshold_ms:g} ms{where}; "
             "n = successful requests in the window."]
    headers = ("window start", "n", "p99 ms", "p50 ms", "tier", load_unit, "verdict")
    rows = []
    for r in w.frame.itertuples():
        verdict = "BREACH" if r.breach else ("ok" if r.ok else "no successes")
        if r.ok and r.ok < MIN_WINDOW_REQUESTS:
            verdict += " (few)"
        rows.append((utc(r.start_s), str(r.ok), text.ms(r.p99_ms), text.ms(r.p50_ms), r.tiers, r.load, verdict))
    lines.append(text.render(headers, rows, numeric_from=1))
    breaches = w.breaches
    if breaches.empty:
        lines.append(f"No breach: every window's p99 was at or under {w.threshold_ms:g} ms.")
    else:
        worst = breaches.loc[breaches["p99_ms"].idxmax()]
        first = breaches.iloc[0]
        lines.append(f"{len(breaches)} of {len(w.frame)} windows breached: first at {utc(first['start_s'])} "
                     f"(p99 {text.ms(first['p99_ms'])} ms), worst at {utc(worst['start_s'])} "
                     f"(p99 {text.ms(worst['p99_ms'])} ms, n={int(worst['ok'])}).")
    return "\n".join(lines)
