"""The knee: the highest load the server takes before it starts queueing (or shedding).

The rule (stated verbatim in the report):
  Order tiers by load. The low-load band is the lowest tier's p99 TTFT: its bootstrap 95 %
  CI upper bound x (1 + BAND_TOLERANCE). A tier is *past the knee* when both hold:
    (a) its p99 TTFT left the band (its CI lower bound is above the band), or more than
        REJECT_LIMIT of its requests were rejected (429/503: a shedding server keeps
        latency flat and refuses work instead) or, open loop, its arrivals were dropped at
        the in-flight cap (the server did not keep up, so the generator could not send);
    (b) the throughput gained per added unit of load since the previous tier,
        (X_i - X_{i-1}) / (load_i - load_{i-1}), fell below GAIN_FRACTION of the initial
        slope X_0 / load_0 (X = successful requests/s). Open loop (load in req/s) the
        initial slope is 1 by definition (every asked request served), so a small, noisy
        first tier cannot lower the bar.
  The knee is the last tier before the first tier past the knee.
Why: with S slots and a FIFO queue, a closed loop of N users gets throughput
~min(N, S)/service_time and a TTFT that stays at prefill time for N <= S, then grows by
~(N - S)/S service times. So at N = 2S both signals fire together and the knee is S. Either
signal alone is not enough: TTFT noise or a slower decode at larger batches moves one
curve without the server running out of slots. If no tier is past the knee, the knee was
not reached in the tested range; if the second tier already is, the knee is the first tier
(or below it: test lower loads to find out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.text import load_with_unit

BAND_TOLERANCE = 0.25
GAIN_FRACTION = 0.5
REJECT_LIMIT = 0.01

RULE = (
    "Tiers ordered by load. Low-load band = p99 TTFT of the lowest tier (upper end of its 95% bootstrap CI) "
    f"x {1 + BAND_TOLERANCE:g}. A tier is past the knee when (a) its p99 TTFT CI lies above the band, or more "
    f"than {REJECT_LIMIT:.0%} of its requests were rejected (429/503) or, open loop, dropped at the in-flight cap, "
    "and (b) the throughput gained per added "
    f"unit of load since the previous tier is below {GAIN_FRACTION:.0%} of the initial slope (requests/s per "
    "unit of load at the lowest tier; open loop: 1, every asked request served). The knee is the last tier "
    "before the first tier past the knee."
)


@dataclass(frozen=True)
class Knee:
    knee_tier: int | None
    """tier number of the knee; None when no tier was past the knee"""
    knee_load: float | None
    first_past_tier: int | None
    band_hi_ms: float
    initial_slope: float
    evidence: pd.DataFrame
    """per tier: tier, load, ttft_p99_ms, ci lo/hi, left_band, reject_rate, gain, gain_ratio, past_knee"""

    @property
    def reached(self) -> bool:
        return self.first_past_tier is not None


def find_knee(table: pd.DataFrame, open_loop: bool = False) -> Knee:
    """Apply the rule to a tier table (analysis.tiers.tier_table or any frame with its columns);
    `open_loop`: loads are request rates (initial slope 1)."""
    rows = table[table["ok"] > 0].sort_values("load", kind="stable").reset_index(drop=True)
    if rows.empty:
        return Knee(None, None, None, math.nan, math.nan, rows)
    base = rows.iloc[0]
    base_hi = base["ttft_p99_ci_hi_ms"] if not math.isnan(base["ttft_p99_ci_hi_ms"]) else base["ttft_p99_ms"]
    band_hi = float(base_hi) * (1.0 + BAND_TOLERANCE)
    slope0 = 1.0 if open_loop else (float(base["ok_rps"] / base["load"]) if base["load"] > 0 else math.nan)
    ci_lo = rows["ttft_p99_ci_lo_ms"].fillna(rows["ttft_p99_ms"])
    left_band = ci_lo > band_hi
    shed = rows["n_shed"] if "n_shed" in rows else rows["n_429"] + rows["n_503"]
    refused = shed / rows["sent"].where(rows["sent"] > 0)
    dropped = rows.get("drop_rate", 0.0)
    reject = dropped + (1.0 - dropped) * refused.fillna(0.0)
    parked = rows["refused_load_share"] if "refused_load_share" in rows else pd.Series(0.0, index=rows.index)
    gain = rows["ok_rps"].diff() / rows["load"].diff()
    gain_ratio = gain / slope0
    collapsed = gain_ratio < GAIN_FRACTION
    past = (left_band | (reject > REJECT_LIMIT) | (parked > REJECT_LIMIT)) & collapsed
    past.iloc[0] = False
    evidence = pd.DataFrame({
        "tier": rows["tier"], "load": rows["load"], "ttft_p99_ms": rows["ttft_p99_ms"],
        "ttft_p99_ci_lo_ms": rows["ttft_p99_ci_lo_ms"], "ttft_p99_ci_hi_ms": rows["ttft_p99_ci_hi_ms"],
        "left_band": left_band, "reject_rate": reject.fillna(0.0), "drop_rate": dropped, "ok_rps": rows["ok_rps"],
        "gain": gain, "gain_ratio": gain_ratio, "past_knee": past, "parked_share": parked,
        "parked_refused": rows.get("parked_refused", 0), "load_target": rows.get("load_target", rows["load"]),
        "parked_codes": rows.get("parked_codes", ""),
    })
    hits = np.flatnonzero(past.to_numpy())
    if len(hits) == 0:
        return Knee(None, None, None, band_hi, slope0, evidence)
    first = int(hits[0])
    knee_row = rows.iloc[first - 1]
    return Knee(int(knee_row["tier"]), float(knee_row["load"]), int(rows.iloc[first]["tier"]),
                band_hi, slope0, evidence)


def describe(knee: Knee, load_unit: str) -> str:
    """One or two sentences: the knee and its evidence."""
    ev = knee.evidence
    if ev.empty:
        return "No tier has successful requests: no knee can be computed."
    if not knee.reached:
        top = ev.iloc[-1]
        return (f"No knee within the tested range: up to {load_with_unit(top['load'], load_unit)} p99 TTFT "
                f"stayed in its low-load band (<= {knee.band_hi_ms:.0f} ms) or throughput kept growing. "
                "Test higher loads.")
    past = ev[ev["tier"] == knee.first_past_tier].iloc[0]
    why = []
    if past["left_band"]:
        ci = (f" (CI {past['ttft_p99_ci_lo_ms']:.0f}-{past['ttft_p99_ci_hi_ms']:.0f})"
              if past["ttft_p99_ci_lo_ms"] == past["ttft_p99_ci_lo_ms"] else "")  # none from histograms
        why.append(f"p99 TTFT {past['ttft_p99_ms']:.0f} ms{ci} left the low-load band of <= {knee.band_hi_ms:.0f} ms")
    if past["reject_rate"] > REJECT_LIMIT:
        dropped = float(past["drop_rate"])
        if past["reject_rate"] - dropped > REJECT_LIMIT or not dropped:
            why.append(f"{past['reject_rate'] - dropped:.0%} of requests were rejected (429/503)")
        if dropped:
            why.append(f"{dropped:.0%} of arrivals were dropped at the in-flight cap (the server did not keep up)")
    if past["parked_share"] > REJECT_LIMIT:
        why.append(f"{int(past['parked_refused'])} of the {past['load_target']:g} users asked were refused "
                   f"({past['parked_codes']}) and sent nothing in its measure window")
    first_tier = knee.knee_tier == int(ev.iloc[0]["tier"])
    load = load_with_unit(past["load"], load_unit)
    if past["load_target"] > past["load"]:
        load = f"{load_with_unit(past['load_target'], load_unit)} asked ({past['load']:g} applied)"
    gained = (f"throughput gained only {_no_negative_zero(past['gain_ratio']):.0%} of the initial per-unit slope"
              if math.isfinite(past["gain_ratio"]) else "the load applied did not grow")
    text = (f"Knee at {load_with_unit(knee.knee_load, load_unit)} (tier {knee.knee_tier}). At the next tier, "
            f"{load}, " + " and ".join(why) + f", while {gained} ({past['ok_rps']:.1f} req/s).")
    at_knee = ev[ev["tier"] == knee.knee_tier].iloc[0]
    if at_knee["reject_rate"] > REJECT_LIMIT:
        text += (f" The knee tier itself already had {at_knee['reject_rate']:.0%} of its requests rejected or "
                 "dropped: the knee lies below it.")
    elif first_tier:
        text += " The knee is the lowest tier tested: it may lie lower still."
    return text





def _no_negative_zero(ratio: float) -> float:
    return 0.0 if abs(ratio) < 0.005 else ratio
