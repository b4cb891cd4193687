"""The tier plans the shape flags describe.

A plan is a list of `PlannedTier`: how many users (or requests/s) to hold and for how long.
Every shape is "run this plan": step tiers, a spike (base, burst, base), a soak (one level cut
into windows so drift shows tier by tier) and a schedule (offset=users pairs) only differ in
how the plan is built. The ramp speed comes from Locust's own `--spawn-rate`/`-r`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmload.shaping.flags import ShapeOptionError, arrival_option, parse_number_list, parse_schedule


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


def _need_positive(options: Any, *names: str) -> None:
    for name in names:
        value = getattr(options, name)
        if value is None or value <= 0:
            raise ShapeOptionError(f"--{name.replace('_', '-')} must be > 0, got {value}")


DEFAULT_WARMUP_SHARE = 0.25
"""a tier no longer than the default warm-up (10 s) warms up for this share of it unless --warmup-seconds is given"""


def _warmup(options: Any, seconds: float) -> float:
    warmup = float(options.warmup_seconds)
    if not getattr(options, "warmup_given", True) and warmup >= seconds > 0:  # the default, never the user's
        return round(seconds * DEFAULT_WARMUP_SHARE, 3)
    if warmup < 0 or warmup >= seconds:
        raise ShapeOptionError(f"--warmup-seconds must be >= 0 and < the tier length ({seconds:g}s), got {warmup:g}")
    return warmup


def _optional_int(options: Any, name: str) -> int | None:
    """An optional integer flag; the web UI form sends '' (or digits as text) for these."""
    value = getattr(options, name, None)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ShapeOptionError(f"--{name.replace('_', '-')} must be a whole number, got {value!r}") from None


def step_plan(options: Any) -> list[PlannedTier]:
    """--tiers, or --start-users/--step-users/--max-users, each held --tier-seconds."""
    _need_positive(options, "tier_seconds")
    for name in ("start_users", "step_users", "max_users"):
        setattr(options, name, _optional_int(options, name))
    ranged = (options.start_users, options.step_users, options.max_users)
    if any(v is not None for v in ranged):
        if options.tiers:
            raise ShapeOptionError("give either --tiers or --start-users/--step-users/--max-users, not both")
        _need_positive(options, "start_users", "step_users", "max_users")
        if options.max_users < options.start_users:
            raise ShapeOptionError("--max-users must be >= --start-users")
        users = list(range(options.start_users, options.max_users + 1, options.step_users))
    else:
        users = [int(u) for u in parse_number_list(options.tiers or "1,2,4,8,16,32", "--tiers")]
    seconds = float(options.tier_seconds)
    warmup = _warmup(options, seconds)
    return [PlannedTier(seconds=seconds, target_users=u, warmup_s=warmup) for u in users]


def rate_plan(options: Any) -> list[PlannedTier]:
    """--rate-tiers requests/s, each held --tier-seconds."""
    _need_positive(options, "tier_seconds", "max_inflight")
    seconds = float(options.tier_seconds)
    warmup = _warmup(options, seconds)
    rates = parse_number_list(options.rate_tiers, "--rate-tiers", integer=False)
    arrival_option(options.arrival)  # argparse checked the command line; this checks the web UI form's text
    return [PlannedTier(seconds=seconds, target_rps=float(r), warmup_s=warmup) for r in rates]


def spike_plan(options: Any) -> list[PlannedTier]:
    """--base-users for --base-seconds, --spike-users for --spike-seconds, base again.

    Each phase starts with its own warm-up: --warmup-seconds (which must be shorter than
    --base-seconds) for both base phases; for the burst at most half of --spike-seconds, so
    a short burst keeps a measure window (the ramp to --spike-users still extends it)."""
    _need_positive(options, "base_users", "base_seconds", "spike_users", "spike_seconds")
    base = PlannedTier(options.base_seconds, options.base_users, warmup_s=_warmup(options, options.base_seconds))
    burst_warmup = min(float(options.warmup_seconds), float(options.spike_seconds) / 2)
    burst = PlannedTier(options.spike_seconds, options.spike_users, warmup_s=burst_warmup)
    return [base, burst, base]


def soak_plan(options: Any) -> list[PlannedTier]:
    """--soak-users for --soak-seconds, reported in --tier-seconds windows.

    Only the first window has a warm-up (--warmup-seconds): the load never changes after it,
    so later windows are one continuous measurement cut in time, with no warm-up."""
    _need_positive(options, "soak_users", "soak_seconds", "tier_seconds")
    total, window = float(options.soak_seconds), float(options.tier_seconds)
    plan: list[PlannedTier] = []
    start = 0.0
    while start < total - 1e-9:
        seconds = min(window, total - start)
        plan.append(PlannedTier(seconds, options.soak_users, warmup_s=0.0))
        start += seconds
    plan[0] = PlannedTier(plan[0].seconds, options.soak_users, warmup_s=_warmup(options, plan[0].seconds))
    return plan


def schedule_plan(options: Any) -> list[PlannedTier]:
    """--schedule OFFSET=USERS list (the last without `end` lasts --tier-seconds)."""
    _need_positive(options, "tier_seconds")
    pairs = parse_schedule(options.schedule, float(options.tier_seconds), float(options.schedule_scale))
    warmup = float(options.warmup_seconds)
    return [PlannedTier(s, u, warmup_s=min(warmup, s / 2)) for u, s in pairs]
