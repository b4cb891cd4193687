"""The per-tier table: what each load level measured (measure phase only).

How it works: measured samples (see `loader`) are grouped by tier with vectorised pandas
groupbys. Counts and rates use every attempt sent in the tier's measure window (rates are
per second of that window); latency percentiles use successful attempts only (error == ''),
so a fast 429 never makes the latency look good. Per tier:
- sent / ok / failed, 429s and their rate, 503s, Retry-After share, errors by kind, retries;
- TTFT p50/p95/p99 (+ p99.9 from 1000 successes) with a bootstrap CI on p99, e2e, ITL
  (median of per-request medians, p99 of per-request p99 gaps; pooled p50-p99.9 of every gap from
  histograms.csv: `histograms.add_pooled_itl`), TPOT, per-request out_tps;
- open loop: arrivals dropped at the in-flight cap (tiers.csv `dropped`, counted over the
  whole tier, warm-up included) and their share of the tier's arrivals (dropped / (dropped +
  attempts sent in the whole tier)); sent req/s against the target rate;
- requests/s, output tokens/s (sum of output tokens / window), in-flight by Little's law
  (successful req/s x mean e2e of successful requests: a fast 429 neither occupies the
  server nor counts), queueing delay (TTFT p50 minus the lowest tier's TTFT p50; also on means),
  TTFT split into connect, headers-minus-connect (gateway + queue) and the rest (prefill);
- TPOT and per-request mean ITL p50/p95/p99 and stalls (requests whose longest gap > --stall-ms);
- open loop: TTFT/e2e percentiles from the intended send (`verdict_rows`: schedule_lag_ms added), which
  every verdict uses, and the actual-send ones beside them (`ttft_sent_*`, `e2e_sent_*`);
- model-field mismatches, generator health (loop lag, schedule lag, CPU) and two flags:
  `too_few` (< MIN_SAMPLES_P99 successes: p99 is noise) and `overloaded` (the load
  generator itself lagged, so the tier's latencies are not trustworthy).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import concurrency, histograms, histrun, judging, server_metrics, workers
from analysis.loader import Run
from analysis.stats import quantile_ci
from llmload.rules.limits import (
    CPU_LIMIT_PERCENT,
    LOOP_LAG_LIMIT_MS,
    MATERIAL_LAG_SHARE,
    MIN_SAMPLES_P99,
    MIN_SAMPLES_P999,
    SCHEDULE_LAG_LIMIT_MS,
)
from llmload.rules.outcomes import SHED_ERRORS

PERCENTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}
STALL_MS = 1000.0
"""a request whose longest inter-token gap (itl_max_ms) exceeds this stalled (`--stall-ms`)"""


def measured(run: Run) -> pd.DataFrame:
    return run.samples[run.samples["measured"]]


def verdict_rows(run: Run) -> pd.DataFrame:
    """Measured rows with the latency verdicts use: open loop, TTFT and e2e count from the *intended* send
    (schedule_lag_ms added: the coordinated-omission-corrected figure); closed loop, unchanged."""
    rows = measured(run)
    if run.load_unit != "req/s":
        return rows
    lag = rows["schedule_lag_ms"].fillna(0.0).clip(lower=0.0)
    return rows.assign(ttft_ms=rows["ttft_ms"] + lag, e2e_ms=rows["e2e_ms"] + lag)


def tier_table(run: Run, stall_ms: float = STALL_MS) -> pd.DataFrame:
    """One row per tier (in tier order) with the figures listed in the module docstring; a run recorded with
    --ship histograms gets the same columns from its histograms (histrun.py: NaN where they need rows)."""
    table = _row_figures(run, stall_ms) if run.per_request else histrun.hist_figures(run, stall_ms)
    _add_health(table, run)
    workers.add_causes(table, run)
    table = table.join(server_metrics.per_tier(run))
    judging.add_wait(table)
    concurrency.add_effective(table, run)
    _add_flags(table)
    return table.reset_index()


def _row_figures(run: Run, stall_ms: float) -> pd.DataFrame:
    """The per-request figures of every tier (index: tier) from samples.csv's rows."""
    tiers = run.tiers.set_index("tier")
    rows = measured(run)
    table = pd.DataFrame(index=tiers.index)
    for col in ("load", "complete", "measure_s"):
        table[col] = tiers[col]
    table["short"] = tiers.get("short", False)
    _add_counts(table, rows, run, tiers)
    ok_by = rows[rows["ok"]].groupby("tier")
    _add_rates(table, rows, ok_by)
    judged_rows = verdict_rows(run)
    _add_latency(table, judged_rows[judged_rows["ok"]].groupby("tier"))
    _add_decode(table, ok_by, stall_ms)
    histograms.add_pooled_itl(table, run.histograms)
    if run.load_unit == "req/s":
        _add_percentiles(table, ok_by, "ttft_ms", "ttft_sent", PERCENTILES.items())
        _add_percentiles(table, ok_by, "e2e_ms", "e2e_sent", PERCENTILES.items())
    _add_where_ttft_goes(table, rows, ok_by, tiers["end_s"])
    return table


def _add_counts(table: pd.DataFrame, rows: pd.DataFrame, run: Run, tiers: pd.DataFrame) -> None:
    """Attempts sent / ok / failed, 429s, 503s, hints, retries, outcomes, open-loop drops."""
    is_429 = (rows["error"] == "rate_limited").to_numpy() | (rows["status"] == 429).to_numpy()
    table["sent"] = rows.groupby("tier").size().reindex(table.index).fillna(0).astype(int)
    table["ok"] = rows["ok"].groupby(rows["tier"]).sum().reindex(table.index).fillna(0).astype(int)
    table["failed"] = table["sent"] - table["ok"]
    table["n_429"] = _count(rows, is_429, table.index)
    table["n_503"] = _count(rows, (rows["status"] == 503).to_numpy(), table.index)
    with_ra = is_429 & rows["retry_after_s"].notna().to_numpy()
    table["retry_after_share"] = _count(rows, with_ra, table.index) / table["n_429"].where(table["n_429"] > 0)
    table["retries"] = _count(rows, (rows["retry_of"] != "").to_numpy(), table.index)
    _add_outcomes(table, rows, is_429)
    in_tier = run.samples[run.samples["tier"] >= 0]
    sent_all = in_tier.groupby("tier").size().reindex(table.index).fillna(0)
    table["dropped"] = tiers["dropped"].fillna(0).astype(int) if "dropped" in tiers else 0
    arrivals = (sent_all + table["dropped"]).where(sent_all + table["dropped"] > 0)
    table["drop_rate"] = (table["dropped"] / arrivals).fillna(0.0)
    sent = table["sent"].where(table["sent"] > 0)
    table["rate_429"] = (table["n_429"] / sent).fillna(0.0)
    table["error_rate"] = ((table["failed"] - table["n_429"]) / sent).fillna(0.0)


def _add_rates(table: pd.DataFrame, rows: pd.DataFrame, ok_by) -> None:
    """Per second of the measure window, never of a window shorter than the longest measured request."""
    longest_s = rows["e2e_ms"].groupby(rows["tier"]).max().reindex(table.index).fillna(0.0) / 1000.0
    window = np.maximum(table["measure_s"], longest_s)
    window = window.where(window > 0)
    table["rate_window_s"] = window
    table["rps"] = table["sent"] / window
    table["ok_rps"] = table["ok"] / window
    table["out_tok_s"] = ok_by["output_tokens"].sum().reindex(table.index) / window


def _lag_in_window(rows: pd.DataFrame, tiers_end_s: pd.Series) -> pd.DataFrame:
    """Rows whose loop lag describes their tier: a row's `loop_lag_ms` is the generator's lag when the row
    was recorded, at the attempt's end; an attempt that ended after its tier did (in the next tier's ramp
    or the end-of-run shutdown, whose one-off stall is not the tier's) says nothing about the tier."""
    took_s = rows["e2e_ms"].fillna(0).to_numpy(dtype=float) / 1000.0
    ended = rows["ts_start_s"].to_numpy(dtype=float) + took_s
    end = rows["tier"].map(tiers_end_s).to_numpy(dtype=float)
    return rows[~(ended > end)]  # a tier without an end (killed run) keeps its rows


def _add_where_ttft_goes(table: pd.DataFrame, rows: pd.DataFrame, ok_by, tiers_end_s: pd.Series) -> None:
    """In flight (Little), queueing delay, the TTFT parts, model mismatches, generator lag."""
    table["e2e_mean_ms"] = ok_by["e2e_ms"].mean().reindex(table.index)
    table["inflight"] = table["ok_rps"] * table["e2e_mean_ms"] / 1000.0
    table["ttft_mean_ms"] = ok_by["ttft_ms"].mean().reindex(table.index)
    base = table["ttft_p50_ms"].dropna()
    table["queue_delay_ms"] = (table["ttft_p50_ms"] - base.iloc[0]).clip(lower=0) if len(base) else np.nan
    base_mean = table["ttft_mean_ms"].dropna()
    table["queue_delay_mean_ms"] = ((table["ttft_mean_ms"] - base_mean.iloc[0]).clip(lower=0)
                                    if len(base_mean) else np.nan)
    table["connect_ms"] = ok_by["connect_ms"].mean().reindex(table.index)
    headers = ok_by["headers_ms"].mean().reindex(table.index)
    table["gateway_queue_ms"] = (headers - table["connect_ms"].fillna(0)).clip(lower=0)
    table["after_headers_ms"] = (table["ttft_mean_ms"] - headers).clip(lower=0)
    ok = rows[rows["ok"]]
    returned = ok["model_returned"].astype(str)
    requested = ok["model_requested"].astype(str)
    mismatch = ((returned != "") & (requested != "") & (returned != requested)).to_numpy()
    table["model_mismatch"] = _count(ok, mismatch, table.index)
    by = rows.groupby("tier")
    table["loop_lag_p99_ms"] = _lag_in_window(rows, tiers_end_s).groupby("tier")["loop_lag_ms"].quantile(
        0.99).reindex(table.index)
    table["schedule_lag_p99_ms"] = by["schedule_lag_ms"].quantile(0.99).reindex(table.index)


def _add_flags(table: pd.DataFrame) -> None:
    """too_few (p99 is noise), overloaded (the generator lagged), lag_material (overloaded, and the lag is more
    than MATERIAL_LAG_SHARE of the tier's p50 TTFT, or its CPU was pegged), judged (counts for knee, capacity
    and saturation: neither cut too short nor lag_material, unless every tier with requests was: then they
    stay judged and `all_overloaded` makes every verdict unsafe)."""
    table["too_few"] = table["ok"] < MIN_SAMPLES_P99
    table["overloaded"] = (
        (table["loop_lag_p99_ms"] > LOOP_LAG_LIMIT_MS)
        | (table["schedule_lag_p99_ms"] > SCHEDULE_LAG_LIMIT_MS)
        | (table["health_lag_ms"] > LOOP_LAG_LIMIT_MS)
        | (table["cpu_p95"] > CPU_LIMIT_PERCENT)
    )
    long_enough = ~table["short"].astype(bool)
    # left out of the verdicts only when the lag is material to what the tier measured: 80 ms of lag
    # cannot move a 1.5 s TTFT across a verdict, but it can a 50 ms one (a shared, busy machine often
    # shows some lag; the flag and the warning stay either way)
    lag_ms = table[["loop_lag_p99_ms", "schedule_lag_p99_ms", "health_lag_ms"]].max(axis=1)
    material = ~(lag_ms <= MATERIAL_LAG_SHARE * table["ttft_p50_ms"]) | (table["cpu_p95"] > CPU_LIMIT_PERCENT)
    table["lag_material"] = table["overloaded"] & material
    trusted = long_enough & ~table["lag_material"]
    table["all_overloaded"] = not bool((trusted & (table["sent"] > 0)).any()) and bool(
        (long_enough & (table["sent"] > 0) & table["lag_material"]).any())
    table["judged"] = long_enough if table["all_overloaded"].any() else trusted


def error_kinds(run: Run) -> pd.DataFrame:
    """Failed attempts per tier and error kind (columns: kinds; rows: tiers)."""
    if not run.per_request:
        return histrun.error_kinds(run)
    rows = measured(run)
    failed = rows[rows["error"] != ""]
    kinds = failed.groupby(["tier", failed["error"].astype(str)]).size().unstack(fill_value=0)
    return kinds.reindex(run.tiers["tier"], fill_value=0)


def breakdown_table(run: Run) -> pd.DataFrame:
    """TTFT per tier split by cache hit/miss and short/long prompt, when present (scenarios:
    `scenarios.scenario_table`)."""
    ok = measured(run)
    ok = ok[ok["ok"]]
    splits: list[tuple[str, pd.Series]] = []
    cached = ok["cached_tokens"]
    hit = cached.fillna(0) > 0
    if cached.notna().any() and 0 < hit.sum() < len(ok):
        splits.append(("cache", hit.map({True: "hit", False: "miss"})))
    tokens = ok["input_tokens"].dropna()
    if len(tokens) and tokens.quantile(0.9) >= 3 * max(tokens.quantile(0.1), 1):
        cut = float(np.sqrt(tokens.quantile(0.1) * tokens.quantile(0.9)))
        label = ok["input_tokens"].map(lambda v: "" if np.isnan(v) else "long" if v >= cut else "short")
        splits.append((f"prompt (cut {cut:.0f} tok)", label))
    parts = []
    for name, label in splits:
        grouped = ok["ttft_ms"].groupby([ok["tier"], label.rename("group")])
        part = grouped.quantile([0.5, 0.95, 0.99]).unstack()
        part.columns = ["ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms"]
        part["n"] = grouped.size()
        part = part.reset_index()
        part = part[part["group"] != ""]
        part.insert(1, "split", name)
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=["tier", "split", "group", "n", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms"])
    return pd.concat(parts, ignore_index=True)


def _add_latency(table: pd.DataFrame, ok_by) -> None:
    """Percentiles of TTFT, e2e, ITL and TPOT over successes, with the bootstrap CI of p99 TTFT."""
    _add_percentiles(table, ok_by, "ttft_ms", "ttft", (*PERCENTILES.items(), ("p999", 0.999)))
    too_few_999 = table["ok"] < MIN_SAMPLES_P999
    table.loc[too_few_999, "ttft_p999_ms"] = np.nan
    _add_percentiles(table, ok_by, "e2e_ms", "e2e", PERCENTILES.items())
    table["itl_p50_ms"] = ok_by["itl_p50_ms"].median().reindex(table.index)
    table["itl_p99_ms"] = ok_by["itl_p99_ms"].quantile(0.99).reindex(table.index)
    table["out_tps_p50"] = ok_by["out_tps"].median().reindex(table.index)
    ci = {t: quantile_ci(g.to_numpy(), 0.99) for t, g in ok_by["ttft_ms"]}
    table["ttft_p99_ci_lo_ms"] = pd.Series({t: v[0] for t, v in ci.items()}, dtype=float).reindex(table.index)
    table["ttft_p99_ci_hi_ms"] = pd.Series({t: v[1] for t, v in ci.items()}, dtype=float).reindex(table.index)


def _add_decode(table: pd.DataFrame, ok_by, stall_ms: float) -> None:
    """TPOT and per-request mean ITL percentiles (samples.csv keeps each request's mean/p50/p99/max gap; every
    gap is in histograms.csv), and stalls: requests whose longest gap > stall_ms."""
    _add_percentiles(table, ok_by, "tpot_ms", "tpot", PERCENTILES.items())
    table["tpot_mean_ms"] = ok_by["tpot_ms"].mean().reindex(table.index)
    _add_percentiles(table, ok_by, "itl_mean_ms", "itl_mean", PERCENTILES.items())
    stalled = ok_by["itl_max_ms"].agg(lambda s: int((s > stall_ms).sum()))
    table["stalls"] = stalled.reindex(table.index).fillna(0).astype(int)
    table["stall_ms"] = stall_ms


def _add_outcomes(table: pd.DataFrame, rows: pd.DataFrame, is_429: np.ndarray) -> None:
    """Each failed attempt counted once: shed (429, 503, in-stream error event), timeout, or other;
    Retry-After hints of the 429s and 503s by source header; the lowest quota left per tier."""
    error = rows["error"].astype(str).to_numpy()
    status = rows["status"].to_numpy()
    failed = error != ""
    shed = failed & (np.isin(error, SHED_ERRORS) | (status == 503) | is_429)
    timeout = failed & ~shed & (error == "timeout")
    table["n_stream_error"] = _count(rows, error == "stream_error", table.index)
    table["n_shed"] = _count(rows, shed, table.index)
    table["n_timeout"] = _count(rows, timeout, table.index)
    table["n_other_fail"] = _count(rows, failed & ~shed & ~timeout, table.index)
    sent = table["sent"].where(table["sent"] > 0)
    for name in ("shed", "timeout", "other_fail"):
        table[f"{name}_rate"] = (table[f"n_{name}"] / sent).fillna(0.0)
    hinted = shed & rows["retry_after_s"].notna().to_numpy()
    table["n_shed_hinted"] = _count(rows, hinted, table.index)
    source = rows["retry_after_source"].astype(str)
    named = source.where(hinted & (source != "").to_numpy())
    table["retry_after_sources"] = named.groupby(rows["tier"]).agg(
        lambda s: ", ".join(sorted(s.dropna().unique()))).reindex(table.index).fillna("")
    for kind in ("requests", "tokens"):
        left = rows[f"ratelimit_remaining_{kind}"]
        table[f"remaining_{kind}_min"] = left.groupby(rows["tier"]).min().reindex(table.index)


def _count(rows: pd.DataFrame, mask: np.ndarray, index: pd.Index) -> pd.Series:
    return pd.Series(mask, index=rows.index).groupby(rows["tier"]).sum().reindex(index).fillna(0).astype(int)


def _add_percentiles(table: pd.DataFrame, grouped, column: str, prefix: str, qs) -> None:
    qs = list(qs)
    values = grouped[column].quantile([q for _, q in qs]).unstack()
    for name, q in qs:
        table[f"{prefix}_{name}_ms"] = values[q].reindex(table.index) if q in values else np.nan


def _add_health(table: pd.DataFrame, run: Run) -> None:
    table["health_lag_ms"] = np.nan
    table["cpu_p95"] = np.nan
    health = run.health
    if health is None:
        return
    ts = health["ts_s"].to_numpy(dtype=float)
    tiers = run.tiers
    idx = np.searchsorted(tiers["start_s"].to_numpy(), ts, side="right") - 1
    safe = np.clip(idx, 0, len(tiers) - 1)
    inside = (idx >= 0) & (ts >= tiers["measure_start_s"].to_numpy()[safe]) & (ts < tiers["end_s"].to_numpy()[safe])
    tier = pd.Series(np.where(inside, tiers["tier"].to_numpy()[safe], -1), index=health.index)
    if "loop_lag_ms_max" in health:
        lag = pd.to_numeric(health["loop_lag_ms_max"], errors="coerce")
        table["health_lag_ms"] = lag[inside].groupby(tier[inside]).quantile(0.95).reindex(table.index)
    if "cpu_percent" in health:
        cpu = pd.to_numeric(health["cpu_percent"], errors="coerce")
        table["cpu_p95"] = cpu[inside].groupby(tier[inside]).quantile(0.95).reindex(table.index)
