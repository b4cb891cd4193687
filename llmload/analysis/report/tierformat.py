"""`python -m analysis tiers RUN --format text|csv|json|md`: the per-tier figures in four forms.

How it works: `text` is the CLI's plain tables (`__main__.cmd_tiers`); `json` is the list of
summary.json's tier records (`summary.tier_record`, same fields, same nulls); `csv` is the same
records flattened to one column per figure, named with their unit (`ttft_ms.p95` ->
`ttft_p95_ms`, `window.end_unix` -> `window_end_unix`), empty cells for missing figures; `md`
is the report's three tier tables as Markdown.
"""

from __future__ import annotations

import csv
import io
import json

from llmload.analysis import text
from llmload.analysis.report import summary
from llmload.analysis.report.document import Block, Heading, Table, to_markdown
from llmload.analysis.tables import samples

FORMATS = ("text", "csv", "json", "md")


def records(a) -> list[dict]:
    table = samples.with_gate_cis(a.run, a.table)
    return summary.clean([summary.tier_record(row, a.run.tiers) for _, row in table.iterrows()])


def flatten(record: dict) -> dict:
    out = {}
    for key, value in record.items():
        if not isinstance(value, dict):
            out[key] = value
            continue
        for sub, inner in value.items():
            name = f"{key[:-3]}_{sub}_ms" if key.endswith("_ms") else f"{key}_{sub}"
            out[name] = inner
    return out


def as_csv(a) -> str:
    rows = [flatten(r) for r in records(a)]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else ["tier"], lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: "" if v is None else str(v).lower() if isinstance(v, bool) else v for k, v in row.items()}
                     for row in rows)
    return buffer.getvalue()


def as_markdown(a) -> str:
    blocks: list[Block] = []
    for title, (headers, rows) in (("Load and outcomes", text.outcome_rows(a.table, a.run.load_unit)),
                                   ("Latency (ms, successful requests)", text.latency_rows(a.table)),
                                   ("Where TTFT goes (mean ms) and generator health",
                                    text.parts_rows(a.table, a.header_mode.labels))):
        blocks += [Heading(title, 3), Table(headers, tuple(rows))]
    return to_markdown(blocks)


def render(a, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(records(a), indent=2, allow_nan=False) + "\n"
    if fmt == "csv":
        return as_csv(a)
    if fmt == "md":
        return as_markdown(a)
    raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


def outcomes_note(objective: str, per_request: bool, output_tokens: bool = True) -> str:
    """The caption of the load-and-outcomes table: what each rate counts (`objective`: the goodput criterion;
    `output_tokens`: False when the answers have none, embeddings and rerank, and the table no out tok/s)."""
    tokens = ("output tokens delivered inside the window, each successful request's spread evenly from its first "
              "token to its last, whichever tier sent it" if per_request else
              "output tokens of the successful attempts sent in the window (histograms: not by delivery)")
    tokens = f" out tok/s = {tokens}, per second of it;" if output_tokens else ""
    return (f"ok req/s = successful attempts sent in the measure window, per second of it;{tokens} "
            f"goodput = {objective}; in flight = ok req/s x mean e2e of "
            "successful requests (Little's law); eff. conc. = time all attempts spent in flight in the measure "
            "window / its length (mean requests in flight, failures included); "
            "'2 of 4' = only 2 of the 4 users sent requests in the window.")
