"""What the run's workload knobs showed, computed once per run: `workload_view(run) -> WorkloadView`.

How it works: the tables of `workload.py` (outputs shorter than asked, repeated vs first-seen
prompts, turns, the length grid, reasoning, streamed vs not) and the prefill line of `prefill.py`
are computed over the measured rows (each tier's measure window; a run without tiers.csv has one
window, see `loader.py`); the agent sessions of `agent.py` over every row with a session. Each table is
empty when the run has no such rows, so the report shows a section only when it has data, and summary.json
carries only the non-empty ones.
The prefill line is fitted only when the run asked for at least three prompt lengths
(`prompt_tokens_target`: a prefill sweep or a length grid), never over the accidental spread of
a dataset's prompts. A *prefill sweep* is such a run without a load shape (run.json has no
`shape`, as `scenarios/prefill_sweep.py` writes): its report leads with the prefill answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from llmload.analysis.read.run import Run
from llmload.analysis.tables import agent, prefill, workload

TABLES = ("short_outputs", "repeat_vs_first", "turns", "grid", "reasoning", "streamed")


@dataclass(frozen=True)
class WorkloadView:
    short_outputs: pd.DataFrame
    short_sentence: str
    repeat_vs_first: pd.DataFrame
    turns: pd.DataFrame
    grid: pd.DataFrame
    reasoning: pd.DataFrame
    streamed: pd.DataFrame
    prefill_fit: prefill.PrefillFit | None
    prefill_table: pd.DataFrame
    sweep: bool
    """a prefill sweep (no load shape): the report leads with the prefill answer"""
    agent: agent.AgentView | None = None
    """agent sessions (tables/agent.py: every row with a session, warm-up included), None without"""

    @property
    def prefill_sentence(self) -> str:
        return prefill.prefill_sentence(self.prefill_fit) if self.prefill_fit is not None else ""


def _asked_lengths(rows: pd.DataFrame) -> int:
    if "prompt_tokens_target" not in rows:
        return 0
    return int(pd.to_numeric(rows["prompt_tokens_target"], errors="coerce").dropna().nunique())


def workload_view(run: Run) -> WorkloadView:
    rows = run.samples[run.samples["measured"]]
    short = workload.short_outputs_by_tier(rows)
    fit = prefill.prefill_fit(rows) if _asked_lengths(rows) >= prefill.MIN_LENGTHS else None
    return WorkloadView(
        short_outputs=short, short_sentence=workload.short_outputs_sentence(short, workload.ignored_fields(rows)),
        repeat_vs_first=workload.repeat_vs_first(rows), turns=workload.turn_rows(rows),
        grid=workload.grid_rows(rows), reasoning=workload.reasoning_by_tier(rows),
        streamed=workload.streamed_vs_not(rows), prefill_fit=fit,
        prefill_table=prefill.prefill_table(rows, fit) if fit is not None else pd.DataFrame(),
        sweep=fit is not None and not run.shape, agent=agent.agent_view(run.samples),
    )


def _records(frame: pd.DataFrame) -> list[dict]:
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict(orient="records")]


def summary_section(view: WorkloadView | None) -> dict | None:
    """summary.json's `workload`: only the non-empty tables (None when there is none); `summary.clean` makes
    its NaN null."""
    if view is None:
        return None
    out: dict = {}
    if not view.short_outputs.empty:
        out["short_outputs"] = {"sentence": view.short_sentence, "tiers": _records(view.short_outputs)}
    for name in TABLES[1:]:
        frame = getattr(view, name)
        if not frame.empty:
            out[name] = _records(frame)
    if view.agent is not None:
        out["agent"] = agent.summary_section(view.agent)
    fit = view.prefill_fit
    if fit is not None:
        out["prefill"] = {"sweep": view.sweep, "sentence": view.prefill_sentence,
                          "intercept_ms": fit.intercept_ms, "ms_per_1k_tokens": fit.ms_per_1k,
                          "ms_per_1k_tokens_low": fit.ms_per_1k_low, "ms_per_1k_tokens_high": fit.ms_per_1k_high,
                          "residual_ms": fit.residual_ms, "requests": fit.requests,
                          "nonlinear_from_tokens": fit.nonlinear_from_tokens,
                          "lengths": _records(view.prefill_table)}
    return out or None
