"""A queueing model fitted to the tiers: the server's effective parallel slots.

How it works:
- Plateau throughput X_max: the highest successful requests/s of any tier.
- Service time at the plateau: mean e2e minus the mean wait (`waiting.py`: TTFT growth not
  explained by slower batches) at the tier that reached X_max.
- Effective parallel slots c = X_max x service time (Little's law applied to the requests
  in service, not waiting). For a server with S slots kept busy, c ~ S.
- Prediction. Closed loop (load = users, asymptotic bounds of a closed queueing network):
  X(N) = min(N / Z0, X_max), with Z0 = load_0 / X_0 the cycle time of one user at low
  load; mean TTFT(N) = TTFT_0 + max(0, N / X_max - Z0) (the extra wait is the extra
  response time). Open loop (load = req/s): M/M/c with c slots and the service time
  above: X(l) = min(l, X_max); mean wait = ErlangC(c, l*s) * s / (c - l*s), infinite
  past saturation.
The report plots the predictions next to the measured curves: a good fit says the server
behaves like c slots plus a queue; a poor fit says something else limits it.

When the model is identifiable (`not_identifiable` returns the reason when it is not):
- only on runs that raise the load tier by tier (step or open-loop rate tiers);
- only when a throughput plateau was reached (compute saturation, `llmload.rules.knees`);
  otherwise the top tier's in-flight count is only a lower bound of the slots;
- not behind a rate limiter (`llmload.rules.limiter`): it caps requests per second, so the tiers above
  its first refusal show its quota, and X_max is its initial burst;
- not when the server sheds (429/503) rather than running out of slots: a rate limiter caps
  requests/s, so X_max x service time is not a slot count (0.4 "slots" on a 512-slot
  server). A shedding closed-loop run still gets a fit when its compute saturation lies
  between two tested tiers and c lies in that interval (within ONSET_TOLERANCE): a server
  with c slots and no queue answers 429 once they are full, so its throughput stops growing
  at c users;
- not when the plateau tier dropped arrivals at the open-loop in-flight cap: then the cap
  (--max-inflight), not the server, bounded the requests in flight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llmload.rules.knees import KneePoint
from llmload.rules.limiter import RateLimiter
from llmload.rules.limits import ONSET_TOLERANCE, REJECT_LIMIT
from llmload.rules.text import load_with_unit


@dataclass(frozen=True)
class QueueFit:
    slots: float
    """effective parallel slots c"""
    x_max_rps: float
    service_s: float
    cycle_s: float
    """closed loop: one user's cycle time at low load (Z0)"""
    ttft0_ms: float
    load_unit: str

    def predict(self, loads: np.ndarray) -> pd.DataFrame:
        """Predicted successful req/s and mean TTFT (ms) at each load."""
        loads = np.asarray(loads, dtype=float)
        if self.load_unit == "users":
            rps = np.minimum(loads / self.cycle_s, self.x_max_rps)
            wait_s = np.maximum(0.0, loads / self.x_max_rps - self.cycle_s)
        else:
            rps = np.minimum(loads, self.x_max_rps)
            wait_s = np.array([_mmc_wait_s(rate, self.slots, self.service_s) for rate in loads])
        return pd.DataFrame({"load": loads, "ok_rps": rps, "ttft_mean_ms": self.ttft0_ms + wait_s * 1000.0})


def fit_queue(table: pd.DataFrame, load_unit: str) -> QueueFit | None:
    """Fit on a tier table; None when there are too few usable tiers."""
    rows = table[(table["ok"] > 0) & (table["load"] > 0)].sort_values("load")
    if len(rows) < 2:
        return None
    top = rows.loc[rows["ok_rps"].idxmax()]
    base = rows.iloc[0]
    wait_ms = top["wait_ms"] if "wait_ms" in top and top["wait_ms"] == top["wait_ms"] else top["queue_delay_mean_ms"]
    service_s = (top["e2e_mean_ms"] - wait_ms) / 1000.0
    if not service_s > 0:
        return None
    x_max = float(top["ok_rps"])
    return QueueFit(slots=x_max * service_s, x_max_rps=x_max, service_s=float(service_s),
                    cycle_s=float(base["load"] / base["ok_rps"]), ttft0_ms=float(base["ttft_mean_ms"]),
                    load_unit=load_unit)


def not_identifiable(table: pd.DataFrame, load_unit: str, compute: KneePoint, sheds: bool, climbs: bool = True,
                     kind: str = "step", tested: int | None = None, limiter: RateLimiter | None = None) -> str | None:
    """Why the slots model cannot be fitted on this run, or None when it can (see the docstring); `compute`: the
    compute saturation (`llmload.rules.knees`); `tested`: tiers with requests in the whole run, judged or not
    (default: those of `table`); `limiter`: the rate limiter behind its 429s (`llmload.rules.limiter`)."""
    if not climbs:
        return f"not identifiable: a {kind} run does not raise the load tier by tier"
    if limiter is not None:
        rate = f"{limiter.sustained_rps:.1f} req/s sustained" if limiter.measured else "its rate not measured"
        return (f"not identifiable: a rate limiter ({rate}) caps requests per second, not requests in service, "
                "so the tiers show its quota, not slots")
    fit = fit_queue(table, load_unit)
    if fit is not None and "drop_rate" in table:
        plateau = table.loc[(table["ok"] > 0) & (table["ok_rps"] >= fit.x_max_rps)]
        if (plateau["drop_rate"] > REJECT_LIMIT).any():
            return ("not identifiable: arrivals were dropped at the in-flight cap (--max-inflight), so the cap, "
                    "not the server, bounded the requests in flight")
    if not compute.reached:
        lower = _in_service_at_least(table, load_unit)
        if (len(table[table["sent"] > 0]) if tested is None else tested) == 1:
            return "not identifiable: one load level cannot show a throughput plateau" + lower
        return "not identifiable: no throughput plateau reached" + lower
    if sheds:
        below, at = compute.next_load, compute.load  # a 'within' compute saturation: between the tier below and it
        slots_like = (fit is not None and load_unit == "users" and compute.status == "within" and below is not None
                      and at is not None and ONSET_TOLERANCE * below <= fit.slots <= at / ONSET_TOLERANCE)
        if not slots_like:
            return "not identifiable: the server sheds (rate limit), not a slots limit"
    return None


def _in_service_at_least(table: pd.DataFrame, load_unit: str) -> str:
    """' (at least 2.4 requests were in service at once, at 4 users where none waited)': the most in flight (Little's
    law on the client's figures) at a tier where no request waited; a tier that waited had some of those in a
    queue (vLLM at 16 users: 9.7 in flight, 4 running)."""
    free = table[(table["ok"] > 0) & ~table["waits"].astype(bool)] if "waits" in table else table[table["ok"] > 0]
    if not len(free) or not free["inflight"].notna().any():
        return ""
    top = free.loc[free["inflight"].idxmax()]
    at = load_with_unit(top["load"], load_unit)
    return f" (at least {top['inflight']:.1f} requests were in service at once, at {at} where none waited)"


def server_slots(table: pd.DataFrame) -> str:
    """What the server's own running count says of its slots: 'The server's own metrics: at most 4 requests running
    at once, at a tier where others waited in its queue: 4 slots.' ('' without the count). A server holding requests
    waiting runs all it can, so its most running at a tier where its queue held one (waiting gauge max >= 1) is its
    slot count; with no such tier, a lower bound."""
    if "srv_running_max" not in table or not table["srv_running_max"].notna().any():
        return ""
    most = float(table["srv_running_max"].max())
    waited = table[table["srv_waiting_max"] >= 1] if "srv_waiting_max" in table else table.iloc[0:0]
    full = float(waited["srv_running_max"].max()) if waited["srv_running_max"].notna().any() else math.nan
    said = f"The server's own metrics: at most {most:g} requests running at once"
    if full == most:
        return f"{said}, at a tier where others waited in its queue: {most:g} slots."
    return f"{said}; none waited in its queue beside them, so it may have more slots."


def describe(fit: QueueFit | None, reason: str | None = None) -> str:
    if reason:
        return f"Fitted model: {reason}."
    if fit is None:
        return "Too few tiers to fit a queueing model."
    return (f"Fitted model: about {fit.slots:.1f} requests in service at once (effective parallel slots), "
            f"plateau {fit.x_max_rps:.1f} req/s, service time {fit.service_s * 1000:.0f} ms per request.")


def _erlang_c(rate: float, slots: float, service_s: float) -> float:
    """M/M/c: the probability that an arrival waits (1 at or past saturation)."""
    c = max(1, math.floor(slots))
    offered = rate * service_s
    if offered >= c:
        return 1.0
    term, total = 1.0, 1.0
    for k in range(1, c):
        term *= offered / k
        total += term
    last = term * offered / c / (1 - offered / c)
    return last / (total + last)


def _mmc_wait_s(rate: float, slots: float, service_s: float) -> float:
    c = max(1, math.floor(slots))
    offered = rate * service_s
    if offered >= c:
        return math.inf
    return _erlang_c(rate, slots, service_s) * service_s / (c - offered)
