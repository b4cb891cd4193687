"""The confirmation windows of a run as a run of their own: open-loop tiers at the planned rate.

How it works: `load_run` keeps tiers.csv's confirmation windows (`confirm` = 1) apart from the load tiers
(`Run.confirm`) and marks the rows sent in them (`confirm`). `confirm_run(run)` gives those windows as a `Run`
whose tiers are the windows (load: the rate sent, req/s) and whose samples are those rows, aligned to them
the same way (warm-up, measure window, a window the run was cut in ending at its last completion): the tier table
(`tables/tiers.py`) then computes their figures with the same code as every tier's, and the rule book judges them
(`verdicts/confirm.py`). A run recorded with --ship histograms keeps its windows' histograms under their tier
numbers.
"""

from __future__ import annotations

import dataclasses

from llmload.analysis.read import hist_run
from llmload.analysis.read import run as run_mod
from llmload.analysis.read.run import Run


def confirm_run(run: Run) -> Run | None:
    """The confirmation windows as a Run (None: the run has none)."""
    if run.confirm is None or run.confirm.empty:
        return None
    notes: list[str] = []
    windows = run.confirm.copy()
    if not run.per_request:
        ended = run.info.get("ended_unix")
        end = float(ended) if isinstance(ended, (int, float)) else float(windows[["start_s", "end_s"]].max().max())
        tiers, _unit = hist_run.tier_windows(windows, {}, end)
        return dataclasses.replace(run, tiers=tiers, load_unit="req/s", notes=(), confirm=None)
    rows = run.samples[run.samples["confirm"]].drop(columns=["tier", "measured"]).copy()
    tiers, _unit = run_mod.finish_tiers(windows, rows, {}, notes)
    run_mod.align(rows, tiers, notes)
    return dataclasses.replace(run, tiers=tiers, samples=rows, load_unit="req/s", notes=(), confirm=None)
