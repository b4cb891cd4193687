"""Which kind of load shape a run used, so the report asks the questions that shape answers.

How it works: run.json's `shape` (written by llmload's shapes) has `class` (the scenario's
shape class name, e.g. StepTiers, RateTiers, Spike, Soak, Day), `open_loop` and `tiers`.
The kind is decided in this order:
- `open_loop` true, or tiers in req/s            -> 'rate'     (open-loop rate tiers)
- a `kind` field naming one of the kinds          -> that kind (llmload's shapes write it)
- the class name contains spike / soak / schedule -> that kind
- else from the tier loads: three tiers a, b > a, a -> 'spike'; two or more equal
  loads -> 'soak'; loads that go down somewhere -> 'schedule'; otherwise 'step'.
Step and rate runs raise the load tier by tier: the knee, the queueing model and the
capacity curve make sense for them. Spike, soak and schedule runs do not climb, so the
report compares their phases instead (see `phases.py`).
"""

from __future__ import annotations

import itertools

import pandas as pd

from llmload.analysis.read.run import Run

CLIMBING = ("step", "rate")
NAMES = {"step": "closed-loop step tiers", "rate": "open-loop rate tiers", "spike": "spike",
         "soak": "soak", "schedule": "time-of-day schedule"}


def shape_kind(run: Run) -> str:
    shape = run.shape
    if shape.get("open_loop") is True or run.load_unit == "req/s":
        return "rate"
    declared = str(shape.get("kind") or "").lower()
    if declared in NAMES:
        return declared
    name = str(shape.get("class") or "").lower()
    for kind in ("spike", "soak", "schedule"):
        if kind in name:
            return kind
    return kind_from_loads(run.tiers.sort_values("start_s")["load"])


def kind_from_loads(loads: pd.Series) -> str:
    values = [float(v) for v in loads]
    if len(values) == 3 and values[1] > values[0] and values[2] == values[0]:
        return "spike"
    if len(values) >= 2 and len(set(values)) == 1:
        return "soak"
    if any(b < a for a, b in itertools.pairwise(values)):
        return "schedule"
    return "step"


def climbs(kind: str) -> bool:
    """True when the run raises its load tier by tier (knee and capacity curve apply)."""
    return kind in CLIMBING
