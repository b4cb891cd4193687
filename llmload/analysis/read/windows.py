"""Each tier's measure window, bounded by tiers.csv or by what was really measured.

How it works:
- A tier with `end_s` in tiers.csv is complete; its window is [start_s + warmup_s, end_s). Except the last tier
  of a run that stopped unplanned (run.json's end: an interrupt, a fatal stop) when it measured less than
  CUT_SHARE of its planned window: the shape closed it at the stop, and it was cut.
- A tier without `end_s` (the run stopped during it) ends where the next tier starts, else at
  the last *completion* of a request sent in it (ts_start_s + e2e, or + headers for a fast
  refusal), never at the last request's start: a killed run's last tier is as long as it
  really measured, not 2 ms.
- The planned length of a tier is run.json's `shape.tier_seconds` for it, else the median
  length of the complete tiers. An incomplete tier is *short* when its measure window is
  under SHORT_TIER_S or under MIN_PLANNED_SHARE of the planned measure window: its figures
  are shown but it is excluded from the knee, the capacity and the saturation verdict, and
  a note says so. Complete tiers keep the length the user chose.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read.files import section
from llmload.rules.limits import MIN_PLANNED_SHARE, SHORT_TIER_S

CUT_SHARE = 0.95
"""a last tier closed by an unplanned stop before this share of its planned measure window was cut, not complete"""


def completions(samples: pd.DataFrame) -> np.ndarray:
    """Unix time each attempt ended (sent + its elapsed time, else + e2e, else + headers, else the send time): a
    failure's e2e runs to its last chunk, its elapsed time to the failure (a first-token timeout's user was busy
    until it fired)."""
    elapsed = samples["elapsed_ms"] if "elapsed_ms" in samples else pd.Series(np.nan, index=samples.index)
    took_ms = elapsed.fillna(samples["e2e_ms"]).fillna(samples["headers_ms"]).fillna(0.0).clip(lower=0.0)
    return samples["ts_start_s"].to_numpy() + took_ms.to_numpy() / 1000.0


def close_open_tiers(tiers: pd.DataFrame, samples: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Fill missing end_s (next tier's start, else the last completion); add `complete`."""
    tiers = tiers.copy()
    next_start = tiers["start_s"].shift(-1)
    complete = tiers["end_s"].notna()
    done = completions(samples)
    ts = samples["ts_start_s"].to_numpy()
    for row in tiers.loc[~complete].itertuples():
        nxt = next_start.loc[row.Index]
        if np.isnan(nxt):
            after = ts >= row.start_s
            last = float(done[after].max()) if after.any() else float(row.start_s)
            tiers.loc[row.Index, "end_s"] = max(last, float(ts.max()) + 1e-6)
            notes.append(f"tier {row.tier} has no end_s (the run stopped during it): measured up to its last "
                         "completed request.")
        else:
            tiers.loc[row.Index, "end_s"] = nxt
            notes.append(f"tier {row.tier} has no end_s: it ends where tier after it starts.")
    tiers["complete"] = complete
    return tiers


def planned_seconds(tiers: pd.DataFrame, info: dict) -> pd.Series:
    """Planned length of each tier (s): run.json's shape.tier_seconds, else the complete tiers' median."""
    shape = section(info, "shape")
    listed = shape.get("tier_seconds")
    lengths = (tiers["end_s"] - tiers["start_s"]).where(tiers["complete"])
    fallback = float(lengths.median()) if lengths.notna().any() else np.nan
    planned = []
    for i in range(len(tiers)):
        value = listed[i] if isinstance(listed, list) and i < len(listed) else None
        planned.append(float(value) if isinstance(value, (int, float)) and value > 0 else fallback)
    return pd.Series(planned, index=tiers.index, dtype=float)


def mark_short(tiers: pd.DataFrame, info: dict, notes: list[str]) -> None:
    """Add `planned_s` and `short` (an incomplete tier measured too briefly to judge)."""
    tiers["planned_s"] = planned_seconds(tiers, info)
    planned_measure = (tiers["planned_s"] - tiers["warmup_s"]).clip(lower=0.0)
    end = section(info, "end")
    if len(tiers) and end.get("planned") is False:  # an interrupt, a stop: the shape closed its last tier early
        last = tiers.index[-1]
        if tiers.loc[last, "measure_s"] < CUT_SHARE * planned_measure.loc[last]:
            tiers.loc[last, "complete"] = False
    too_brief = (tiers["measure_s"] < SHORT_TIER_S) | (tiers["measure_s"] < MIN_PLANNED_SHARE * planned_measure)
    tiers["short"] = ~tiers["complete"] & too_brief
    for row in tiers[tiers["short"]].itertuples():
        plan = f" of its planned {row.planned_s - row.warmup_s:.0f} s" if row.planned_s == row.planned_s else ""
        notes.append(f"tier {row.tier} was cut short: measured {row.measure_s:.1f} s{plan} (minimum "
                     f"{SHORT_TIER_S:g} s and {MIN_PLANNED_SHARE:.0%} of the plan); its figures are shown but it is "
                     "excluded from the knee, the capacity and the saturation verdict.")
