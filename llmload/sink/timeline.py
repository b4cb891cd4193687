"""The run's tier timeline, owned by the load shape, kept in the run's state (RunState.timeline).

How it works: the load shape runs where the run is steered (the local process or the
master). At every tier change it calls `begin_tier(...)`; the sample sink, which runs in the
same process (samples are written on the master in distributed runs), calls
`tier_at(ts_start_s)` to stamp each row with its tier and phase. Without a shape (plain
`locust -u N`) rows come stamped already: tier 0, and warmup or measure by the ramp rule of
warmup.py (the timeline answers tier 0, "measure" for any other). Each environment's state has
its own timeline, so two environments in one process (tests) never share tiers.

Phases: "warmup" (the first `warmup_s` of a tier), "measure" (the rest of it) and "after":
once the shape has finished it calls `end_run(end_s)`, and a request sent at or after the
last tier's end (a retry, a request started while the run was stopping) is stamped with the
last tier and phase "after", so it never counts in a tier's figures.

The shape also records, per tier, Locust stats snapshots at its start, at the end of its
warm-up and at its end (`TierRecord`): the web UI's per-tier rows are differences of those,
the same windows the shape's own knee rule judges.

Times are unix seconds (wall clock): rows and tiers are aligned by `ts_start_s`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from llmload.sink.window import StatsSnapshot


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
    refined: str = ""
    """'' planned; else why --refine added it: 'capacity', 'samples', 'onset' or 'hold' (llmload.rules.refine);
    'confirm': a confirmation window (llmload.rules.confirm)"""


NO_TIER = Tier(tier=0, start_s=0.0, warmup_s=0.0)


@dataclass
class TierRecord:
    """Stats snapshots the shape took around one tier (unix seconds of each)."""

    tier: Tier
    at_start: StatsSnapshot = field(default_factory=StatsSnapshot)
    at_warm: StatsSnapshot | None = None
    warm_s: float | None = None
    at_end: StatsSnapshot | None = None
    end_s: float | None = None


class Timeline:
    def __init__(self) -> None:
        self.records: list[TierRecord] = []
        self._starts: list[float] = []
        self._end_s: float | None = None

    def reset(self) -> None:
        """Forget the timeline (a new run on the same environment)."""
        self.records, self._starts, self._end_s = [], [], None

    def begin_tier(self, tier: Tier, at_start: StatsSnapshot | None = None) -> TierRecord:
        """Record that `tier` starts at `tier.start_s` (called by the shape, in order)."""
        record = TierRecord(tier=tier, at_start=at_start or StatsSnapshot())
        self.records.append(record)
        self._starts.append(tier.start_s)
        self._end_s = None
        return record

    def end_run(self, end_s: float) -> None:
        """The shape finished: the last tier ended at unix time `end_s` (first call wins)."""
        if self.records and self._end_s is None:
            self._end_s = end_s

    def tier_at(self, ts_s: float) -> tuple[Tier, str]:
        """The tier a request sent at unix time `ts_s` belongs to, and its phase."""
        i = bisect.bisect_right(self._starts, ts_s) - 1
        if i < 0:
            return NO_TIER, "warmup" if self.records else "measure"
        tier = self.records[i].tier
        if self._end_s is not None and ts_s >= self._end_s:
            return tier, "after"
        return tier, "warmup" if ts_s < tier.start_s + tier.warmup_s else "measure"

    @property
    def run_end_s(self) -> float | None:
        """Unix time the last tier ended, or None while the shape runs (or without one)."""
        return self._end_s

    def tiers(self) -> list[Tier]:
        return [r.tier for r in self.records]
