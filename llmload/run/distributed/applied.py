"""The load really applied: users (and workers) running over time, summarised per tier.

How it works: the process that steers the run (local runner or master) samples the runner's
user count and the connected workers every `poll_s` (0.25 s; run/distributed/workers.py drives the poll).
A master's `user_count` is the sum of what each worker reported at its last spawning_complete;
a worker Locust marks "missing" (heartbeats stopped ~3 s) counts 0 from then on, and Locust does
not move its users to the other workers. So a tier whose worker was lost shows fewer users than
its target here, from the moment Locust noticed.

`summary(start_s, end_s)` gives tiers.csv's `users_min`, `users_mean`, `users_max`,
`workers_min`, `workers_max` over the tier's measure window (unix seconds): the samples inside
it, or the last sample before it when the window is shorter than the poll. Empty when nothing
was sampled (no runner, or the poll had not started).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from llmload.contract import TIERS_APPLIED_COLUMNS as APPLIED_COLUMNS


@dataclass
class AppliedLoad:
    """(unix_s, users, workers) samples, in time order."""

    times_s: list[float] = field(default_factory=list)
    users: list[int] = field(default_factory=list)
    workers: list[int] = field(default_factory=list)

    def add(self, unix_s: float, users: int, workers: int) -> None:
        if self.times_s and unix_s < self.times_s[-1]:
            return  # the wall clock stepped back: keep the series ordered
        self.times_s.append(unix_s)
        self.users.append(int(users))
        self.workers.append(int(workers))

    def reset(self) -> None:
        self.times_s, self.users, self.workers = [], [], []

    def summary(self, start_s: float, end_s: float) -> dict[str, float | int | None]:
        """tiers.csv's applied-load columns over [start_s, end_s) (module docstring)."""
        lo = bisect.bisect_left(self.times_s, start_s)
        hi = bisect.bisect_left(self.times_s, end_s)
        if hi <= lo:
            lo, hi = max(0, lo - 1), lo  # shorter than a poll: the state when it began
        users, workers = self.users[lo:hi], self.workers[lo:hi]
        if not users:
            return dict.fromkeys(APPLIED_COLUMNS)
        return {"users_min": min(users), "users_mean": round(sum(users) / len(users), 2),
                "users_max": max(users), "workers_min": min(workers), "workers_max": max(workers)}
