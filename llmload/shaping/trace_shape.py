"""`TraceShape` (re-exported by shapes.py): replay a request trace once per speed, each speed a rate tier.

How it works: the plan (trace_plan.py) has one open-loop tier per `--trace-speeds` speed, its target_rps
the trace's mean offered rate at that speed. `PlanShape` publishes each tier's rate to every process
(openloop/user.py), which turns it back into a speed and replays its share of the records at their times
(openloop/replay.py). Before the first tier the users get START_S to start (a pause: no tier, no arrivals);
before every tier after the first, `--trace-drain-s` seconds pass without arrivals
(the pause --refine uses: shaping/refine.py `pause_tick`), so a replay never starts on the queue the last
one left; a tier --refine adds after its own drain pause gets no second one. run.json's shape has `trace`.
"""

from __future__ import annotations

import logging

from locust.runners import MasterRunner

from llmload.openloop import user as openloop_user
from llmload.run.locust_compat import connected_workers
from llmload.shaping.base import PlanShape
from llmload.shaping.plans import PlannedTier
from llmload.shaping.settings import ScheduleSettings
from llmload.shaping.state import ShapeRun
from llmload.shaping.trace_plan import trace_info, trace_plan

logger = logging.getLogger("llmload.shape")
START_S = 1.0
"""seconds the users get to start (and size prompts: --tokenizer, or one probe request) before the first replay,
so the trace's first records are not late by the users' own start"""


class TraceShape(PlanShape):
    """Trace replay: --trace PATH sent at its records' times, once per --trace-speeds speed (default
    --trace-speed 1); --trace-window, --trace-max-gap-s, --trace-drain-s. Pair it with an OpenLoopUser."""

    abstract = True
    kind = "trace"
    open_loop = True
    refinable = True
    _drained_before = -1

    def build_plan(self, schedule: ScheduleSettings) -> list[PlannedTier]:
        self._drained_before = -1
        return trace_plan(schedule.trace)

    def _start_run(self, now: float) -> ShapeRun:
        run = super()._start_run(now)
        run.trace = run.schedule.trace  # the tiers' targets carry the trace (openloop/replay.py target_fields)
        run.info["trace"] = trace_info(run.trace)
        return run

    def _begin(self, run: ShapeRun, index: int, now: float) -> tuple[int, float]:
        if index == 0 and self._drained_before < 0:
            self._drained_before = 0
            processes = len(connected_workers(self.runner)) if isinstance(self.runner, MasterRunner) else 1
            run.pause_end, run.last_tick = now + START_S, (processes, max(1.0, 10.0 * processes))
            logger.info("trace: %.1f s for the users to start before the first replay", START_S)
            return run.last_tick
        drain_s = float(run.schedule.trace.drain_s)
        refine_paused = index >= run.planned and run.pause_s >= drain_s
        if index > 0 and drain_s > 0 and self._drained_before != index and not refine_paused:
            self._drained_before = index
            run.pause_end = now + drain_s
            openloop_user.publish_stop(self.runner)
            logger.info("trace: no arrivals for %.1f s before tier %d, so the last replay's queue drains",
                        drain_s, index + 1)
            assert run.last_tick is not None
            return run.last_tick
        return super()._begin(run, index, now)
