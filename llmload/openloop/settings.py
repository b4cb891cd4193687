"""The open-loop options, typed: `ArrivalSettings` (how arrivals are drawn and capped) and `TraceSettings` (the trace
a `TraceShape` replays).

How it works: the shape flags (shaping/flags.py, registered with these defaults) stay in Locust's parsed options;
each class's `from_options(parsed)` reads its flags once, by name, when a shape's run starts (the shape's
ScheduleSettings holds both: shaping/settings.py), and on each process for a trace's prompt sizer (replay.py
`prepare`). The namespace may be None or lack the flags (a plain Locust run, a test): a missing flag is
its default. Values are kept as parsed (the web UI form sends text for a flag whose default is None); the plans
check and convert them when they use them (shaping/plans.py, shaping/trace_plan.py), so a flag the shape does not
read never stops a run. The processes get the values in the tier's target message (user.py `publish`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_DRAIN_S = 10.0
"""seconds without arrivals between two speeds, so the next replay does not start on the last one's queue"""


@dataclass(frozen=True)
class ArrivalSettings:
    arrival: str = "poisson"
    """--arrival: the inter-arrival law, poisson, constant or gamma:cv=X (llmload.rules.traffic)"""
    arrival_seed: int = 1
    """--arrival-seed: seeds the Poisson and gamma arrivals (and a trace's own text per record)"""
    max_inflight: int = 256
    """--max-inflight: in-flight cap per worker; arrivals over it are counted as dropped"""
    late_ms: float = 10.0
    """--late-ms: a send later than this counts as late"""

    @classmethod
    def from_options(cls, parsed: Any) -> ArrivalSettings:
        """The arrival flags of Locust's parsed options (None, or a missing flag: its default); never raises."""
        d = ARRIVALS
        return cls(arrival=getattr(parsed, "arrival", d.arrival),
                   arrival_seed=getattr(parsed, "arrival_seed", d.arrival_seed),
                   max_inflight=getattr(parsed, "max_inflight", d.max_inflight),
                   late_ms=getattr(parsed, "late_ms", d.late_ms))

    def target_fields(self) -> dict[str, Any]:
        """The arrival part of a tier's target message (user.py `OpenLoopTarget`)."""
        return {"arrival": self.arrival, "seed": self.arrival_seed, "max_inflight": self.max_inflight,
                "late_ms": self.late_ms}


@dataclass(frozen=True)
class TraceSettings:
    path: str = ""
    """--trace: the request trace replayed ('' : none)"""
    format: str = "auto"
    """--trace-format: auto or one of workload/trace_formats.py's FORMATS"""
    window: str = ""
    """--trace-window: START:END seconds of the trace to replay ('' : all of it)"""
    max_gap_s: float | str | None = None
    """--trace-max-gap-s as given: every idle gap capped at this many seconds (None: not capped; text from the form)"""
    speed: float = 1.0
    """--trace-speed: the time scale of a single replay (2 = twice as fast)"""
    speeds: str = ""
    """--trace-speeds: one tier per speed, e.g. 1,1.5,2 ('' : --trace-speed alone)"""
    drain_s: float = DEFAULT_DRAIN_S
    """--trace-drain-s: seconds without arrivals between two speeds"""

    @classmethod
    def from_options(cls, parsed: Any) -> TraceSettings:
        """The trace flags of Locust's parsed options (None, or a missing flag: its default; a blank text flag: its
        default too); never raises."""
        d = TRACE
        return cls(path=str(getattr(parsed, "trace", d.path) or d.path),
                   format=str(getattr(parsed, "trace_format", d.format) or d.format),
                   window=str(getattr(parsed, "trace_window", d.window) or d.window),
                   max_gap_s=getattr(parsed, "trace_max_gap_s", d.max_gap_s),
                   speed=getattr(parsed, "trace_speed", d.speed),
                   speeds=str(getattr(parsed, "trace_speeds", d.speeds) or d.speeds).strip(),
                   drain_s=getattr(parsed, "trace_drain_s", d.drain_s))


ARRIVALS = ArrivalSettings()
"""the arrival flags at their defaults (shaping/flags.py registers them with these)"""
TRACE = TraceSettings()
"""the trace flags at their defaults (shaping/flags.py registers them with these)"""
