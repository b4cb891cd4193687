"""A trace replay's capacity as a speed-up of the trace: the sentence a planner of recorded traffic acts on.

How it works: a `--trace-speeds` run replays the trace once per tier, each tier's load the trace's mean offered
rate at its speed (run.json `shape.trace.rate_per_s_at_1x` x the speed). The SLO capacity (in offered req/s, as
every open-loop run) divided by the rate at 1x is the speed-up the deployment holds; the first tier that missed
it, the speed-up at which the SLO breaks. A run that is no trace replay gets no sentence.
"""

from __future__ import annotations

import math

from llmload.rules.capacity import Capacity


def rate_at_1x(shape: dict) -> float:
    """The trace's mean offered rate at speed 1 (NaN: not a trace replay)."""
    trace = shape.get("trace") if isinstance(shape, dict) else None
    rate = trace.get("rate_per_s_at_1x") if isinstance(trace, dict) else None
    return float(rate) if isinstance(rate, (int, float)) and rate > 0 else math.nan


def _speed(load: float, rate: float) -> str:
    return f"{load / rate:.3g}x"


def clause(capacity: Capacity, shape: dict) -> str:
    """' As a replay of the trace (4.2 req/s at its own speed): the SLO holds at 2x and breaks at 3x.'"""
    rate = rate_at_1x(shape)
    if rate != rate or capacity.status == "none":
        return ""
    head = f" As a replay of the trace ({rate:.3g} req/s offered at its own speed):"
    if capacity.status == "below":
        return f"{head} the SLO breaks already at the slowest speed replayed, {_speed(capacity.lowest_load, rate)}."
    if capacity.status == "unshown":
        return (f"{head} no speed was shown to hold the SLO (too few samples); it breaks at "
                f"{_speed(capacity.high, rate)}." if capacity.high == capacity.high else
                f"{head} no speed was shown to hold the SLO (too few samples).")
    if capacity.status == "beyond":
        return f"{head} the SLO holds up to the fastest speed replayed, {_speed(capacity.load, rate)}."
    breaks = capacity.high if capacity.high == capacity.high else math.nan
    tail = f" and breaks at {_speed(breaks, rate)}" if breaks == breaks else ""
    return f"{head} the SLO holds at {_speed(capacity.load, rate)}{tail}."
