"""Goodput and the value of each SLO criterion per tier.

How it works: a measured successful request is *good* when every per-request criterion of
the objective holds for it: TTFT, ITL (its mean gap), TPOT and e2e at most their limits,
output tokens/s at least its minimum. A figure a request does not have (TPOT or ITL of a
one-token answer) does not count against it; a failed request is never good. Goodput is
good requests per second of the tier's rate window (`tiers.tier_table`'s `rate_window_s`).
`criterion_values` gives each criterion's value per tier: the stated percentile over the
tier's successful requests, or the tier's rate, with the number of successes behind it.
The report's profiles (`llmload.rules.slo.SloProfile`: p95 TTFT, error and 429 bounds, overridable
on the command line) map onto the stock objectives with `llmload.rules.slo.objective_for`, so the
report's goodput column counts the same per-request criteria as `analysis check --slo NAME`.
Open loop: pass `samples.verdict_rows` (TTFT and e2e from the intended send).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.rules.slo import LATENCY, Criterion, Objective


def good_mask(rows: pd.DataFrame, objective: Objective) -> np.ndarray:
    good = rows["ok"].to_numpy().copy()
    for c in objective.per_request:
        values = rows[LATENCY[c.metric]].to_numpy(dtype=float)
        missing = np.isnan(values)
        meets = values >= c.limit if c.at_least else values <= c.limit
        optional = c.metric in ("itl", "tpot", "out_tps")
        good &= meets | (missing & optional)
    return good


def add_goodput(table: pd.DataFrame, measured: pd.DataFrame, objective: Objective) -> None:
    """Add `good` (requests meeting every per-request criterion) and `goodput_rps` to a tier table."""
    good = pd.Series(good_mask(measured, objective), index=measured.index)
    counts = good.groupby(measured["tier"]).sum()
    table["good"] = table["tier"].map(counts).fillna(0).astype(int)
    table["goodput_rps"] = table["good"] / table["rate_window_s"]


def goodput_rps(table: pd.DataFrame, measured: pd.DataFrame, objective: Objective) -> pd.Series:
    """Goodput per tier (aligned with `table`'s rows) under one objective, leaving `table` unchanged."""
    copy = table[["tier", "rate_window_s"]].copy()
    add_goodput(copy, measured, objective)
    return copy["goodput_rps"]


def criterion_values(table: pd.DataFrame, measured: pd.DataFrame, c: Criterion) -> pd.Series:
    """Value of one criterion per tier (index: tier)."""
    if c.metric not in LATENCY:
        return table.set_index("tier")[c.metric]
    ok = measured[measured["ok"]]
    values = ok[LATENCY[c.metric]].groupby(ok["tier"]).quantile(percentile_of(c))
    return values.reindex(table["tier"])


def percentile_of(c: Criterion) -> float:
    """A latency criterion's percentile as a quantile (0..1)."""
    if c.percentile is None:
        raise ValueError(f"{c.label} is not a latency criterion")
    return c.percentile / 100.0
