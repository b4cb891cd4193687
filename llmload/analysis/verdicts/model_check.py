"""The queueing model against the measurement: the p95 TTFT the fitted slots and service time predict at
each tier, the tiers where the two disagree, and whether the capacity line agrees with the model.

How it works (`queueing.py` fits c slots, the plateau X_max and the service time s):
- The model predicts a band, not a point, for p95 TTFT: the lowest tier's p95 plus the p95 wait, between
  two service-time laws the model cannot tell apart. Closed loop, the mean wait is
  w = max(0, N / X_max - Z0) (asymptotic bounds): low end every request waits w (near-constant service,
  as at heavy load), high end waits exponential with mean w (p95 = w x ln 20). Open loop, M/M/c with c
  slots: p95 wait = ln(C / 0.05) / (c / s - rate) when the Erlang-C probability of waiting C exceeds 5 %,
  the high end; M/D/c waits about half as long, the low end; past the plateau the queue grows without
  bound over the tier, so nothing is compared there. Nor at a tier that shed more than REJECT_LIMIT of its
  requests or parked users on a retry hint: a server that refuses does not queue what it refused.
- A tier disagrees when its p95 TTFT confidence interval (bootstrap, `stats.quantile_ci`; the point value
  from histograms) lies outside the band by more than WAIT_SHARE of the service time, the waiting rule's
  own tolerance (a quarter service time of batching or prefill is not a queue either way).
- The capacity line agrees with the model unless the model says the tier that met the SLO should miss it
  (its band's low end above the limit) or the tier that missed it, by p95 TTFT alone, should meet it (its
  band's high end below the limit; a tier that missed by refusals or failures is not the model's to judge).
  Then the line says so, and that the measured tiers stand: the model is a mean-value
  fit of slots and a FIFO queue, and a tier is a measurement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llmload.analysis import text
from llmload.analysis.tables.judged import tiers_of
from llmload.analysis.verdicts.queueing import QueueFit, _erlang_c
from llmload.rules.capacity import Capacity, broken
from llmload.rules.limits import REJECT_LIMIT, WAIT_SHARE
from llmload.rules.text import load_with_unit

P95_EXP = math.log(20.0)
"""p95 of an exponential wait, in means"""
DETERMINISTIC_SHARE = 0.5
"""open loop: M/D/c waits about this share of M/M/c's"""


@dataclass(frozen=True)
class ModelCheck:
    bands: pd.DataFrame
    """per judged tier: tier, load, p95 (ms), ci_lo, ci_hi, model_lo, model_hi (NaN: not compared), sheds,
    disagrees"""
    tolerance_ms: float
    sentence: str
    """the report's 'Model check' line"""
    capacity_clause: str
    """appended to the capacity line ('' when there is nothing to compare)"""

    @property
    def disagreeing(self) -> list[int]:
        return [int(t) for t in self.bands.loc[self.bands["disagrees"], "tier"]]


def p95_wait_band_s(fit: QueueFit, load: float) -> tuple[float, float]:
    """The model's p95 wait (s) at `load`: (low, high); NaN past the open-loop plateau."""
    if fit.load_unit == "users":
        mean = max(0.0, load / fit.x_max_rps - fit.cycle_s)
        return mean, mean * P95_EXP
    c = max(1, math.floor(fit.slots))
    capacity_rps = c / fit.service_s
    if load >= capacity_rps:
        return math.nan, math.nan
    waiting = _erlang_c(load, fit.slots, fit.service_s)
    high = math.log(waiting / 0.05) / (capacity_rps - load) if waiting > 0.05 else 0.0
    return DETERMINISTIC_SHARE * high, high


def _bands(fit: QueueFit, judged: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    rows = judged[(judged["ok"] > 0) & judged["ttft_p95_ms"].notna()].sort_values("load")
    base = float(rows["ttft_p95_ms"].iloc[0])
    tol = WAIT_SHARE * fit.service_s * 1000.0
    sheds = [t.shed_rate > REJECT_LIMIT or t.parked_refused > 0 for t in tiers_of(rows)]
    waits = [(math.nan, math.nan) if shed else p95_wait_band_s(fit, float(load))
             for shed, load in zip(sheds, rows["load"])]
    frame = pd.DataFrame({
        "tier": rows["tier"].to_numpy(), "load": rows["load"].to_numpy(dtype=float),
        "p95": rows["ttft_p95_ms"].to_numpy(dtype=float),
        "ci_lo": _ci(rows, "ttft_p95_ci_lo_ms"), "ci_hi": _ci(rows, "ttft_p95_ci_hi_ms"),
        "model_lo": [base + lo * 1000.0 for lo, _ in waits], "model_hi": [base + hi * 1000.0 for _, hi in waits],
        "sheds": sheds})
    lo = frame["ci_lo"].fillna(frame["p95"])
    hi = frame["ci_hi"].fillna(frame["p95"])
    frame["disagrees"] = (frame["model_lo"].notna() & ((lo > frame["model_hi"] + tol) | (hi < frame["model_lo"] - tol)))
    return frame, tol


def _ci(rows: pd.DataFrame, column: str) -> np.ndarray:
    return rows[column].to_numpy(dtype=float) if column in rows else np.full(len(rows), np.nan)


def _band_text(lo: float, hi: float) -> str:
    return f"{text.num(lo, 0)} ms" if round(lo) == round(hi) else f"{text.num(lo, 0)}-{text.num(hi, 0)} ms"


def _measured_text(row: pd.Series) -> str:
    ci = (f" [95% CI {text.num(row['ci_lo'], 0)}-{text.num(row['ci_hi'], 0)}]"
          if row["ci_lo"] == row["ci_lo"] and row["ci_hi"] == row["ci_hi"] else "")
    return f"{text.num(row['p95'], 0)} ms{ci}"


def _sentence(frame: pd.DataFrame, fit: QueueFit, tol: float, unit: str) -> str:
    compared = frame[frame["model_lo"].notna()]
    model = f"{fit.slots:.1f} slots, {fit.service_s * 1000:.0f} ms of service"
    shed = int(frame["sheds"].sum())
    skipped = (f"; {shed} tier(s) that refused load not compared (a server that refuses does not queue)"
               if shed else "")
    if not len(compared):
        return f"no tier to compare with the model ({model}){skipped}."
    if not frame["disagrees"].any():
        every = "every compared tier's" if shed else "every tier's"
        return (f"the model ({model}) predicts {every} p95 TTFT within its confidence interval (and "
                f"{tol:.0f} ms, a quarter service time): {len(compared)} tier(s) compared{skipped}.")
    parts = [f"at {load_with_unit(r['load'], unit)} (tier {int(r['tier'])}) p95 TTFT {_measured_text(r)} against "
             f"the model's {_band_text(r['model_lo'], r['model_hi'])}" for _, r in frame[frame["disagrees"]].iterrows()]
    return (f"measurement and model ({model}) disagree {'; '.join(parts)}: beyond {tol:.0f} ms (a quarter service "
            "time), so something besides the slots and a FIFO queue shapes TTFT there (batching that slows "
            f"prefill, long prompts, a gateway's own queue, a rate limit){skipped}.")


def _capacity_clause(frame: pd.DataFrame, cap: Capacity, tol: float, unit: str) -> str:
    limit = cap.profile.ttft_p95_ms
    if limit is None or cap.status not in ("within", "beyond") or cap.met is None:
        return ""
    by_tier = frame.set_index("tier")
    tiers = [("met", cap.met)]
    if cap.missed is not None and {b.figure for b in broken(cap.missed, cap.profile)} == {"ttft_p95_ms"}:
        tiers.append(("missed", cap.missed))  # the model speaks of p95 TTFT only, not of refusals or failures
    points = [(name, int(t.tier)) for name, t in tiers if int(t.tier) in by_tier.index]
    if not points:
        return ""
    said, against, across = [], [], []
    for name, tier in points:
        row = by_tier.loc[tier]
        if row["model_lo"] != row["model_lo"]:
            continue
        load = load_with_unit(row["load"], unit)
        said.append(f"{_band_text(row['model_lo'], row['model_hi'])} at {load}")
        if name == "met" and row["model_lo"] - tol > limit:
            against.append(f"{load} to miss it")
        elif name == "missed" and row["model_hi"] + tol < limit:
            against.append(f"{load} to meet it")
        elif (name == "met" and row["model_hi"] - tol > limit) or (name == "missed" and row["model_lo"] + tol < limit):
            across.append(load)  # the band spans the limit: the model says neither
    if not said:
        return ""
    if against:
        return (f"The queueing model disagrees: it predicts p95 TTFT {' and '.join(said)}, so expects "
                f"{' and '.join(against)}; the measured tiers stand (the model is a mean-value fit of slots and a "
                "FIFO queue: see Model check).")
    if across:
        return (f"The queueing model cannot tell: it predicts p95 TTFT {' and '.join(said)}, a band across the "
                f"limit ({limit:g} ms) at {' and '.join(across)}; the measured tiers stand.")
    return f"The queueing model agrees: it predicts p95 TTFT {' and '.join(said)} (limit {limit:g} ms)."


def check(fit: QueueFit | None, judged: pd.DataFrame, cap: Capacity, unit: str) -> ModelCheck | None:
    """The model check of a run with a fitted model (None without one, or with no tier to compare)."""
    if fit is None or not len(judged) or not (judged["ok"] > 0).any() or judged["ttft_p95_ms"].isna().all():
        return None
    frame, tol = _bands(fit, judged)
    return ModelCheck(frame, tol, _sentence(frame, fit, tol, unit), _capacity_clause(frame, cap, tol, unit))
