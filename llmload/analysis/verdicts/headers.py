"""When does the server send its response headers: on arrival, or when the request gets a slot?

It decides where the queue shows in the TTFT split. A server that answers on service (our
simulator's default) holds the headers while a request waits, so the wait is inside
"headers received"; vLLM and most real servers answer on arrival, so the wait lands after the
headers, next to prefill. The report never labels a column "queue" by assumption.

How it works. First, when the server's own queue time was scraped (vLLM's request_queue_time histogram, ours):
requests waited in the engine, and where that wait shows tells the mode directly. From the lowest load to the tier
whose mean queue time is the highest, when it grew by at least MIN_GROWTH_MS: the mean time after the headers grew by
at least SERVICE_SHARE of it, the wait lands after the headers ('arrival'; a time to headers that grew as well went
to what is in front of the engine's queue, its API server or the machine, and is said so); else the mean time to
headers grew by at least that share: it lands before them ('service'); else the client's figures below decide.
Means here, as the queue time is a mean. On vLLM on a busy 2-core machine its API server, flooded by the quick
retries of the requests it refused, sometimes took 100 ms and more before the headers while the engine's queue time
was 50-65 ms: the client's figures alone read "on service" there, the engine's wait (after the headers) says arrival.

Else, from the successful requests of the lowest and the highest load: the typical request of each, the
median, when samples.csv's rows are there (a run shipped as histograms: the means). The median, not the mean: a
generator or an API server that shares two cores with the engine sometimes stalls for a second, and the few
requests it stalls then carry both their headers and their first token late; a handful of them moved the means of
a vLLM run into "neither" (headers grew 45 of 139 ms), while its typical request kept its headers at once. With
growth of the typical request's TTFT and time to headers (headers - connect):
- dTTFT = growth of TTFT, dHeaders = growth of the time to headers;
- dTTFT below max(MIN_GROWTH_MS, MIN_GROWTH_SHARE x lowest TTFT): TTFT did not grow, the
  mode cannot be seen ('unknown');
- dHeaders >= SERVICE_SHARE x dTTFT: headers grew with TTFT: sent on service ('service'), unless the
  server's metrics were scraped and show no queue at the highest tier (requests waiting on average at most
  WAIT_MIN_REQUESTS, the waiting rule's bound, and the queue time grown by less than SERVICE_SHARE x dHeaders):
  then the time before the headers went to what is in front of the engine, a gateway or proxy ('gateway');
  the server's queue metric wins over the client's reading, as in the waiting rule;
- dHeaders <= ARRIVAL_SHARE x dTTFT: headers flat while TTFT grew: sent on arrival ('arrival');
- in between, or no headers_ms recorded: 'unknown'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from llmload.rules.limits import ARRIVAL_SHARE, MIN_GROWTH_MS, MIN_GROWTH_SHARE, SERVICE_SHARE, WAIT_MIN_REQUESTS

LABELS = {
    "service": ("gateway+queue", "after headers (prefill, first token)"),
    "arrival": ("gateway", "after headers (queue, prefill, first token)"),
    "gateway": ("gateway (in front of the engine)", "after headers (prefill, first token)"),
    "unknown": ("headers (gateway; queue if sent on service)", "after headers (prefill, first token; queue if "
                "headers sent on arrival)"),
}


@dataclass(frozen=True)
class HeaderMode:
    mode: str
    """'arrival', 'service', 'gateway' or 'unknown'"""
    sentence: str

    @property
    def labels(self) -> tuple[str, str]:
        """Column names for (headers minus connect, TTFT after headers)."""
        return LABELS[self.mode]


def typical(table: pd.DataFrame, samples: pd.DataFrame | None) -> pd.DataFrame:
    """Per tier of `table` (ok > 0, with a TTFT), by load: `ttft_ms` and `headers_ms` (to headers, less the connect)
    of its typical request (medians of the successful rows; the table's means without rows), and what they are."""
    rows = table[(table["ok"] > 0) & table["ttft_mean_ms"].notna()].sort_values("load", kind="stable")
    figures = rows.assign(ttft_ms=rows["ttft_mean_ms"], headers_ms=rows["gateway_queue_ms"], measure="mean")
    if samples is None or samples.empty or "headers_ms" not in samples:
        return figures
    ok = samples[samples["ok"] & samples["ttft_ms"].notna() & samples["headers_ms"].notna()]
    head = (ok["headers_ms"].astype(float) - ok["connect_ms"].astype(float).fillna(0.0)).clip(lower=0.0)
    medians = pd.DataFrame({"ttft": ok["ttft_ms"].astype(float), "head": head, "tier": ok["tier"]}).groupby("tier")
    by_tier = medians.median()
    if not set(rows["tier"]) <= set(by_tier.index):
        return figures
    return rows.assign(ttft_ms=rows["tier"].map(by_tier["ttft"]), headers_ms=rows["tier"].map(by_tier["head"]),
                       measure="median")


def baseline(rows: pd.DataFrame) -> pd.Series:
    """The tier growth is measured from: the lowest load, unless a higher one's typical request was measurably
    faster (by more than the growth the rule needs to tell, max(MIN_GROWTH_MS, MIN_GROWTH_SHARE x the lowest's)):
    an engine that idles between the rare requests of the lowest loads (vLLM on a CPU: 160 ms at 1 and 2 users, its
    headers with the first token, 30 ms at 4) shows there a delay of its own, not the prefill waiting grows from."""
    lowest = rows.iloc[0]
    fastest = rows.loc[rows["ttft_ms"].idxmin()] if rows["ttft_ms"].notna().any() else lowest
    slower = float(lowest["ttft_ms"] - fastest["ttft_ms"])
    return fastest if slower > max(MIN_GROWTH_MS, MIN_GROWTH_SHARE * float(lowest["ttft_ms"])) else lowest


def header_mode(table: pd.DataFrame, tested: int | None = None, samples: pd.DataFrame | None = None) -> HeaderMode:
    """`tested`: tiers with requests in the whole run, judged or not (default: those of `table`); `samples`: the
    run's measured rows (None: a run shipped as histograms; the tiers' means decide)."""
    by_engine = _where_the_engine_waited(table)
    if by_engine is not None:
        return by_engine
    rows = typical(table, samples)
    one = len(rows) == 1 and (tested is None or tested == 1)
    if len(rows) < 2 or rows["headers_ms"].isna().all():
        return HeaderMode("unknown", "Headers: when the server sends them cannot be told "
                          + ("(no headers_ms recorded)." if len(rows) >= 2 else
                             "from one load level." if one else "from fewer than two tiers."))
    lo, hi = baseline(rows), rows.iloc[-1]
    d_ttft = float(hi["ttft_ms"] - lo["ttft_ms"])
    d_head = float(hi["headers_ms"] - lo["headers_ms"])
    span, which = f"from {lo['load']:g} to {hi['load']:g}", hi["measure"]
    if lo["load"] != rows.iloc[0]["load"]:
        first = rows.iloc[0]
        span += (f" (the fastest typical request; at {first['load']:g} it took {first['ttft_ms']:.0f} ms, "
                 f"{first['headers_ms']:.0f} ms of them to the headers)")
    if not d_ttft > max(MIN_GROWTH_MS, MIN_GROWTH_SHARE * float(lo["ttft_ms"])) or math.isnan(d_head):
        return HeaderMode("unknown", f"Headers: {which} TTFT grew only {max(d_ttft, 0):.0f} ms {span}, too little "
                          "to tell whether the server sends headers on arrival or on service.")
    grew = f"{which} TTFT grew {round(d_ttft)} ms {span} while the {which} time to headers grew {round(d_head)} ms"
    if d_head >= SERVICE_SHARE * d_ttft:
        engine = _engine_idle(lo, hi, d_head)
        if engine:
            return HeaderMode("gateway", f"Headers: the time to headers grew with TTFT ({grew}), yet the engine's "
                              f"queue stayed empty ({engine}): the time went to the gateway or proxy in front of "
                              "the engine (or the network between), not to requests waiting in the engine.")
        return HeaderMode("service", f"Headers: sent when a request gets a slot ({grew}): waiting shows "
                          "before the headers.")
    if d_head <= ARRIVAL_SHARE * d_ttft:
        return HeaderMode("arrival", f"Headers: sent on arrival ({grew}): any waiting is after the headers, "
                          "beside prefill.")
    return HeaderMode("unknown", f"Headers: {grew}: neither on arrival nor on service; the split is shown "
                      "unlabelled.")


def _where_the_engine_waited(table: pd.DataFrame) -> HeaderMode | None:
    """The mode from where the engine's own queue time shows (module docstring); None when it cannot tell."""
    needed = ("srv_queue_time_ms", "gateway_queue_ms", "after_headers_ms", "ttft_mean_ms")
    if any(c not in table for c in needed):
        return None
    rows = table[(table["ok"] > 0) & table[list(needed)].notna().all(axis=1)].sort_values("load", kind="stable")
    if len(rows) < 2:
        return None
    lo, hi = rows.iloc[0], rows.loc[rows["srv_queue_time_ms"].idxmax()]
    waited = float(hi["srv_queue_time_ms"] - lo["srv_queue_time_ms"])
    if hi["load"] == lo["load"] or not waited >= MIN_GROWTH_MS:
        return None
    d_after = float(hi["after_headers_ms"] - lo["after_headers_ms"])
    d_head = float(hi["gateway_queue_ms"] - lo["gateway_queue_ms"])
    said = (f"from {lo['load']:g} to {hi['load']:g} the engine's own queue time grew {waited:.0f} ms (its metrics), "
            f"the mean time after the headers {d_after:+.0f} ms, the mean time to headers {d_head:+.0f} ms")
    if d_after >= SERVICE_SHARE * waited:
        front = ("; the time to headers grew too, in front of the engine's queue (its API server, a proxy or the "
                 "machine)" if d_head >= SERVICE_SHARE * waited else "")
        return HeaderMode("arrival", f"Headers: sent on arrival: {said}; the engine's wait shows after the headers, "
                          f"beside prefill{front}.")
    if d_head >= SERVICE_SHARE * waited:
        return HeaderMode("service", f"Headers: sent when a request gets a slot: {said}; the engine's wait shows "
                          "before the headers.")
    return None


def _engine_idle(lo: pd.Series, hi: pd.Series, d_head: float) -> str:
    """The server's metrics at the highest tier when they show no queue ('' when not scraped or it queued):
    at most WAIT_MIN_REQUESTS waiting on average, and a queue time that grew by less than SERVICE_SHARE of the
    headers' growth (it cannot explain them)."""
    little = float(hi.get("srv_queue_len", math.nan))
    waiting = little if little == little else float(hi.get("srv_waiting_mean", math.nan))
    if not waiting <= WAIT_MIN_REQUESTS:
        return ""
    queue_ms = float(hi.get("srv_queue_time_ms", math.nan))
    base_ms = float(lo.get("srv_queue_time_ms", math.nan))
    grew_ms = queue_ms - (base_ms if base_ms == base_ms else 0.0)
    if grew_ms >= SERVICE_SHARE * d_head:
        return ""
    queue = f", queue time {queue_ms:.0f} ms" if queue_ms == queue_ms else ""
    return f"server metrics at {hi['load']:g}: {waiting:.1f} requests waiting on average{queue}"
