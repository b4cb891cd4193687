"""The tier plans the shape flags describe.

A plan is a list of `PlannedTier`: how many users (or requests/s) to hold and for how long.
Every shape is "run this plan": step tiers, a spike (base, burst, base), a soak (one level cut
into windows so drift shows tier by tier) and a schedule (offset=users pairs) only differ in
how the plan is built, from the flags as `ScheduleSettings` holds them (settings.py): each plan checks the ones it
uses. The ramp speed comes from Locust's own `--spawn-rate`/`-r`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmload.shaping.flags import arrival_option, parse_number_list, parse_schedule
from llmload.shaping.settings import ScheduleSettings, ShapeOptionError


@dataclass(frozen=True)
class PlannedTier:
    seconds: float
    """how long the tier is held"""
    target_users: int | None = None
    """closed loop: concurrent users"""
    target_rps: float | None = None
    """open loop: intended requests per second over all workers"""
    warmup_s: float = 0.0
    """first seconds of the tier flagged phase=warmup (the ramp is added to it)"""


def _need_positive(**values: Any) -> None:
    """ShapeOptionError naming the first flag (its option name: tier_seconds -> --tier-seconds) that is not > 0."""
    for name, value in values.items():
        if value is None or value <= 0:
            raise ShapeOptionError(f"--{name.replace('_', '-')} must be > 0, got {value}")


DEFAULT_WARMUP_SHARE = 0.25
"""a tier no longer than the default warm-up (10 s) warms up for this share of it unless --warmup-seconds is given"""


def _warmup(settings: ScheduleSettings, seconds: float) -> float:
    warmup = float(settings.warmup_seconds)
    if not settings.warmup_given and warmup >= seconds > 0:  # the default, never the user's
        return round(seconds * DEFAULT_WARMUP_SHARE, 3)
    if warmup < 0 or warmup >= seconds:
        raise ShapeOptionError(f"--warmup-seconds must be >= 0 and < the tier length ({seconds:g}s), got {warmup:g}")
    return warmup


def _optional_int(name: str, value: Any) -> int | None:
    """An optional integer flag; the web UI form sends '' (or digits as text) for these."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ShapeOptionError(f"--{name.replace('_', '-')} must be a whole number, got {value!r}") from None


def step_plan(settings: ScheduleSettings) -> list[PlannedTier]:
    """--tiers, or --start-users/--step-users/--max-users, each held --tier-seconds."""
    _need_positive(tier_seconds=settings.tier_seconds)
    start = _optional_int("start_users", settings.start_users)
    step = _optional_int("step_users", settings.step_users)
    most = _optional_int("max_users", settings.max_users)
    if any(v is not None for v in (start, step, most)):
        if settings.tiers:
            raise ShapeOptionError("give either --tiers or --start-users/--step-users/--max-users, not both")
        _need_positive(start_users=start, step_users=step, max_users=most)
        assert start is not None and step is not None and most is not None  # for mypy: _need_positive raised
        if most < start:
            raise ShapeOptionError("--max-users must be >= --start-users")
        users = list(range(start, most + 1, step))
    else:
        users = [int(u) for u in parse_number_list(settings.tiers or "1,2,4,8,16,32", "--tiers")]
    seconds = float(settings.tier_seconds)
    warmup = _warmup(settings, seconds)
    return [PlannedTier(seconds=seconds, target_users=u, warmup_s=warmup) for u in users]


def rate_plan(settings: ScheduleSettings) -> list[PlannedTier]:
    """--rate-tiers requests/s, each held --tier-seconds."""
    _need_positive(tier_seconds=settings.tier_seconds, max_inflight=settings.arrivals.max_inflight)
    seconds = float(settings.tier_seconds)
    warmup = _warmup(settings, seconds)
    rates = parse_number_list(settings.rate_tiers, "--rate-tiers", integer=False)
    arrival_option(settings.arrivals.arrival)  # argparse checked the command line; this checks the web UI form's text
    return [PlannedTier(seconds=seconds, target_rps=float(r), warmup_s=warmup) for r in rates]


def spike_plan(settings: ScheduleSettings) -> list[PlannedTier]:
    """--base-users for --base-seconds, --spike-users for --spike-seconds, base again.

    Each phase starts with its own warm-up: --warmup-seconds (which must be shorter than
    --base-seconds) for both base phases; for the burst at most half of --spike-seconds, so
    a short burst keeps a measure window (the ramp to --spike-users still extends it)."""
    _need_positive(base_users=settings.base_users, base_seconds=settings.base_seconds, spike_users=settings.spike_users,
                   spike_seconds=settings.spike_seconds)
    base = PlannedTier(settings.base_seconds, settings.base_users, warmup_s=_warmup(settings, settings.base_seconds))
    burst_warmup = min(float(settings.warmup_seconds), float(settings.spike_seconds) / 2)
    burst = PlannedTier(settings.spike_seconds, settings.spike_users, warmup_s=burst_warmup)
    return [base, burst, base]


def soak_plan(settings: ScheduleSettings) -> list[PlannedTier]:
    """--soak-users for --soak-seconds, reported in --tier-seconds windows.

    Only the first window has a warm-up (--warmup-seconds): the load never changes after it,
    so later windows are one continuous measurement cut in time, with no warm-up."""
    _need_positive(soak_users=settings.soak_users, soak_seconds=settings.soak_seconds,
                   tier_seconds=settings.tier_seconds)
    total, window = float(settings.soak_seconds), float(settings.tier_seconds)
    plan: list[PlannedTier] = []
    start = 0.0
    while start < total - 1e-9:
        seconds = min(window, total - start)
        plan.append(PlannedTier(seconds, settings.soak_users, warmup_s=0.0))
        start += seconds
    plan[0] = PlannedTier(plan[0].seconds, settings.soak_users, warmup_s=_warmup(settings, plan[0].seconds))
    return plan


def schedule_plan(settings: ScheduleSettings) -> list[PlannedTier]:
    """--schedule OFFSET=USERS list (the last without `end` lasts --tier-seconds)."""
    _need_positive(tier_seconds=settings.tier_seconds)
    pairs = parse_schedule(settings.schedule, float(settings.tier_seconds), float(settings.schedule_scale))
    warmup = float(settings.warmup_seconds)
    return [PlannedTier(seconds, u, warmup_s=min(warmup, seconds / 2)) for u, seconds in pairs]
