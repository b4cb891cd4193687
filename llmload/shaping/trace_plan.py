"""Trace replay tiers (`TraceShape`, shapes.py): one tier per `--trace-speeds` speed, each replaying the trace.

How it works: the flags (flags.py `add_trace_arguments`) name the trace and how to replay it (workload/trace.py reads
and windows it). `trace_plan` gives one open-loop tier per speed X: it lasts the replay's n / rate seconds
and its target_rps is the trace's mean offered rate at X, (n - 1) / span * X, so tiers.csv, the knee, the
refinement and the SLO verdicts treat it as any open-loop rate tier (load unit req/s). Its warm-up is 0:
every record of the trace is measured.
The processes turn a tier's rate back into a speed (openloop/replay.py `target_fields`): a tier --refine adds
between two speeds is a speed between them. `trace_info` is run.json's shape `trace`.
"""

from __future__ import annotations

from typing import Any

from llmload.openloop.settings import TraceSettings
from llmload.shaping.flags import parse_number_list
from llmload.shaping.plans import PlannedTier
from llmload.shaping.settings import ShapeOptionError
from llmload.workload.trace import Replay, load_trace, parse_window, replay_of
from llmload.workload.trace_formats import TraceError


def trace_replay(trace: TraceSettings) -> Replay:
    """The replay the flags describe (ShapeOptionError: one line naming what to fix)."""
    if not trace.path:
        raise ShapeOptionError("trace replay needs --trace PATH (a JSONL or CSV request trace)")
    gap = trace.max_gap_s
    if gap is not None and float(gap) <= 0:
        raise ShapeOptionError(f"--trace-max-gap-s must be > 0, got {gap}")
    try:
        return replay_of(load_trace(trace.path, trace.format), parse_window(trace.window),
                         float(gap) if gap is not None else None)
    except TraceError as exc:
        raise ShapeOptionError(str(exc)) from None


def trace_speeds(trace: TraceSettings) -> list[float]:
    if trace.speeds:
        return parse_number_list(trace.speeds, "--trace-speeds", integer=False)
    speed = float(trace.speed or 0.0)
    if speed <= 0:
        raise ShapeOptionError(f"--trace-speed must be > 0, got {speed:g}")
    return [speed]


def trace_plan(trace: TraceSettings) -> list[PlannedTier]:
    """One tier per speed (module docstring)."""
    replay = trace_replay(trace)
    if float(trace.drain_s) < 0:
        raise ShapeOptionError("--trace-drain-s must be >= 0")
    return [PlannedTier(seconds=replay.tier_seconds(s), target_rps=replay.rate_per_s(s), warmup_s=0.0)
            for s in trace_speeds(trace)]


def trace_info(trace: TraceSettings) -> dict[str, Any]:
    """run.json's shape `trace`: the file, its format, what is replayed and the speeds planned."""
    replay = trace_replay(trace)
    loaded = load_trace(trace.path, trace.format)
    return {"path": loaded.path, "format": loaded.format, "records": len(loaded.records) + loaded.skipped,
            "skipped": loaded.skipped, "replayed": len(replay.records), "span_s": round(replay.span_s, 6),
            "rate_per_s_at_1x": round(replay.rate_per_s(1.0), 6), "speeds": trace_speeds(trace),
            "window": trace.window, "max_gap_s": trace.max_gap_s}
