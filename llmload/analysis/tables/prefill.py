"""Prefill cost from a prompt-length sweep: TTFT = a + b x input tokens, fitted robustly.

How it works (pure functions over the samples frame; only successful streamed rows count):

- `prefill_fit` fits a Theil-Sen line through every (input_tokens, ttft_ms) point: the slope is
  the median of the slopes of all point pairs with different lengths, the intercept the median of
  ttft - slope x tokens. Its interval is Sen's rank interval (95 %: the slopes at ranks
  (N -+ 1.96 sqrt(Var S)) / 2 among the N pair slopes, Var S with the tie correction for the many
  requests per length). Robust: a few queued or stalled requests do not move it. Reported as ms per
  1,000 prompt tokens (`ms_per_1k`), with the residual spread (median absolute residual, ms).
- Non-linear growth: the line is refitted on the shorter half of the lengths (at least 3), and the
  first length from which every longer length's median TTFT exceeds that line by more than
  `NONLINEAR_EXCESS` (15 %) is where growth turns non-linear (attention's quadratic term, memory
  pressure). None when it stays linear or there are too few lengths to tell.
- `prefill_table` gives one row per length (requests, p50/p95 TTFT, the fit's prediction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llmload.rules.limits import NONLINEAR_EXCESS

MIN_LENGTHS = 3
MAX_POINTS = 600
"""points used by the pairwise fit (an even subsample beyond it keeps the fit O(n^2) small)"""
Z_95 = 1.959964


@dataclass(frozen=True)
class PrefillFit:
    intercept_ms: float
    ms_per_1k: float
    ms_per_1k_low: float
    ms_per_1k_high: float
    residual_ms: float
    """median absolute residual"""
    requests: int
    lengths: tuple[int, ...]
    nonlinear_from_tokens: int | None


def _points(samples: pd.DataFrame) -> pd.DataFrame:
    if not {"input_tokens", "ttft_ms"} <= set(samples.columns):
        return pd.DataFrame(columns=["input_tokens", "ttft_ms"])
    frame = samples
    if "error" in frame:
        frame = frame[frame["error"].astype(str).isin(["", "nan"])]
    if "streamed" in frame:
        frame = frame[pd.to_numeric(frame["streamed"], errors="coerce").fillna(1) != 0]
    if "phase" in frame:
        frame = frame[frame["phase"].astype(str) != "warmup"]
    out = pd.DataFrame({"input_tokens": pd.to_numeric(frame["input_tokens"], errors="coerce"),
                        "ttft_ms": pd.to_numeric(frame["ttft_ms"], errors="coerce")}).dropna()
    return out.sort_values("input_tokens", kind="stable").reset_index(drop=True)


def theil_sen(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """(slope, intercept, slope low, slope high) of the Theil-Sen line with Sen's 95 % interval."""
    i, j = np.triu_indices(len(x), k=1)
    dx = x[j] - x[i]
    keep = dx != 0
    slopes = np.sort((y[j] - y[i])[keep] / dx[keep])
    slope = float(np.median(slopes))
    intercept = float(np.median(y - slope * x))
    n, pairs = len(x), len(slopes)
    _, ties = np.unique(x, return_counts=True)
    var_s = (n * (n - 1) * (2 * n + 5) - float(np.sum(ties * (ties - 1) * (2 * ties + 5)))) / 18.0
    spread = Z_95 * math.sqrt(max(var_s, 0.0))
    low = int(max(0, math.floor((pairs - spread) / 2.0)))
    high = int(min(pairs - 1, math.ceil((pairs + spread) / 2.0)))
    return slope, intercept, float(slopes[low]), float(slopes[high])


def _subsample(points: pd.DataFrame) -> pd.DataFrame:
    if len(points) <= MAX_POINTS:
        return points
    return points.iloc[np.linspace(0, len(points) - 1, MAX_POINTS).round().astype(int)]


def _nonlinear_from(points: pd.DataFrame, lengths: list[int]) -> int | None:
    if len(lengths) < MIN_LENGTHS + 1:
        return None
    short = lengths[:max(MIN_LENGTHS, len(lengths) // 2)]
    base = _subsample(points[points["input_tokens"].isin(short)])
    slope, intercept, _, _ = theil_sen(base["input_tokens"].to_numpy(float), base["ttft_ms"].to_numpy(float))
    medians = points.groupby("input_tokens")["ttft_ms"].median()
    above = [length for length in lengths if length not in short
             and medians[length] > (intercept + slope * length) * (1 + NONLINEAR_EXCESS)]
    longer = [length for length in lengths if length not in short]
    for pos, length in enumerate(longer):
        if all(later in above for later in longer[pos:]):
            return int(length)
    return None


def prefill_fit(samples: pd.DataFrame) -> PrefillFit | None:
    """The prefill line of a sweep; None with fewer than MIN_LENGTHS distinct input lengths."""
    points = _points(samples)
    lengths = sorted(int(v) for v in points["input_tokens"].unique())
    if len(lengths) < MIN_LENGTHS:
        return None
    used = _subsample(points)
    x, y = used["input_tokens"].to_numpy(float), used["ttft_ms"].to_numpy(float)
    slope, intercept, low, high = theil_sen(x, y)
    residual = float(np.median(np.abs(points["ttft_ms"] - (intercept + slope * points["input_tokens"]))))
    return PrefillFit(intercept_ms=intercept, ms_per_1k=slope * 1000.0, ms_per_1k_low=low * 1000.0,
                      ms_per_1k_high=high * 1000.0, residual_ms=residual, requests=len(points),
                      lengths=tuple(lengths), nonlinear_from_tokens=_nonlinear_from(points, lengths))


def prefill_table(samples: pd.DataFrame, fit: PrefillFit | None = None) -> pd.DataFrame:
    """One row per input length: requests, ttft_p50_ms, ttft_p95_ms, fit_ms (the line's prediction)."""
    points = _points(samples)
    groups = points.groupby("input_tokens")["ttft_ms"]
    table = pd.DataFrame({"requests": groups.size(), "ttft_p50_ms": groups.median(),
                          "ttft_p95_ms": groups.quantile(0.95)}).reset_index()
    table["input_tokens"] = table["input_tokens"].astype(int)
    if fit is not None:
        table["fit_ms"] = fit.intercept_ms + fit.ms_per_1k / 1000.0 * table["input_tokens"]
    return table


def prefill_sentence(fit: PrefillFit | None) -> str:
    """The report's one-line answer about prefill cost."""
    if fit is None:
        return f"Prefill cost: not measured (a sweep needs at least {MIN_LENGTHS} different prompt lengths)."
    text = (f"Prefill costs {fit.ms_per_1k:.1f} ms per 1,000 prompt tokens (95 % interval "
            f"{fit.ms_per_1k_low:.1f}-{fit.ms_per_1k_high:.1f}), on top of {fit.intercept_ms:.0f} ms; "
            f"typical deviation from the line {fit.residual_ms:.1f} ms over {fit.requests} requests at "
            f"{len(fit.lengths)} lengths ({fit.lengths[0]}-{fit.lengths[-1]} tokens).")
    if fit.nonlinear_from_tokens is not None:
        return text + (f" From {fit.nonlinear_from_tokens} tokens TTFT grows faster than linearly "
                       f"(more than {NONLINEAR_EXCESS:.0%} above the short-prompt line).")
    return text + " Growth stays linear over the lengths tested."
