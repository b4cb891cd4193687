"""Saturation behaviour at the highest load: one classifier, one decision table.

Every verdict sentence about saturation comes from `classify`; no other code path states
one. It looks at the highest-load tier with requests. Each failed attempt is counted once:
*shed* (HTTP 429, HTTP 503, or an in-stream error event: vLLM sheds with both), *timeout*,
or *other* (5xx other than 503, broken streams, protocol errors). Rows, first match wins:

| # | condition at the highest tier                              | kind              |
|---|------------------------------------------------------------|-------------------|
| 1 | no request measured anywhere                               | cannot tell       |
| 2 | at least MAJORITY of its requests timed out                | times out         |
| 3 | more than REJECT_LIMIT shed, or users refused and parked   | sheds (+ queues when its requests also waited) |
| 4 | its requests waited (`waiting.py`; open loop: dropped)     | queues            |
| 5 | more than REJECT_LIMIT timed out or failed otherwise       | fails             |
| 6 | only one load level and no server queue metric             | cannot tell       |
| 7 | throughput dropped past the plateau (below)                | degrades          |
| 8 | otherwise                                                  | not saturated     |

*Parked*: users of the highest tier that sent nothing in its measure window because their last attempt
was refused with a Retry-After reaching into it (`concurrency.parked_after_refusal`; the tier's load is
then the users applied). The server refused that load, even when no refusal fell inside the window:
the sentence names the load asked, the users refused and the Retry-After.

*Throughput dropped*: a tier above the best one (by load) has successful req/s at least DROP_SHARE
(15 %) below the best tier's, and the gap exceeds NOISE_Z (3) standard deviations of the two rates
(Poisson counts over their windows: a conservative noise for a closed loop). Rows 2-5 then add
"throughput fell from X req/s at N users to Y at M users (Z below): the server degrades under
overload" (the lowest such tier), and row 7 is that alone: no wait, refusal or failure, yet less
work done (an engine thrashing: preemption, swapping). Tiers whose load was not applied are not
compared.

"Waited" is the queueing-onset test (`knees.py`), never a raw TTFT rise: a concurrency cap
that refuses work while CPU contention slows every step is shedding, not queueing. Shedding
says whether a retry hint came and from which header (`ratelimit.py`). Figures that do not
exist are never printed (no "nan").
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis import ratelimit
from analysis.capacity import Capacity
from analysis.knees import KneePoint, shed_codes
from analysis.text import load_with_unit

REJECT_LIMIT = 0.01
MAJORITY = 0.5
DROP_SHARE = 0.15
NOISE_Z = 3.0
SAME_LOAD_SHARE = 0.05
"""a capacity within this share of the peak's load is the peak's load (no 'plan on the peak' note)"""


@dataclass(frozen=True)
class Saturation:
    kind: str
    """'queues', 'sheds', 'queues and sheds', 'times out', 'fails', 'degrades', 'not saturated', 'cannot tell'"""
    tier: int | None
    sentence: str
    rule: int = 0
    """the decision-table row that matched"""


def classify(table: pd.DataFrame, onset: KneePoint, compute: KneePoint, load_unit: str,
             recorded: str = "", tested: int | None = None) -> Saturation:
    """`recorded`: what samples.csv holds when no attempt was measured (`totals.recorded`); `tested`: tiers with
    requests in the whole run, judged or not (default: those of `table`)."""
    rows = table[table["sent"] > 0].sort_values("load", kind="stable")
    if rows.empty:
        what = f"{recorded[0].upper()}{recorded[1:]}" if recorded else "No request was measured in any tier"
        return Saturation("cannot tell", None, f"{what}: saturation behaviour unknown.", 1)
    top = rows.iloc[-1]
    tier = int(top["tier"])
    where = (f"At {load_with_unit(top['load'], load_unit)} (tier {tier}, the only load tested)"
             if (len(rows) if tested is None else tested) == 1
             else f"At the highest load ({load_with_unit(top['load'], load_unit)}, tier {tier})")
    if load_unit == "req/s":
        where += f", sending {top['rps']:.1f} req/s of the {top['load']:g} asked ({top['ok_rps']:.1f} ok),"
    sent, drop = int(top["sent"]), throughput_drop(rows, load_unit)
    fell = f"; {drop}" if drop else ""
    if top["timeout_rate"] >= MAJORITY:
        return Saturation("times out", tier, f"{where} it times out: {int(top['n_timeout'])} of {sent} requests "
                          f"({top['timeout_rate']:.1%}) hit the client timeout and {int(top['ok'])} succeeded; "
                          "the server neither answered in time nor refused" + _tail(top, "timeout") + fell + ".", 2)
    waits = bool(top["waits"])
    if top.get("parked_refused", 0):
        text = f"{_parked(top, load_unit)}; and it queues: {_wait(top, onset)}" if waits \
            else _parked(top, load_unit) + _accepted(top)
        return Saturation("queues and sheds" if waits else "sheds", tier, text + _tail(top, "") + fell + ".", 3)
    if top["shed_rate"] > REJECT_LIMIT:
        text = f"{where} it sheds load: {top['shed_rate']:.1%} of requests refused ({shed_codes(top)}), " \
               f"{ratelimit.hint_text(top)}"
        text += f"; and it queues: {_wait(top, onset)}" if waits else _accepted(top)
        return Saturation("queues and sheds" if waits else "sheds", tier, text + _tail(top, "") + fell + ".", 3)
    if waits:
        return Saturation("queues", tier, f"{where} {_queue_lead(top)}: {_wait(top, onset)}"
                          + _tail(top, "") + fell + ".", 4)
    if top["timeout_rate"] + top["other_fail_rate"] > REJECT_LIMIT:
        return Saturation("fails", tier, f"{where} it fails instead of queueing or shedding: "
                          f"{top['timeout_rate'] + top['other_fail_rate']:.1%} of requests failed "
                          f"({_failures(top)}), none refused, no wait measured{fell}.", 5)
    if len(rows) == 1 and top.get("srv_waiting_mean", float("nan")) != top.get("srv_waiting_mean", float("nan")):
        return Saturation("cannot tell", tier, f"{where}: cannot tell whether the server is saturated: one load "
                          "level gives no low-load baseline to see a wait against, and no request was refused. "
                          "Test several loads, or record the server's queue metrics.", 6)
    if drop:
        return Saturation("degrades", tier, f"{where} no request waited, was refused or failed, yet {drop}; "
                          "requests took longer without waiting in a queue (the engine itself slowed down: "
                          "preemption, swapping).", 7)
    plateau = (f" Throughput stopped growing {compute.sentence.split(':')[0]}, so more load would soon wait."
               if compute.reached else "")
    return Saturation("not saturated", tier, f"{where} no request waited, was refused or failed: not saturated "
                      f"in the tested range.{plateau}", 8)


def throughput_drop(rows: pd.DataFrame, load_unit: str) -> str:
    """'throughput fell from X req/s at N to Y at M (Z% below): the server degrades under overload', or ''
    (module docstring). `rows`: tiers with requests, in load order."""
    applied = rows[~rows["under_applied"].astype(bool)] if "under_applied" in rows else rows
    if len(applied) < 2:
        return ""
    x = applied["ok_rps"].fillna(0.0).to_numpy()
    best = int(x.argmax())
    if x[best] <= 0:
        return ""
    if best == len(applied) - 1:
        return ""
    i = best + 1 + int(x[best + 1:].argmin())  # the weakest tier above the best one
    hi, lo = applied.iloc[best], applied.iloc[i]
    noise = (hi["ok"] / hi["rate_window_s"] ** 2 + lo["ok"] / lo["rate_window_s"] ** 2) ** 0.5
    if not (x[i] <= (1 - DROP_SHARE) * x[best] and x[best] - x[i] > NOISE_Z * noise):
        return ""
    fell = (f"throughput fell from {x[best]:.1f} req/s at {load_with_unit(hi['load'], load_unit)} to {x[i]:.1f} "
            f"at {load_with_unit(lo['load'], load_unit)} ({1 - x[i] / x[best]:.0%} below)")
    shed = float(lo.get("shed_rate", 0.0) or 0.0)
    if shed > REJECT_LIMIT:  # a rate limit's spent quota, not an engine slowing down (LiteLLM: 100% refused)
        where = load_with_unit(lo["load"], load_unit)
        return f"{fell}: more load got less through (refused at {where}, not slowed down)"
    return f"{fell}: the server degrades under overload"


def peak_within_slo(table: pd.DataFrame, cap: Capacity, load_unit: str) -> tuple[str, pd.Series | None]:
    """When throughput fell past a peak (`throughput_drop` over every tier) and that peak lies within the
    SLO (nothing broke, or at or below the last tier within it) with more throughput than the capacity
    point: the drop sentence and the peak tier; else ('', None). A degrading server does more work at the
    peak's load than at its capacity load, at lower latency: plan on the peak."""
    if cap.status not in ("within", "beyond"):
        return "", None
    rows = table[table["sent"] > 0].sort_values("load", kind="stable")
    drop = throughput_drop(rows, load_unit)
    if not drop:
        return "", None
    applied = rows[~rows["under_applied"].astype(bool)] if "under_applied" in rows else rows
    peak = applied.loc[applied["ok_rps"].fillna(0.0).idxmax()]
    if cap.status == "within" and (peak["load"] > cap.goodput_load or peak["ok_rps"] <= cap.ok_rps):
        return "", None
    if abs(peak["load"] - cap.load) <= SAME_LOAD_SHARE * peak["load"]:
        return "", None  # the peak is the capacity point (interpolated a hair past it): nothing else to plan on
    return drop, peak


def _parked(top: pd.Series, load_unit: str) -> str:
    """The highest tier's load was refused before its measure window: users parked on a Retry-After."""
    refused, asked = int(top["parked_refused"]), top["load_target"]
    shed = f", and {top['shed_rate']:.1%} of the requests sent in it ({shed_codes(top)})" \
        if top["shed_rate"] > 0 else ""
    return (f"At the highest load asked ({load_with_unit(asked, load_unit)}, tier {int(top['tier'])}) it sheds load: "
            f"it refused {refused} of the {asked:g} users ({top['parked_codes']}, Retry-After up to "
            f"{top['parked_retry_after_s']:g} s), who sent nothing in the tier's measure window{shed}; the load "
            f"applied was {load_with_unit(top['load'], load_unit)}")


def _queue_lead(top: pd.Series) -> str:
    if top["wait_source"] == "dropped":
        return (f"the generator could not send what was asked: {int(top['dropped'])} arrivals "
                f"({top['drop_rate']:.0%}) dropped at the in-flight cap (--max-inflight), so the server did not "
                "keep up; it queues")
    return "it queues"


def _wait(top: pd.Series, onset: KneePoint) -> str:
    if top["wait_source"] == "server":
        text = f"the server's queue held {top['srv_waiting_mean']:.1f} requests on average (its metrics)"
    elif top["wait_source"] == "dropped":
        text = "requests piled up to the in-flight cap"
    else:
        text = (f"requests waited about {top['wait_ms']:.0f} ms each ({top['queue_len']:.1f} waiting on average, "
                "TTFT growth beyond what slower batches explain)")
    if onset.status == "within":
        text += f"; waiting starts between {onset.load:g} and {onset.next_load:g}"
    return text


def _accepted(top: pd.Series) -> str:
    if top["ok"] == 0:
        return "; no request was accepted"
    return f"; accepted requests did not wait (estimated wait {top['wait_ms']:.0f} ms)" \
        if top["wait_ms"] == top["wait_ms"] else ""


def _failures(top: pd.Series) -> str:
    parts = [f"{int(top['n_timeout'])} timeouts"] if top["n_timeout"] else []
    if top["n_other_fail"]:
        parts.append(f"{int(top['n_other_fail'])} other errors (5xx, broken streams, protocol)")
    return ", ".join(parts)


def _tail(top: pd.Series, skip: str) -> str:
    rate = top["other_fail_rate"] + (0.0 if skip == "timeout" else top["timeout_rate"])
    if rate <= REJECT_LIMIT:
        return ""
    counts = _failures(top) if skip != "timeout" else f"{int(top['n_other_fail'])} other errors"
    return f"; besides, {rate:.1%} of requests failed ({counts})"
