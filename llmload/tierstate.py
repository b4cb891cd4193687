"""The tier timeline shared by the load shape (writer) and the sample writer (reader).

How it works: the load shape runs where the run is steered (the local process or the
master). At every tier change it calls `begin_tier(...)`; the sample writer, which runs
in the same process (samples are written on the master in distributed runs), calls
`tier_at(ts_start_s)` to stamp each row with its tier and phase. Without a shape (plain
`locust -u N`) every row is tier 0, phase "measure".

Times are unix seconds (wall clock): rows and tiers are aligned by `ts_start_s`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass


@dataclass(frozen=True)
class Tier:
    tier: int
    """1-based tier index; 0 means "no shape"."""
    start_s: float
    """unix seconds the tier began"""
    warmup_s: float
    """first seconds of the tier flagged phase=warmup"""
    target_users: int | None = None
    target_rps: float | None = None


NO_TIER = Tier(tier=0, start_s=0.0, warmup_s=0.0)

_tiers: list[Tier] = []
_starts: list[float] = []


def begin_tier(tier: Tier) -> None:
    """Record that `tier` starts at `tier.start_s` (called by the shape, in order)."""
    _tiers.append(tier)
    _starts.append(tier.start_s)


def reset() -> None:
    """Forget the timeline (a new run in the same process, tests)."""
    _tiers.clear()
    _starts.clear()


def tier_at(ts_s: float) -> tuple[Tier, str]:
    """The tier a request sent at unix time `ts_s` belongs to, and its phase."""
    i = bisect.bisect_right(_starts, ts_s) - 1
    if i < 0:
        return NO_TIER, "warmup" if _tiers else "measure"
    tier = _tiers[i]
    return tier, "warmup" if ts_s < tier.start_s + tier.warmup_s else "measure"


def timeline() -> list[Tier]:
    return list(_tiers)
