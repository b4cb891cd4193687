"""Saturation behaviour: at the highest load, does the server queue, shed, or neither?

How it works, on the highest-load tier with requests:
- it *sheds* when more than knee.REJECT_LIMIT of its requests were rejected with 429 or
  503; the share of 429s carrying Retry-After is reported (a polite server sets it);
- it *queues* when its p99 TTFT left the low-load band (same band as the knee rule);
- both can hold (a bounded queue that overflows into 429s); neither means the server was
  not saturated in the tested range;
- open loop: when more than knee.REJECT_LIMIT of the tier's arrivals were dropped at the
  generator's in-flight cap, the generator could not send what was asked because the
  server did not keep up: that is saturation (kind 'queues': requests piled up to the cap),
  never "not saturated". Open-loop sentences always give the achieved vs the target rate.
  Other failures (timeouts, 5xx, broken streams) above the limit are named too: a server
  that fails instead of queueing or shedding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from analysis.knee import REJECT_LIMIT, Knee


@dataclass(frozen=True)
class Saturation:
    kind: str
    """'queues', 'sheds', 'queues and sheds', 'not saturated', 'unknown'"""
    tier: int | None
    sentence: str


def classify(table: pd.DataFrame, knee: Knee, load_unit: str) -> Saturation:
    rows = table[table["sent"] > 0].sort_values("load", kind="stable")
    if rows.empty or knee.evidence.empty:
        return Saturation("unknown", None, "No requests measured: saturation behaviour unknown.")
    top = rows.iloc[-1]
    tier = int(top["tier"])
    reject = (top["n_429"] + top["n_503"]) / top["sent"]
    sheds = reject > REJECT_LIMIT
    drop_rate = float(top.get("drop_rate", 0.0))
    capped = drop_rate > REJECT_LIMIT
    ev = knee.evidence[knee.evidence["tier"] == tier]
    queues = bool(ev["left_band"].iloc[0]) if len(ev) else False
    base_p99 = float(knee.evidence.iloc[0]["ttft_p99_ms"])
    ratio = top["ttft_p99_ms"] / base_p99 if base_p99 > 0 else math.nan
    where = f"At the highest load ({top['load']:g} {load_unit}, tier {tier})"
    if load_unit == "req/s":
        where += f", sending {top['rps']:.1f} req/s of the {top['load']:g} asked ({top['ok_rps']:.1f} ok),"
    parts = []
    if capped:
        parts.append(f"the generator could not send what was asked: {int(top['dropped'])} arrivals "
                     f"({drop_rate:.0%}) dropped at the in-flight cap (--max-inflight), so the server did not "
                     "keep up")
    if sheds:
        codes = []
        if top["n_429"]:
            share = top["retry_after_share"]
            ra = "with Retry-After" if share >= 0.99 else ("without Retry-After" if not share > 0 else
                                                            f"Retry-After on {share:.0%} of them")
            codes.append(f"{int(top['n_429'])} x 429 ({ra})")
        if top["n_503"]:
            codes.append(f"{int(top['n_503'])} x 503")
        parts.append(f"it sheds load: {reject:.1%} of requests rejected ({', '.join(codes)})")
    if queues:
        parts.append(f"it queues: p99 TTFT is {ratio:.1f}x its low-load value ({top['ttft_p99_ms']:.0f} ms)")
    elif sheds and not math.isnan(ratio):
        parts.append(f"p99 TTFT of accepted requests stays {ratio:.1f}x its low-load value")
    other = top["error_rate"]
    tail = f"; {other:.1%} of requests failed otherwise (timeouts, 5xx, broken streams)" if other > REJECT_LIMIT else ""
    if not sheds and not queues and not capped:
        return Saturation("not saturated", tier, f"{where} the server neither queued nor shed: not saturated in the "
                          f"tested range (p99 TTFT {ratio:.1f}x low load, {reject:.1%} rejected){tail}.")
    kind = "queues and sheds" if sheds and (queues or capped) else ("sheds" if sheds else "queues")
    no_429 = "" if sheds else f", {int(top['n_429'])} x 429"
    return Saturation(kind, tier, f"{where} " + "; ".join(parts) + no_429 + tail + ".")
