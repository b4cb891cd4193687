"""Spike, soak and schedule runs: compare phases instead of looking for a knee.

These shapes do not raise the load tier by tier, so a knee or a capacity curve would be
meaningless. Instead:
- spike (tiers: base, burst, base): baseline vs during vs after, each from its measured
  window; and the recovery time: from the end of the burst, windows of `window_s` over
  every successful request (warm-up included: recovery is what it measures); the server has
  recovered at the start of the first window from which on every window's p99 TTFT is back
  within the baseline band (baseline p99, upper end of its CI, x (1 + PHASE_TOLERANCE), the
  knee rule's band).
- soak (one load held, tiers are time windows) and schedule (loads follow a time-of-day
  pattern): drift of p99 TTFT and output tokens/s from the first to the last window of the
  same load. Drift is called when p99 TTFT moves by more than P99_DRIFT or tokens/s by more
  than TOKS_DRIFT; a schedule whose load levels each ran once cannot show drift.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.text import load_with_unit
from llmload.rules.limits import PHASE_TOLERANCE, TOKS_DRIFT

P99_DRIFT = 0.25
SPIKE_LABELS = ("before (baseline)", "during the spike", "after")


def phase_table(run: Run, table: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Per tier in time order: phase label, start offset, and the figures phases are compared on."""
    tiers = run.tiers.sort_values("start_s")
    t0 = float(tiers["start_s"].iloc[0])
    rows = table.set_index("tier").loc[tiers["tier"]].reset_index()
    if kind == "spike" and len(rows) == 3:
        labels = list(SPIKE_LABELS)
    elif kind == "soak":
        labels = [f"window {i + 1}" for i in range(len(rows))]
    else:
        labels = [f"step {i + 1}" for i in range(len(rows))]
    return pd.DataFrame({
        "tier": rows["tier"], "phase": labels, "start_offset_s": (tiers["start_s"].to_numpy() - t0),
        "load": rows["load"], "ok": rows["ok"], "ttft_p50_ms": rows["ttft_p50_ms"],
        "ttft_p99_ms": rows["ttft_p99_ms"], "ok_rps": rows["ok_rps"], "out_tok_s": rows["out_tok_s"],
        "failed_rate": (rows["failed"] / rows["sent"].where(rows["sent"] > 0)).fillna(0.0),
    })


def baseline_band_ms(table: pd.DataFrame, tier: int) -> float:
    row = table.set_index("tier").loc[tier]
    hi = row["ttft_p99_ci_hi_ms"] if not math.isnan(row["ttft_p99_ci_hi_ms"]) else row["ttft_p99_ms"]
    return float(hi) * (1.0 + PHASE_TOLERANCE)


def recovery_s(run: Run, band_ms: float, after_start_s: float, window_s: float) -> tuple[float | None, float]:
    """(seconds from after_start_s until p99 TTFT stays within band_ms, or None; seconds observed)."""
    ok = run.samples[run.samples["ok"] & (run.samples["ts_start_s"] >= after_start_s)]
    if ok.empty:
        return None, 0.0
    offset = ok["ts_start_s"].to_numpy() - after_start_s
    bins = pd.Series(np.floor(offset / window_s).astype(int), index=ok.index)
    p99 = ok["ttft_ms"].groupby(bins).quantile(0.99).sort_index()
    observed = float(offset.max())
    above = p99 > band_ms
    if not above.any():
        return 0.0, observed
    last_bad = int(above[above].index.max())
    if last_bad == int(p99.index.max()):
        return None, observed
    return float((last_bad + 1) * window_s), observed


def spike_sentences(run: Run, table: pd.DataFrame, phases: pd.DataFrame) -> list[str]:
    if len(phases) != 3:
        return ["A spike run has three tiers (base, burst, base); this one has "
                f"{len(phases)}: no before/during/after comparison."]
    unit = run.load_unit
    before, during, after = (phases.iloc[i] for i in range(3))
    out = [f"p99 TTFT {_ms(before['ttft_p99_ms'])} before ({load_with_unit(before['load'], unit)}), "
           f"{_ms(during['ttft_p99_ms'])} during the spike ({load_with_unit(during['load'], unit)}), "
           f"{_ms(after['ttft_p99_ms'])} after; failed {before['failed_rate']:.1%} / {during['failed_rate']:.1%} "
           f"/ {after['failed_rate']:.1%}."]
    if before["ok"] == 0:
        return out + ["No successful baseline request: recovery cannot be judged."]
    band = baseline_band_ms(table, int(before["tier"]))
    after_start = float(run.tiers.set_index("tier").loc[int(after["tier"]), "start_s"])
    window = recovery_window_s(run, after_start)
    took, observed = recovery_s(run, band, after_start, window)
    if took is None:
        out.append(f"Not recovered: p99 TTFT was still above the baseline band (<= {band:.0f} ms) at the end of "
                   f"the run, {observed:.0f} s after the spike ({window:g} s windows).")
    elif took == 0:
        out.append(f"Recovered at once: every {window:g} s window after the spike had p99 TTFT within the "
                   f"baseline band (<= {band:.0f} ms).")
    else:
        out.append(f"Recovered {took:g} s after the spike ended: from then on every {window:g} s window had "
                   f"p99 TTFT within the baseline band (<= {band:.0f} ms).")
    return out


def recovery_window_s(run: Run, after_start_s: float) -> float:
    span = float(run.samples["ts_start_s"].max()) - after_start_s
    for step in (1.0, 2.0, 5.0, 10.0, 30.0, 60.0):
        if span / step <= 30:
            return step
    return 60.0


def drift_sentences(phases: pd.DataFrame, kind: str, unit: str) -> list[str]:
    usable = phases[phases["ok"] > 0]
    out = []
    for load, part in usable.groupby("load", sort=False):
        if len(part) < 2:
            continue
        first, last = part.iloc[0], part.iloc[-1]
        p99 = _change(first["ttft_p99_ms"], last["ttft_p99_ms"])
        tok = _change(first["out_tok_s"], last["out_tok_s"])
        drifts = abs(p99) > P99_DRIFT or abs(tok) > TOKS_DRIFT
        verdict = "drifts" if drifts else "stable"
        out.append(f"At {load_with_unit(load, unit)}, {first['phase']} to {last['phase']}: p99 TTFT "
                   f"{_ms(first['ttft_p99_ms'])} -> {_ms(last['ttft_p99_ms'])} ({p99:+.0%}), output tok/s "
                   f"{first['out_tok_s']:.0f} -> {last['out_tok_s']:.0f} ({tok:+.0%}): {verdict} "
                   f"(drift = p99 beyond +-{P99_DRIFT:.0%} or tok/s beyond +-{TOKS_DRIFT:.0%}).")
    if not out:
        what = "each load level ran once" if kind == "schedule" else "fewer than two windows had successes"
        out.append(f"No drift comparison: {what}; compare the per-tier figures.")
    return out


def describe(run: Run, table: pd.DataFrame, phases: pd.DataFrame, kind: str) -> list[str]:
    if kind == "spike":
        return spike_sentences(run, table, phases)
    return drift_sentences(phases, kind, run.load_unit)


def _change(before: float, after: float) -> float:
    if not before or math.isnan(before) or math.isnan(after):
        return math.nan
    return after / before - 1.0


def _ms(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.0f} ms"
