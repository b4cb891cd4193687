"""`PlanShape`: the machinery every llmload load shape shares (concrete presets: shapes.py).

How it works: a shape builds a plan (a list of `PlannedTier`) from the flags when a run starts,
then Locust calls `tick()` on the master or local runner about once a second:
  * When Locust attaches the runner (before `init`, before anything starts) the flags are
    checked once: a bad flag is one log line and, headless, exit code 2 (a local run exits
    right there; a master, whose --processes children are already forked, ends the run at its
    first tick so the workers are told to quit). In the web UI the form is checked at start.
  * First tick of a run: build the plan, open `reports/<run>/tiers.csv`, begin tier 1.
  * Each tier lasts its planned seconds from the tick that began it. A distributed master does
    not call `tick()` while a ramp is in progress, so a late tick ends the tier late and the
    next one starts then: no tier is skipped or shortened. When a boundary (warm-up end or tier
    end) falls before the next tick, `tick()` sleeps until it, so boundaries are ~ms exact.
  * Beginning a tier: `Timeline.begin_tier` (the run state's), a tiers.csv row, a stats
    snapshot, a progress line. Its warm-up is `--warmup-seconds` or the ramp time (user change /
    spawn rate), whichever is longer, so rows sent while users are still spawning never count.
  * Ending a tier: end_s in tiers.csv, a warning under `--min-tier-requests` measured requests, and
    with `--stop-at-knee` the rule book's stop rule (llmload.rules.stop) on the report's verdicts of
    the tiers so far (run/watch/verdicts.py); then the next tier, or `None` (Locust stops the run).
  * A progress greenlet logs one line every 5 s, also while `tick()` is blocked by a ramp (state.py).
  * The run ends (tiers.csv row closed, `Timeline.end_run`: later rows are phase "after") when the
    plan is done, the stop rule fires, `-t/--run-time` has passed since the first tick (Locust 2.47
    arms -t only after a shape returns None), or the test stops (web UI stop, SIGTERM, a fatal error).
  * SIGTERM, headless: the shape's own handler ends it (shaping/sigterm.py); Locust's quit follows.
  * When the plan is done, `--refine` appends the tiers the rule book asks for (shaping/refine.py), then
    `--confirm` the windows that prove the plan (shaping/confirm.py: open loop, so `_begin` publishes a rate).
Ramp speed: Locust's `--spawn-rate` when given (`use_common_options`; `-u` is ignored); else ~1 s per change.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import gevent
from locust import LoadTestShape
from locust.runners import LocalRunner, WorkerRunner

from llmload.openloop import user as openloop_user
from llmload.rules.stop import stop_reason
from llmload.run.distributed import workers
from llmload.run.export import files
from llmload.run.options.settings import RunSettings, settings_of
from llmload.run.state import run_state
from llmload.run.watch.verdicts import live_tiers, live_verdicts
from llmload.shaping import confirm, refine, samples, sigterm
from llmload.shaping.checks import check_flags
from llmload.shaping.plans import PlannedTier
from llmload.shaping.progress import PROGRESS_EVERY_S, done_line, format_line
from llmload.shaping.settings import ConfirmSettings, RefineSettings, ScheduleSettings, ShapeOptionError
from llmload.shaping.state import ShapeRun, progress_loop, progress_of, shape_info, spawn_rate_for
from llmload.shaping.tiers_csv import TiersCsv
from llmload.sink.timeline import Tier, Timeline
from llmload.sink.window import StatsSnapshot, diff, snapshot

logger = logging.getLogger("llmload.shape")
TICK_S = 1.0
"""Locust calls tick() about this often"""


class PlanShape(LoadTestShape):
    abstract = True
    use_common_options = True
    open_loop = False
    """True: tiers are request rates sent by OpenLoopUser, users = one per worker"""
    kind = "step"
    """step | rate | spike | soak | schedule: written to run.json so the report asks the right questions"""
    refinable = False
    """True: --refine may add tiers after the plan (shaping/refine.py); step and rate kinds confirm it too"""
    progress_every_s: float | None = PROGRESS_EVERY_S

    _runner_ref: Any = None
    _cli_spawn_rate: float | None = None
    _run: ShapeRun | None = None
    _hooked_events: Any = None
    _reported_error: str | None = None
    _sigterm_hooked: bool = False
    _own_timeline: Timeline | None = None

    def build_plan(self, schedule: ScheduleSettings) -> list[PlannedTier]:
        raise NotImplementedError

    def _now(self) -> float:  # the clocks: replaced in unit tests
        return time.perf_counter()

    def _wall(self) -> float:
        return time.time()

    def _sleep(self, seconds: float) -> None:
        gevent.sleep(seconds)

    @property
    def runner(self) -> Any:
        return self._runner_ref

    @runner.setter
    def runner(self, runner: Any) -> None:
        """Locust attaches the runner (every process): hook what must exist before the run."""
        self._runner_ref = runner
        if runner is None:
            return
        if self.open_loop or self.refinable:  # a step shape's confirmation runs open loop (shaping/confirm.py)
            openloop_user.install(runner)
        if isinstance(runner, WorkerRunner):
            return
        environment = runner.environment
        self._cli_spawn_rate = settings_of(environment).spawn_rate
        if self._hooked_events is not environment.events:
            self._hooked_events = environment.events
            # test_stopping: close the tier when the load stops, before in-flight requests drain
            environment.events.test_stopping.add_listener(self._on_test_stop)
            environment.events.test_stop.add_listener(self._on_test_stop)
        if environment.parsed_options is not None:
            self._check_flags_early(runner, environment.parsed_options)

    def _check_flags_early(self, runner: Any, parsed: Any) -> None:
        """Validate the flags before anything starts (see the module docstring)."""
        try:
            check_flags(self, parsed)
        except ShapeOptionError as e:
            self._report_bad_flags(e)
            if settings_of(runner.environment).headless and isinstance(runner, LocalRunner):
                raise SystemExit(2) from None

    def _report_bad_flags(self, error: Exception) -> None:  # one log line per distinct error; headless, exit 2
        if str(error) != self._reported_error:
            self._reported_error = str(error)
            logger.error("load shape: %s", error)
        if self.runner is not None and settings_of(self.runner.environment).headless:
            self.runner.environment.process_exit_code = 2

    def tick(self) -> tuple[int, float] | None:
        now = self._now()
        run = self._run
        if run is not None and not run.finished and run.pause_end is not None:
            return refine.pause_tick(self, run, now)  # --refine's drain between tiers
        if run is None or run.finished:
            try:
                run = self._start_run(now)
            except (ShapeOptionError, files.RunDirError) as e:
                self._report_bad_flags(e)
                return None
            return self._begin(run, 0, now)
        self._mark_warm(run, now)
        next_boundary = min(run.tier_end if run.at_warm is not None else run.warm_end, run.deadline)
        if 0 < next_boundary - now <= TICK_S:
            self._sleep(next_boundary - now)
            now = self._now()
            self._mark_warm(run, now)
        if now >= run.deadline:
            self._end_tier(run, now)  # logs the partial tier; the knee rule is not applied to it
            self._finish(run, f"-t/--run-time {run.run_time_s:g}s reached")
            return None
        if now < run.tier_end:
            return run.last_tick
        reason = self._end_tier(run, now)
        if confirm.is_window(run):  # settle, judge, then another window or the end (shaping/confirm.py)
            return confirm.window_ended(self, run, now)
        if reason or run.index + 1 >= len(run.plan):
            run.info.setdefault("sweep_end", reason or "last tier done")
            if refine.add_tier(self, run, now):  # --refine: a tier the rule book asks for (shaping/refine.py)
                return refine.start(self, run, now)
            samples.warn_if_answer_unshown(self)
            if confirm.add_window(self, run, now):  # --confirm: the planned rate, open loop
                return confirm.start(self, run, now)
            self._finish(run, run.info["sweep_end"] + refine.done_text(run))
            return None
        return self._begin(run, run.index + 1, now)

    # --- tiers ------------------------------------------------------------------------------
    def _mark_warm(self, run: ShapeRun, now: float) -> None:
        if run.at_warm is None and now >= run.warm_end:
            run.at_warm = self._snapshot()
            if run.record is not None:
                run.record.at_warm, run.record.warm_s = run.at_warm, run.unix_offset_s + now

    def timeline(self) -> Timeline:
        """The run's tier timeline (the run state's; the shape's own one without a runner)."""
        if self.runner is not None:
            return run_state(self.runner.environment).timeline
        if self._own_timeline is None:
            self._own_timeline = Timeline()
        return self._own_timeline

    def _claim_run_dir(self) -> Path:
        """The run folder (files.claim_run_dir: the shape's first tick comes before Locust's
        test_start, where the sample sink asks for the same folder)."""
        if self.runner is None:
            return files.default_run_dir()
        return files.claim_run_dir(self.runner.environment)

    def _start_run(self, now: float) -> ShapeRun:
        environment = self.runner.environment if self.runner else None
        parsed = environment.parsed_options if environment else None
        schedule = ScheduleSettings.from_options(parsed)  # the shape flags, read once (settings.py)
        plan = self.build_plan(schedule)
        settings = settings_of(environment) if environment else RunSettings()
        refining = RefineSettings.from_options(parsed, self.refinable)
        self.timeline().reset()
        path = self._claim_run_dir() / "tiers.csv"
        writer = TiersCsv(path, workers.applied_load(self.runner))  # + the load really applied
        run = ShapeRun(plan=plan, schedule=schedule, writer=writer, unix_offset_s=self._wall() - self._now(),
                       planned=len(plan), refine=refining,
                       confirming=confirm.Confirming(ConfirmSettings.from_options(parsed, confirm.confirms(self))))
        if settings.run_time_s:
            run.run_time_s, run.deadline = settings.run_time_s, now + settings.run_time_s
        run.first = self._snapshot()
        run.info = shape_info(self, run)
        if environment is not None:
            run_state(environment).shape_info = run.info  # run.json's shape, the end reason (run/state.py)
        self._run = run
        total_s = sum(t.seconds for t in plan)
        logger.info("load shape %s: %d tiers, %.0f s planned; tiers in %s", type(self).__name__,
                    len(plan), total_s, path)
        if schedule.knee_factor_given:
            logger.warning("load shape: --knee-factor is ignored: --stop-at-knee stops on the report's knees")
        if self.progress_every_s:
            run.progress = gevent.spawn(progress_loop, run, self.progress_every_s, self._now, self._snapshot)
        if settings.headless:
            sigterm.hook(self)
        return run

    def end(self, reason: str) -> None:
        """End the run now (SIGTERM: shaping/sigterm.py)."""
        if self._run is not None and not self._run.finished:
            self._finish(self._run, reason)

    def _begin(self, run: ShapeRun, index: int, now: float) -> tuple[int, float]:
        planned = run.plan[index]
        tier_no = index + 1
        if planned.target_rps is not None:  # an open-loop tier, or a confirmation window
            users = openloop_user.publish(self.runner, tier_no, float(planned.target_rps), run.schedule.arrivals,
                                          run.trace)
            spawn_rate, ramp_s = max(1.0, 10.0 * users), 0.0
        else:
            assert planned.target_users is not None, "a closed-loop shape plans user counts"
            users = int(planned.target_users)
            workers = max(1, getattr(self.runner, "worker_count", 1) or 1)
            spawn_rate = spawn_rate_for(run.schedule, self._cli_spawn_rate is not None, run.users, users, workers)
            ramp_s = abs(users - run.users) / spawn_rate
        warmup_s = min(max(planned.warmup_s, ramp_s), planned.seconds)
        refined = run.refined[index - run.planned].kind if index >= run.planned else ""
        tier = Tier(tier=tier_no, start_s=run.unix_offset_s + now, warmup_s=round(warmup_s, 3),
                    target_users=planned.target_users, target_rps=planned.target_rps, refined=refined)
        run.writer.begin(tier)
        run.index, run.users = index, users
        run.tier_start, run.tier_end, run.warm_end = now, now + planned.seconds, now + warmup_s
        run.at_start = self._snapshot()
        run.at_warm = run.at_start if warmup_s <= 0 else None
        run.record = self.timeline().begin_tier(tier, run.at_start)
        if run.at_warm is not None:
            run.record.at_warm, run.record.warm_s = run.at_warm, tier.start_s
        run.last_tick = (users, spawn_rate)
        logger.info("%s", format_line(progress_of(run, now, self._snapshot(), None)))
        return run.last_tick

    def _end_tier(self, run: ShapeRun, now: float) -> str | None:
        at_end = self._snapshot()
        if run.record is not None:
            run.record.at_end, run.record.end_s = at_end, run.unix_offset_s + now
        whole = diff(run.at_start, at_end)
        measured = diff(run.at_warm or at_end, at_end)
        tier_no = run.index + 1
        run.writer.end(run.unix_offset_s + now, whole.dropped if run.plan[run.index].target_rps is not None else None)
        live = None if self.runner is None or run.record is None else live_tiers(self.runner.environment, None,
                                                                                [run.record])[0]
        logger.info("%s", done_line(tier_no, live, whole.dropped))
        samples.tier_ended(tier_no, live.sent if live is not None else measured.requests,
                           run.schedule.min_tier_requests)
        if not run.schedule.stop_at_knee or self.runner is None or run.index >= run.planned:
            return None  # --refine's tiers lie below the sweep's highest load: never a reason to stop
        verdicts = live_verdicts(self.runner.environment)
        last = next((t for t in verdicts.tiers if t.tier == tier_no), None)
        return stop_reason(last, verdicts, run.schedule.max_error_rate) if last is not None else None

    def _finish(self, run: ShapeRun, reason: str) -> None:
        if run.finished:
            return
        run.finished = True
        run.info["stopped"] = reason
        end_s = run.unix_offset_s + self._now()
        if run.record is not None and run.record.at_end is None:
            run.record.at_end, run.record.end_s = self._snapshot(), end_s
        run.writer.end(end_s)
        self.timeline().end_run(end_s)
        if self.runner is not None and (self.open_loop or confirm.planned(run)):  # (a hold too: shaping/confirm.py)
            openloop_user.publish_stop(self.runner)
        logger.info("load shape finished: %s", reason)
        if run.progress is not None and run.progress is not gevent.getcurrent():
            run.progress.kill(block=False)

    def _on_test_stop(self, **_kwargs: Any) -> None:
        if self._run is not None and not self._run.finished:
            self._finish(self._run, "test stopped")

    def _snapshot(self) -> StatsSnapshot:  # the live figures: Locust's stats now
        return snapshot(self.runner.environment.stats) if self.runner is not None else StatsSnapshot()
