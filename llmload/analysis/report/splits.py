"""The report's split tables (`splits.py`): targets (targets.py), retries, decode, tokens, connections, images,
open loop.

How it works: one function per table, each returning [] when the run cannot show that split, so
the report only grows where the data has something to say. Pure: blocks in, no I/O.
"""

from __future__ import annotations

from llmload.analysis import text
from llmload.analysis.read import histograms
from llmload.analysis.report.document import Block, Heading, Table
from llmload.analysis.report.targets import target_blocks
from llmload.analysis.tables import splits, tokens
from llmload.analysis.verdicts import billing

ms, num = text.ms, text.num


def retry_blocks(a) -> list[Block]:
    frame = splits.retry_table(a.run)
    if frame.empty or not frame["retried"].sum():
        return []
    loads = a.table.set_index("tier")["load"]
    rows = tuple((str(r.tier), text.load(loads.get(r.tier, float("nan"))), str(r.chains), str(r.retried),
                  str(r.failed_in_the_end), f"{ms(r.first_ttft_p50_ms)} / {ms(r.first_ttft_p95_ms)}",
                  f"{ms(r.final_ttft_p50_ms)} / {ms(r.final_ttft_p95_ms)}",
                  f"{ms(r.first_e2e_p95_ms)}", f"{ms(r.final_e2e_p95_ms)}", num(r.retry_wait_s),
                  ms(r.retry_wait_mean_ms), str(r.ignored_hint)) for r in frame.itertuples())
    return [Heading("Latency with and without retries", 3),
            Table(("tier", "load", "requests", "retried", "failed in the end", "first attempt TTFT p50 / p95",
                   "final outcome TTFT p50 / p95", "first e2e p95", "final e2e p95", "Retry-After wait s",
                   "wait per retry ms", "retries before the hint"), rows,
                  note="A request = its first attempt and the retries linked to it (samples' retry_of), in the "
                       "tier of its first measured attempt. First attempt: successful first attempts only. Final "
                       "outcome: from the first send to the last attempt's first token / end, over requests that "
                       "ended in a success, waits included. Retry-After wait: an attempt's end to its retry's "
                       "send; 'before the hint' = sooner than its Retry-After.")]


def decode_blocks(a) -> list[Block]:
    t = a.table
    stall_ms = float(t["stall_ms"].iloc[0]) if len(t) and t["stall_ms"].notna().any() else 1000.0
    pooled = "itl_gaps" in t and bool(t["itl_gaps"].sum())
    rows = tuple((str(r.tier), text.load(r.load), ms(r.tpot_p50_ms), ms(r.tpot_p95_ms), ms(r.tpot_p99_ms),
                  ms(r.itl_mean_p50_ms), ms(r.itl_mean_p95_ms), ms(r.itl_mean_p99_ms),
                  *((ms(r.itl_gap_p50_ms), ms(r.itl_gap_p95_ms), ms(r.itl_gap_p99_ms), ms(r.itl_gap_p999_ms))
                    if pooled else ()), str(r.stalls) if r.stalls == r.stalls else "-")
                 for r in t.itertuples())
    headers = ("tier", "load", "TPOT p50", "p95", "p99", "ITL mean p50", "p95", "p99",
               *(("ITL every gap p50", "p95", "p99", "p99.9") if pooled else ()), f"stalls (gap > {stall_ms:g} ms)")
    every_gap = (f"ITL every gap: percentiles of all inter-token gaps of the tier's successful requests together "
                 f"(histograms.csv, {histograms.PRECISION}; p99.9 from {histograms.MIN_GAPS_P999} gaps): the "
                 "stream a reader sees, where a few long gaps per request show even when each request's mean "
                 "hides them. " if pooled else
                 ("No pooled distribution of every gap: histograms.csv holds this run without a load shape as one "
                  "tier, which cannot be split into its ramps. " if a.run.ramps > 1 else
                  "This run has no histograms.csv, so no pooled distribution of every gap. "))
    return [Heading("Decode per request: TPOT, ITL and stalls (ms)", 3),
            Table(headers, rows,
                  note="TPOT and ITL mean: percentiles over requests of each request's TPOT and mean inter-token "
                       "gap. " + every_gap + "Stalls: successful requests whose longest gap exceeded --stall-ms.")]


def token_blocks(a) -> list[Block]:
    frame = tokens.token_table(a.run)
    if frame.empty:
        return []
    loads = a.table.set_index("tier")["load"]
    rows = tuple((str(r.tier), text.load(loads.get(r.tier, float("nan"))), str(r.compared), f"{r.usage_tokens:,}",
                  f"{r.client_tokens:,}", str(r.usage_above), str(r.usage_below), str(r.over_max_tokens),
                  str(r.unexplained)) for r in frame.itertuples())
    client = billing.HEADER.get(tokens.client_kind(a.run), "client count")
    return [Heading("Output tokens: usage vs received", 3),
            Table(("tier", "load", "requests", "usage tokens", client, "usage above", "usage below",
                   "above max_tokens", "unexplained"), rows,
                  note=billing.caption(a.run, int(frame["reasoning_hidden"].sum())))]


def connection_blocks(a) -> list[Block]:
    frame = splits.connection_table(a.run)
    if frame.empty:
        return []
    loads = a.table.set_index("tier")["load"]
    rows = tuple((str(r.tier), text.load(loads.get(r.tier, float("nan"))), r.connection, str(r.n),
                  ms(r.ttft_p50_ms), ms(r.ttft_p95_ms), ms(r.connect_mean_ms)) for r in frame.itertuples())
    return [Heading("New vs reused connections", 3),
            Table(("tier", "load", "connection", "n", "TTFT p50", "TTFT p95", "connect ms (mean)"), rows,
                  note="Tiers where both occurred (samples' conn_reused); connect = TCP (+TLS) setup.")]


def image_blocks(a) -> list[Block]:
    frame = splits.image_table(a.run)
    if frame.empty:
        return []
    loads = a.table.set_index("tier")["load"]
    several = "target" in frame
    rows = tuple((str(r.tier), text.load(loads.get(r.tier, float("nan"))), *((r.target,) if several else ()),
                  str(r.images), str(r.n), ms(r.ttft_p50_ms), ms(r.ttft_p95_ms), ms(r.ttft_p99_ms),
                  num(r.input_tokens_mean, 0)) for r in frame.itertuples())
    return [Heading("TTFT by images per request", 3),
            Table(("tier", "load", *(("target",) if several else ()), "images", "n", "TTFT p50", "TTFT p95",
                   "TTFT p99", "input tokens (mean)"), rows, numeric_from=3 if several else 1,
                  note="Chat requests by the images they carried (--images; samples' images), measured successes. "
                       "A vision model counts each image as prompt tokens from its size, so its prefill (and TTFT) "
                       "grows with them; input tokens as the server's usage says.")]


def intended_blocks(a) -> list[Block]:
    frame = splits.intended_table(a.table)
    if frame.empty:
        return []
    rows = tuple((str(r.tier), text.load(r.load), ms(r.schedule_lag_p99_ms),
                  *(f"{ms(getattr(r, f'{m}_{q}_ms'))} / {ms(getattr(r, f'{m}_sent_{q}_ms'))}"
                    for m in ("ttft", "e2e") for q in ("p50", "p95", "p99"))) for r in frame.itertuples())
    return [Heading("Open loop: from the intended send / from the actual send (ms)", 3),
            Table(("tier", "load", "schedule lag p99", "TTFT p50", "TTFT p95", "TTFT p99", "e2e p50", "e2e p95",
                   "e2e p99"), rows,
                  note="Intended send = when the arrival schedule meant to send it (actual send minus "
                       "schedule_lag_ms): the coordinated-omission-corrected figure. The knee, capacity and "
                       "saturation verdicts of this open-loop run use it; the actual-send figure is beside it.")]


def split_blocks(a) -> list[Block]:
    if not a.run.per_request:  # the other splits need per-request rows (hist_run.CANNOT_SHOW)
        return [] if a.no_first_token else decode_blocks(a)
    if a.no_first_token:  # no decode, no output tokens: the latency section says so once (unstreamed.NOTE)
        return [*target_blocks(a), *retry_blocks(a), *connection_blocks(a), *intended_blocks(a)]
    return [*target_blocks(a), *retry_blocks(a), *decode_blocks(a), *token_blocks(a), *connection_blocks(a),
            *image_blocks(a), *intended_blocks(a)]
