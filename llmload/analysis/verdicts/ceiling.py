"""The model-free ceiling of a run (llmload.rules.ceiling) from its rows, or from its histograms.

How it works: the tiers that refused materially are the rule book's (`ceiling.refusing` on each tier's attempts
and refusals, warm-up included, from the rows or from attempts.csv); with rows, the span starts at the first refused
attempt sent in one of them (`outcomes.kind` 'shed') and ends at the end of the load tiers (the last tier's end:
confirmation windows come after it); the accepted count is the successful attempts sent in the span, whatever their
tier or phase (a quota counts every request). From histograms (--ship histograms) the span starts at the first
refusing tier's start, and the accepted count is the successes of attempts.csv in that tier and every later one,
warm-up included. The longest retry hint is the largest `retry_after_s` of any row (NaN from histograms: they keep
no hint lengths). What got through before the first refusal (`Ceiling.before`) counts the successes sent from the
run's first send to it (from histograms: the successes of the tiers that started before it).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.rules import ceiling as ceiling_mod
from llmload.rules.ceiling import Ceiling
from llmload.rules.outcomes import GONE_ERRORS, SHED_ERRORS, SHED_STATUSES


def run_ceiling(run: Run) -> Ceiling | None:
    """The run's ceiling (None: no tier refused materially)."""
    if run.tiers.empty:
        return None
    end_s = float(run.tiers["end_s"].max())
    if not run.per_request:
        return _from_histograms(run, end_s)
    rows = run.samples[run.samples["tier"] > 0]
    error, status = rows["error"].astype(str), rows["status"].fillna(0).to_numpy()
    shed = error.isin(SHED_ERRORS).to_numpy() | np.isin(status, SHED_STATUSES)
    shed &= ~error.isin(GONE_ERRORS).to_numpy()
    by_tier = pd.DataFrame({"tier": rows["tier"].to_numpy(), "shed": shed}).groupby("tier")["shed"].agg(["size", "sum"])
    numbers = ceiling_mod.refusing({int(t): (int(r["size"]), int(r["sum"])) for t, r in by_tier.iterrows()})
    first = shed & rows["tier"].isin(numbers).to_numpy()
    if not first.any():
        return None
    ts = rows["ts_start_s"].to_numpy()
    start = float(ts[first].min())
    tier = int(rows["tier"].to_numpy()[first][np.argmin(ts[first])])
    every = run.samples["ts_start_s"].to_numpy()
    accepted = int((run.samples["ok"].to_numpy() & (every >= start) & (every < end_s)).sum())
    hints = pd.to_numeric(run.samples["retry_after_s"], errors="coerce")
    longest = float(hints.max()) if hints.notna().any() else math.nan
    before = int((run.samples["ok"].to_numpy() & (every < start)).sum())
    return ceiling_mod.measured(start, end_s, accepted, tier, longest, before, start - float(every.min()))


def _from_histograms(run: Run, end_s: float) -> Ceiling | None:
    hists = run.histograms
    if hists is None or hists.attempts is None:
        return None
    attempts = hists.attempts[(hists.attempts["phase"] != "after") & (hists.attempts["tier"] > 0)]
    error, status = attempts["error"].astype(str), attempts["status"].fillna(0)
    shed = (error.isin(SHED_ERRORS) | status.isin(SHED_STATUSES)) & ~error.isin(GONE_ERRORS)
    totals = attempts.groupby("tier")["attempts"].sum()
    refused = attempts[shed].groupby("tier")["attempts"].sum().reindex(totals.index, fill_value=0)
    numbers = ceiling_mod.refusing({int(t): (int(totals[t]), int(refused[t])) for t in totals.index})
    windows = run.tiers.set_index("tier")
    numbers = {n for n in numbers if n in windows.index}
    if not numbers:
        return None
    first = min(numbers, key=lambda n: float(windows.loc[n, "start_s"]))
    start_s = float(windows.loc[first, "start_s"])
    later = [int(n) for n in windows.index if float(windows.loc[n, "start_s"]) >= start_s]
    accepted = int(attempts.loc[attempts["tier"].isin(later), "ok"].sum())
    before = int(attempts.loc[~attempts["tier"].isin(later), "ok"].sum())
    before_s = start_s - float(windows["start_s"].min())
    return ceiling_mod.measured(start_s, end_s, accepted, first, math.nan, before, before_s)
