"""The master's tier timeline, replicated on every worker, so workers sum histograms into the right tier.

How it works: sample rows get their tier and phase where the load shape runs (the master, rows.py), but
histograms are summed on the workers (histograms.py), which must know the tiers themselves. Every
second, and once more right before the end-of-run drain (run/distributed/drain.py), the master sends each connected
worker `llmload_tiers`: the tiers so far (tier, start_s, warmup_s), the run's end when the shape has
finished, and `valid_until_s`, the master's time of sending. Times are moved onto that worker's clock by
the offset the master measured, and only when it is over 50 ms, exactly as the master moves the
worker's rows (run/distributed/workers.py). A tier begins at the master's present, so the replica is exact for every
start time before `valid_until_s`: the worker stamps such an attempt at once (`stamp`) and holds a later
one (`hold`), about a second, until a newer replica covers it (`release`). The worker's last shipment of
the run (the drain, test stop) releases every held attempt with the last replica received; beyond
MAX_HELD attempts (a master gone silent) the oldest are released the same way at once.
"""

from __future__ import annotations

import time
from typing import Any

from llmload.sink.timeline import Tier, Timeline

FEED_MESSAGE = "llmload_tiers"
MAX_HELD = 20_000


def feed_payload(timeline: Timeline, now_s: float, offset_s: float = 0.0) -> dict:
    """What one worker gets: the timeline on its clock (worker time = master time + offset_s)."""
    end_s = timeline.run_end_s
    return {"tiers": [[t.tier, t.start_s + offset_s, t.warmup_s] for t in timeline.tiers()],
            "end_s": end_s + offset_s if end_s is not None else None, "valid_until_s": now_s + offset_s}


def send_timeline(runner: Any, timeline: Timeline, workers: list[tuple[str, float]]) -> None:
    """Master: send each worker, given as (client id, its clock offset in s), the timeline on its clock
    (run/distributed/workers.py lists the connected workers)."""
    now_s = time.time()
    for client_id, offset_s in workers:
        runner.send_message(FEED_MESSAGE, feed_payload(timeline, now_s, offset_s), client_id=client_id)


class TierReplica:
    """The worker's copy of the master's timeline, and the attempts it cannot stamp yet."""

    def __init__(self) -> None:
        self.timeline = Timeline()
        self.valid_until_s = float("-inf")
        self.held: list[tuple[float, Any]] = []
        """(start time, item) of attempts sent at or after valid_until_s"""

    def update(self, data: Any) -> None:
        """A `llmload_tiers` message from the master."""
        if not isinstance(data, dict):
            return
        timeline = Timeline()
        for tier, start_s, warmup_s in data.get("tiers", ()):
            timeline.begin_tier(Tier(tier=int(tier), start_s=float(start_s), warmup_s=float(warmup_s)))
        if data.get("end_s") is not None:
            timeline.end_run(float(data["end_s"]))
        self.timeline = timeline
        self.valid_until_s = float(data.get("valid_until_s", self.valid_until_s))

    def stamp(self, ts_start_s: float, final: bool = False) -> tuple[int, str] | None:
        """(tier, phase) of an attempt sent at `ts_start_s`; None while the replica does not cover it yet
        (always an answer when `final`)."""
        if ts_start_s >= self.valid_until_s and not final:
            return None
        tier, phase = self.timeline.tier_at(ts_start_s)
        return tier.tier, phase

    def hold(self, ts_start_s: float, item: Any) -> list[tuple[Any, int, str]]:
        """Keep an attempt until a replica covers it; returns attempts released because too many are held."""
        self.held.append((ts_start_s, item))
        if len(self.held) <= MAX_HELD:
            return []
        released, self.held = self.held[:len(self.held) // 2], self.held[len(self.held) // 2:]
        return [(item, *self.stamp(ts, final=True)) for ts, item in released]  # type: ignore[misc]

    def release(self, final: bool = False) -> list[tuple[Any, int, str]]:
        """Held attempts the replica covers now (every one when `final`), with their (tier, phase)."""
        out, kept = [], []
        for ts, item in self.held:
            stamp = self.stamp(ts, final)
            if stamp is None:
                kept.append((ts, item))
            else:
                out.append((item, *stamp))
        self.held = kept
        return out
