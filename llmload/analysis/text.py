"""Number formatting and the tier tables as rows of strings, shared by the CLI and the report.

Conventions: milliseconds with one decimal under 100 ms and none above; rates as
percentages; '-' for a figure that does not exist (no successes, too few samples for p99.9).
Plain-text tables right-align every column after the first `numeric_from`.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

import pandas as pd

from llmload.rules.text import load_with_unit as load_with_unit  # the tables word loads as the verdicts do
from llmload.rules.text import plural as plural

Rows = tuple[tuple[str, ...], Sequence[tuple[str, ...]]]
"""a table: its headers and its rows of cells"""



def ms(value: float) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.1f}" if abs(value) < 100 else f"{value:.0f}"


def num(value: float, digits: int = 1) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.{digits}f}"


def pct(value: float) -> str:
    if value is None or math.isnan(value):
        return "-"
    return "0%" if abs(value) < 0.0005 else f"{value:.1%}"


def count(value: float) -> str:
    """A count: '12', '-' when unknown (a figure only per-request rows give)."""
    return "-" if value is None or value != value else str(int(value))


def utc(ts: float) -> str:
    """'2026-01-01 00:00:00 UTC'."""
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def seconds(value: float) -> str:
    """'4.0 s', '2 s' (whole seconds and from 10 s on without decimals), '-' when unknown."""
    if value is None or math.isnan(value):
        return "-"
    whole = abs(value - round(value)) < 1e-6 or abs(value) >= 10
    return f"{value:.0f} s" if whole else f"{value:.1f} s"


def load(value: float) -> str:
    return f"{value:g}"


def asked_levels(table, unit: str) -> str:
    """The tiers' loads as the shape asked them, with the unit: '1, 2, 4 users (2 applied at tier 3)' when a
    tier's load was not all applied (concurrency.py: users asleep or lost)."""
    asked, short = [], []
    for row in table.itertuples():
        target = getattr(row, "load_target", row.load)
        asked.append(f"{target:g}")
        if bool(getattr(row, "under_applied", False)) and target > row.load:
            short.append(f"{row.load:g} applied at tier {row.tier}")
    return f"{', '.join(asked)} {unit}" + (f" ({'; '.join(short)})" if short else "")


def applied_load(row) -> str:
    """The tier's load; '2 of 4' when fewer users than asked were sending (concurrency.py)."""
    if getattr(row, "under_applied", False):
        return f"{row.load:g} of {row.load_target:g}"
    return load(row.load)


def flags(row) -> str:
    out = []
    if row.sent == 0 and getattr(row, "parked_refused", 0):
        out.append(f"all users refused and parked ({row.parked_codes})")
    elif row.sent == 0:
        out.append("no requests")
    elif row.too_few:
        out.append("few samples")
    if row.overloaded:
        out.append("generator overloaded")
    if getattr(row, "short", False):
        out.append("too short to judge")
    elif not row.complete:
        out.append("cut short")
    if getattr(row, "short_for_requests", False):
        out.append("too short for its requests")
    if getattr(row, "under_applied", False):
        out.append("load not applied")
    if getattr(row, "n_outage", 0):
        out.append("server unreachable")
    return ", ".join(out)


def open_loop_columns(table: pd.DataFrame, load_unit: str) -> bool:
    """Show sent req/s and dropped arrivals: open-loop runs, or any run that dropped arrivals."""
    dropped = bool((table["dropped"] > 0).any()) if "dropped" in table else False
    return load_unit == "req/s" or dropped


def empty_column(table: pd.DataFrame) -> bool:
    """Show the `empty` column (answers with no text): some tier had one."""
    return bool((table["n_empty"] > 0).any()) if "n_empty" in table else False


def outcome_rows(table: pd.DataFrame, load_unit: str = "users") -> Rows:
    open_loop = open_loop_columns(table, load_unit)
    empty = empty_column(table)
    docs = bool((table["docs_s"] > 0).any()) if "docs_s" in table else False  # a rerank run: documents/s
    headers = ("tier", "load", "sent", "ok", *(("empty",) if empty else ()), "429", "429 %", "other err %",
               *(("sent req/s", "dropped", "drop %") if open_loop else ()), "ok req/s", "goodput req/s", "out tok/s",
               *(("docs/s",) if docs else ()), "in flight",
               "eff. conc.", "flags")
    rows = []
    for r in table.itertuples():
        extra = (num(r.rps), str(r.dropped), pct(r.drop_rate)) if open_loop else ()
        rows.append((str(r.tier), applied_load(r), str(r.sent), str(r.ok), *((str(r.n_empty),) if empty else ()),
                     str(r.n_429), pct(r.rate_429),
                     pct(r.error_rate), *extra, num(r.ok_rps), num(getattr(r, "goodput_rps", float("nan"))),
                     num(r.out_tok_s, 0), *((num(r.docs_s),) if docs else ()), num(r.inflight),
                     num(r.concurrency), flags(r)))
    return headers, rows


def totals_rows(by_kind: pd.DataFrame) -> Rows:
    """Run totals of failures by kind and where they were sent (columns with no count left out)."""
    places = [c for c in by_kind.columns[1:] if by_kind[c].sum() > 0]
    headers = ("kind", "whole run", *places)
    rows = [("429 (rate_limited)" if kind == "rate_limited" else str(kind), str(int(r["total"])),
             *(str(int(r[c])) for c in places)) for kind, r in by_kind.iterrows()]
    return headers, rows


def scenario_rows(frame: pd.DataFrame, loads: pd.Series) -> Rows:
    headers = ("scenario", "tier", "load", "n", "TTFT p50", "p95", "p99", "out tok/s per req p50", "TPOT p50",
               "ITL p50")
    rows = [(str(r.scenario), str(r.tier), load(loads.get(r.tier, float("nan"))), str(r.n), ms(r.ttft_p50_ms),
             ms(r.ttft_p95_ms), ms(r.ttft_p99_ms), num(r.out_tps_p50, 0), ms(r.tpot_p50_ms), ms(r.itl_p50_ms))
            for r in frame.itertuples()]
    return headers, rows


def phase_rows(frame: pd.DataFrame) -> Rows:
    headers = ("phase", "tier", "starts at s", "load", "ok", "TTFT p50", "TTFT p99", "ok req/s", "out tok/s",
               "failed %")
    rows = [(str(r.phase), str(r.tier), num(r.start_offset_s, 0), load(r.load), str(r.ok), ms(r.ttft_p50_ms),
             ms(r.ttft_p99_ms), num(r.ok_rps), num(r.out_tok_s, 0), pct(r.failed_rate)) for r in frame.itertuples()]
    return headers, rows


def _interval(lo: float, hi: float) -> str:
    """'40.1-52.3', '-' when there is none (one success, or histograms: no CI)."""
    return f"{ms(lo)}-{ms(hi)}" if lo == lo and hi == hi else "-"


def latency_rows(table: pd.DataFrame) -> Rows:
    headers = ("tier", "load", "TTFT p50", "p95", "p99", "p99 95% CI", "p99.9", "e2e p50", "e2e p99", "ITL p50",
               "ITL p99", "TPOT p50", "wait (est.)")
    rows = [(str(r.tier), load(r.load), ms(r.ttft_p50_ms), ms(r.ttft_p95_ms), ms(r.ttft_p99_ms),
             _interval(r.ttft_p99_ci_lo_ms, r.ttft_p99_ci_hi_ms) if r.ok > 1 else "-", ms(r.ttft_p999_ms),
             ms(r.e2e_p50_ms), ms(r.e2e_p99_ms), ms(r.itl_p50_ms), ms(r.itl_p99_ms), ms(r.tpot_p50_ms),
             ms(r.wait_ms)) for r in table.itertuples()]
    return headers, rows


def parts_rows(table: pd.DataFrame, labels: tuple[str, str] = ("headers", "after headers")
               ) -> Rows:
    """TTFT split; `labels` name the two parts by the detected header mode (headers.py)."""
    headers = ("tier", "load", "connect", *labels, "out tok/s per req p50",
               "model mismatches", "loop lag p99", "CPU p95 %", "schedule lag p99")
    rows = [(str(r.tier), load(r.load), ms(r.connect_ms), ms(r.gateway_queue_ms), ms(r.after_headers_ms),
             num(r.out_tps_p50, 0), count(r.model_mismatch), ms(r.loop_lag_p99_ms), num(r.cpu_p95, 0),
             ms(r.schedule_lag_p99_ms)) for r in table.itertuples()]
    return headers, rows


def server_rows(table: pd.DataFrame) -> Rows:
    headers = ("tier", "load", "server waiting", "max", "waiting by queue time", "running", "max", "queue time ms",
               "KV cache %", "client wait (est.) ms", "client in flight")
    rows = [(str(r.tier), load(r.load), num(r.srv_waiting_mean), num(r.srv_waiting_max, 0),
             num(getattr(r, "srv_queue_len", math.nan)), num(r.srv_running_mean),
             num(getattr(r, "srv_running_max", math.nan), 0),
             ms(r.srv_queue_time_ms), num(r.srv_kv_cache_pct, 0), ms(r.wait_ms), num(r.inflight))
            for r in table.itertuples()]
    return headers, rows


def breakdown_rows(b: pd.DataFrame, table: pd.DataFrame,
                   modes: dict | None = None) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """TTFT by prompt class per tier: 'p50 / p95 / p99 (n=N)' per split and group; with `modes` (tier -> --cache
    mode) a column saying each tier's."""
    groups = list(dict.fromkeys(zip(b["split"], b["group"])))
    loads = table.set_index("tier")["load"]
    rows = []
    for tier, part in b.groupby("tier", sort=True):
        cells = {(r.split, r.group): f"{ms(r.ttft_p50_ms)} / {ms(r.ttft_p95_ms)} / "
                 f"{ms(r.ttft_p99_ms)} (n={r.n})" for r in part.itertuples()}
        mode = (modes.get(int(tier), "-"),) if modes else ()
        rows.append((str(tier), load(loads[tier]), *mode, *(cells.get(g, "-") for g in groups)))
    mode_header = ("--cache",) if modes else ()
    return ("tier", "load", *mode_header, *(f"{split}: {group}" for split, group in groups)), tuple(rows)


def knee_rows(table: pd.DataFrame) -> Rows:
    """Evidence of the two knees per tier (llmload.rules.knees)."""
    t = table[table["tested"]].sort_values(["load_target", "load"], kind="stable")
    peak = t["ok_rps"].max() if len(t) > 1 else float("nan")  # one load level: no plateau to compare with
    headers = ("tier", "load", "ok req/s", "% of plateau", "TTFT mean", "TPOT mean", "wait (est.)",
               "waiting", "server waiting", "waits")
    rows = [(str(r.tier), applied_load(r), num(r.ok_rps), pct(r.ok_rps / peak if peak > 0 else
                                                                            float("nan")),
             ms(r.ttft_mean_ms), ms(r.tpot_mean_ms), ms(r.wait_ms), num(r.queue_len),
             num(_server_queue(r)), f"YES ({r.wait_source})" if r.waits else "")
            for r in t.itertuples()]
    return headers, rows


def _server_queue(r) -> float:
    """The server's queue as the rule book reads it (llmload.rules.tier.Tier.srv_queue)."""
    little = getattr(r, "srv_queue_len", math.nan)
    return little if little == little else r.srv_waiting_mean


def render(headers: tuple[str, ...], rows: Sequence[tuple[str, ...]], numeric_from: int = 1) -> str:
    """A plain-text table with aligned columns."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells) -> str:
        return "  ".join(c.rjust(w) if i >= numeric_from else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])
