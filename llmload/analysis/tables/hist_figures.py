"""Per-tier figures of a run recorded with `--ship histograms`, with the tier table's column names.

How it works: attempts, successes and failures by status and kind (the rule book's outcomes) come
from attempts.csv's exact counts; open-loop drops from tiers.csv; req/s and output tokens/s per
second of the measure window (the tokens of the successes sent in it: without rows they cannot be
counted where they were delivered, `delivery.py`, nor a tier found too short for its decodes); TTFT,
e2e, TPOT, mean-ITL and every-gap percentiles and means from the histograms (each within
HIST_RELATIVE_ERROR, 1 %); in flight by Little's law. `tiers.py` adds what both kinds of
run share (generator health, server metrics, the waiting rule, the flags).
Figures only per-request rows give stay NaN (UNKNOWN; read/hist_run.CANNOT_SHOW says so).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from llmload.analysis.read import histograms
from llmload.analysis.read.histograms import Histograms
from llmload.analysis.read.run import Run
from llmload.analysis.tables import delivery, samples
from llmload.rules.limits import MIN_SAMPLES_P999, REJECT_LIMIT, UNDER_APPLIED
from llmload.rules.outcomes import EMPTY_ANSWER, SHED_ERRORS, SHED_STATUSES

METRICS = {"ttft": "ttft_ms", "e2e": "e2e_ms", "tpot": "tpot_ms", "itl_mean": "itl_mean_ms"}
PERCENTILES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}


def _summed(measure: pd.DataFrame, mask: pd.Series | np.ndarray, index: pd.Index, col: str = "attempts") -> pd.Series:
    return measure[col].where(mask, 0).groupby(measure["tier"]).sum().reindex(index).fillna(0).astype(int)


def _counts(table: pd.DataFrame, attempts: pd.DataFrame, run_empty_is_error: bool) -> None:
    """Attempts, successes, empty answers and failures by kind (llmload.rules.outcomes) per tier, from
    attempts.csv."""
    measure = attempts[attempts["phase"] == "measure"]
    by = measure.groupby("tier")
    for col, name in (("attempts", "sent"), ("ok", "ok"), ("retries", "retries"), ("output_tokens", "out_tokens")):
        table[name] = by[col].sum().reindex(table.index).fillna(0).astype(int)
    error, status = measure["error"].astype(str), measure["status"]
    table["n_empty"] = _summed(measure, error == EMPTY_ANSWER, table.index)
    samples.add_failed(table, run_empty_is_error)
    failed = (error != "") & (error != EMPTY_ANSWER)  # an empty answer is its own outcome (n_empty)
    is_429 = (error == "rate_limited") | (status == 429)
    shed = failed & (error.isin(SHED_ERRORS) | status.isin(SHED_STATUSES))
    timeout = failed & ~shed & (error == "timeout")
    table["n_429"] = _summed(measure, is_429, table.index)
    table["n_503"] = _summed(measure, status == 503, table.index)
    table["n_shed"] = _summed(measure, shed, table.index)
    table["n_stream_error"] = _summed(measure, error == "stream_error", table.index)
    table["n_timeout"] = _summed(measure, timeout, table.index)
    table["n_gone"] = _summed(measure, failed & (error == "server_gone"), table.index)
    table["n_other_fail"] = _summed(measure, failed & ~shed & ~timeout & (error != "server_gone"), table.index)
    table["n_shed_hinted"] = _summed(measure, shed, table.index, "hinted")
    hinted_429 = _summed(measure, is_429, table.index, "hinted")
    table["retry_after_share"] = hinted_429 / table["n_429"].where(table["n_429"] > 0)
    sent = table["sent"].where(table["sent"] > 0)
    for name in ("shed", "timeout", "other_fail"):
        table[f"{name}_rate"] = (table[f"n_{name}"] / sent).fillna(0.0)
    table["other_fail_rate"] += (table["n_empty"].where(table["empty_is_error"], 0) / sent).fillna(0.0)  # as Tier's
    table["rate_429"] = (table["n_429"] / sent).fillna(0.0)
    table["error_rate"] = ((table["failed"] - table["n_429"]) / sent).fillna(0.0)
    table["retry_after_sources"] = ""


def _drops(table: pd.DataFrame, tiers: pd.DataFrame, attempts: pd.DataFrame) -> None:
    """Open loop: arrivals dropped at the in-flight cap (tiers.csv, whole tier) and their share of the tier's
    arrivals, as from rows: dropped / (dropped + attempts sent in the whole tier)."""
    table["dropped"] = tiers["dropped"].fillna(0).astype(int)
    sent_all = attempts[attempts["phase"] != "after"].groupby("tier")["attempts"].sum().reindex(table.index)
    arrivals = sent_all.fillna(0) + table["dropped"]
    table["drop_rate"] = (table["dropped"] / arrivals.where(arrivals > 0)).fillna(0.0)


def _latency(table: pd.DataFrame, hists: Histograms) -> None:
    for prefix, metric in METRICS.items():
        names = (*PERCENTILES.items(), ("p999", 0.999)) if prefix == "ttft" else PERCENTILES.items()
        for name, q in names:
            table[f"{prefix}_{name}_ms"] = [hists.percentile(int(t), metric, q) for t in table.index]
        table[f"{prefix}_mean_ms"] = [hists.mean(int(t), metric) for t in table.index]
        if prefix in ("ttft", "e2e"):
            table[f"{prefix}_p95_upper_ms"] = [histograms.upper_p95(*hists.of(int(t), metric)) for t in table.index]
    table.loc[table["ok"] < MIN_SAMPLES_P999, "ttft_p999_ms"] = np.nan
    table["out_tps_p50"] = [hists.percentile(int(t), "out_tps", 0.5) for t in table.index]
    histograms.add_pooled_itl(table, hists)
    base = table["ttft_p50_ms"].dropna()
    table["queue_delay_ms"] = (table["ttft_p50_ms"] - base.iloc[0]).clip(lower=0) if len(base) else np.nan
    base_mean = table["ttft_mean_ms"].dropna()
    table["queue_delay_mean_ms"] = ((table["ttft_mean_ms"] - base_mean.iloc[0]).clip(lower=0)
                                    if len(base_mean) else np.nan)


CIS = tuple(f"{name}_ci_{end}_ms" for name in ("ttft_p50", "ttft_p95", "ttft_p99", "e2e_p99", "itl_mean_p50",
                                                "itl_mean_p99") for end in ("lo", "hi"))
UNKNOWN = (*CIS, "out_tok_s_ci_lo", "out_tok_s_ci_hi", "itl_p50_ms",
           "itl_p99_ms", "connect_ms", "gateway_queue_ms", "after_headers_ms", "model_mismatch", "loop_lag_p99_ms",
           "schedule_lag_p99_ms", "stalls", "remaining_requests_min", "remaining_tokens_min",
           "remaining_requests_max")
"""tier-table columns only per-request rows give (NaN here)"""


def hist_figures(run: Run, stall_ms: float) -> pd.DataFrame:
    """One row per tier (index: tier), the tier table's per-request figures computed from histograms."""
    tiers = run.tiers.set_index("tier")
    table = pd.DataFrame(index=tiers.index)
    for col in ("load", "complete", "measure_s", "short"):
        table[col] = tiers[col]
    assert run.histograms is not None and run.histograms.attempts is not None  # load_hist_run checked it
    _counts(table, run.histograms.attempts, run.empty_is_error)
    _drops(table, tiers, run.histograms.attempts)
    window = table["measure_s"].where(table["measure_s"] > 0)
    table["rate_window_s"] = window
    table["rps"], table["ok_rps"] = table["sent"] / window, table["ok"] / window
    table["out_tok_s"] = table["out_tokens"] / window
    _latency(table, run.histograms)
    no_decodes = pd.Series(np.nan, index=table.index)  # without rows no decode's length is known
    delivery.add_short_for_requests(table, no_decodes, tiers)  # tokens by send: no rows to spread them by arrival
    table["inflight"] = table["ok_rps"] * table["e2e_mean_ms"] / 1000.0
    for col in UNKNOWN:
        table[col] = np.nan
    table["stall_ms"] = stall_ms
    return table


def hinted_refusals_before(run: Run) -> dict[int, int]:
    """Per tier, refused warm-up attempts that carried a retry hint: users parked on one may send nothing in the
    measure window, which only per-request rows can show (`concurrency.parked_after_refusal`)."""
    attempts = run.histograms.attempts if run.histograms is not None else None
    if attempts is None or run.load_unit != "users":
        return {}
    error, status = attempts["error"].astype(str), attempts["status"]
    shed = (error != "") & (error.isin(SHED_ERRORS) | status.isin(SHED_STATUSES))
    warm = attempts[shed & (attempts["phase"] == "warmup") & (attempts["hinted"] > 0)]
    return {int(t): int(n) for t, n in warm.groupby("tier")["hinted"].sum().items() if n}


def possibly_parked(table: pd.DataFrame, run: Run) -> pd.Series:
    """Closed-loop tiers whose users may have slept through the window on a retry hint: its warm-up refused
    attempts with a hint, it refused almost nothing in the window (so its users were not busy being refused),
    and fewer requests were in flight than users asked (Little's law: ok req/s x mean e2e). From rows the report
    counts the parked users (`concurrency.py`); from histograms it cannot, so such a tier is not judged."""
    hinted = hinted_refusals_before(run)
    idle = table["inflight"] < UNDER_APPLIED * table["load"]
    return table["tier"].isin(list(hinted)) & (table["shed_rate"] <= REJECT_LIMIT) & idle


def error_kinds(run: Run) -> pd.DataFrame:
    """Failed measured attempts per tier and error kind, from attempts.csv (columns: kinds; rows: tiers); empty
    answers only when the run counts them as errors."""
    attempts = run.histograms.attempts if run.histograms is not None else None
    if attempts is None:
        return pd.DataFrame(index=run.tiers["tier"])
    error = attempts["error"].astype(str)
    failed = attempts[(attempts["phase"] == "measure") & (error != "") & ((error != EMPTY_ANSWER) | run.empty_is_error)]
    kinds = failed.groupby(["tier", failed["error"].astype(str)])["attempts"].sum().unstack(fill_value=0)
    return kinds.reindex(run.tiers["tier"], fill_value=0).astype(int)
