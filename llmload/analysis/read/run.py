"""Read a run folder (`reports/<run>/`) into tidy frames aligned to the load tiers.

How it works:
- `samples.csv` is required (one row per request attempt). Only the columns analysis uses
  are read; unknown extra columns are ignored and missing optional ones become empty.
- `tiers.csv` gives each tier's unix window. A sample belongs to the tier whose
  [start_s, end_s) holds its `ts_start_s`, and is *measured* when it was sent in
  [start_s + warmup_s, end_s). The `phase` column written by the load generator is not
  trusted on its own: tiers.csv decides (disagreements are counted in the notes).
- A tier without `end_s` (the run died in it) ends at the next tier's start, else at the
  last completed request; an incomplete tier measured too briefly is marked `short`
  (`windows.py`). Without tiers.csv the tiers come from the samples' `tier`/`phase` columns, each row's phase
  honoured; a run without a load shape gets one tier per ramp of users (`ramps.py`).
- Rows a killed writer cut, or malformed rows, are skipped with a note (`csvrows.py`).
- `server_metrics.csv` (ts_s, name, value: the target's Prometheus metrics scraped during the
  run) is optional and read as is; `server_metrics.py` picks the names it knows.
- Optional sample columns (`retry_after_source`, `ratelimit_remaining_*`) are empty for runs
  written before they existed.
- `histograms.csv` (every inter-token gap per tier and phase: `histograms.py`) is optional.
- `run.json` and `health.csv` (llmload always writes them) are named in `Run.notes` when missing;
  `locust_stats_history.csv` (Locust's --csv only) is optional and not: the samples' users_now stand in
  for it. `locust_failures.csv` (Locust's failures table) is read when present, to reconcile run totals
  with what Locust showed.
- tiers.csv's `dropped` (open-loop arrivals not sent at the in-flight cap, whole tier) is
  kept per tier; it is empty for closed-loop tiers and for runs written before it existed.
- A folder of a run recorded with --ship histograms (histograms.csv and attempts.csv, no samples.csv)
  is read by `hist_run.py` into the same `Run`, with no sample rows (`source` 'histograms').
- The `Run` both return, and the samples columns it reads, are declared in `loaded_run.py`.
- A folder that is not a run raises `RunError` with one line saying what to fix.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from llmload.analysis.read import csvrows, hist_run, histograms, ramps, windows
from llmload.analysis.read.files import (
    RunError,
    read_failures,
    read_history,
    read_info,
    read_optional,
    read_server_metrics,
    read_tiers,
)
from llmload.analysis.read.loaded_run import NUMERIC_COLUMNS, TEXT_COLUMNS, Run, sample_dtypes, split_confirm
from llmload.contract import NOT_GENERATING_APIS

REQUIRED_SAMPLE_COLUMNS = ("ts_start_s", "error", "ttft_ms", "e2e_ms")


def counting_empty_as_error(run: Run) -> Run:
    """The run judged with its empty answers counted as errors (the analysis' --empty-answer-is-error)."""
    return dataclasses.replace(run, info={**run.info, "empty_answer_is_error": True})


def load_run(path: str | Path) -> Run:
    """Load and align a run folder; raise RunError for a bad or foreign folder."""
    path = Path(path)
    if not path.is_dir():
        raise RunError(f"{path}: no such run folder (expected reports/<run>/ with samples.csv)")
    if hist_run.is_histogram_run(path):
        return hist_run.load_hist_run(path)
    notes: list[str] = []
    info = read_info(path, notes)
    samples = read_samples(path, notes)
    tiers_raw, confirm_raw = split_confirm(read_tiers(path, notes))
    found = None
    if tiers_raw is None:
        found = ramps.tiers_from_samples(samples, info)
        tiers_raw = found.tiers
        notes.extend(found.notes)
    tiers, load_unit = finish_tiers(tiers_raw, samples, info, notes)
    align(samples, tiers, notes, honour_phase=found is not None and not found.warm_only, confirm=confirm_raw)
    hists = histograms.read(path)
    if found is not None and found.ramps > 1 and hists is not None:
        hists = None
        notes.append(f"histograms.csv counts this run without a load shape as one tier: the every-gap ITL cannot "
                     f"be split into its {found.ramps} ramps and is left out.")
    health = read_optional(path / "health.csv", ("ts_s",), notes)
    history = read_history(path, notes)
    return Run(path=path, name=str(info.get("run_id") or path.name), info=info, samples=samples,
               tiers=tiers, load_unit=load_unit, health=health, history=history, notes=tuple(notes),
               failures=read_failures(path), server_metrics=read_server_metrics(path), histograms=hists,
               ramps=found.ramps if found is not None else 0, warm_only=found is not None and found.warm_only,
               confirm=confirm_raw)


def read_samples(path: Path, notes: list[str]) -> pd.DataFrame:
    file = path / "samples.csv"
    if not file.exists():
        raise RunError(f"{path}: no samples.csv here; point at a run folder reports/<run>/ written by llmload"
                       + (" (this one kept histograms only: --ship histograms)" if (path / "histograms.csv").exists()
                          else ""))
    try:
        header = pd.read_csv(file, nrows=0).columns
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise RunError(f"{file}: not a readable CSV ({str(exc).splitlines()[0]})") from None
    missing = [c for c in REQUIRED_SAMPLE_COLUMNS if c not in header]
    if missing:
        raise RunError(f"{file}: not an llmload samples file (missing columns: {', '.join(missing)})")
    wanted = [c for c in header if c in NUMERIC_COLUMNS or c in TEXT_COLUMNS]
    dtypes = sample_dtypes(wanted)
    try:
        scan = csvrows.scan(file)
    except ValueError as exc:
        raise RunError(f"{file}: {exc}") from None
    notes.extend(scan.notes)
    try:
        frame = pd.read_csv(file, usecols=wanted, dtype=dtypes, keep_default_na=False,
                            na_values={c: [""] for c in wanted if c in NUMERIC_COLUMNS},
                            skiprows=set(scan.skip_lines) or None)
    except (ValueError, pd.errors.ParserError) as exc:
        raise RunError(f"{file}: malformed row ({str(exc).splitlines()[0]})") from None
    if frame.empty:
        raise RunError(f"{file}: no requests recorded (header only)")
    for col in NUMERIC_COLUMNS:
        if col not in frame:
            frame[col] = np.nan
    for col in TEXT_COLUMNS:
        if col not in frame:
            frame[col] = pd.Categorical([""] * len(frame))
    frame["request_id"] = frame["request_id"].astype(str)
    answered = frame["ttft_ms"].notna().to_numpy() | frame["endpoint"].isin(NOT_GENERATING_APIS).to_numpy()
    frame["ok"] = (frame["error"] == "").to_numpy() & answered
    return frame


def finish_tiers(tiers: pd.DataFrame, samples: pd.DataFrame, info: dict,
                  notes: list[str]) -> tuple[pd.DataFrame, str]:
    tiers = windows.close_open_tiers(tiers, samples, notes)
    tiers["warmup_s"] = tiers["warmup_s"].fillna(0.0)
    tiers["measure_start_s"] = tiers["start_s"] + tiers["warmup_s"]
    tiers["measure_s"] = (tiers["end_s"] - tiers["measure_start_s"]).clip(lower=0.0)
    windows.mark_short(tiers, info, notes)
    if tiers["target_users"].notna().any() or tiers["target_rps"].isna().all():
        load_unit, load = "users", tiers["target_users"]
    else:
        load_unit, load = "req/s", tiers["target_rps"]
    if load.isna().any():
        by_tier = samples.groupby(samples["tier"].fillna(0))["users_now"].median()
        load = load.fillna(tiers["tier"].map(by_tier))
        load = load.fillna(tiers["tier"].astype(float))
        notes.append("some tiers have no target load in tiers.csv: used the median users_now.")
    tiers["load"] = load.astype(float)
    return tiers, load_unit


def align(samples: pd.DataFrame, tiers: pd.DataFrame, notes: list[str], honour_phase: bool = False,
           confirm: pd.DataFrame | None = None) -> None:
    """Each sample's tier (-1 outside every window) and `measured`; `honour_phase`: tiers came from the samples,
    so a row's own warmup/after phase also keeps it out; `confirm`: the confirmation windows, whose rows are marked
    `confirm` (and are not 'outside')."""
    ts = samples["ts_start_s"].to_numpy()
    samples["confirm"] = in_windows(ts, confirm)
    starts = tiers["start_s"].to_numpy()
    idx = np.searchsorted(starts, ts, side="right") - 1
    safe = np.clip(idx, 0, len(tiers) - 1)
    inside = (idx >= 0) & (ts < tiers["end_s"].to_numpy()[safe])
    measured = inside & (ts >= tiers["measure_start_s"].to_numpy()[safe])
    if honour_phase:
        measured &= ramps.honoured(samples)
    if "tier" in samples:
        samples["tier_logged"] = samples["tier"]
    samples["tier"] = np.where(inside, tiers["tier"].to_numpy()[safe], -1)
    samples["measured"] = measured
    outside = int((~inside & ~samples["confirm"].to_numpy()).sum())
    if outside:
        notes.append(f"{outside} requests were sent outside every tier window and are ignored.")
    phase = samples["phase"].astype(str).to_numpy()
    logged = np.isin(phase, ["warmup", "measure"])
    disagree = int((logged & inside & ((phase == "measure") != measured)).sum())
    if disagree and not honour_phase:
        notes.append(f"{disagree} requests' phase column disagrees with tiers.csv; tiers.csv was used.")


def in_windows(ts: np.ndarray, windows: pd.DataFrame | None) -> np.ndarray:
    """Which of the send times `ts` fall in one of `windows` (start_s to end_s; an open end: to the last send)."""
    inside = np.zeros(len(ts), dtype=bool)
    for row in (windows.itertuples() if windows is not None else ()):
        end = row.end_s if row.end_s == row.end_s else np.inf
        inside |= (ts >= row.start_s) & (ts < end)
    return inside


def run_api(run: Run) -> str:
    """The API the run loaded: the one endpoint of every row, else run.json's --api ('' when unknown or mixed)."""
    endpoints = set(run.samples["endpoint"].astype(str).unique()) if "endpoint" in run.samples else set()
    if len(endpoints) == 1:
        return endpoints.pop()
    options = run.info.get("options") or {}
    return "" if endpoints else str(options.get("api") or options.get("endpoint") or "")
