"""A load shape's options, typed: `ScheduleSettings` (the load it plans), `RefineSettings`, `ConfirmSettings`.

How it works: the shape flags (flags.py, registered with these defaults) stay in Locust's parsed options, where the
web UI form edits them; a shape reads them by name here only (each class's `from_options(parsed)`), once per run
when it starts (base.py `_start_run`) and when its flags are checked (checks.py), then passes the typed views on.
The namespace may be None or lack the flags (a plain Locust run, a test): a missing flag is its default.
  * `ScheduleSettings`: the plan's flags (tiers, rates, spike, soak, schedule, and the arrivals and the trace:
    openloop/settings.py), kept as parsed: the web UI form sends text for a flag whose default is None, and each
    plan checks and converts the flags it uses (plans.py, trace_plan.py), so a flag the shape does not read never
    stops a run. Only `--warmup-seconds` is resolved here (a bad one stops any shape): given, or SHAPE_WARMUP_S.
  * `RefineSettings` and `ConfirmSettings`: checked and converted (ShapeOptionError names the flag to fix); whether
    they run depends on the shape too (refine.py, confirm.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from llmload.openloop.settings import ArrivalSettings, TraceSettings
from llmload.rules import bounds
from llmload.rules.confirm import DEFAULT_MAX_SECONDS, DEFAULT_STEPS
from llmload.rules.refine import DEFAULT_MAX_TIERS
from llmload.sink.warmup import warmup_seconds

logger = logging.getLogger("llmload.shape")
REFINE_CHOICES = ("auto", "on", "off")
CONFIRM_CHOICES = ("auto", "on", "off")
SHAPE_WARMUP_S = 10.0
"""a load shape's warm-up per tier when --warmup-seconds is not given"""
NOT_STARTED = "the run ended before its tiers did"


class ShapeOptionError(ValueError):
    """A shape flag has a value we cannot use; the message says what to fix."""


@dataclass(frozen=True)
class ScheduleSettings:
    tiers: str | None = None
    """--tiers: users per tier as text, 1,2,4 (None: --start/--step/--max-users, else 1,2,4,8,16,32)"""
    start_users: int | str | None = None
    """--start-users: the first tier's users (None: --tiers; text from the web UI form, '' : not given)"""
    step_users: int | str | None = None
    """--step-users: users added per tier (as --start-users)"""
    max_users: int | str | None = None
    """--max-users: the last tier's users, inclusive (as --start-users)"""
    tier_seconds: float = 60.0
    """--tier-seconds: how long each tier is held (a soak's window, a schedule's last tier without `end`)"""
    warmup_seconds: float = SHAPE_WARMUP_S
    """--warmup-seconds resolved: the first seconds of each tier flagged phase=warmup (the ramp is added)"""
    warmup_given: bool = False
    """--warmup-seconds was given (plans.py shortens only the default warm-up of a short tier)"""
    stop_at_knee: bool = False
    """--stop-at-knee: stop once the report's verdicts see the knee passed"""
    knee_factor_given: bool = False
    """--knee-factor was given (ignored, kept so older command lines run: a warning says so)"""
    max_error_rate: float = 0.05
    """--max-error-rate: failed/all LLM requests of a tier that stop --stop-at-knee, 0..1"""
    min_tier_requests: int = bounds.min_samples(0.95)
    """--min-tier-requests: a tier that measured fewer gets a note (59: what bounds a p95; shaping/samples.py)"""
    rate_tiers: str = "1,2,4,8"
    """--rate-tiers: open loop, requests/s per tier over all workers, as text"""
    arrivals: ArrivalSettings = field(default_factory=ArrivalSettings)
    """--arrival, --arrival-seed, --max-inflight, --late-ms (openloop/settings.py)"""
    base_users: int = 1
    """--base-users: spike, users before and after the burst"""
    base_seconds: float = 30.0
    """--base-seconds: spike, seconds before and after the burst"""
    spike_users: int = 32
    """--spike-users: spike, users during the burst"""
    spike_seconds: float = 10.0
    """--spike-seconds: spike, the burst's length"""
    soak_users: int = 8
    """--soak-users: soak, users held"""
    soak_seconds: float = 3600.0
    """--soak-seconds: soak, the whole hold, cut into --tier-seconds windows"""
    schedule: str = "0=1,1m=4,2m=2,3m=end"
    """--schedule: OFFSET=USERS list ('end' closes)"""
    schedule_scale: float = 1.0
    """--schedule-scale: the schedule's time compression (60 = an hour per minute)"""
    trace: TraceSettings = field(default_factory=TraceSettings)
    """--trace and its flags (openloop/settings.py): a TraceShape's plan"""
    spawn_rate: float | None = None
    """Locust's -r/--spawn-rate as the run starts (a tier's ramp uses it when given on the command line: base.py)"""

    @classmethod
    def from_options(cls, parsed: Any) -> ScheduleSettings:
        """The plan's flags of Locust's parsed options (module docstring); ShapeOptionError for a bad
        --warmup-seconds."""
        try:
            given = warmup_seconds(parsed)
        except ValueError as exc:
            raise ShapeOptionError(str(exc)) from None
        return cls(
            **{name: getattr(parsed, name, getattr(SCHEDULE, name)) for name in AS_PARSED},
            warmup_seconds=SHAPE_WARMUP_S if given is None else given, warmup_given=given is not None,
            knee_factor_given=getattr(parsed, "knee_factor", None) not in (None, ""),  # the form sends a blank as ''
            arrivals=ArrivalSettings.from_options(parsed), trace=TraceSettings.from_options(parsed))


@dataclass(frozen=True)
class RefineSettings:
    on: bool = False
    """tiers are added after the sweep: --refine on, or auto with --slo-profile set, on step and rate tiers"""
    max_tiers: int = DEFAULT_MAX_TIERS
    """--refine-max-tiers: at most this many added tiers, each as long as the planned ones"""
    hold_s: float = 0.0
    """--hold-at-capacity: one last tier this long at the capacity found (0: none)"""

    def info(self) -> dict[str, Any]:
        """run.json's shape `refine`."""
        return {"on": self.on, "max_tiers": self.max_tiers, "hold_at_capacity_s": self.hold_s}

    @classmethod
    def from_options(cls, parsed: Any, refinable: bool) -> RefineSettings:
        """--refine (auto: on when --slo-profile is set), --refine-max-tiers and --hold-at-capacity of Locust's parsed
        options, on a shape that may refine or not (refine.py); ShapeOptionError names the flag to fix."""
        mode = _mode(parsed, "refine", REFINE_CHOICES)
        try:
            max_tiers = int(getattr(parsed, "refine_max_tiers", REFINE.max_tiers))
            hold_s = float(getattr(parsed, "hold_at_capacity", REFINE.hold_s) or 0.0)
        except (TypeError, ValueError):
            raise ShapeOptionError("--refine-max-tiers must be a whole number >= 0 and --hold-at-capacity a "
                                   "duration >= 0 (90, 2m)") from None
        if max_tiers < 0:
            raise ShapeOptionError(f"--refine-max-tiers must be >= 0, got {max_tiers}")
        if hold_s < 0:
            raise ShapeOptionError(f"--hold-at-capacity must be >= 0 seconds, got {hold_s:g}")
        slo_profile = str(getattr(parsed, "slo_profile", "") or "")
        on = refinable and (mode == "on" or (mode == "auto" and bool(slo_profile)))
        if mode == "on" and not refinable:
            logger.warning("load shape: --refine applies to step and rate tiers only: ignored")
        return cls(on, max_tiers, hold_s)


def _mode(parsed: Any, name: str, choices: tuple[str, ...]) -> str:
    """--refine / --confirm: auto (the default, also for None or ''), on or off; anything else names the flag."""
    mode = str(getattr(parsed, name, None) or "auto").strip().lower()
    if mode not in choices:
        raise ShapeOptionError(f"--{name} must be one of {', '.join(choices)}, got {mode!r}")
    return mode


@dataclass(frozen=True)
class ConfirmSettings:
    on: bool = False
    """windows confirm the plan: --confirm auto (the default) or on, on step and rate tiers"""
    seconds: float | None = None
    """--confirm-seconds (None: the default rule, `confirm.window_seconds`)"""
    max_seconds: float = DEFAULT_MAX_SECONDS
    """--confirm-max-seconds: the longest window"""
    steps: int = DEFAULT_STEPS
    """--confirm-steps: windows after the first that may lower the rate"""
    off_because: str = ""
    """why it is off ('' : on): '--no-confirm', or its shape plans no rate"""

    def info(self) -> dict[str, Any]:
        """run.json's shape `confirm` (its windows are added as they run)."""
        return {"on": self.on, "seconds": self.seconds, "max_seconds": self.max_seconds, "steps": self.steps,
                "skipped": self.off_because or NOT_STARTED, "windows": []}

    @classmethod
    def from_options(cls, parsed: Any, confirmable: bool) -> ConfirmSettings:
        """--confirm (auto: on), --confirm-seconds, --confirm-max-seconds and --confirm-steps of Locust's parsed
        options, on a shape that may confirm or not (confirm.py); ShapeOptionError names the flag to fix."""
        mode = _mode(parsed, "confirm", CONFIRM_CHOICES)
        try:
            given = getattr(parsed, "confirm_seconds", CONFIRM.seconds)
            seconds = None if given in (None, "") else float(given)
            max_s = float(getattr(parsed, "confirm_max_seconds", CONFIRM.max_seconds) or CONFIRM.max_seconds)
            steps = int(getattr(parsed, "confirm_steps", CONFIRM.steps))
        except (TypeError, ValueError):
            raise ShapeOptionError("--confirm-seconds and --confirm-max-seconds must be durations (60, 90s, 2m) and "
                                   "--confirm-steps a whole number") from None
        if seconds is not None and seconds <= 0:
            raise ShapeOptionError(f"--confirm-seconds must be > 0, got {seconds:g}")
        if max_s <= 0:
            raise ShapeOptionError(f"--confirm-max-seconds must be > 0, got {max_s:g}")
        if seconds is not None and seconds > max_s:
            raise ShapeOptionError(f"--confirm-seconds {seconds:g} is longer than --confirm-max-seconds {max_s:g}: "
                                   "lower it or raise the maximum")
        if steps < 0:
            raise ShapeOptionError(f"--confirm-steps must be >= 0, got {steps}")
        off = ("--no-confirm" if mode == "off" else "" if confirmable
               else "its shape plans no rate (step and rate tiers do)")
        return cls(not off, seconds, max_s, steps, off)


SCHEDULE = ScheduleSettings()
"""the plan's flags at their defaults (flags.py registers them with these)"""
REFINE = RefineSettings()
CONFIRM = ConfirmSettings()
AS_PARSED = ("tiers", "start_users", "step_users", "max_users", "tier_seconds", "stop_at_knee", "max_error_rate",
             "min_tier_requests", "rate_tiers", "base_users", "base_seconds", "spike_users", "spike_seconds",
             "soak_users", "soak_seconds", "schedule", "schedule_scale", "spawn_rate")
"""the ScheduleSettings fields read as the parsed options hold them (the flag's name is the field's)"""
