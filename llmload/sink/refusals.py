"""The run's refusals and acceptances over time, for the model-free ceiling (llmload.rules.ceiling) while it runs.

How it works: the live book hands every attempt's row here (local runs; a master with --ship rows|both): each
success's send time goes into one array (8 bytes each), each refusal's (`outcomes.kind` 'shed') send time and
tier into another, every tier's attempts and refusals are counted (warm-up included), and the longest retry hint
seen is kept. `ceiling(end_s)` then finds the first refusal sent in a tier that refused materially
(`ceiling.refusing`) and counts the successes sent from it to `end_s` (and those sent before it, from the first
send): the report's computation (llmload/analysis/verdicts/ceiling.py) on the same rows. Without rows (--ship
histograms) the book stays empty and the ceiling is None live; the report computes it from histograms.
"""

from __future__ import annotations

import bisect
import math
from array import array

from llmload.rules import ceiling as ceiling_mod
from llmload.rules.ceiling import Ceiling
from llmload.rules.outcomes import kind
from llmload.sink.histograms import number, succeeded


class RefusalBook:
    def __init__(self) -> None:
        self.ok_s = array("d")
        """send time (unix s) of every success, in arrival order (nearly sorted: sorted when asked)"""
        self.refused: list[tuple[float, int]] = []
        """(send time, tier) of every refused attempt"""
        self.longest_hint_s = math.nan
        self.first_s = math.inf
        """the first send time of any attempt"""
        self.counts: dict[int, tuple[int, int]] = {}
        """per tier, (attempts, refused), warm-up included"""
        self._sorted = 0

    def note(self, row: dict, tier: int) -> None:
        ts = number(row.get("ts_start_s"))
        if ts is None:
            return
        self.first_s = min(self.first_s, ts)
        attempts, refused = self.counts.get(tier, (0, 0))
        if succeeded(row):
            self.ok_s.append(ts)
            self.counts[tier] = (attempts + 1, refused)
            return
        status = int(number(row.get("status")) or 0)
        shed = kind(status, str(row.get("error") or "")) == "shed"
        self.counts[tier] = (attempts + 1, refused + shed)
        if shed:
            self.refused.append((ts, tier))
            hint = number(row.get("retry_after_s"))
            if hint is not None and not hint <= self.longest_hint_s:
                self.longest_hint_s = hint

    def ceiling(self, end_s: float, tiers: set[int] | None = None) -> Ceiling | None:
        """The ceiling from the first refusal in a tier that refused materially to `end_s` (None: no such refusal);
        `tiers`: only those tiers count (the load tiers, not the confirmation windows)."""
        counts = self.counts if tiers is None else {t: c for t, c in self.counts.items() if t in tiers}
        refusing = ceiling_mod.refusing(counts)
        firsts = [(ts, tier) for ts, tier in self.refused if tier in refusing]
        if not firsts:
            return None
        start_s, tier = min(firsts)
        if self._sorted != len(self.ok_s):
            self.ok_s = array("d", sorted(self.ok_s))
            self._sorted = len(self.ok_s)
        before = bisect.bisect_left(self.ok_s, start_s)
        accepted = bisect.bisect_left(self.ok_s, end_s) - before
        return ceiling_mod.measured(start_s, end_s, accepted, tier, self.longest_hint_s, before,
                                    start_s - self.first_s)
