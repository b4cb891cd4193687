"""Open-loop (arrival-rate) scheduling: send at the intended time, whatever earlier responses do.

Why: a closed loop of N users only sends when a response came back, so when the server slows
down the load drops with it and the queueing a real population would meet is never measured
(coordinated omission). Here requests arrive on a clock and each sample keeps its lateness.

How it works, per process (local run or one worker):
  * The shape gives the run-wide rate R (requests/s) of the tier. Worker i of W takes R/W.
    `constant`: worker i sends at phase i/R + k*W/R, so the W streams interleave into one
    constant stream of rate R instead of firing together (Locust's `constant_throughput`
    users drift into step and burst). `poisson`: exponential gaps with mean W/R from a
    generator seeded with (seed, tier, worker); independent Poisson streams add up to a
    Poisson stream of rate R. `gamma:cv=X`: one run-wide stream of gamma gaps (mean 1/R, CV X)
    seeded with (seed, tier) that every worker draws alike; worker i sends the arrivals whose
    index is i modulo W. So the merged stream has exactly the CV asked (W independent gamma
    streams would merge into a less bursty one: their superposition tends to Poisson, 4 CV-2 streams
    merge into gaps of CV ~1.7).
  * `ArrivalLoop.run` sleeps until each intended time t, then launches one request greenlet
    `send(t)`; the request measures `schedule_lag_ms` = actual send - t itself. The loop never
    waits for a response. If the process already has `max_inflight` requests open, the arrival
    is *dropped and counted* (never silently delayed); a launch later than `late_ms` is
    counted as late. If the loop itself falls behind (CPU-starved generator) it sends the
    backlog at once and the lag shows it.
  * A tier change (or the user stopping) interrupts the sleep; the next tier restarts the
    arrival process from the moment it was received.
Everything here is pure: the clock, the sleep, the launcher and the in-flight count are
injected (see `user.py` beside it for the Locust/gevent adapter).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from llmload.rules.traffic import parse_arrival


@dataclass(frozen=True)
class WorkerShare:
    rate_per_s: float
    """this process's part of the tier rate"""
    phase_s: float
    """constant arrivals: offset of this worker's first send from the tier start"""
    seed: int
    worker_index: int = 0
    worker_count: int = 1
    stream_seed: int = 0
    """gamma: the seed of the run-wide stream every worker draws (seed, tier; no worker)"""


def worker_share(rate_per_s: float, worker_index: int, worker_count: int, seed: int, tier: int) -> WorkerShare:
    """Split run-wide `rate_per_s` over `worker_count` processes so their streams interleave."""
    if rate_per_s <= 0 or worker_count <= 0 or not 0 <= worker_index < worker_count:
        raise ValueError(f"bad share: rate {rate_per_s}, worker {worker_index} of {worker_count}")
    return WorkerShare(
        rate_per_s=rate_per_s / worker_count,
        phase_s=worker_index / rate_per_s,
        seed=(seed * 1_000_003 + tier * 10_007 + worker_index) & 0x7FFFFFFF,
        worker_index=worker_index, worker_count=worker_count,
        stream_seed=(seed * 1_000_003 + tier * 10_007) & 0x7FFFFFFF,
    )


def arrival_times(start_s: float, share: WorkerShare, arrival: str) -> Iterator[float]:
    """Intended send times (same clock as `start_s`), unbounded; the caller stops iterating."""
    process = parse_arrival(arrival)
    if process.process == "constant":
        gap_s = 1.0 / share.rate_per_s
        k = 0
        while True:
            yield start_s + share.phase_s + k * gap_s
            k += 1
    elif process.process == "poisson":
        rng = random.Random(share.seed)
        t = start_s
        while True:
            t += rng.expovariate(share.rate_per_s)
            yield t
    else:
        for index, t in enumerate(gamma_times(start_s, share.rate_per_s * share.worker_count, process.cv,
                                              share.stream_seed)):
            if index % share.worker_count == share.worker_index:
                yield t


def gamma_times(start_s: float, rate_per_s: float, cv: float, seed: int) -> Iterator[float]:
    """The run-wide gamma stream: gaps of mean 1/rate and coefficient of variation `cv` (shape 1/cv^2)."""
    rng = random.Random(seed)
    shape = 1.0 / (cv * cv)
    scale = cv * cv / rate_per_s
    t = start_s
    while True:
        t += rng.gammavariate(shape, scale)
        yield t


@dataclass
class LagBook:
    """What happened to the arrivals of one process (one tier, or cumulated)."""

    late_ms: float = 10.0
    sent: int = 0
    late: int = 0
    dropped: int = 0
    max_launch_lag_ms: float = 0.0

    def record_sent(self, lag_ms: float) -> None:
        self.sent += 1
        if lag_ms > self.late_ms:
            self.late += 1
        self.max_launch_lag_ms = max(self.max_launch_lag_ms, lag_ms)

    def record_dropped(self) -> None:
        self.dropped += 1


@dataclass
class ArrivalLoop:
    clock: Callable[[], float]
    """monotonic seconds (time.perf_counter in production)"""
    sleep_until: Callable[[float], bool]
    """sleep until that clock time or less; False means "interrupted, stop now" """
    launch: Callable[[float], None]
    """start one request for that intended time without waiting for it"""
    inflight: Callable[[], int]
    max_inflight: int
    book: LagBook
    on_drop: Callable[[float], None] = lambda intended_s: None

    def run(self, arrivals: Iterator[float], current: Callable[[], bool]) -> None:
        """Send `arrivals` on time while `current()` stays true."""
        for intended_s in arrivals:
            while self.clock() < intended_s:
                if not self.sleep_until(intended_s) or not current():
                    return
            if not current():
                return
            if self.inflight() >= self.max_inflight:
                self.book.record_dropped()
                self.on_drop(intended_s)
                continue
            self.book.record_sent((self.clock() - intended_s) * 1000.0)
            self.launch(intended_s)
