"""A run recorded with `--ship histograms`: no samples.csv, only histograms.csv and attempts.csv.

How it works: `is_histogram_run(path)` tells such a folder (histograms.csv and attempts.csv, no
samples.csv). `load_hist_run` reads run.json, tiers.csv (each tier's window; without it, the tiers
in the histograms, measured over the whole run) and health.csv, and `hist_table` builds the
per-tier table with the tier table's column names (analysis/tiers.py) from the measure phase of
the histograms: attempts, successes, failures by status and kind, req/s and output tokens/s per
second of the measure window, TTFT / e2e / TPOT / mean-ITL / every-gap percentiles and means
(each within HIST_RELATIVE_ERROR, 1 %), in flight by Little's law, the client wait estimate
(waiting.py) and generator health from health.csv. What histograms cannot give (no per-request
rows) stays NaN and is listed in CANNOT_SHOW, which the report prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import histograms, judging, ramps
from analysis.histograms import Histograms
from analysis.loader import RunError, _read_info, _read_optional, _read_tiers
from analysis.tiers import MIN_SAMPLES_P999, PERCENTILES, _add_flags, _add_health

CANNOT_SHOW = (
    "the TTFT p99 confidence interval (needs every request's TTFT): the knee compares the p99 itself with the "
    "low-load band",
    "goodput and the capacity under each SLO profile (a request meets an SLO only if its own TTFT, TPOT and e2e "
    "all do: histograms keep each figure apart)",
    "the saturation decision table, the queueing model fit and the replica plan",
    "where TTFT goes (connect, headers), per-scenario, per-prompt-class, cache and workload splits, model-field "
    "mismatches, retries with and without their wait, stalls, and the error messages",
    "request-level figures of the open-loop actual send (only the intended-send TTFT and e2e are recorded)",
)
"""what a report from histograms cannot show, one sentence each (printed in the report)"""
METRICS = {"ttft": "ttft_ms", "e2e": "e2e_ms", "tpot": "tpot_ms", "itl_mean": "itl_mean_ms"}


def is_histogram_run(path: str | Path) -> bool:
    path = Path(path)
    return (path / "histograms.csv").exists() and (path / "attempts.csv").exists() and \
        not (path / "samples.csv").exists()


@dataclass(frozen=True)
class HistRun:
    path: Path
    name: str
    info: dict
    tiers: pd.DataFrame
    """tier, start_s, end_s, measure_start_s, measure_s, load, complete, short, warmup_s"""
    load_unit: str
    histograms: Histograms
    health: pd.DataFrame | None = None
    notes: tuple[str, ...] = ()
    warm_only: bool = False
    """no attempt is phase=measure (the warm-up never ended): the warm-up histograms are read instead"""


def load_hist_run(path: str | Path) -> HistRun:
    path = Path(path)
    notes: list[str] = []
    info = _read_info(path, notes)
    hists = histograms.read(path)
    if hists is None or hists.attempts is None:
        raise RunError(f"{path}: histograms.csv or attempts.csv is not readable (written by --ship histograms)")
    phases = set(hists.attempts["phase"])
    warm_only = "warmup" in phases and "measure" not in phases
    if warm_only:
        notes.append(ramps.warm_only_sentence(info)[:1].upper() + ramps.warm_only_sentence(info)[1:])
        hists = Histograms(hists.frame.replace({"phase": {"warmup": "measure"}}),
                           hists.attempts.replace({"phase": {"warmup": "measure"}}))
    tiers = _read_tiers(path, notes)
    if tiers is None:
        tiers = _tiers_from_histograms(hists, info, path, notes)
    tiers, unit = _windows(tiers, info)
    health = _read_optional(path / "health.csv", ("ts_s",), notes)
    return HistRun(path, str(info.get("run_id") or path.name), info, tiers, unit, hists, health, tuple(notes),
                   warm_only)


def _tiers_from_histograms(hists: Histograms, info: dict, path: Path, notes: list[str]) -> pd.DataFrame:
    """Without tiers.csv: each tier spans the run. A run without a load shape (one tier, tier 0) keeps no send
    times, so its measure window is estimated: the run's length x the share of its attempts sent after the
    warm-up (steady sending assumed)."""
    attempts = hists.attempts if hists.attempts is not None else pd.DataFrame({"tier": [0], "phase": ["measure"],
                                                                              "attempts": [0]})
    numbers = sorted(int(t) for t in attempts["tier"].unique())
    users = (info.get("options") or {}).get("num_users")
    start_s, end_s = info.get("started_unix", np.nan), _end_s(info, path, notes)
    warmup_s = 0.0
    if ramps.plain(info) and len(numbers) == 1:
        total = int(attempts["attempts"].sum())
        measured = int(attempts.loc[attempts["phase"] == "measure", "attempts"].sum())
        warmup_s = (end_s - start_s) * (1 - measured / total) if total else 0.0
        notes.append(f"No tiers.csv (a run without a load shape) and no send times in histograms: the measure window "
                     f"is estimated as the run's length x the share of attempts sent after the warm-up ({measured} "
                     f"of {total}).")
    else:
        notes.append("tiers.csv missing: each tier's window is the whole run (run.json started_unix to ended_unix).")
    return pd.DataFrame({"tier": numbers, "start_s": start_s, "end_s": end_s, "target_users": users,
                         "target_rps": np.nan, "warmup_s": warmup_s, "dropped": np.nan})


def _end_s(info: dict, path: Path, notes: list[str]) -> float:
    """When the run stopped sending: start + --run-time for a -t end, else the earlier of ended_unix and the last
    write of its histogram files (a run stopped from the web UI quits later; a run going on has no end yet)."""
    started, ended = info.get("started_unix"), info.get("ended_unix")
    run_time = (info.get("options") or {}).get("run_time")
    end = info.get("end") if isinstance(info.get("end"), dict) else {}
    if end.get("reason") == "-t" and isinstance(started, (int, float)) and isinstance(run_time, (int, float)):
        return float(started) + float(run_time)
    written = max((path / name).stat().st_mtime for name in ("histograms.csv", "attempts.csv"))
    if isinstance(ended, (int, float)):
        return min(float(ended), written)
    notes.append("run.json has no end yet (the run is going on, or was stopped from the web UI): its window ends "
                 "at the last write of histograms.csv / attempts.csv.")
    return written


def _windows(tiers: pd.DataFrame, info: dict) -> tuple[pd.DataFrame, str]:
    tiers = tiers.copy()
    tiers["complete"] = tiers["end_s"].notna()
    ended = info.get("ended_unix")
    tiers["end_s"] = tiers["end_s"].fillna(tiers["start_s"].shift(-1))
    tiers["end_s"] = tiers["end_s"].fillna(float(ended) if isinstance(ended, (int, float)) else np.nan)
    tiers["warmup_s"] = tiers["warmup_s"].fillna(0.0)
    tiers["measure_start_s"] = tiers["start_s"] + tiers["warmup_s"]
    tiers["measure_s"] = (tiers["end_s"] - tiers["measure_start_s"]).clip(lower=0.0)
    tiers["short"] = ~tiers["complete"] & ~(tiers["measure_s"] >= 5.0)
    open_loop = tiers["target_rps"].notna().any() and tiers["target_users"].isna().all()
    tiers["load"] = (tiers["target_rps"] if open_loop else tiers["target_users"]).astype(float)
    return tiers, "req/s" if open_loop else "users"


def _counts(table: pd.DataFrame, attempts: pd.DataFrame) -> None:
    measure = attempts[attempts["phase"] == "measure"]
    by = measure.groupby("tier")
    for col, name in (("attempts", "sent"), ("ok", "ok"), ("retries", "retries"), ("output_tokens", "out_tokens")):
        table[name] = by[col].sum().reindex(table.index).fillna(0).astype(int)
    table["failed"] = table["sent"] - table["ok"]
    error, status = measure["error"].astype(str), measure["status"]
    n_429 = measure["attempts"].where((error == "rate_limited") | (status == 429), 0)
    table["n_429"] = n_429.groupby(measure["tier"]).sum().reindex(table.index).fillna(0).astype(int)
    n_503 = measure["attempts"].where(status == 503, 0)
    table["n_503"] = n_503.groupby(measure["tier"]).sum().reindex(table.index).fillna(0).astype(int)
    shed = error.isin(("rate_limited", "stream_error", "retry_after_too_long")) | status.isin((429, 503))
    table["n_shed"] = measure["attempts"].where(shed & (error != ""), 0).groupby(
        measure["tier"]).sum().reindex(table.index).fillna(0).astype(int)
    table["n_stream_error"] = measure["attempts"].where(error == "stream_error", 0).groupby(
        measure["tier"]).sum().reindex(table.index).fillna(0).astype(int)
    sent = table["sent"].where(table["sent"] > 0)
    table["shed_rate"] = (table["n_shed"] / sent).fillna(0.0)
    table["rate_429"] = (table["n_429"] / sent).fillna(0.0)
    table["error_rate"] = ((table["failed"] - table["n_429"]) / sent).fillna(0.0)
    table["dropped"], table["drop_rate"] = 0, 0.0


def _latency(table: pd.DataFrame, hists: Histograms) -> None:
    for prefix, metric in METRICS.items():
        names = (*PERCENTILES.items(), ("p999", 0.999)) if prefix == "ttft" else PERCENTILES.items()
        for name, q in names:
            table[f"{prefix}_{name}_ms"] = [hists.percentile(int(t), metric, q) for t in table.index]
        table[f"{prefix}_mean_ms"] = [hists.mean(int(t), metric) for t in table.index]
    table.loc[table["ok"] < MIN_SAMPLES_P999, "ttft_p999_ms"] = np.nan
    table["ttft_p99_ci_lo_ms"] = table["ttft_p99_ci_hi_ms"] = np.nan
    table["out_tps_p50"] = [hists.percentile(int(t), "out_tps", 0.5) for t in table.index]
    histograms.add_pooled_itl(table, hists)


def hist_table(run: HistRun) -> pd.DataFrame:
    """One row per tier (tier order), tier-table columns computable from histograms (module docstring)."""
    tiers = run.tiers.set_index("tier")
    table = pd.DataFrame(index=tiers.index)
    for col in ("load", "complete", "measure_s", "short"):
        table[col] = tiers[col]
    table["load_target"] = table["load"]
    assert run.histograms.attempts is not None  # load_hist_run checked it
    _counts(table, run.histograms.attempts)
    window = table["measure_s"].where(table["measure_s"] > 0)
    table["rate_window_s"] = window
    table["rps"], table["ok_rps"] = table["sent"] / window, table["ok"] / window
    table["out_tok_s"] = table["out_tokens"] / window
    _latency(table, run.histograms)
    table["inflight"] = table["ok_rps"] * table["e2e_mean_ms"] / 1000.0
    table["loop_lag_p99_ms"] = table["schedule_lag_p99_ms"] = np.nan
    _add_health(table, run)  # type: ignore[arg-type]  # reads .health and .tiers, which a HistRun has
    judging.add_wait(table)
    _add_flags(table)
    for col in ("concurrency", "active_users", "stall_ms", "goodput_rps", "stalls"):
        table[col] = np.nan  # per-request figures: none in histograms
    table["under_applied"] = False
    return table.reset_index()
