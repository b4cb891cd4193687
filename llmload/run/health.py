"""Generator health: event-loop lag and CPU of this load-generating process.

How it works: one greenlet per process sleeps `interval_s` (10 ms) in a loop and records
how late it woke up (lateness = elapsed - interval). When the gevent loop is busy (too
many streams for one core, or slow Python code in a task) every greenlet - including the
ones stamping chunk arrival times - wakes late by about that much, so the lag is a direct
bound on how wrong the timestamps of this moment can be. Locust's own CPU warning fires
only above 90 % of a core, every 10 s: far too coarse.

Every second the window's lag max / p50, the process CPU % (psutil), the user count and
the requests in flight become one health row (health.csv, per worker). `loop_lag_ms`
(for sample rows) is the larger of the last full second's max and the current window's.

Garbage collector: Python's full (generation 2) collection walks every tracked object of
the process, ~70k after locust and the users are loaded: a 15-40 ms stop of the event
loop every ~10 s at a few hundred streams, during which every arriving chunk waits (it
was the largest term of the TTFT error p99). Once the user count has been steady for a
whole report window, the monitor calls `gc.freeze()`: everything alive then (modules,
users, their clients) moves to the permanent generation, which collections skip. It is
cheap (a list splice), done again after each change of the user count; objects are still
freed by reference counting as usual, only cyclic garbage alive at that instant is kept.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import gevent
import psutil

from llmload.client.timing import percentile


class LagWindow:
    """Lateness samples (ms) of one reporting window."""

    def __init__(self) -> None:
        self.lags_ms: list[float] = []

    def add(self, lag_ms: float) -> None:
        self.lags_ms.append(lag_ms)

    def summary(self) -> tuple[float | None, float | None]:
        """(max, p50) in ms, or (None, None) for an empty window."""
        if not self.lags_ms:
            return None, None
        ordered = sorted(self.lags_ms)
        return ordered[-1], percentile(ordered, 50)

    @property
    def max_ms(self) -> float:
        return max(self.lags_ms) if self.lags_ms else 0.0


class HealthMonitor:
    def __init__(self, worker: str, emit: Callable[[dict], None], users: Callable[[], int],
                 inflight: Callable[[], int], interval_s: float = 0.010, report_s: float = 1.0) -> None:
        self.worker = worker
        self.emit = emit
        self.users = users
        self.inflight = inflight
        self.interval_s = interval_s
        self.report_s = report_s
        self.window = LagWindow()
        self.last_max_ms = 0.0
        self._greenlet: gevent.Greenlet | None = None
        self._process = psutil.Process()
        self._users_last_report = -1
        self._users_frozen = -1

    @property
    def loop_lag_ms(self) -> float:
        return max(self.last_max_ms, self.window.max_ms)

    def start(self) -> None:
        if self._greenlet is None or self._greenlet.dead:
            self._process.cpu_percent(None)  # prime: the next call measures from here
            self._greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def _run(self) -> None:
        clock = time.perf_counter
        interval = self.interval_s
        window_start = clock()
        while True:
            before = clock()
            gevent.sleep(interval)
            now = clock()
            self.window.add(max(0.0, (now - before - interval) * 1000.0))
            if now - window_start >= self.report_s:
                self._report()
                window_start = now

    def _freeze_when_steady(self, users: int) -> None:
        """gc.freeze() once the user count held for a whole window (see the module docstring)."""
        if users == self._users_last_report and users != self._users_frozen and users > 0:
            gc.freeze()
            self._users_frozen = users
        self._users_last_report = users

    def _report(self) -> None:
        users = self.users()
        self._freeze_when_steady(users)
        lag_max, lag_p50 = self.window.summary()
        self.last_max_ms = lag_max or 0.0
        self.window = LagWindow()
        self.emit({
            "ts_s": round(time.time(), 3), "worker": self.worker,
            "loop_lag_ms_max": round(lag_max, 3) if lag_max is not None else "",
            "loop_lag_ms_p50": round(lag_p50, 3) if lag_p50 is not None else "",
            "cpu_percent": self._process.cpu_percent(None), "users": users, "inflight": self.inflight(),
        })
