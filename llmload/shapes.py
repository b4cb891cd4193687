"""The load shapes a scenario can use: step tiers, open-loop rate tiers, spike, soak, schedule, trace replay.

Every class here is abstract (`abstract = True`): Locust loads every concrete shape it finds
in a locustfile and silently keeps the first, so a scenario declares exactly one, e.g.

    from locust import events

    import llmload.scenario
    from llmload.shapes import StepShape

    llmload.scenario.install(events)     # registers the shape flags too

    class Tiers(StepShape):
        pass

Three are ready to use, concrete on purpose: `StepTiers`, `RateTiers`, `TraceTiers`. Importing one into a
locustfile (`from llmload import ChatUser, StepTiers`) makes it the run's shape, so a locustfile imports at
most one of them, and subclasses the abstract ones for anything else.

All of them run the same machinery (shaping/base.py `PlanShape`: tiers.csv, the tier timeline,
warm-up, progress lines, the --stop-at-knee rule); they only differ in the plan they build from
the flags (shaping/plans.py). They work alike in a local run, with --processes and with
--master + workers: the shape runs on the master (or the local process).
"""

from __future__ import annotations

from typing import Any

from llmload.shaping.base import PlanShape
from llmload.shaping.plans import (
    PlannedTier,
    rate_plan,
    schedule_plan,
    soak_plan,
    spike_plan,
    step_plan,
)
from llmload.shaping.trace_shape import TraceShape


class StepShape(PlanShape):
    """Closed loop, concurrency tiers: --tiers 1,2,4,8 (or --start/--step/--max-users), each
    held --tier-seconds; finds the knee, optionally stopping once it is passed (--stop-at-knee);
    with an SLO profile (or --refine) adds tiers until the capacity and the onset are measured."""

    abstract = True
    kind = "step"
    refinable = True

    def build_plan(self, options: Any) -> list[PlannedTier]:
        return step_plan(options)


class OpenLoopShape(PlanShape):
    """Open loop, arrival-rate tiers: --rate-tiers 1,2,4,8 requests/s over all workers,
    --arrival poisson|constant|gamma:cv=X, --max-inflight per worker. Pair it with a user class that mixes
    in `llmload.openloop.user.OpenLoopUser`; the shape runs one such user per worker. --refine
    narrows the capacity's rate bracket to 5 %."""

    abstract = True
    kind = "rate"
    open_loop = True
    refinable = True

    def build_plan(self, options: Any) -> list[PlannedTier]:
        return rate_plan(options)


class SpikeShape(PlanShape):
    """--base-users for --base-seconds, a burst to --spike-users for --spike-seconds (spawned as
    fast as --spawn-rate allows), then base again: does the server recover, and how fast?
    Each phase starts with a warm-up: --warmup-seconds, for the burst at most half of it."""

    abstract = True
    kind = "spike"

    def build_plan(self, options: Any) -> list[PlannedTier]:
        return spike_plan(options)


class SoakShape(PlanShape):
    """--soak-users held for --soak-seconds, reported as --tier-seconds windows so drift over
    time (leaks, throttling, cache churn) shows window by window. Only the first window has a
    warm-up: the load never changes after it, so later windows are one continuous measurement."""

    abstract = True
    kind = "soak"

    def build_plan(self, options: Any) -> list[PlannedTier]:
        return soak_plan(options)


class ScheduleShape(PlanShape):
    """A time-of-day pattern as a tier list with times: --schedule 0=2,30m=8,2h=4,3h=end
    (offsets or clock times like 09:00), compressed by --schedule-scale."""

    abstract = True
    kind = "schedule"

    def build_plan(self, options: Any) -> list[PlannedTier]:
        return schedule_plan(options)


class StepTiers(StepShape):
    """StepShape, ready to use: --tiers (default 1,2,4,8,16,32), each held --tier-seconds after --warmup-seconds."""


class RateTiers(OpenLoopShape):
    """OpenLoopShape, ready to use: --rate-tiers requests/s (with a user that mixes in OpenLoopUser)."""


class TraceTiers(TraceShape):
    """TraceShape, ready to use: one replay of --trace per speed (with a user that mixes in OpenLoopUser)."""


__all__ = ["OpenLoopShape", "PlannedTier", "ScheduleShape", "SoakShape", "SpikeShape", "StepShape", "TraceShape"]
