"""When does the server send its response headers: on arrival, or when the request gets a slot?

It decides where the queue shows in the TTFT split. A server that answers on service (our
simulator's default) holds the headers while a request waits, so the wait is inside
"headers received"; vLLM and most real servers answer on arrival, so the wait lands after the
headers, next to prefill. The report never labels a column "queue" by assumption.

How it works, request by request when samples.csv's rows are there (`per_request`): within a tier, requests that
waited longer have a longer TTFT; on service their headers came that much later too, on arrival they did not. So
in each tier whose TTFT spread beyond the lowest tier's by at least max(MIN_GROWTH_MS, that spread) (the extra
spread is the waiting's: prefill's own noise lies after the headers either way), with at least
HEADER_MIN_REQUESTS successes, the covariance of a request's time to headers with its TTFT over that extra TTFT
variance is the share of the waiting the headers carried: from SERVICE_SHARE on service (or 'gateway', below),
up to ARRIVAL_SHARE on arrival. It compares requests of one tier with each other, so what moves a whole tier (a
generator that shares its cores with the engine and answers its headers later under load) does not decide it.
Where no tier spread enough (waits alike for every request, or no waiting), or the share lies in between, or the
run keeps no rows (--ship histograms), the tiers' means decide (successful requests, lowest vs highest load):
- dTTFT = growth of mean TTFT, dHeaders = growth of mean (headers - connect);
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

from llmload.rules.limits import (
    ARRIVAL_SHARE,
    HEADER_MIN_REQUESTS,
    MIN_GROWTH_MS,
    MIN_GROWTH_SHARE,
    SERVICE_SHARE,
    WAIT_MIN_REQUESTS,
)

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


@dataclass(frozen=True)
class Spread:
    """What the requests of the loaded tiers say (`per_request`)."""

    share: float
    """the share of the waiting's TTFT variance the time to headers carried (covariance over extra variance)"""
    requests: int
    extra_ms: float
    """the loaded tiers' TTFT spread beyond the lowest tier's (the square root of the extra variance, pooled)"""
    loads: tuple[float, ...]

    def evidence(self) -> str:
        loads = ", ".join(f"{load:g}" for load in self.loads)
        return (f"within the tier(s) at {loads}, {self.requests} requests whose TTFT spread {self.extra_ms:.0f} ms "
                f"beyond the lowest tier's: their time to headers carried {max(self.share, 0.0):.0%} of it")


def per_request(table: pd.DataFrame, rows: pd.DataFrame | None) -> Spread | None:
    """The requests' evidence (module docstring), None when no tier spread enough to tell."""
    if rows is None or rows.empty or "headers_ms" not in rows:
        return None
    ok = rows[rows["ok"] & rows["ttft_ms"].notna() & rows["headers_ms"].notna() & rows["tier"].isin(table["tier"])]
    if ok.empty:
        return None
    ttft = ok["ttft_ms"].astype(float)
    head = ok["headers_ms"].astype(float) - ok["connect_ms"].astype(float).fillna(0.0)
    loads = table.set_index("tier")["load"]
    by = ttft.groupby(ok["tier"])
    base_tier = min(by.groups, key=lambda t: (loads.get(t, math.inf), t))
    base_var = float(by.get_group(base_tier).var())
    if base_var != base_var:
        return None
    covariance = extra_sum = 0.0
    used: list[float] = []
    n = 0
    for tier, idx in by.groups.items():
        t, h = ttft[idx], head[idx]
        extra = float(t.var()) - base_var
        if tier == base_tier or len(t) < HEADER_MIN_REQUESTS or not extra >= max(MIN_GROWTH_MS ** 2, base_var):
            continue
        covariance += float(((t - t.mean()) * (h - h.mean())).sum())
        extra_sum += extra * (len(t) - 1)
        used.append(float(loads.get(tier, math.nan)))
        n += len(t)
    if not used:
        return None
    return Spread(covariance / extra_sum, n, math.sqrt(extra_sum / max(n - len(used), 1)), tuple(sorted(used)))


def header_mode(table: pd.DataFrame, tested: int | None = None, samples: pd.DataFrame | None = None) -> HeaderMode:
    """`tested`: tiers with requests in the whole run, judged or not (default: those of `table`); `samples`: the
    run's measured rows (None: a run shipped as histograms; the tiers' means decide). The requests decide when
    they can; when the means agree, the means' sentence is kept (it reads more plainly)."""
    rows = table[(table["ok"] > 0) & table["ttft_mean_ms"].notna()].sort_values("load", kind="stable")
    means = by_means(rows, tested)
    spread = per_request(rows, samples) if len(rows) >= 2 else None
    if spread is None or ARRIVAL_SHARE < spread.share < SERVICE_SHARE:
        return means
    said = f"{spread.evidence()}; the tiers' means: {_lowercase(means.sentence.removeprefix('Headers: '))}"
    if spread.share <= ARRIVAL_SHARE:
        return means if means.mode == "arrival" else HeaderMode(
            "arrival", f"Headers: sent on arrival, by the requests ({said}): any waiting is after the headers, "
            "beside prefill.")
    if means.mode in ("service", "gateway"):
        return means
    lo, hi = rows.iloc[0], rows.iloc[-1]
    engine = _engine_idle(lo, hi, float(hi["gateway_queue_ms"] - lo["gateway_queue_ms"]))
    if engine:
        return HeaderMode("gateway", f"Headers: the time to headers followed TTFT request by request ({said}), yet "
                          f"the engine's queue stayed empty ({engine}): the time went to the gateway or proxy in "
                          "front of the engine (or the network between), not to requests waiting in the engine.")
    return HeaderMode("service", f"Headers: sent when a request gets a slot, by the requests ({said}): waiting "
                      "shows before the headers.")


def _lowercase(sentence: str) -> str:
    return sentence[:1].lower() + sentence[1:].rstrip(".")


def by_means(rows: pd.DataFrame, tested: int | None) -> HeaderMode:
    """The tiers' means decide (module docstring): lowest vs highest load among `rows`."""
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


def _engine_idle(lo: pd.Series, hi: pd.Series, d_head: float) -> str:
    """The server's metrics at the highest tier when they show no queue ('' when not scraped or it queued):
    at most WAIT_MIN_REQUESTS waiting on average, and a queue time that grew by less than SERVICE_SHARE of the
    headers' growth (it cannot explain them)."""
    waiting = float(hi.get("srv_waiting_mean", math.nan))
    if not waiting <= WAIT_MIN_REQUESTS:
        return ""
    queue_ms = float(hi.get("srv_queue_time_ms", math.nan))
    base_ms = float(lo.get("srv_queue_time_ms", math.nan))
    grew_ms = queue_ms - (base_ms if base_ms == base_ms else 0.0)
    if grew_ms >= SERVICE_SHARE * d_head:
        return ""
    queue = f", queue time {queue_ms:.0f} ms" if queue_ms == queue_ms else ""
    return f"server metrics at {hi['load']:g}: {waiting:.1f} requests waiting on average{queue}"
