"""The state of one shape run (`ShapeRun`) and the figures derived from it: run.json's
`shape` entry and the progress line (logged every few seconds by `progress_loop`)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gevent

from llmload.openloop.settings import TraceSettings
from llmload.rules.traffic import parse_arrival
from llmload.shaping.plans import PlannedTier
from llmload.shaping.progress import Progress, format_line
from llmload.shaping.settings import RefineSettings, ScheduleSettings
from llmload.shaping.tiers_csv import TiersCsv
from llmload.sink.timeline import TierRecord
from llmload.sink.window import StatsSnapshot, diff

MAX_AUTO_SPAWN_PER_WORKER = 100.0
logger = logging.getLogger("llmload.shape")


@dataclass
class ShapeRun:
    """One run of a shape: its plan, its clocks and where it stands."""

    plan: list[PlannedTier]
    schedule: ScheduleSettings
    """the plan's flags, read when the run started (settings.py)"""
    writer: TiersCsv
    unix_offset_s: float
    """add to a perf_counter value to get unix seconds"""
    deadline: float = math.inf
    """perf_counter time -t/--run-time ends the run (inf: no -t)"""
    run_time_s: float | None = None
    index: int = -1
    users: int = 0
    tier_start: float = 0.0
    tier_end: float = 0.0
    warm_end: float = 0.0
    first: StatsSnapshot = field(default_factory=StatsSnapshot)
    at_start: StatsSnapshot = field(default_factory=StatsSnapshot)
    at_warm: StatsSnapshot | None = None
    last_tick: tuple[int, float] | None = None
    finished: bool = False
    progress: Any = None
    record: TierRecord | None = None
    """the current tier's entry in the timeline (the web UI reads its snapshots)"""
    info: dict[str, Any] = field(default_factory=dict)
    """run.json's `shape` (the run state's shape_info: run/state.py)"""
    planned: int = 0
    """tiers of the plan the flags built (once the sweep ends, those it ran); those after them were added by
    --refine"""
    refine: RefineSettings | None = None
    """the run's --refine (shaping/refine.py; None: refinement off)"""
    refined: list[Any] = field(default_factory=list)
    """the rule book's Steps (llmload.rules.refine) added so far, in order"""
    pause_s: float = 0.0
    """open loop, --refine: seconds without arrivals before the next tier, so the queue left behind drains"""
    pause_end: float | None = None
    """perf_counter time that pause ends (None: not pausing)"""
    then: Callable[[float], Any] | None = None
    """what the pause's end does (None: begin the next tier; the confirmation's judgement: shaping/confirm.py)"""
    confirming: Any = None
    """the run's confirmation phase (shaping/confirm.py `Confirming`; None: none)"""
    drain: tuple[int, float] = (0, 0.0)
    """before a confirmation window: attempts landed, and since when that count has not changed"""
    trace: TraceSettings | None = None
    """the trace a TraceShape replays: its tiers' targets carry it (openloop/replay.py; None: no trace)"""


def shape_info(shape: Any, run: ShapeRun) -> dict[str, Any]:
    """run.json's `shape`: what the shape planned, and (later) why it stopped."""
    o = run.schedule
    info: dict[str, Any] = {
        "class": type(shape).__name__, "kind": shape.kind, "open_loop": shape.open_loop,
        "tiers": [t.target_rps if shape.open_loop else t.target_users for t in run.plan],
        "tier_seconds": [t.seconds for t in run.plan], "warmup_seconds": o.warmup_seconds,
        "stop_at_knee": o.stop_at_knee, "max_error_rate": o.max_error_rate,
        "min_tier_requests": o.min_tier_requests, "stopped": "",
    }
    if run.refine is not None:
        info["refine"] = run.refine.info()
    if run.confirming is not None:
        info["confirm"] = run.confirming.settings.info()
    if shape.open_loop:
        arrival = parse_arrival(o.arrivals.arrival)
        info.update(arrival=arrival.spec, arrival_process=arrival.process, arrival_cv=arrival.cv,
                    arrival_seed=o.arrivals.arrival_seed, max_inflight=o.arrivals.max_inflight)
    return info


def progress_of(run: ShapeRun, now: float, current: StatsSnapshot, tokens_per_s: float | None) -> Progress:
    """The progress line's figures at perf_counter time `now`, `current` the stats now."""
    planned = run.plan[run.index]
    window = diff(run.at_warm or run.at_start, current)
    since_start = diff(run.first, current)
    later_s = sum(t.seconds for t in run.plan[run.index + 1:])
    latency, p99_ms = window.latency_p99()
    return Progress(
        tier=run.index + 1, tiers=len(run.plan), target_users=planned.target_users,
        target_rps=planned.target_rps, tier_left_s=min(run.tier_end, run.deadline) - now,
        run_left_s=min(max(0.0, run.tier_end - now) + later_s, run.deadline - now), ttft_p99_ms=p99_ms,
        tokens_per_s=tokens_per_s, rate_limited=since_start.rate_limited, dropped=since_start.dropped,
        phase="measure" if run.at_warm is not None or now >= run.warm_end else "warmup", latency=latency,
    )


def progress_loop(run: ShapeRun, every_s: float, now: Callable[[], float],
                  stats: Callable[[], StatsSnapshot]) -> None:
    """The progress greenlet: one line every `every_s` until the run finishes (also while a ramp holds the
    tick); `now` is the shape's perf_counter clock, `stats` its snapshot of Locust's stats."""
    last_s, last = now(), stats()
    while not run.finished:
        gevent.sleep(every_s)
        if run.finished or run.index < 0:
            return
        now_s, current = now(), stats()
        tokens = diff(last, current).output_tokens / max(now_s - last_s, 1e-9)
        last_s, last = now_s, current
        logger.info("%s", format_line(progress_of(run, now_s, current, tokens)))


def spawn_rate_for(schedule: ScheduleSettings, cli_rate_given: bool, users_before: int, users: int,
                   workers: int) -> float:
    """Users/s for a tier change: Locust's --spawn-rate when given on the command line, else the whole change in
    about one second (at most 100 users/s per worker). The web UI's form always sends its ramp field (1 by
    default; Locust greys it out under a shape): a shape's tiers ramp at once unless -r was asked for."""
    given = schedule.spawn_rate if cli_rate_given else None
    if given:
        return float(given)
    return min(max(1.0, float(abs(users - users_before))), MAX_AUTO_SPAWN_PER_WORKER * workers)
