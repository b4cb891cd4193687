"""Percentiles and their confidence intervals.

How it works: percentiles use numpy's linear interpolation. The confidence interval of a
percentile is a seeded percentile bootstrap (resample the tier's values with replacement
`n_boot` times, take the percentile of each resample, keep the central `level` share of
them). Above `max_bootstrap_n` values the bootstrap is replaced by the distribution-free
order-statistic interval (ranks n*q -/+ z*sqrt(n*q*(1-q))), which the bootstrap converges
to and which costs one partial sort instead of n_boot of them (keeps `report` on a million
samples fast). Fewer than 2 values give (nan, nan).
"""

from __future__ import annotations

import math

import numpy as np

BOOTSTRAP_SEED = 20240611
N_BOOT = 400
MAX_BOOTSTRAP_N = 4000
Z_95 = 1.959964


def percentile(values: np.ndarray, q: float) -> float:
    """q in 0..1; nan for no values."""
    values = values[~np.isnan(values)]
    return float(np.quantile(values, q)) if len(values) else math.nan


def quantile_ci(values: np.ndarray, q: float, level: float = 0.95, seed: int = BOOTSTRAP_SEED,
                n_boot: int = N_BOOT, max_bootstrap_n: int = MAX_BOOTSTRAP_N) -> tuple[float, float]:
    """Two-sided `level` confidence interval of the q-quantile of `values` (nan ignored)."""
    values = values[~np.isnan(values)]
    n = len(values)
    if n < 2:
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0
    if n > max_bootstrap_n:
        z = Z_95 if level == 0.95 else _z(level)
        half = z * math.sqrt(n * q * (1.0 - q))
        lo_rank = int(max(0, math.floor(n * q - half)))
        hi_rank = int(min(n - 1, math.ceil(n * q + half)))
        part = np.partition(values, [lo_rank, hi_rank])
        return float(part[lo_rank]), float(part[hi_rank])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    estimates = np.quantile(values[idx], q, axis=1)
    lo, hi = np.quantile(estimates, [tail, 1.0 - tail])
    return float(lo), float(hi)


def _z(level: float) -> float:
    """Normal quantile for a two-sided level, by bisection on erf (no scipy)."""
    target = level
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if math.erf(mid / math.sqrt(2)) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2
