"""The files of a synthetic run beside samples.csv (`synthetic.write_run`): tiers.csv, health.csv and a minimal
locust_stats_history.csv, as llmload and Locust write them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

SimRun = Any
"""a synthetic.SimRun (not imported: synthetic imports this module)"""


def tiers_frame(run: SimRun, dropped: list[int] | None = None) -> pd.DataFrame:
    """tiers.csv as llmload writes it (`dropped` empty in closed loop)."""
    starts = run.start_unix + run.tier_s * np.arange(run.n_tiers)
    ends = starts + run.tier_s
    if run.kill_at_s is not None:
        kill = run.start_unix + run.kill_at_s
        keep = starts < kill
        starts, ends = starts[keep], np.where(ends[keep] > kill, np.nan, ends[keep])
    n = len(starts)
    rates = run.rate_tiers
    return pd.DataFrame({"tier": np.arange(1, n + 1), "start_s": starts, "end_s": ends,
                         "target_users": np.nan if rates is not None else list(run.tiers_users[:n]),
                         "target_rps": list(rates[:n]) if rates is not None else np.nan,
                         "warmup_s": run.warmup_s,
                         "dropped": pd.array(dropped[:n], dtype="Int64") if dropped is not None else np.nan})


def health_frame(run: SimRun, samples: pd.DataFrame) -> pd.DataFrame:
    total_s = run.kill_at_s if run.kill_at_s is not None else run.tier_s * run.n_tiers
    ts = run.start_unix + np.arange(int(total_s))
    tier_idx = np.minimum(((ts - run.start_unix) // run.tier_s).astype(int), run.n_tiers - 1)
    users = np.ones(len(ts), int) if run.rate_tiers is not None else np.asarray(run.tiers_users)[tier_idx]
    hot = (tier_idx + 1 == run.overloaded_tier) if run.overloaded_tier is not None else np.zeros(len(ts), bool)
    counts = np.bincount(((samples["ts_start_s"] - run.start_unix).astype(int)).clip(0, len(ts) - 1),
                         minlength=len(ts))[: len(ts)]
    return pd.DataFrame({"ts_s": ts, "worker": "local",
                         "loop_lag_ms_max": np.where(hot, 140.0, 1.2),
                         "loop_lag_ms_p50": np.where(hot, 60.0, 0.2),
                         "cpu_percent": np.where(hot, 98.0, np.minimum(15.0 + counts * 0.05, 80.0)).round(1),
                         "users": users, "inflight": users})


def history_frame(samples: pd.DataFrame, run: SimRun) -> pd.DataFrame:
    """A minimal locust_stats_history.csv (Aggregated rows, one per second)."""
    sec = (samples["ts_start_s"] - run.start_unix).astype(int)
    per_s = samples.groupby(sec).agg(rps=("e2e_ms", "size"), users=("users_now", "max"),
                                     fails=("status", lambda s: int((s != 200).sum())))
    return pd.DataFrame({"Timestamp": (run.start_unix + per_s.index).astype(int),
                         "User Count": per_s["users"].astype(int).to_numpy(), "Type": "",
                         "Name": "Aggregated", "Requests/s": per_s["rps"].to_numpy(),
                         "Failures/s": per_s["fails"].to_numpy()})
