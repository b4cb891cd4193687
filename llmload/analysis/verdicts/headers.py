"""When does the server send its response headers: on arrival, or when the request gets a slot?

It decides where the queue shows in the TTFT split. A server that answers on service (our
simulator's default) holds the headers while a request waits, so the wait is inside
"headers received"; vLLM and most real servers answer on arrival, so the wait lands after the
headers, next to prefill. The report never labels a column "queue" by assumption.

How it works, from the data (successful requests of the tiers, lowest vs highest load):
- dTTFT = growth of mean TTFT, dHeaders = growth of mean (headers - connect);
- dTTFT below max(MIN_GROWTH_MS, MIN_GROWTH_SHARE x lowest TTFT): TTFT did not grow, the
  mode cannot be seen ('unknown');
- dHeaders >= SERVICE_SHARE x dTTFT: headers grew with TTFT: sent on service ('service');
- dHeaders <= ARRIVAL_SHARE x dTTFT: headers flat while TTFT grew: sent on arrival ('arrival');
- in between, or no headers_ms recorded: 'unknown'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from llmload.rules.limits import ARRIVAL_SHARE, MIN_GROWTH_MS, MIN_GROWTH_SHARE, SERVICE_SHARE

LABELS = {
    "service": ("gateway+queue", "after headers (prefill, first token)"),
    "arrival": ("gateway", "after headers (queue, prefill, first token)"),
    "unknown": ("headers (gateway; queue if sent on service)", "after headers (prefill, first token; queue if "
                "headers sent on arrival)"),
}


@dataclass(frozen=True)
class HeaderMode:
    mode: str
    """'arrival', 'service' or 'unknown'"""
    sentence: str

    @property
    def labels(self) -> tuple[str, str]:
        """Column names for (headers minus connect, TTFT after headers)."""
        return LABELS[self.mode]


def header_mode(table: pd.DataFrame, tested: int | None = None) -> HeaderMode:
    """`tested`: tiers with requests in the whole run, judged or not (default: those of `table`)."""
    rows = table[(table["ok"] > 0) & table["ttft_mean_ms"].notna()].sort_values("load", kind="stable")
    one = len(rows) == 1 and (tested is None or tested == 1)
    if len(rows) < 2 or rows["gateway_queue_ms"].isna().all():
        return HeaderMode("unknown", "Headers: when the server sends them cannot be told "
                          + ("(no headers_ms recorded)." if len(rows) >= 2 else
                             "from one load level." if one else "from fewer than two tiers."))
    lo, hi = rows.iloc[0], rows.iloc[-1]
    d_ttft = float(hi["ttft_mean_ms"] - lo["ttft_mean_ms"])
    d_head = float(hi["gateway_queue_ms"] - lo["gateway_queue_ms"])
    span = f"from {lo['load']:g} to {hi['load']:g}"
    if not d_ttft > max(MIN_GROWTH_MS, MIN_GROWTH_SHARE * float(lo["ttft_mean_ms"])) or math.isnan(d_head):
        return HeaderMode("unknown", f"Headers: mean TTFT grew only {max(d_ttft, 0):.0f} ms {span}, too little "
                          "to tell whether the server sends headers on arrival or on service.")
    grew = f"mean TTFT grew {round(d_ttft)} ms {span} while the time to headers grew {round(d_head)} ms"
    if d_head >= SERVICE_SHARE * d_ttft:
        return HeaderMode("service", f"Headers: sent when a request gets a slot ({grew}): waiting shows "
                          "before the headers.")
    if d_head <= ARRIVAL_SHARE * d_ttft:
        return HeaderMode("arrival", f"Headers: sent on arrival ({grew}): any waiting is after the headers, "
                          "beside prefill.")
    return HeaderMode("unknown", f"Headers: {grew}: neither on arrival nor on service; the split is shown "
                      "unlabelled.")
