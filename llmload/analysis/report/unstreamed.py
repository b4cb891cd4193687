"""The report of a run whose answers have no first token (embeddings, rerank): what its tables can hold.

How it works: such an answer comes whole (llmload.rules.latency), so its one latency is end-to-end and it
has no output tokens; the verdicts judge p95 e2e latency (the SLO) and the growth of mean e2e latency (the
client's wait estimate). The report keeps its layout but
- gives e2e p50/p95/p99 and mean in the latency table (`latency_rows`), the mean e2e in the knee evidence
  (`knee_rows`), and the time to headers without the part after them (`parts_rows`);
- drops the columns that time a first token or a decode (TTFT, ITL, TPOT, output tokens/s: `drop`);
- leaves out the decode and output-token tables, and says why once (`NOTE`).
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from llmload.analysis import text
from llmload.analysis.text import Rows, ms, num
from llmload.rules.latency import NOT_STREAMED

NOTE = (f"{NOT_STREAMED[0].upper()}{NOT_STREAMED[1:]} (embeddings, rerank: the answer comes whole), so there is no "
        "TTFT, ITL, TPOT or output token to time and their tables are left out: every latency here is end-to-end "
        "(e2e), and the SLO, the capacity and the wait estimate judge it.")
RULE_CLIENT = ("TTFT growth beyond the lowest tier's TTFT scaled by the TPOT growth (slower batches)",
               "mean e2e latency growth beyond the lowest tier's (these answers have no first token, and no decode "
               "to scale it by)")
"""the knee rule's client estimate (llmload.rules.knees.RULE), as it reads for answers with no first token"""


def rule(text: str) -> str:
    """The knee rule, worded for answers with no first token."""
    return text.replace(*RULE_CLIENT)


def goodput_note(note: str) -> str:
    """The capacity table's note, worded for answers with no first token."""
    return note.replace("p95 TTFT grows", "p95 e2e latency grows").replace("(TTFT, TPOT, e2e limits", "(e2e limits")
FIRST_TOKEN_COLUMNS = ("out tok/s",)
"""outcome-table columns with nothing to count without output tokens"""


def drop(rows: Rows, names: Iterable[str]) -> Rows:
    """The rows without the columns headed by `names`."""
    headers, body = rows
    keep = [i for i, head in enumerate(headers) if head not in set(names)]
    return tuple(headers[i] for i in keep), [tuple(row[i] for i in keep) for row in body]


def latency_rows(table: pd.DataFrame) -> Rows:
    headers = ("tier", "load", "e2e p50", "p95", "p99", "mean", "wait (est.)")
    rows = [(str(r.tier), text.load(r.load), ms(r.e2e_p50_ms), ms(r.e2e_p95_ms), ms(r.e2e_p99_ms), ms(r.e2e_mean_ms),
             ms(r.wait_ms)) for r in table.itertuples()]
    return headers, rows


LATENCY_NOTE = ("wait (est.) = mean e2e latency minus the lowest tier's: the time requests spent waiting, as the "
                "client sees it (the server's queue metric, when recorded, is what the verdicts use).")


def parts_rows(table: pd.DataFrame) -> Rows:
    """The time to headers and the generator's health (no part after the headers: the answer came with them)."""
    headers = ("tier", "load", "connect", "headers", "model mismatches", "loop lag p99", "CPU p95 %",
               "schedule lag p99")
    rows = [(str(r.tier), text.load(r.load), ms(r.connect_ms), ms(r.gateway_queue_ms), text.count(r.model_mismatch),
             ms(r.loop_lag_p99_ms), num(r.cpu_p95, 0), ms(r.schedule_lag_p99_ms)) for r in table.itertuples()]
    return headers, rows


def knee_rows(table: pd.DataFrame) -> Rows:
    """The knee evidence (text.knee_rows) with mean e2e latency in place of TTFT and TPOT."""
    headers, body = text.knee_rows(table)
    t = table[table["tested"]].sort_values(["load_target", "load"], kind="stable")
    at = headers.index("TTFT mean")
    rows = [(*row[:at], ms(e2e), *row[at + 2:]) for row, e2e in zip(body, t["e2e_mean_ms"])]
    return (*headers[:at], "e2e mean", *headers[at + 2:]), rows


WORDS = (("Time to first token", "End-to-end latency"), ("time to first token", "end-to-end latency"),
         ("TTFT growth not explained by slower batches", "e2e latency growth over the lowest tier's"),
         ("Successful requests/s and output tokens/s per tier", "Successful requests/s per tier"),
         ("users and output tokens/s scaled to the users axis (right axis)", "users (right axis)"),
         ("TTFT", "e2e latency"))
"""how a figure's caption and labels name the latency of answers with no first token"""


def words(label: str) -> str:
    """A caption or axis label, naming e2e latency where it named TTFT."""
    for old, new in WORDS:
        label = label.replace(old, new)
    return label


def as_e2e(table: pd.DataFrame) -> pd.DataFrame:
    """The tier table with its e2e figures under the TTFT columns the figures draw (no CI: none is computed)."""
    return table.assign(**{f"ttft_{name}_ms": table[f"e2e_{name}_ms"] for name in ("p50", "p95", "p99", "mean")},
                        ttft_p99_ci_lo_ms=float("nan"), ttft_p99_ci_hi_ms=float("nan"))


def relabel(fig) -> None:
    """Every title, axis label and legend entry of a drawn figure, with `words`."""
    for ax in fig.axes:
        ax.set_title(words(ax.get_title()))
        ax.set_xlabel(words(ax.get_xlabel()))
        ax.set_ylabel(words(ax.get_ylabel()))
        legend = ax.get_legend()
        for entry in legend.get_texts() if legend is not None else ():
            entry.set_text(words(entry.get_text()))
