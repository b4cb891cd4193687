"""Percentiles and their confidence intervals.

How it works: percentiles use numpy's linear interpolation. The confidence interval of a
percentile is a seeded percentile bootstrap (resample the tier's values with replacement
`n_boot` times, take the percentile of each resample, keep the central `level` share of
them). Above `max_bootstrap_n` values the bootstrap is replaced by the distribution-free
order-statistic interval (ranks n*q -/+ z*sqrt(n*q*(1-q))), which the bootstrap converges
to and which costs one partial sort instead of n_boot of them (keeps `report` on a million
samples fast). Fewer than 2 values give (nan, nan). `quantile_cis` gives the intervals of several
percentiles from one set of resamples (the same interval `quantile_ci` gives for each), each resample sorted
once; `columns_cis` several columns at once, sharing the resamples of equal-length ones. `mean_ci` is the same
seeded bootstrap for a mean (the output tokens/s of a tier over its sub-windows), `wilson` the score interval of a
proportion (an error rate: the bootstrap of a share is degenerate at 0 errors, Wilson's is not).
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
    return quantile_cis(values, (q,), level, seed, n_boot, max_bootstrap_n)[0]


def quantile_cis(values: np.ndarray, qs: tuple[float, ...], level: float = 0.95, seed: int = BOOTSTRAP_SEED,
                 n_boot: int = N_BOOT, max_bootstrap_n: int = MAX_BOOTSTRAP_N) -> list[tuple[float, float]]:
    """The `level` confidence interval of each q-quantile of `values` (nan ignored), from one set of resamples."""
    return columns_cis([(values, qs)], level, seed, n_boot, max_bootstrap_n)[0]


def columns_cis(columns: list[tuple[np.ndarray, tuple[float, ...]]], level: float = 0.95,
                seed: int = BOOTSTRAP_SEED, n_boot: int = N_BOOT,
                max_bootstrap_n: int = MAX_BOOTSTRAP_N) -> list[list[tuple[float, float]]]:
    """`quantile_cis` of each (values, qs). The same seed draws the same resample indices for the same number of
    values, so columns of equal length share them (drawn once): each answer is what `quantile_cis` gives alone."""
    drawn: dict[int, np.ndarray] = {}
    out = []
    for raw, qs in columns:
        values = raw[~np.isnan(raw)]
        n = len(values)
        if n < 2:
            out.append([(math.nan, math.nan) for _ in qs])
        elif n > max_bootstrap_n:
            out.append([_order_statistic_ci(values, q, level) for q in qs])
        else:
            if n not in drawn:
                drawn[n] = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
            out.append(_bootstrap_cis(values, drawn[n], qs, level))
    return out


def _bootstrap_cis(values: np.ndarray, idx: np.ndarray, qs: tuple[float, ...],
                   level: float) -> list[tuple[float, float]]:
    """Each resample sorted once; its q-quantiles by numpy's linear interpolation (np.quantile's, exactly)."""
    ordered = np.sort(values[idx], axis=1)
    n, tail = ordered.shape[1], (1.0 - level) / 2.0
    out = []
    for q in qs:
        h = (n - 1) * q
        low = math.floor(h)
        frac = h - low
        a, b = ordered[:, low], ordered[:, min(low + 1, n - 1)]
        diff = b - a
        estimates = b - diff * (1 - frac) if frac >= 0.5 else a + diff * frac  # numpy's _lerp
        lo, hi = np.quantile(estimates, [tail, 1.0 - tail])
        out.append((float(lo), float(hi)))
    return out


def _order_statistic_ci(values: np.ndarray, q: float, level: float) -> tuple[float, float]:
    n = len(values)
    z = Z_95 if level == 0.95 else _z(level)
    half = z * math.sqrt(n * q * (1.0 - q))
    lo_rank = int(max(0, math.floor(n * q - half)))
    hi_rank = int(min(n - 1, math.ceil(n * q + half)))
    part = np.partition(values, [lo_rank, hi_rank])
    return float(part[lo_rank]), float(part[hi_rank])


def mean_ci(values: np.ndarray, level: float = 0.95, seed: int = BOOTSTRAP_SEED,
            n_boot: int = N_BOOT) -> tuple[float, float]:
    """Two-sided `level` percentile-bootstrap confidence interval of the mean of `values` (nan ignored)."""
    values = values[~np.isnan(values)]
    if len(values) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(n_boot, len(values)))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [tail, 1.0 - tail])
    return float(lo), float(hi)


def wilson(events: float, trials: float, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of a proportion events/trials (95 % by default); (nan, nan) without trials."""
    if not trials > 0:
        return math.nan, math.nan
    p = events / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


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
