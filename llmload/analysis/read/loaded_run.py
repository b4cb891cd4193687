"""The `Run` a run folder is read into, and the shape of its samples frame.

How it works: `run.py` (samples.csv aligned to tiers.csv) and `hist_run.py` (a run recorded with
--ship histograms) both build a `Run`, declared here with what both need to build it:
- the samples.csv columns the analysis reads, as text (categories) or numbers (`sample_dtypes`);
- `empty_samples()`: a samples frame with every column and no row, for a run kept without rows;
- `split_confirm(tiers)`: tiers.csv's load tiers apart from its confirmation windows (`Run.confirm`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from llmload.analysis.read import histograms, ramps
from llmload.contract import SAMPLE_COLUMNS

TEXT_COLUMNS = ("request_id", "worker", "user", "scenario", "endpoint", "transport", "phase", "error", "tokens_source",
                "model_requested", "model_returned", "retry_of", "retry_after_source", "finish_reason",
                "error_detail", "output_tokens_client_source", "length_asked", "session", "parent_session", "target")
"""samples.csv columns read as text (categories); `request_id` as plain strings"""
UNREAD_COLUMNS: tuple[str, ...] = ()
"""contract columns the analysis does not use"""
NUMERIC_COLUMNS = tuple(c for c in SAMPLE_COLUMNS if c not in TEXT_COLUMNS + UNREAD_COLUMNS)


@dataclass(frozen=True)
class Run:
    path: Path
    name: str
    info: dict
    """run.json content ({} when missing)"""
    samples: pd.DataFrame
    """samples.csv rows plus `tier` (aligned, -1 outside any tier), `measured` (bool), `ok` (bool: no error and a
    first token, or an embeddings / rerank answer, which has none; an `empty_answer` row is not ok, and counted
    apart)"""
    tiers: pd.DataFrame
    """one row per tier: tier, start_s, end_s, measure_start_s, measure_s, load, complete, short, planned_s,
    dropped"""
    load_unit: str
    """'users' (closed loop, target_users) or 'req/s' (open loop, target_rps)"""
    health: pd.DataFrame | None = None
    history: pd.DataFrame | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    """what is missing or was assumed, one sentence each"""
    failures: pd.DataFrame | None = None
    """Locust's failures table (Method, Name, Error, Occurrences) when locust_failures.csv exists"""
    server_metrics: pd.DataFrame | None = None
    """server_metrics.csv (ts_s unix, name, value: the target's Prometheus metrics) when present"""
    histograms: histograms.Histograms | None = None
    """histograms.csv (every inter-token gap; pooled ITL) when present"""
    ramps: int = 0
    """a run without a load shape raised in several ramps: one tier per ramp (`ramps.py`; 0 otherwise)"""
    warm_only: bool = False
    """no row is phase=measure (the warm-up never ended): every row is measured, and the report says so"""
    source: str = "samples"
    """'samples' (samples.csv: a row per attempt) or 'histograms' (--ship histograms: no rows, `samples` empty;
    hist_run.py)"""
    confirm: pd.DataFrame | None = None
    """tiers.csv's confirmation windows (`confirm` = 1: the planned rate sent open loop after the tiers), kept apart
    from `tiers`: their rows are stamped tier -1, not measured, `confirm` True (read/confirm.py); None: none ran"""

    @property
    def shape(self) -> dict:
        shape = self.info.get("shape")
        return shape if isinstance(shape, dict) else {}

    @property
    def span_s(self) -> tuple[float, float]:
        """(first, last) unix second of the run's sends: the rows' when kept, else the tiers' windows."""
        if len(self.samples):
            ts = self.samples["ts_start_s"]
            return float(ts.min()), float(ts.max())
        return float(self.tiers["start_s"].min()), float(self.tiers["end_s"].max())

    @property
    def per_request(self) -> bool:
        """the run kept a row per attempt (every per-request figure and split exists)"""
        return self.source == "samples"

    @property
    def plain(self) -> bool:
        """a run without a load shape (run.json records none): one tier per ramp of users"""
        return ramps.plain(self.info)

    @property
    def empty_is_error(self) -> bool:
        """HTTP 200 answers with no text (`empty_answer`) count as errors: recorded with --empty-answer-is-error
        (run.json `empty_answer_is_error`), or so asked of the analysis (`counting_empty_as_error`)"""
        return self.info.get("empty_answer_is_error") is True


def split_confirm(tiers: pd.DataFrame | None) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """tiers.csv's load tiers and its confirmation windows (None each when there are none)."""
    if tiers is None or "confirm" not in tiers or not tiers["confirm"].any():
        return tiers, None
    load, confirm = tiers[~tiers["confirm"]].reset_index(drop=True), tiers[tiers["confirm"]].reset_index(drop=True)
    return (load if len(load) else None), confirm


def sample_dtypes(columns) -> dict[str, Any]:
    """The dtype each of samples.csv's `columns` is read as: text as categories (`request_id` as plain
    strings), the rest as floats."""
    dtypes: dict[str, Any] = {c: ("category" if c in TEXT_COLUMNS else "float64") for c in columns}
    if "request_id" in dtypes:
        dtypes["request_id"] = str
    return dtypes


def empty_samples() -> pd.DataFrame:
    """A run without rows (--ship histograms): every column the analysis reads, no row."""
    columns = [*NUMERIC_COLUMNS, *TEXT_COLUMNS]
    frame = pd.DataFrame({c: pd.Series(dtype=t) for c, t in sample_dtypes(columns).items()})
    frame["tier"] = pd.Series(dtype=int)
    frame["measured"] = frame["ok"] = frame["confirm"] = pd.Series(dtype=bool)
    return frame
