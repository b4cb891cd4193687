"""A run recorded with `--ship histograms`: no samples.csv, only histograms.csv and attempts.csv.

How it works: `is_histogram_run(path)` tells such a folder (histograms.csv and attempts.csv, no
samples.csv); `load_hist_run` reads it into the same `Run` as a samples run (`source`
"histograms", no sample rows): run.json, tiers.csv (each tier's window; without it, the tiers in
the histograms, measured over the whole run), health.csv and server_metrics.csv. A tier without
an end (the run died in it) ends when the run was last seen; a tier without a target load takes
health.csv's users. The per-tier figures come from `tables/hist_figures.py`. What histograms
cannot give (no per-request rows) is listed once, in CANNOT_SHOW, which the report and summary.json
print.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from llmload.analysis.read import histograms, ramps, windows
from llmload.analysis.read.files import RunError, read_info, read_optional, read_server_metrics, read_tiers, section
from llmload.analysis.read.histograms import Histograms
from llmload.analysis.read.loaded_run import Run, empty_samples, split_confirm
from llmload.rules.limits import SHORT_TIER_S

CANNOT_SHOW = (
    "the TTFT p99 and p95 confidence intervals (need every request's TTFT: the model check compares point values)",
    "goodput (a request meets an SLO only if its own TTFT, TPOT and e2e all do: histograms keep each figure "
    "apart)",
    "where TTFT goes (connect, headers), per-scenario, per-prompt-class, cache and workload splits, model-field "
    "mismatches, retries with and without their wait, stalls, and the error messages",
    "the load really applied (active users, effective concurrency) and users refused before a tier's window",
    "the TTFT distribution and the run over time (figures drawn from per-request rows)",
    "request-level figures of the open-loop actual send (only the intended-send TTFT and e2e are recorded)",
)
"""what a report from histograms cannot show, one sentence each (printed in the report and summary.json)"""


def is_histogram_run(path: str | Path) -> bool:
    path = Path(path)
    return (path / "histograms.csv").exists() and (path / "attempts.csv").exists() and \
        not (path / "samples.csv").exists()


def load_hist_run(path: str | Path) -> Run:
    path = Path(path)
    notes: list[str] = []
    info = read_info(path, notes)
    hists = histograms.read(path)
    if hists is None or hists.attempts is None:
        raise RunError(f"{path}: histograms.csv or attempts.csv is not readable (written by --ship histograms)")
    phases = set(hists.attempts["phase"])
    warm_only = "warmup" in phases and "measure" not in phases
    if warm_only:
        notes.append(ramps.warm_only_sentence(info)[:1].upper() + ramps.warm_only_sentence(info)[1:])
        hists = Histograms(hists.frame.replace({"phase": {"warmup": "measure"}}),
                           hists.attempts.replace({"phase": {"warmup": "measure"}}))
    tiers, confirm = split_confirm(read_tiers(path, notes))
    if tiers is None:
        tiers = _tiers_from_histograms(hists, info, path, notes)
    health = read_optional(path / "health.csv", ("ts_s",), notes)
    tiers, unit = tier_windows(tiers, info, _last_seen_s(info, path, health, notes))
    if tiers["load"].isna().any():
        tiers["load"] = tiers["load"].fillna(_users_from_health(tiers, health, notes))
    return Run(path=path, name=str(info.get("run_id") or path.name), info=info, samples=empty_samples(),
               tiers=tiers, load_unit=unit, health=health, notes=tuple(notes),
               server_metrics=read_server_metrics(path), histograms=hists, warm_only=warm_only,
               source="histograms", confirm=confirm)


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
    end = section(info, "end")
    if end.get("reason") == "-t" and isinstance(started, (int, float)) and isinstance(run_time, (int, float)):
        return float(started) + float(run_time)
    written = max((path / name).stat().st_mtime for name in ("histograms.csv", "attempts.csv"))
    if isinstance(ended, (int, float)):
        return min(float(ended), written)
    notes.append("run.json has no end yet (the run is going on, or was stopped from the web UI): its window ends "
                 "at the last write of histograms.csv / attempts.csv.")
    return written


def _last_seen_s(info: dict, path: Path, health: pd.DataFrame | None, notes: list[str]) -> float:
    """When the run was last seen sending: run.json's end, else the last second of health.csv (a killed run's
    last one), else the last write of the histogram files."""
    ended = info.get("ended_unix")
    if isinstance(ended, (int, float)):
        return float(ended)
    if health is not None and len(health):
        return float(pd.to_numeric(health["ts_s"], errors="coerce").max()) + 1.0
    return _end_s(info, path, notes)


def tier_windows(tiers: pd.DataFrame, info: dict, last_seen_s: float) -> tuple[pd.DataFrame, str]:
    """Each tier's measure window; a last tier without an end (the run died in it) ends when the run was last
    seen, at most its planned length after its start."""
    tiers = tiers.copy()
    tiers["complete"] = tiers["end_s"].notna()
    tiers["end_s"] = tiers["end_s"].fillna(tiers["start_s"].shift(-1))
    planned = tiers["start_s"] + windows.planned_seconds(tiers.assign(complete=tiers["end_s"].notna()), info)
    tiers["end_s"] = tiers["end_s"].fillna(np.fmin(planned, last_seen_s))
    tiers["warmup_s"] = tiers["warmup_s"].fillna(0.0)
    tiers["measure_start_s"] = tiers["start_s"] + tiers["warmup_s"]
    tiers["measure_s"] = (tiers["end_s"] - tiers["measure_start_s"]).clip(lower=0.0)
    tiers["short"] = ~tiers["complete"] & ~(tiers["measure_s"] >= SHORT_TIER_S)
    open_loop = tiers["target_rps"].notna().any() and tiers["target_users"].isna().all()
    tiers["load"] = (tiers["target_rps"] if open_loop else tiers["target_users"]).astype(float)
    tiers["dropped"] = pd.to_numeric(tiers["dropped"], errors="coerce") if "dropped" in tiers else np.nan
    return tiers, "req/s" if open_loop else "users"


def _users_from_health(tiers: pd.DataFrame, health: pd.DataFrame | None, notes: list[str]) -> pd.Series:
    """A tier without a target load (run.json names no user count): the median of health.csv's users (summed
    over the generator processes, second by second) in its measure window, else its tier number."""
    users = pd.Series(np.nan, index=tiers.index)
    if health is not None and "users" in health:
        per_second = pd.to_numeric(health["users"], errors="coerce").groupby(health["ts_s"].astype(float).round())\
            .sum()
        for i, row in tiers.iterrows():
            inside = per_second[(per_second.index >= row["measure_start_s"]) & (per_second.index < row["end_s"])]
            users[i] = float(inside.median()) if len(inside) else np.nan
    if users.isna().any():
        users = users.fillna(tiers["tier"].astype(float))
        notes.append("no target load recorded (run.json, tiers.csv) nor users in health.csv: load shown as the "
                     "tier number.")
    else:
        notes.append("no target load recorded (run.json, tiers.csv): the load is health.csv's users (median per "
                     "second of the measure window).")
    return users
