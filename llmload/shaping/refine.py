"""`--refine` in the run: after the planned sweep, the tiers the rule book asks for (llmload.rules.refine).

How it works: step and rate shapes (`PlanShape.refinable`) read `--refine` (auto: on when
`--slo-profile` is set), `--refine-max-tiers` and `--hold-at-capacity` when the run starts
(settings.py: a bad value is a flag error like any other). When the planned sweep ends (its
last tier, or `--stop-at-knee`'s rule), `add_tier` judges the tiers so far with the live verdicts
(run/watch/verdicts.py: the report's rule book on the same tiers, so the web UI's capacity is the one being
narrowed) and appends the tier `rules.refine.next_step` names to the plan, as long as the planned
tiers (their warm-up too), until the bracket is measured, `--refine-max-tiers` tiers were added or
`-t/--run-time` leaves no room for a whole tier; then, with `--hold-at-capacity`, one tier that long
at the capacity found. Each added tier is a normal tier (tiers.csv `refined` = 1, the timeline, the
web UI, the progress line); run.json's shape lists them under `refined` with why each was added.
A tier added below the one just ended first lets that tier's queue drain (`drain_seconds`: closed loop
a longer warm-up, open loop a pause without arrivals, `start` and `pause_tick`).
`--stop-at-knee` judges only the planned sweep: an added tier is below its highest load.
"""

from __future__ import annotations

import logging
from typing import Any

from llmload.openloop import user as openloop_user
from llmload.rules import refine
from llmload.rules.text import load_with_unit
from llmload.run.watch.verdicts import live_verdicts
from llmload.shaping.plans import PlannedTier
from llmload.shaping.settings import RefineSettings

logger = logging.getLogger("llmload.shape")
DRAIN_FACTOR = 2.0
"""a tier after a heavier one starts measuring this many of the heavier tier's mean response times later"""


def _unit(open_loop: bool) -> str:
    return "req/s" if open_loop else "users"


def _load(planned: PlannedTier) -> float:
    return float(planned.target_rps if planned.target_rps is not None else planned.target_users or 0)


def _tier(step: refine.Step, template: PlannedTier, seconds: float, open_loop: bool, drain_s: float) -> PlannedTier:
    """The tier to add: closed loop, its warm-up lasts at least `drain_s` (the measure window stays as long as
    the planned ones'); open loop, the pause before it drains the queue (`start`)."""
    warmup = min(template.warmup_s, seconds / 2)
    if open_loop:
        return PlannedTier(seconds=seconds, target_rps=step.load, warmup_s=warmup)
    longer = max(warmup, drain_s)
    return PlannedTier(seconds=seconds - warmup + longer, target_users=int(step.load), warmup_s=longer)


def drain_seconds(verdicts: Any, tier_no: int, load: float, most_s: float) -> float:
    """How long the queue the tier just ended leaves behind takes to clear before a lighter tier at `load`:
    DRAIN_FACTOR of its mean response time (a FIFO queue serves what is in it within about one response time;
    two for margin), at most `most_s`; 0 when the ended tier was not heavier (nothing queued that this tier
    would not queue too)."""
    ended = next((t for t in verdicts.tiers if t.tier == tier_no and t.sent > 0), None)
    if ended is None or ended.target <= load or ended.e2e_mean_ms != ended.e2e_mean_ms:
        return 0.0
    return min(DRAIN_FACTOR * ended.e2e_mean_ms / 1000.0, most_s)


def _choose(run: Any, verdicts: Any, open_loop: bool) -> refine.Step | None:
    settings: RefineSettings = run.refine
    unit = _unit(open_loop)
    added = [s for s in run.refined if s.kind not in ("hold", "confirm")]
    if len(added) < settings.max_tiers:
        tested = [_load(p) for p in run.plan[:run.index + 1]] + [t.load for t in verdicts.tiers if t.sent > 0]
        again = [s.load for s in run.refined if s.kind == "samples"]
        step = refine.next_step(verdicts, unit, tested, again)
        if step is not None:
            return step
    if settings.hold_s > 0 and not any(s.kind == "hold" for s in run.refined):
        return refine.hold_step(verdicts, unit)
    return None


def add_tier(shape: Any, run: Any, now: float) -> bool:
    """After the planned sweep (or a tier added after it): append the next refinement tier to `run.plan`
    (True), or nothing when refinement is off, done or out of room (False)."""
    settings: RefineSettings | None = run.refine
    if run.index < run.planned:  # the sweep's end (--stop-at-knee may end it early: its later tiers never run)
        del run.plan[run.index + 1:]
        run.planned = run.index + 1
    if settings is None or not settings.on or shape.runner is None:
        return False
    verdicts = live_verdicts(shape.runner.environment)
    step = _choose(run, verdicts, shape.open_loop)
    if step is None:
        return False
    template = run.plan[run.planned - 1]
    seconds = settings.hold_s if step.kind == "hold" else template.seconds * (2 if step.kind == "samples" else 1)
    drain = drain_seconds(verdicts, run.index + 1, step.load, template.seconds)
    added = _tier(step, template, seconds, shape.open_loop, drain)
    run.pause_s = drain if shape.open_loop else 0.0
    if now + run.pause_s + added.seconds > run.deadline:
        logger.info("refine: -t/--run-time leaves less than a %gs tier: not adding one at %s", seconds,
                    load_with_unit(step.load, _unit(shape.open_loop)))
        return False
    run.plan.append(added)
    run.refined.append(step)
    run.info.setdefault("refined", []).append(
        {"tier": len(run.plan), "load": step.load, "kind": step.kind, "why": step.why})
    logger.info("refine: tier %d at %s (%s)", len(run.plan), load_with_unit(step.load, _unit(shape.open_loop)),
                step.why)
    return True


def done_text(run: Any) -> str:
    """What refinement added, for the shape's end reason: '' or '; then 2 tiers added by --refine'."""
    n = sum(s.kind != "confirm" for s in run.refined)
    return f"; then {n} tier{'s' if n != 1 else ''} added by --refine" if n else ""


def start(shape: Any, run: Any, now: float) -> tuple[int, float] | None:
    """Begin the tier `add_tier` appended; open loop, first pause arrivals for `run.pause_s` (an open loop near
    its capacity never drains the queue a heavier tier left, so the tier would measure that backlog)."""
    if run.pause_s <= 0:
        return shape._begin(run, run.index + 1, now)
    run.pause_end = now + run.pause_s
    openloop_user.publish_stop(shape.runner)
    logger.info("refine: no arrivals for %.1f s, so the queue the last tier left drains", run.pause_s)
    return run.last_tick


def pause_tick(shape: Any, run: Any, now: float) -> tuple[int, float] | None:
    """A tick during the pause: wait, then begin the tier, or what `run.then` does (the confirmation's judgement)
    (or end the run at -t)."""
    if now >= run.deadline:
        run.pause_end = None
        shape._finish(run, f"-t/--run-time {run.run_time_s:g}s reached")
        return None
    if now < run.pause_end:
        return run.last_tick
    run.pause_end, then = None, run.then
    run.then = None
    return then(now) if then is not None else shape._begin(run, run.index + 1, now)
