"""The rule book (`llmload.rules`) applied to a tier table.

How it works: the verdict functions judge `llmload.rules.Tier` records, the same ones the live web
UI and `--stop-at-knee` build from the tiers measured so far; `tiers_of` turns a tier table's rows
into them (the columns named like a Tier's fields; the others are the report's own), marked when the
run's answers have no first token (`latency.mark`: judged on e2e latency). `add_wait`
applies the waiting rule to every tier of the table and writes its figures back as columns, so the
tables and figures show what the verdicts judged.
"""

from __future__ import annotations

import pandas as pd

from llmload.rules import latency, waiting
from llmload.rules.tier import Tier, from_rows

WAIT_COLUMNS = ("wait_ms", "queue_len", "wait_share", "waits", "wait_source")


def tiers_of(table: pd.DataFrame) -> list[Tier]:
    """The table's rows (in its order) as rule-book tiers; a table indexed by tier (while it is built) too."""
    if "tier" not in table:
        table = table.rename_axis("tier").reset_index()
    return latency.mark(from_rows(table.to_dict("records")))


def add_wait(table: pd.DataFrame) -> None:
    """Add wait_ms, queue_len, wait_share, waits and wait_source (llmload.rules.waiting) to every tier."""
    judged = waiting.estimate(tiers_of(table))
    for column in WAIT_COLUMNS:
        table[column] = [getattr(t, column) for t in judged]
