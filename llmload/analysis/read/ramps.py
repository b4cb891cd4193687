"""Tiers of a run without tiers.csv, from the samples' own `tier` and `phase` columns.

How it works:
- A run with a load shape whose tiers.csv is lost: one tier per value of the `tier` column.
- A run without a load shape (a plain `-u/-r` run, or the web UI without a shape) stamps every row
  tier 0 and flags each ramp as warm-up (llmload/run/ramps.py): the ramp and every user's first
  request, again when users are added later (the web UI's Edit). Such a run is split into one tier
  per ramp: on each process (`worker`), in send order, a warm-up row that follows a measure row
  starts a later ramp; the starts of every process within RAMP_MERGE_S of an earlier one are the
  same ramp (workers hear of a ramp a little apart, and an attempt stamped just before its window
  opened reads measure). A ramp ends where the next one starts; the last one when the run stopped
  sending: run.json's `-t` end (start + --run-time), else the first time a user finished its last
  request (a closed-loop user that finished before the stop would have sent again), never before
  the last send.
- Each row's phase is honoured: a warm-up (or after-the-run) row is never measured. A tier measures
  from the moment every process sending in it had left its warm-up: per process, its first measure
  row after its last warm-up row there (what the master waits for before it says the warm-up is over).
- A tier with no measure row: its warm-up never ended (nothing measured in it, a note says so). When
  no row of the whole run is measure, every row is measured instead and `warm_only` is set: the report
  says in one line that its figures come from warm-up rows (`WARM_ONLY`), rather than show nothing.
- The load of a tier is the sum over processes of the median `users_now` of its measured rows
  (every process records its own user count).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from llmload.analysis.read import windows
from llmload.analysis.read.files import section

RAMP_MERGE_S = 2.0
"""later-ramp starts closer than this to an earlier one are the same ramp"""
LOGGED = ("warmup", "measure", "after")
"""phases the load generator writes; rows with any other value (old runs) keep the window rule"""
WARM_ONLY = ("the warm-up never ended before the run stopped{why}, so no request is phase=measure: every figure "
             "in this report comes from warm-up rows (the ramp and each user's first requests, new connections "
             "included) and says little about steady load. Hold the load longer.")


@dataclass(frozen=True)
class FromSamples:
    tiers: pd.DataFrame
    """tier, start_s, end_s (NaN: closed by windows.close_open_tiers), target_users, target_rps, warmup_s,
    dropped"""
    ramps: int = 0
    """tiers made from the ramps of a run without a load shape (0: from the tier column)"""
    warm_only: bool = False
    """no row of the run is phase=measure: every row is measured, and the report says so"""
    notes: tuple[str, ...] = field(default_factory=tuple)


def plain(info: dict) -> bool:
    """A run without a load shape: run.json exists and records none."""
    shape = info.get("shape")
    return bool(info) and not (isinstance(shape, dict) and shape)


def honoured(samples: pd.DataFrame) -> np.ndarray:
    """Rows whose own phase allows them to be measured (measure, or a phase the writer did not log)."""
    phase = samples["phase"].astype(str).to_numpy()
    return ~np.isin(phase, ("warmup", "after"))


def tiers_from_samples(samples: pd.DataFrame, info: dict) -> FromSamples:
    phase = samples["phase"].astype(str)
    tier_col = samples["tier"].fillna(0).astype(int)
    warm_only = bool((phase == "warmup").any()) and not bool((phase == "measure").any())
    split = plain(info) and tier_col.nunique() == 1 and not warm_only
    if split:
        starts = ramp_starts(samples)
        group = pd.Series(np.searchsorted(starts, samples["ts_start_s"].to_numpy(), side="right"),
                          index=samples.index) + int(tier_col.iloc[0])
    else:
        group = tier_col
    frame = pd.DataFrame({"tier": group, "proc": samples["worker"].astype(str), "ts": samples["ts_start_s"],
                          "warm": (phase == "warmup").to_numpy(), "measure": (phase == "measure").to_numpy(),
                          "users": samples["users_now"]})
    start = frame.groupby("tier")["ts"].min()
    measure_start = start if warm_only else _measure_start(frame).reindex(start.index)
    unmeasured = measure_start[measure_start.isna()].index
    notes = [_capital(warm_only_sentence(info))] if warm_only else [
        f"tier {t}: its warm-up never ended before the run stopped, so nothing in it is measured." for t in unmeasured]
    if not plain(info):
        notes.append("tiers.csv missing: tiers taken from the samples' tier/phase columns.")
    measured = frame["ts"] >= frame["tier"].map(measure_start.fillna(np.inf))
    users = _users(frame[measured & ~frame["warm"]] if not warm_only else frame, frame)
    end = pd.Series(np.nan, index=start.index)
    if plain(info):
        end = start.shift(-1)
        end.iloc[-1] = stop_s(samples, info)
    tiers = pd.DataFrame({
        "tier": start.index.astype(int), "start_s": start.to_numpy(), "end_s": end.to_numpy(),
        "target_users": users.reindex(start.index).to_numpy(), "target_rps": np.nan,
        "warmup_s": (measure_start.fillna(end) - start).fillna(0.0).to_numpy(), "dropped": np.nan,
    }).sort_values("start_s").reset_index(drop=True)
    return FromSamples(tiers, len(tiers) if split else 0, warm_only, tuple(notes))


def ramp_starts(samples: pd.DataFrame) -> list[float]:
    """Send times where a later ramp began (module docstring), ascending."""
    found: list[float] = []
    order = samples.sort_values("ts_start_s", kind="stable")
    for _, rows in order.groupby(order["worker"].astype(str), sort=False):
        phase = rows["phase"].astype(str).to_numpy()
        again = (phase[1:] == "warmup") & (phase[:-1] == "measure")
        found.extend(float(s) for s in rows["ts_start_s"].to_numpy()[1:][again])
    kept: list[float] = []
    for start_s in sorted(found):
        if not kept or start_s - kept[-1] >= RAMP_MERGE_S:
            kept.append(start_s)
    return kept


def _measure_start(frame: pd.DataFrame) -> pd.Series:
    """Per tier: the latest, over its processes, of each one's first measure row after its last warm-up row."""
    keys = ["tier", "proc"]
    last_warm = frame[frame["warm"]].groupby(keys)["ts"].max()
    after = pd.MultiIndex.from_frame(frame[keys]).map(last_warm.to_dict().get)
    after = pd.Series(after, index=frame.index, dtype=float).fillna(-np.inf)
    first = frame[frame["measure"] & (frame["ts"] > after)].groupby(keys)["ts"].min()
    return first.groupby(level="tier").max()


def _users(measured: pd.DataFrame, frame: pd.DataFrame) -> pd.Series:
    """Per tier: the sum over processes of their median users_now (measured rows, else all the tier's rows)."""
    per_proc = measured.groupby(["tier", "proc"])["users"].median().groupby(level="tier").sum()
    fallback = frame.groupby(["tier", "proc"])["users"].median().groupby(level="tier").sum()
    return per_proc.reindex(fallback.index).fillna(fallback)


def stop_s(samples: pd.DataFrame, info: dict) -> float:
    """When a run without a shape stopped sending (module docstring); just after its last send at the earliest."""
    last_send = float(samples["ts_start_s"].max()) + 1e-6
    end = section(info, "end")
    started = info.get("started_unix")
    run_time = (info.get("options") or {}).get("run_time")
    if end.get("reason") == "-t" and isinstance(started, (int, float)) and isinstance(run_time, (int, float)):
        return max(float(started) + float(run_time), last_send)
    done = pd.Series(windows.completions(samples), index=samples.index)
    first_done = done.groupby([samples["worker"].astype(str), samples["user"].astype(str)]).max().min()
    return max(float(first_done), last_send)


def warm_only_sentence(info: dict) -> str:
    """WARM_ONLY with why the warm-up lasted (--warmup-seconds, or users that had not all finished a request)."""
    fixed = (info.get("options") or {}).get("warmup_seconds")
    why = (f" (it was shorter than its --warmup-seconds {fixed:g} after a ramp)" if isinstance(fixed, (int, float))
           else " (not every user had completed a request after the last one was spawned)")
    return WARM_ONLY.format(why=why)


def _capital(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]
