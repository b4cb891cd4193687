"""Fixed time windows over the run: the time series plot and SLA watching.

How it works: every attempt falls in the window floor((ts_start_s - t_start) / window_s),
counted from the first request. Per window (vectorised groupby): attempts, successes, failures and the 429s among them,
p50/p99 of a latency column over successes, output tokens/s (the tokens delivered inside the window by
every successful attempt, whenever sent: `delivery.py`),
the users at the time (max users_now, for the plot), and, from tiers.csv, the tier(s) the
window overlaps with their target load (`tiers` "2" or "2-3", `load` "4" or "4-8"; one
source for both, so a window that spans a tier change shows both sides of it). Warm-up rows are
included: the time series shows the whole run; tier tables use the measure phase only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.tables import delivery


def pick_window_s(run: Run, target_windows: int = 120) -> float:
    """A round window length giving about `target_windows` windows over the run."""
    span = float(run.samples["ts_start_s"].max() - run.samples["ts_start_s"].min())
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600):
        if span / step <= target_windows:
            return float(step)
    return 3600.0


def windows(run: Run, window_s: float, metric: str = "ttft_ms") -> pd.DataFrame:
    """Columns: start_s (unix), n, ok, failed (n - ok), refused (HTTP 429s), p50_ms, p99_ms, out_tok_s, users,
    tier, tiers, load."""
    rows = run.samples
    t0 = float(rows["ts_start_s"].min())
    bins = np.floor((rows["ts_start_s"].to_numpy() - t0) / window_s).astype(np.int64)
    key = pd.Series(bins, index=rows.index, name="w")
    ok = rows["ok"].to_numpy()
    by_all = rows.groupby(key)
    ok_rows = rows[ok]
    by_ok = ok_rows[metric].groupby(key[ok])
    frame = pd.DataFrame({"n": by_all.size(), "users": by_all["users_now"].max()})
    frame["ok"] = by_ok.size().reindex(frame.index).fillna(0).astype(int)
    frame["failed"] = frame["n"] - frame["ok"]
    frame["refused"] = rows["error"].eq("rate_limited").groupby(key).sum().reindex(frame.index).fillna(0).astype(int)
    quant = by_ok.quantile([0.5, 0.99]).unstack()
    frame["p50_ms"] = quant[0.5].reindex(frame.index) if 0.5 in quant else np.nan
    frame["p99_ms"] = quant[0.99].reindex(frame.index) if 0.99 in quant else np.nan
    frame["tier"] = by_all["tier"].first()
    frame.insert(0, "start_s", t0 + frame.index.to_numpy() * window_s)
    starts = frame["start_s"].to_numpy()
    frame["out_tok_s"] = delivery.delivered(rows, starts, starts + window_s) / window_s
    labels = [_overlap(run.tiers, start, start + window_s) for start in frame["start_s"]]
    frame["tiers"] = [t for t, _ in labels]
    frame["load"] = [load for _, load in labels]
    return frame.reset_index(drop=True)


def _overlap(tiers: pd.DataFrame, start_s: float, end_s: float) -> tuple[str, str]:
    """('2-3', '4-8'): the tiers overlapping [start_s, end_s) and their target loads; ('-', '-') for none."""
    hit = tiers[(tiers["start_s"] < end_s) & (tiers["end_s"] > start_s)].sort_values("start_s")
    if hit.empty:
        return "-", "-"
    def span(values) -> str:
        first, last = values[0], values[-1]
        return first if first == last else f"{first}->{last}"
    return (span([str(int(t)) for t in hit["tier"]]), span([f"{v:g}" for v in hit["load"]]))
