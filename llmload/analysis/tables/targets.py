"""Two or more targets in one run side by side: per tier and target, and which one is faster.

How it works: samples.csv's `target` names where each attempt went (the run's round robin spread every tier's
requests over the targets by weight, so every target saw the same load steps at the same times).
- `target_table`: per (tier, target), over the tier's measured attempts: attempts, successes, error share, TTFT
  and ITL (each request's mean gap) p50/p99 of the successes, ok req/s and output tok/s over the measure window.
- `faster`: the TTFT p50 and p99 of every target's measured successes (all tiers pooled: each target had the same
  mix of loads) against the fastest target's (lowest p50). The 95 % interval of each difference is a seeded
  bootstrap (both targets' values resampled, BOOTSTRAP_SEED, N_BOOT resamples); beyond MAX_BOOTSTRAP_N values per
  target, the normal approximation from each quantile's own interval (stats.quantile_ci) instead. A difference
  whose interval holds 0 is not a difference the run can tell.
A run with one target (or written before the column existed) gives empty results: the report leaves it out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.tables.stats import BOOTSTRAP_SEED, MAX_BOOTSTRAP_N, N_BOOT, percentile, quantile_ci
from llmload.contract import EMPTY_ANSWER

MIN_SUCCESSES = 2
"""a target with fewer measured successes is not compared"""


def targets_of(run: Run) -> list[str]:
    """The run's target labels in order of first use ([] without a target column or with a single target)."""
    if not run.per_request or "target" not in run.samples:
        return []
    labels = [str(t) for t in pd.unique(run.samples["target"].astype(str)) if str(t) not in ("", "nan")]
    return labels if len(labels) > 1 else []


def target_table(run: Run) -> pd.DataFrame:
    """Per (tier, target) of a run with two or more targets (module docstring); empty otherwise."""
    labels = targets_of(run)
    if not labels:
        return pd.DataFrame()
    s = run.samples[run.samples["measured"]]
    s = s.assign(target=s["target"].astype(str))
    window_s = run.tiers.set_index("tier")["measure_s"]
    out = []
    for (tier, target), rows in s.groupby(["tier", "target"], sort=True):
        ok = rows[rows["ok"]]
        span_s = float(window_s.get(tier, math.nan))
        per_s = span_s if span_s > 0 else math.nan
        out.append({"tier": int(tier), "target": target, "attempts": len(rows), "ok": len(ok),
                    "error_rate": float((~rows["error"].astype(str).isin(("", "nan", EMPTY_ANSWER))).mean()),
                    "ttft_p50_ms": percentile(ok["ttft_ms"].to_numpy(float), 0.5),
                    "ttft_p99_ms": percentile(ok["ttft_ms"].to_numpy(float), 0.99),
                    "itl_p50_ms": percentile(ok["itl_mean_ms"].to_numpy(float), 0.5),
                    "itl_p99_ms": percentile(ok["itl_mean_ms"].to_numpy(float), 0.99),
                    "ok_rps": len(ok) / per_s, "out_tok_s": float(ok["output_tokens"].sum()) / per_s})
    frame = pd.DataFrame(out)
    order = {label: i for i, label in enumerate(labels)}
    return frame.sort_values(["tier", "target"], key=lambda c: c.map(order) if c.name == "target" else c,
                             kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class Difference:
    """One target's TTFT quantile minus the fastest target's, with its 95 % interval (ms)."""

    quantile: float
    fastest_ms: float
    other_ms: float
    low_ms: float
    high_ms: float

    @property
    def diff_ms(self) -> float:
        return self.other_ms - self.fastest_ms

    @property
    def told(self) -> bool:
        """the interval excludes 0: the run tells the two apart"""
        return self.low_ms > 0 or self.high_ms < 0


@dataclass(frozen=True)
class Comparison:
    fastest: str
    other: str
    n_fastest: int
    n_other: int
    p50: Difference
    p99: Difference


def diff_ci(fast: np.ndarray, slow: np.ndarray, q: float, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """95 % interval of quantile(slow) - quantile(fast) (module docstring)."""
    if len(fast) > MAX_BOOTSTRAP_N or len(slow) > MAX_BOOTSTRAP_N:
        (f_lo, f_hi), (s_lo, s_hi) = quantile_ci(fast, q), quantile_ci(slow, q)
        diff = percentile(slow, q) - percentile(fast, q)
        half = math.hypot((f_hi - f_lo) / 2.0, (s_hi - s_lo) / 2.0)
        return diff - half, diff + half
    rng = np.random.default_rng(seed)
    a = np.quantile(fast[rng.integers(0, len(fast), size=(N_BOOT, len(fast)))], q, axis=1)
    b = np.quantile(slow[rng.integers(0, len(slow), size=(N_BOOT, len(slow)))], q, axis=1)
    low, high = np.quantile(b - a, [0.025, 0.975])
    return float(low), float(high)


def faster(run: Run) -> list[Comparison]:
    """Every other target against the fastest (lowest pooled TTFT p50 of measured successes); [] if untold."""
    labels = targets_of(run)
    s = run.samples
    ok = s[s["measured"] & s["ok"]] if labels else s.iloc[0:0]
    values = {t: v for t in labels
              if len(v := ok.loc[ok["target"].astype(str) == t, "ttft_ms"].dropna().to_numpy(float)) >= MIN_SUCCESSES}
    if len(values) < 2:
        return []
    fastest = min(values, key=lambda t: (percentile(values[t], 0.5), labels.index(t)))
    out = []
    for other in (t for t in labels if t in values and t != fastest):
        diffs = []
        for q in (0.5, 0.99):
            low, high = diff_ci(values[fastest], values[other], q)
            diffs.append(Difference(q, percentile(values[fastest], q), percentile(values[other], q), low, high))
        out.append(Comparison(fastest, other, len(values[fastest]), len(values[other]), *diffs))
    return out
