"""The tier timeline shared by the load shape (writer) and the sample writer (reader).

How it works: the load shape runs where the run is steered (the local process or the
master). At every tier change it calls `begin_tier(...)`; the sample writer, which runs
in the same process (samples are written on the master in distributed runs), calls
`tier_at(ts_start_s)` to stamp each row with its tier and phase. Without a shape (plain
`locust -u N`) every row is tier 0, phase "measure".

Phases: "warmup" (the first `warmup_s` of a tier), "measure" (the rest of it) and "after":
once the shape has finished it calls `end_run(end_s)`, and a request sent at or after the
last tier's end (a retry, a request started while the run was stopping) is stamped with the
last tier and phase "after", so it never counts in a tier's figures.

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
_end_s: list[float] = []
"""the end of the last tier once the shape finished (empty while it runs)"""


def begin_tier(tier: Tier) -> None:
    """Record that `tier` starts at `tier.start_s` (called by the shape, in order)."""
    _tiers.append(tier)
    _starts.append(tier.start_s)
    _end_s.clear()


def end_run(end_s: float) -> None:
    """The shape finished: the last tier ended at unix time `end_s` (first call wins)."""
    if _tiers and not _end_s:
        _end_s.append(end_s)


def reset() -> None:
    """Forget the timeline (a new run in the same process, tests)."""
    _tiers.clear()
    _starts.clear()
    _end_s.clear()


def tier_at(ts_s: float) -> tuple[Tier, str]:
    """The tier a request sent at unix time `ts_s` belongs to, and its phase."""
    i = bisect.bisect_right(_starts, ts_s) - 1
    if i < 0:
        return NO_TIER, "warmup" if _tiers else "measure"
    tier = _tiers[i]
    if _end_s and ts_s >= _end_s[0]:
        return tier, "after"
    return tier, "warmup" if ts_s < tier.start_s + tier.warmup_s else "measure"


def run_end_s() -> float | None:
    """Unix time the last tier ended, or None while the shape runs (or without one)."""
    return _end_s[0] if _end_s else None


def timeline() -> list[Tier]:
    return list(_tiers)
