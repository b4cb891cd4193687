"""A run's histograms: histograms.csv (every inter-token gap; with --ship histograms every latency figure)
and attempts.csv (attempt counts, with --ship histograms|both).

How it works: both files hold delta rows written every second; summing `count` per (tier, phase,
metric, bucket_upper) gives each histogram, summing the counts per (tier, phase, status, error)
the attempts. A bucket stands for `llmload.contract.hist_value(bucket_upper)`, within
HIST_RELATIVE_ERROR (1 %) of every value it holds (below HIST_FLOOR, 1 us: 0).
`percentile(values, counts, q)` follows numpy's linear interpolation over the expanded values: the
two order statistics around rank (n - 1) q are each replaced by the value their bucket stands for,
so the result is within 1 % (plus HIST_FLOOR) of numpy's percentile of the raw values. Only the
measure phase counts (the phase stamped when each attempt was recorded, run/tierfeed.py), like
the rows' measure windows. Pooled ITL (`add_pooled_itl`): p50/p95/p99 of every gap of a tier's
successful requests, and p99.9 from MIN_GAPS_P999 gaps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from llmload.contract import ATTEMPT_COLUMNS, HIST_RELATIVE_ERROR, HISTOGRAM_COLUMNS, hist_value
from llmload.rules import bounds

MIN_GAPS_P999 = 1000
POOLED = {"p50": 0.50, "p95": 0.95, "p99": 0.99, "p999": 0.999}
PRECISION = f"each percentile within {HIST_RELATIVE_ERROR:.0%} of the exact one"


def percentile(values: np.ndarray, counts: np.ndarray, q: float) -> float:
    """q in 0..1 over a histogram (`values` ascending, `counts` per value); nan when empty."""
    total = int(counts.sum()) if len(counts) else 0
    if total == 0:
        return float("nan")
    cumulative = np.cumsum(counts)
    pos = (total - 1) * q
    lo = int(np.floor(pos))
    hi = min(lo + 1, total - 1)
    v_lo = values[int(np.searchsorted(cumulative, lo, side="right"))]
    v_hi = values[int(np.searchsorted(cumulative, hi, side="right"))]
    return float(v_lo + (v_hi - v_lo) * (pos - lo))


def at_rank(values: np.ndarray, counts: np.ndarray, rank: int) -> float:
    """The value the `rank`-th smallest (1-based) of a histogram's expanded values stands for."""
    cumulative = np.cumsum(counts)
    return float(values[int(np.searchsorted(cumulative, rank - 1, side="right"))])


def upper_p95(values: np.ndarray, counts: np.ndarray) -> float:
    """The 95 % upper bound of the p95 (llmload.rules.bounds) from a histogram: +inf with too few values."""
    total = int(counts.sum()) if len(counts) else 0
    return bounds.upper_bound(total, 0.95, lambda rank: at_rank(values, counts, rank))


@dataclass(frozen=True)
class Histograms:
    frame: pd.DataFrame
    """tier, phase, metric, value, count: summed, ascending value per (tier, phase, metric)"""
    attempts: pd.DataFrame | None = None
    """attempts.csv summed per (tier, phase, status, error); None without the file"""

    def of(self, tier: int, metric: str, phase: str = "measure") -> tuple[np.ndarray, np.ndarray]:
        part = self.frame[(self.frame["tier"] == tier) & (self.frame["metric"] == metric)
                          & (self.frame["phase"] == phase)]
        return part["value"].to_numpy(dtype=float), part["count"].to_numpy(dtype=np.int64)

    def percentile(self, tier: int, metric: str, q: float) -> float:
        return percentile(*self.of(tier, metric), q)

    def count(self, tier: int, metric: str) -> int:
        return int(self.of(tier, metric)[1].sum())

    def has(self, metric: str) -> bool:
        return bool((self.frame["metric"] == metric).any())

    def mean(self, tier: int, metric: str) -> float:
        values, counts = self.of(tier, metric)
        return float((values * counts).sum() / counts.sum()) if counts.sum() else float("nan")


def _read_csv(file: Path, columns: tuple[str, ...]) -> pd.DataFrame | None:
    if not file.exists():
        return None
    try:
        frame = pd.read_csv(file, keep_default_na=False, on_bad_lines="skip", dtype={"phase": str, "error": str,
                                                                                     "metric": str})
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, ValueError):
        return None
    if not set(columns) <= set(frame.columns):
        return None
    for col in columns:
        if col not in ("phase", "metric", "error"):
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    return frame.dropna(subset=[c for c in columns if c not in ("phase", "metric", "error")])


def read(path: Path) -> Histograms | None:
    """The run folder's histograms (None without a readable histograms.csv)."""
    frame = _read_csv(Path(path) / "histograms.csv", HISTOGRAM_COLUMNS)
    if frame is None:
        return None
    frame["tier"] = frame["tier"].astype(int)
    summed = frame.groupby(["tier", "phase", "metric", "bucket_upper"], as_index=False)["count"].sum()
    summed["value"] = summed["bucket_upper"].map(hist_value)
    summed = summed.sort_values(["tier", "phase", "metric", "value"]).reset_index(drop=True)
    attempts = _read_csv(Path(path) / "attempts.csv", ATTEMPT_COLUMNS)
    if attempts is not None:
        keys = ["tier", "phase", "status", "error"]
        attempts["tier"] = attempts["tier"].astype(int)
        attempts = attempts.groupby(keys, as_index=False)[[c for c in ATTEMPT_COLUMNS if c not in keys]].sum()
    return Histograms(summed[["tier", "phase", "metric", "value", "count"]], attempts)


def add_pooled_itl(table: pd.DataFrame, hists: Histograms | None) -> None:
    """Pooled ITL per tier (index: tier): `itl_gaps` and itl_gap_p50/p95/p99/p999_ms (nan without
    histograms; p99.9 under MIN_GAPS_P999 gaps)."""
    for name in POOLED:
        table[f"itl_gap_{name}_ms"] = np.nan
    table["itl_gaps"] = 0
    if hists is None:
        return
    for tier in table.index:
        values, counts = hists.of(int(tier), "itl_gap_ms")
        n = int(counts.sum())
        table.loc[tier, "itl_gaps"] = n
        for name, q in POOLED.items():
            if n and (name != "p999" or n >= MIN_GAPS_P999):
                table.loc[tier, f"itl_gap_{name}_ms"] = percentile(values, counts, q)
