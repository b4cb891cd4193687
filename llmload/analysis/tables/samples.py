"""Per-tier figures from samples.csv's rows, with the tier table's column names (`tiers.py`).

How it works: measured attempts are grouped by tier with vectorised pandas groupbys. Counts and rates
use every attempt sent in the tier's measure window (rates per second of that window); output tokens/s counts
the tokens delivered inside the window by every successful attempt, whichever tier sent it (`delivery.py`:
each request's tokens spread from its first token to its last), and a tier whose window is too short for its
requests is flagged with the length it needed; latency percentiles use successful attempts only, so a fast 429
never makes the latency look good; open loop, TTFT and e2e count from the intended send
(`verdict_rows`). Each failed attempt is counted once by the rule book's outcomes (shed, timeout,
server gone, other); rerank answers' documents give documents/s (`docs_s`); answers with no text
(`empty_answer`) are counted apart (`n_empty`: in `failed` only when the run counts them as errors) and, with no
token, are in no latency figure; TTFT p95 and p99 get bootstrap CIs (`with_gate_cis` adds the baseline gate's:
TTFT p50, e2e p99, per-request mean ITL p50 and p99, output tokens/s by batch means); TTFT is split into connect,
headers-minus-connect and the rest.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read import histograms
from llmload.analysis.read.run import Run
from llmload.analysis.read.windows import completions
from llmload.analysis.tables import delivery
from llmload.analysis.tables.stats import columns_cis
from llmload.rules import bounds
from llmload.rules.limits import MIN_SAMPLES_P999
from llmload.rules.outcomes import EMPTY_ANSWER, SHED_ERRORS

PERCENTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}


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


def figures(run: Run, stall_ms: float) -> pd.DataFrame:
    """The per-request figures of every tier (index: tier) from samples.csv's rows."""
    tiers = run.tiers.set_index("tier")
    rows = measured(run)
    table = pd.DataFrame(index=tiers.index)
    for col in ("load", "complete", "measure_s"):
        table[col] = tiers[col]
    table["short"] = tiers.get("short", False)
    _add_counts(table, rows, run, tiers)
    ok_by = rows[rows["ok"]].groupby("tier")
    ok = rows[rows["ok"]]
    _add_rates(table, run, tiers, (ok["e2e_ms"] - ok["ttft_ms"]).groupby(ok["tier"]).max())
    judged_rows = verdict_rows(run)
    _add_latency(table, judged_rows[judged_rows["ok"]].groupby("tier"))
    _add_decode(table, ok_by, stall_ms)
    histograms.add_pooled_itl(table, run.histograms)
    if run.load_unit == "req/s":
        _add_percentiles(table, ok_by, "ttft_ms", "ttft_sent", PERCENTILES.items())
        _add_percentiles(table, ok_by, "e2e_ms", "e2e_sent", PERCENTILES.items())
    _add_where_ttft_goes(table, rows, ok_by, tiers["end_s"])
    return table.copy()  # one block: the figures were added column by column


def _add_counts(table: pd.DataFrame, rows: pd.DataFrame, run: Run, tiers: pd.DataFrame) -> None:
    """Attempts sent / ok / failed, 429s, 503s, hints, retries, outcomes, open-loop drops."""
    is_429 = (rows["error"] == "rate_limited").to_numpy() | (rows["status"] == 429).to_numpy()
    table["sent"] = rows.groupby("tier").size().reindex(table.index).fillna(0).astype(int)
    table["ok"] = rows["ok"].groupby(rows["tier"]).sum().reindex(table.index).fillna(0).astype(int)
    table["n_empty"] = _count(rows, (rows["error"] == EMPTY_ANSWER).to_numpy(), table.index)
    table["documents"] = rows.loc[rows["ok"], "documents"].groupby(rows["tier"]).sum().reindex(table.index).fillna(0)
    add_failed(table, run.empty_is_error)
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


def add_failed(table: pd.DataFrame, empty_is_error: bool) -> None:
    """`failed`: attempts sent that were not answered (llmload.rules.tier.Tier.failed): neither with text (`ok`)
    nor, unless the run counts them as errors, empty (`n_empty`); `empty_is_error` kept for the rule book."""
    table["empty_is_error"] = empty_is_error
    table["failed"] = table["sent"] - table["ok"] - (0 if empty_is_error else table["n_empty"])


def _add_rates(table: pd.DataFrame, run: Run, tiers: pd.DataFrame, decode_max_ms: pd.Series) -> None:
    """Per second of the measure window: attempts sent and successes among them (counted by send), and the
    output tokens delivered inside it by every successful attempt, whichever tier sent it (`delivery`); the
    tiers too short for their longest decode (`decode_max_ms`: first token to last)."""
    window = table["measure_s"].where(table["measure_s"] > 0)
    table["rate_window_s"] = window
    table["rps"] = table["sent"] / window
    table["ok_rps"] = table["ok"] / window
    table["docs_s"] = table["documents"] / window  # rerank: documents ranked per second (0 for other APIs)
    tokens = delivery.delivered(run.samples, tiers["measure_start_s"].to_numpy(), tiers["end_s"].to_numpy())
    table["out_tokens"] = pd.Series(tokens, index=tiers.index).reindex(table.index)
    table["out_tok_s"] = table["out_tokens"] / window
    delivery.add_short_for_requests(table, decode_max_ms, tiers)


def _lag_in_window(rows: pd.DataFrame, tiers_end_s: pd.Series) -> pd.DataFrame:
    """Rows whose loop lag describes their tier: a row's `loop_lag_ms` is the generator's lag when the row
    was recorded, at the attempt's end; an attempt that ended after its tier did (in the next tier's ramp
    or the end-of-run shutdown, whose one-off stall is not the tier's) says nothing about the tier."""
    ended = completions(rows)
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
    ok = rows[rows["ok"]]  # per request: a reused connection connected in 0 ms (its connect_ms is empty)
    to_headers = (ok["headers_ms"] - ok["connect_ms"].fillna(0.0)).groupby(ok["tier"]).mean()
    table["gateway_queue_ms"] = to_headers.reindex(table.index).clip(lower=0)
    table["after_headers_ms"] = (table["ttft_mean_ms"] - headers).clip(lower=0)
    returned = ok["model_returned"].astype(str)
    requested = ok["model_requested"].astype(str)
    mismatch = ((returned != "") & (requested != "") & (returned != requested)).to_numpy()
    table["model_mismatch"] = _count(ok, mismatch, table.index)
    by = rows.groupby("tier")
    table["loop_lag_p99_ms"] = _lag_in_window(rows, tiers_end_s).groupby("tier")["loop_lag_ms"].quantile(
        0.99).reindex(table.index)
    table["schedule_lag_p99_ms"] = by["schedule_lag_ms"].quantile(0.99).reindex(table.index)


def _add_latency(table: pd.DataFrame, ok_by) -> None:
    """Percentiles of TTFT, e2e, ITL and TPOT over successes, with bootstrap CIs of TTFT p95 and p99."""
    _add_percentiles(table, ok_by, "ttft_ms", "ttft", (*PERCENTILES.items(), ("p999", 0.999)))
    too_few_999 = table["ok"] < MIN_SAMPLES_P999
    table.loc[too_few_999, "ttft_p999_ms"] = np.nan
    _add_percentiles(table, ok_by, "e2e_ms", "e2e", PERCENTILES.items())
    for column in ("ttft_ms", "e2e_ms"):  # what a claim "p95 within the limit" can show (llmload.rules.bounds)
        upper = ok_by[column].apply(lambda v: bounds.upper_bound_of(v.to_numpy(), 0.95))
        table[column.replace("_ms", "_p95_upper_ms")] = upper.reindex(table.index)
    table["itl_p50_ms"] = ok_by["itl_p50_ms"].median().reindex(table.index)
    table["itl_p99_ms"] = ok_by["itl_p99_ms"].quantile(0.99).reindex(table.index)
    table["out_tps_p50"] = ok_by["out_tps"].median().reindex(table.index)
    add_cis(table, ok_by, CIS)


CIS = {"ttft": {"p95": 0.95, "p99": 0.99}}
"""the tier table's bootstrap CIs: TTFT p95 (the SLO's, checked against the queueing model) and p99 (the report's)"""
GATE_CIS = {"ttft": {"p50": 0.50}, "e2e": {"p99": 0.99}, "itl_mean": {"p50": 0.50, "p99": 0.99}}
"""the baseline gate's further CIs, computed only for summary.json's tier records (`with_gate_cis`)"""


def with_gate_cis(run: Run, table: pd.DataFrame) -> pd.DataFrame:
    """A copy of the tier table (column `tier`) with the baseline gate's CIs: GATE_CIS and output tokens/s by
    batch means (`delivery.rate_ci`). Not in the tier table itself: only summary.json and the gate use them, and a
    bootstrap per figure and tier is not free. A run from histograms keeps its NaN (hist_figures.UNKNOWN)."""
    out = table.copy()
    if not run.per_request:
        return out
    rows = verdict_rows(run)
    cis = pd.DataFrame(index=pd.Index(out["tier"]))
    add_cis(cis, rows[rows["ok"]].groupby("tier"), GATE_CIS)
    tiers = run.tiers.set_index("tier")
    low, high = delivery.rate_ci(run.samples, tiers["measure_start_s"].to_numpy(), tiers["end_s"].to_numpy())
    cis["out_tok_s_ci_lo"] = pd.Series(low, index=tiers.index).reindex(cis.index)
    cis["out_tok_s_ci_hi"] = pd.Series(high, index=tiers.index).reindex(cis.index)
    for column in cis.columns:
        out[column] = cis[column].to_numpy()
    return out


def add_cis(table: pd.DataFrame, ok_by, specs: dict[str, dict[str, float]]) -> None:
    """`{prefix}_{name}_ci_lo_ms` / `_ci_hi_ms`: the bootstrap 95 % CI of each percentile of `{prefix}_ms` per tier
    (the columns of a tier share their resamples: `stats.columns_cis`)."""
    cis: dict[str, dict] = {prefix: {} for prefix in specs}
    for tier, group in ok_by:
        columns = [(group[f"{prefix}_ms"].to_numpy(dtype=float), tuple(qs.values())) for prefix, qs in specs.items()]
        for prefix, got in zip(specs, columns_cis(columns)):
            cis[prefix][tier] = got
    for prefix, qs in specs.items():
        for i, name in enumerate(qs):
            for j, end in enumerate(("lo", "hi")):
                table[f"{prefix}_{name}_ci_{end}_ms"] = pd.Series({t: v[i][j] for t, v in cis[prefix].items()},
                                                                  dtype=float).reindex(table.index)


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
    """Each failed attempt counted once: shed (429, 503, in-stream error event), timeout, server gone, or other;
    Retry-After hints of the 429s and 503s by source header; the lowest quota left per tier."""
    error = rows["error"].astype(str).to_numpy()
    status = rows["status"].to_numpy()
    failed = (error != "") & (error != EMPTY_ANSWER)  # an empty answer is its own outcome (n_empty)
    shed = failed & (np.isin(error, SHED_ERRORS) | (status == 503) | is_429)
    timeout = failed & ~shed & (error == "timeout")
    gone = failed & (error == "server_gone")
    table["n_stream_error"] = _count(rows, error == "stream_error", table.index)
    table["n_shed"] = _count(rows, shed, table.index)
    table["n_timeout"] = _count(rows, timeout, table.index)
    table["n_gone"] = _count(rows, gone, table.index)
    table["n_other_fail"] = _count(rows, failed & ~shed & ~timeout & ~gone, table.index)
    sent = table["sent"].where(table["sent"] > 0)
    for name in ("shed", "timeout", "other_fail"):
        table[f"{name}_rate"] = (table[f"n_{name}"] / sent).fillna(0.0)
    table["other_fail_rate"] += (table["n_empty"].where(table["empty_is_error"], 0) / sent).fillna(0.0)  # as Tier's
    hinted = shed & rows["retry_after_s"].notna().to_numpy()
    table["n_shed_hinted"] = _count(rows, hinted, table.index)
    source = rows["retry_after_source"].astype(str)
    named = source.where(hinted & (source != "").to_numpy())
    table["retry_after_sources"] = named.groupby(rows["tier"]).agg(
        lambda s: ", ".join(sorted(s.dropna().unique()))).reindex(table.index).fillna("")
    for kind in ("requests", "tokens"):
        left = rows[f"ratelimit_remaining_{kind}"]
        table[f"remaining_{kind}_min"] = left.groupby(rows["tier"]).min().reindex(table.index)
    table["remaining_requests_max"] = rows["ratelimit_remaining_requests"].groupby(rows["tier"]).max() \
        .reindex(table.index)


def _count(rows: pd.DataFrame, mask: np.ndarray, index: pd.Index) -> pd.Series:
    return pd.Series(mask, index=rows.index).groupby(rows["tier"]).sum().reindex(index).fillna(0).astype(int)


def _add_percentiles(table: pd.DataFrame, grouped, column: str, prefix: str, qs) -> None:
    qs = list(qs)
    values = grouped[column].quantile([q for _, q in qs]).unstack()
    for name, q in qs:
        table[f"{prefix}_{name}_ms"] = values[q].reindex(table.index) if q in values else np.nan
