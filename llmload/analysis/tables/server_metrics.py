"""Server-side truth per tier, from the target's Prometheus metrics (`server_metrics.csv`).

How it works: the run folder may hold `server_metrics.csv` (ts_s unix, name, value), scraped
from the target's `/metrics` during the run. Names differ by engine and version, so each
figure lists the names it accepts and takes the first one present (labels in a name, as in
`vllm:num_requests_waiting{model_name="m"}`, are dropped and values of one scrape summed):
- waiting (queue length): vllm:num_requests_waiting, llamacpp:requests_deferred,
  llmload:num_requests_waiting; per tier the mean and max over the measure window;
- running (the batch in service): vllm:num_requests_running, llamacpp:requests_processing,
  llmload:num_requests_running; per tier the mean;
- queue time: the delta of a histogram's `_sum` over the delta of its `_count` between the
  first and last scrape of the measure window (vllm:request_queue_time_seconds,
  llmload:request_queue_time_seconds): the mean time a request finished waiting in the tier; and from the same
  `_sum`, the queue's length by Little's law (`srv_queue_len`): the seconds waited, per second between those two
  scrapes. Exact where the waiting gauge is a sample: vLLM's gauge, read once a second, averaged 0.4 at a tier
  whose requests waited 69 ms each at 10 req/s (0.7 waiting);
- KV-cache usage (fraction 0-1 -> %): vllm:gpu_cache_usage_perc, vllm:kv_cache_usage_perc,
  llmload:kv_cache_usage_perc; per tier the mean.
GPU utilisation, power and memory from a DCGM exporter scraped beside the engine: `gpu.py` (its columns join these).
A figure whose names are all absent is left out (NaN), never guessed. A tier with fewer than
MIN_SCRAPES scrapes in its window gets NaN for it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.tables import gpu
from llmload.contract import SERVER_KV_CACHE as KV_CACHE
from llmload.contract import SERVER_MIN_SCRAPES as MIN_SCRAPES
from llmload.contract import SERVER_QUEUE_TIME as QUEUE_TIME
from llmload.contract import SERVER_RUNNING as RUNNING
from llmload.contract import SERVER_WAITING as WAITING

COLUMNS = ("srv_waiting_mean", "srv_waiting_max", "srv_running_mean", "srv_running_max", "srv_queue_time_ms",
           "srv_queue_len", "srv_kv_cache_pct")


def _series(metrics: pd.DataFrame) -> pd.DataFrame:
    """Columns ts_s, base (name without labels), value; one row per scrape and base name."""
    base = metrics["name"].str.split("{", n=1).str[0].str.strip()
    frame = pd.DataFrame({"ts_s": metrics["ts_s"], "base": base, "value": metrics["value"]})
    return frame.groupby(["base", "ts_s"], as_index=False)["value"].sum()


def _first(series: pd.DataFrame, names: tuple[str, ...]) -> pd.DataFrame | None:
    for name in names:
        part = series[series["base"] == name]
        if len(part):
            return part
    return None


def source_names(run: Run) -> dict[str, str]:
    """Which metric name fed each figure (for the report's note); {} without server metrics."""
    if run.server_metrics is None:
        return {}
    series = _series(run.server_metrics)
    out = {}
    for label, names in (("waiting", WAITING), ("running", RUNNING), ("queue time", QUEUE_TIME),
                         ("KV cache", KV_CACHE)):
        wanted = tuple(f"{n}_sum" for n in names) if label == "queue time" else names
        part = _first(series, wanted)
        if part is not None:
            out[label] = str(part["base"].iloc[0]).removesuffix("_sum")
    return out


def per_tier(run: Run) -> pd.DataFrame:
    """One row per tier (index: tier) with COLUMNS and gpu.COLUMNS; all NaN when the run has no server metrics."""
    tiers = run.tiers.set_index("tier")
    out = pd.DataFrame(np.nan, index=tiers.index, columns=list(COLUMNS)).join(gpu.per_tier(run))
    if run.server_metrics is None:
        return out
    series = _series(run.server_metrics)
    waiting, running = _first(series, WAITING), _first(series, RUNNING)
    kv = _first(series, KV_CACHE)
    q_sum = _first(series, tuple(f"{n}_sum" for n in QUEUE_TIME))
    q_count = None if q_sum is None else series[series["base"] == str(q_sum["base"].iloc[0])[:-4] + "_count"]
    for tier, row in tiers.iterrows():
        lo, hi = row["measure_start_s"], row["end_s"]
        if waiting is not None and len(w := _window(waiting, lo, hi)) >= MIN_SCRAPES:
            out.loc[tier, "srv_waiting_mean"] = w.mean()
            out.loc[tier, "srv_waiting_max"] = w.max()
        if running is not None and len(r := _window(running, lo, hi)) >= MIN_SCRAPES:
            out.loc[tier, "srv_running_mean"] = r.mean()
            out.loc[tier, "srv_running_max"] = r.max()
        if kv is not None and len(k := _window(kv, lo, hi)) >= MIN_SCRAPES:
            out.loc[tier, "srv_kv_cache_pct"] = 100.0 * k.mean()
        if q_sum is not None and q_count is not None and len(q_count):
            total, count = _window(q_sum, lo, hi), _window(q_count, lo, hi)
            if len(total) >= MIN_SCRAPES and len(count) >= MIN_SCRAPES and count.iloc[-1] > count.iloc[0]:
                out.loc[tier, "srv_queue_time_ms"] = (1000.0 * (total.iloc[-1] - total.iloc[0])
                                                      / (count.iloc[-1] - count.iloc[0]))
            stamps = _window_times(q_sum, lo, hi)
            if len(total) >= MIN_SCRAPES and stamps.iloc[-1] > stamps.iloc[0]:
                out.loc[tier, "srv_queue_len"] = (total.iloc[-1] - total.iloc[0]) / (stamps.iloc[-1] - stamps.iloc[0])
    return out


def _inside(part: pd.DataFrame, lo: float, hi: float) -> pd.DataFrame:
    return part[(part["ts_s"] >= lo) & (part["ts_s"] < hi)].sort_values("ts_s")


def _window(part: pd.DataFrame, lo: float, hi: float) -> pd.Series:
    return _inside(part, lo, hi)["value"].reset_index(drop=True)


def _window_times(part: pd.DataFrame, lo: float, hi: float) -> pd.Series:
    return _inside(part, lo, hi)["ts_s"].astype(float).reset_index(drop=True)
