"""`--refine` in the run: after the planned sweep, the tiers the rule book asks for (llmload.rules.refine).

How it works: step and rate shapes (`PlanShape.refinable`) read `--refine` (auto: on when
`--slo-profile` is set), `--refine-max-tiers` and `--hold-at-capacity` when the run starts
(`refine_settings`: a bad value is a flag error like any other). When the planned sweep ends (its
last tier, or `--stop-at-knee`'s rule), `add_tier` judges the tiers so far with the live verdicts
(run/verdicts.py: the report's rule book on the same tiers, so the web UI's capacity is the one being
narrowed) and appends the tier `rules.refine.next_step` names to the plan, as long as the planned
tiers (their warm-up too), until the bracket is measured, `--refine-max-tiers` tiers were added or
`-t/--run-time` leaves no room for a whole tier; then, with `--hold-at-capacity`, one tier that long
at the capacity found. Each added tier is a normal tier (tiers.csv `refined` = 1, the timeline, the
web UI, the progress line); run.json's shape lists them under `refined` with why each was added.
`--stop-at-knee` judges only the planned sweep: an added tier is below its highest load.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from llmload.rules import refine
from llmload.rules.text import load_with_unit
from llmload.run.verdicts import live_verdicts
from llmload.shaping.flags import REFINE_CHOICES, ShapeOptionError
from llmload.shaping.plans import PlannedTier

logger = logging.getLogger("llmload.shape")


@dataclass(frozen=True)
class RefineSettings:
    on: bool = False
    max_tiers: int = refine.DEFAULT_MAX_TIERS
    hold_s: float = 0.0

    def info(self) -> dict[str, Any]:
        """run.json's shape `refine`."""
        return {"on": self.on, "max_tiers": self.max_tiers, "hold_at_capacity_s": self.hold_s}


def refine_settings(options: Any, slo_profile: str, refinable: bool) -> RefineSettings:
    """The refinement flags of a run (module docstring); ShapeOptionError names the flag to fix."""
    mode = str(getattr(options, "refine", None) or "auto").strip().lower()
    if mode not in REFINE_CHOICES:
        raise ShapeOptionError(f"--refine must be one of {', '.join(REFINE_CHOICES)}, got {mode!r}")
    try:
        max_tiers = int(getattr(options, "refine_max_tiers", refine.DEFAULT_MAX_TIERS))
        hold_s = float(getattr(options, "hold_at_capacity", 0.0) or 0.0)
    except (TypeError, ValueError):
        raise ShapeOptionError("--refine-max-tiers must be a whole number >= 0 and --hold-at-capacity a "
                               "duration >= 0 (90, 2m)") from None
    if max_tiers < 0:
        raise ShapeOptionError(f"--refine-max-tiers must be >= 0, got {max_tiers}")
    if hold_s < 0:
        raise ShapeOptionError(f"--hold-at-capacity must be >= 0 seconds, got {hold_s:g}")
    on = refinable and (mode == "on" or (mode == "auto" and bool(slo_profile)))
    if mode == "on" and not refinable:
        logger.warning("load shape: --refine applies to step and rate tiers only: ignored")
    return RefineSettings(on, max_tiers, hold_s)


def _unit(open_loop: bool) -> str:
    return "req/s" if open_loop else "users"


def _load(planned: PlannedTier) -> float:
    return float(planned.target_rps if planned.target_rps is not None else planned.target_users or 0)


def _tier(step: refine.Step, template: PlannedTier, seconds: float, open_loop: bool) -> PlannedTier:
    warmup = min(template.warmup_s, seconds / 2)
    if open_loop:
        return PlannedTier(seconds=seconds, target_rps=step.load, warmup_s=warmup)
    return PlannedTier(seconds=seconds, target_users=int(step.load), warmup_s=warmup)


def _choose(environment: Any, run: Any, open_loop: bool) -> refine.Step | None:
    settings: RefineSettings = run.refine
    verdicts = live_verdicts(environment)
    unit = _unit(open_loop)
    added = [s for s in run.refined if s.kind != "hold"]
    if len(added) < settings.max_tiers:
        tested = [_load(p) for p in run.plan[:run.index + 1]] + [t.load for t in verdicts.tiers if t.sent > 0]
        step = refine.next_step(verdicts, unit, tested)
        if step is not None:
            return step
    if settings.hold_s > 0 and not any(s.kind == "hold" for s in run.refined):
        return refine.hold_step(verdicts, unit)
    return None


def add_tier(shape: Any, run: Any, now: float) -> bool:
    """After the planned sweep (or a tier added after it): append the next refinement tier to `run.plan`
    (True), or nothing when refinement is off, done or out of room (False)."""
    settings: RefineSettings | None = run.refine
    if settings is None or not settings.on or shape.runner is None:
        return False
    if run.index < run.planned:  # the sweep's end (--stop-at-knee may end it early: its later tiers never run)
        del run.plan[run.index + 1:]
        run.planned = run.index + 1
    step = _choose(shape.runner.environment, run, shape.open_loop)
    if step is None:
        return False
    template = run.plan[run.planned - 1]
    seconds = settings.hold_s if step.kind == "hold" else template.seconds
    if now + seconds > run.deadline:
        logger.info("refine: -t/--run-time leaves less than a %gs tier: not adding one at %s", seconds,
                    load_with_unit(step.load, _unit(shape.open_loop)))
        return False
    run.plan.append(_tier(step, template, seconds, shape.open_loop))
    run.refined.append(step)
    run.info.setdefault("refined", []).append(
        {"tier": len(run.plan), "load": step.load, "kind": step.kind, "why": step.why})
    logger.info("refine: tier %d at %s (%s)", len(run.plan), load_with_unit(step.load, _unit(shape.open_loop)),
                step.why)
    return True


def done_text(run: Any) -> str:
    """What refinement added, for the shape's end reason: '' or '; then 2 tiers added by --refine'."""
    n = len(run.refined)
    return f"; then {n} tier{'s' if n != 1 else ''} added by --refine" if n else ""
