"""Generator health: event-loop lag and CPU of this load-generating process.

How it works: one greenlet per process sleeps `interval_s` (10 ms) in a loop and records
how late it woke up (lateness = elapsed - interval). When the gevent loop is busy (too
many streams for one core, or slow Python code in a task) every greenlet - including the
ones stamping chunk arrival times - wakes late by about that much, so the lag is a direct
bound on how wrong the timestamps of this moment can be. Locust's own CPU warning fires
only above 90 % of a core, every 10 s: far too coarse.

Every second the window's lag max / p50 / p99, the process CPU % (psutil), the user count and
the requests in flight become one health row (health.csv, per worker). `loop_lag_ms`
(for sample rows) is the larger of the last full second's max and the current window's.

Why the loop was late, per row: `lag_cpu_ms` is the CPU time this process used during the
window's latest wake-up (the sleep that ended `loop_lag_ms_max` late), `machine_cpu_percent`
the whole machine's CPU over the window (all cores, 0-100), `host` and `pid` name the process; the
machine's CPU pressure, steal time and run queue (run/watch/machine.py, read from /proc where Linux offers them)
say whether other work kept this process from a CPU.
A late wake-up that used about as much CPU as it was late is *busy* (this process's own Python
code held the loop: too many streams for one core, or a slow task); one that used little CPU
while the machine was busy is *starved* (the machine is busy with other work); little CPU on an idle
machine is *blocked* (a blocking call: DNS, disk, a non-gevent library). The rule is llmload.rules.lag.

Overload: each window's lag samples and CPU also go to an `OverloadWatch` (overload.py), which
warns while the run goes when the last 5 s passed its limits (lag p99 > 10 ms or CPU > 85 % of a
core), once per episode, through `on_overload`. Between runs (after `pause()`, until the next `start()`) the
rows go on but nothing is judged: an idle web UI process has no overload to show. The same windows
and the chunks decoded and attempts finished go to a `CapacityWatch` (capacity.py), which says through
`on_capacity` how many processes the users asked need at this process's CPU per chunk (per request for
answers with no chunks).

Garbage collector: Python's full (generation 2) collection walks every tracked object of
the process, ~70k after locust and the users are loaded: a 15-40 ms stop of the event
loop every ~10 s at a few hundred streams, during which every arriving chunk waits (it
was the largest term of the TTFT error p99). When a run starts (before any user), and
again once the user count has been steady for a whole report window, the monitor calls
`gc.freeze()` (without the first one, the first full collection of a run could fall on its
first requests: a ~50 ms stop, TTFT +50 ms on a whole wave at 64 streams): everything alive then (modules,
users, their clients) moves to the permanent generation, which collections skip. It is
cheap (a list splice), done again after each change of the user count; objects are still
freed by reference counting as usual, only cyclic garbage alive at that instant is kept.
"""

from __future__ import annotations

import gc
import os
import socket
import time
from collections.abc import Callable

import gevent
import psutil

from llmload.client.attempt import attempts_finished, chunks_decoded
from llmload.client.timing import percentile
from llmload.rules.lag import NAN, MachineLoad
from llmload.run.watch.capacity import CapacityWatch
from llmload.run.watch.machine import MachineSampler
from llmload.run.watch.overload import WINDOW_S, OverloadWatch

HOST = socket.gethostname()


class LagWindow:
    """Lateness samples (ms) of one reporting window, and the CPU used during the latest one."""

    def __init__(self) -> None:
        self.lags_ms: list[float] = []
        self.max_ms = 0.0
        self.worst_cpu_ms = 0.0
        """CPU time (ms) the process used during the window's latest wake-up"""

    def add(self, lag_ms: float, cpu_ms: float = 0.0) -> None:
        if not self.lags_ms or lag_ms > self.max_ms:
            self.max_ms, self.worst_cpu_ms = lag_ms, cpu_ms
        self.lags_ms.append(lag_ms)

    def summary(self) -> tuple[float | None, float | None, float | None]:
        """(max, p50, p99) in ms, or (None, None, None) for an empty window."""
        if not self.lags_ms:
            return None, None, None
        ordered = sorted(self.lags_ms)
        return ordered[-1], percentile(ordered, 50), percentile(ordered, 99)


class HealthMonitor:
    def __init__(self, worker: str, emit: Callable[[dict], None], users: Callable[[], int],
                 inflight: Callable[[], int], interval_s: float = 0.010, report_s: float = 1.0,
                 on_overload: Callable[[str], None] | None = None, asked: Callable[[], int] | None = None,
                 on_capacity: Callable[[str], None] | None = None) -> None:
        self.worker = worker
        self.overload = OverloadWatch(worker, windows=max(1, round(WINDOW_S / report_s)))
        self.on_overload = on_overload
        """called with the warning when an overload episode starts, '' when it ends"""
        self.capacity = CapacityWatch(worker, report_s)
        self.asked = asked
        """the users this process is asked to run (capacity.py); None: no capacity advice"""
        self.on_capacity = on_capacity
        """called with the processes the load needs when that advice changes ('' takes it down)"""
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
        self.window_worst_cpu_ms = 0.0
        self.machine = MachineSampler()
        self.judging = False
        """a run is going: windows go to the overload watch (start() sets it, pause() clears it)"""

    @property
    def loop_lag_ms(self) -> float:
        return max(self.last_max_ms, self.window.max_ms)

    def start(self) -> None:
        self.overload.reset()  # a new run (the web UI keeps the monitor between runs): its own episodes
        self.capacity.reset()
        self.judging = True
        gc.freeze()  # before the first requests (module docstring)
        if self._greenlet is None or self._greenlet.dead:
            self._process.cpu_percent(None)  # prime: the next call measures from here
            psutil.cpu_percent(None)
            self._greenlet = gevent.spawn(self._run)

    def pause(self) -> bool:
        """The run ended (the process lives on for the next): judge nothing until start(). True when an
        overload episode was going on (its warning is for the caller to take down: overload.withdraw)."""
        self.judging = False
        going = bool(self.overload.text)
        self.overload.reset()
        self.capacity.reset()  # its advice stays up until the next run starts (RunState.warnings is cleared then)
        return going

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def _run(self) -> None:
        clock, cpu_clock = time.perf_counter, time.process_time
        interval = self.interval_s
        window_start = clock()
        while True:
            before, cpu_before = clock(), cpu_clock()
            gevent.sleep(interval)
            now = clock()
            self.window.add(max(0.0, (now - before - interval) * 1000.0), (cpu_clock() - cpu_before) * 1000.0)
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
        lag_max, lag_p50, lag_p99 = self.window.summary()
        self.last_max_ms = lag_max or 0.0
        self.window_worst_cpu_ms = self.window.worst_cpu_ms
        lags_ms, self.window = self.window.lags_ms, LagWindow()
        cpu_percent, machine_cpu_percent = self._process.cpu_percent(None), psutil.cpu_percent(None)
        machine = self.machine.sample(time.monotonic())
        self.emit({
            "ts_s": round(time.time(), 3), "worker": self.worker,
            "loop_lag_ms_max": round(lag_max, 3) if lag_max is not None else "",
            "loop_lag_ms_p50": round(lag_p50, 3) if lag_p50 is not None else "",
            "cpu_percent": cpu_percent, "users": users, "inflight": self.inflight(),
            "lag_cpu_ms": round(self.window_worst_cpu_ms, 3), "machine_cpu_percent": machine_cpu_percent,
            "host": HOST, "pid": os.getpid(),
            "loop_lag_ms_p99": round(lag_p99, 3) if lag_p99 is not None else "",
            **{name: "" if value is None else value for name, value in machine.items()},
        })
        if not self.judging:
            return
        load = MachineLoad(cpu_percent=machine_cpu_percent, **{
            field: NAN if machine[column] is None else float(machine[column]) for field, column in (
                ("pressure_percent", "cpu_pressure_percent"), ("steal_percent", "steal_percent"),
                ("procs_running", "procs_running"), ("cpu_count", "cpu_count"))})
        change = self.overload.observe(lags_ms, cpu_percent, load)
        if change is not None and self.on_overload is not None:
            self.on_overload(change)
        if self.asked is not None and self.on_capacity is not None:  # judging: a run is going
            advice = self.capacity.observe(cpu_percent, users, chunks_decoded(), self.asked(), attempts_finished())
            if advice is not None:
                self.on_capacity(advice)
