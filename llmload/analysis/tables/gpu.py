"""GPU utilisation, power and memory per tier, from an NVIDIA DCGM exporter scraped beside the engine.

How it works: `--server-metrics` may name a DCGM exporter (dcgm-exporter's `/metrics`, port 9400) beside the
engine; its DCGM_ series land in server_metrics.csv like the engine's. One series per GPU (labels `gpu`, `UUID`,
...); per scrape, utilisation is the mean over the GPUs (DCGM_FI_DEV_GPU_UTIL, %), power and framebuffer memory
used the sum (DCGM_FI_DEV_POWER_USAGE, W; DCGM_FI_DEV_FB_USED, MiB), and `gpus` how many series utilisation had;
per tier the mean over the scrapes of its measure window. A tier with fewer than MIN_SCRAPES scrapes there, or a
run without such series, gets NaN: the report then shows no GPU table. Under-utilised GPUs (well under 90 %) at
the top tier mean the serving stack, not the GPU, was the limit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.contract import SERVER_MIN_SCRAPES as MIN_SCRAPES

SERIES = {"gpu_util_pct": ("DCGM_FI_DEV_GPU_UTIL", "mean"), "gpu_power_w": ("DCGM_FI_DEV_POWER_USAGE", "sum"),
          "gpu_fb_used_mib": ("DCGM_FI_DEV_FB_USED", "sum"), "gpus": ("DCGM_FI_DEV_GPU_UTIL", "count")}
"""tier-table column -> (DCGM field, how one scrape's per-GPU values are combined)"""
COLUMNS = tuple(SERIES)


def per_scrape(metrics: pd.DataFrame) -> pd.DataFrame:
    """Columns base, ts_s, mean, sum, count: the DCGM series of each scrape over their GPUs."""
    base = metrics["name"].str.split("{", n=1).str[0].str.strip()
    keep = base.str.startswith("DCGM_")
    frame = pd.DataFrame({"base": base[keep], "ts_s": metrics["ts_s"][keep],
                          "value": pd.to_numeric(metrics["value"][keep], errors="coerce")})
    return frame.groupby(["base", "ts_s"], as_index=False)["value"].agg(["mean", "sum", "count"])


def per_tier(run: Run) -> pd.DataFrame:
    """One row per tier (index: tier) with COLUMNS; all NaN without DCGM series."""
    tiers = run.tiers.set_index("tier")
    out = pd.DataFrame(np.nan, index=tiers.index, columns=list(COLUMNS))
    if run.server_metrics is None or not len(run.server_metrics):
        return out
    scrapes = per_scrape(run.server_metrics)
    for column, (field, how) in SERIES.items():
        part = scrapes[scrapes["base"] == field]
        if not len(part):
            continue
        for tier, row in tiers.iterrows():
            inside = part[(part["ts_s"] >= row["measure_start_s"]) & (part["ts_s"] < row["end_s"])]
            if len(inside) >= MIN_SCRAPES:
                out.loc[tier, column] = float(inside[how].mean())
    return out


def has_gpu(table: pd.DataFrame) -> bool:
    """Whether any tier has a GPU figure (the report's GPU table and summary.json's `gpu` section)."""
    return "gpu_util_pct" in table and bool(table[[c for c in COLUMNS if c in table]].notna().any().any())
