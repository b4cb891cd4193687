"""Health rows say why the loop was late: CPU used during the worst wake-up (busy) against a stop that
used no CPU (starved or blocked), and name the process (host, pid)."""

from __future__ import annotations

import os
import time

import gevent
from gevent import monkey

from llmload.contract import HEALTH_COLUMNS
from llmload.run.watch.health import HealthMonitor, LagWindow

blocking_sleep = monkey.get_original("time", "sleep")


def test_the_cpu_of_the_worst_wake_up_is_kept():
    window = LagWindow()
    for lag_ms, cpu_ms in ((0.5, 0.4), (300.0, 290.0), (2.0, 1.9), (300.0, 5.0)):
        window.add(lag_ms, cpu_ms)
    assert window.max_ms == 300.0 and window.worst_cpu_ms == 290.0  # the first of equal maxima


def _row_after(stall) -> dict:
    rows: list[dict] = []
    monitor = HealthMonitor("w3", rows.append, users=lambda: 2, inflight=lambda: 1, report_s=0.5)
    monitor.start()
    try:
        gevent.sleep(0.1)
        stall()
        while not rows:
            gevent.sleep(0.05)
    finally:
        monitor.stop()
    return rows[0]


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_busy_stall_uses_the_cpu_it_lasted():
    row = _row_after(lambda: _spin(0.25))
    # the spin burns 250 ms of CPU whatever else the machine runs (the lag is longer when it is loaded)
    assert row["loop_lag_ms_max"] >= 200 and row["lag_cpu_ms"] >= 240, row


def test_blocked_stall_uses_no_cpu():
    row = _row_after(lambda: blocking_sleep(0.25))
    assert row["loop_lag_ms_max"] >= 200 and row["lag_cpu_ms"] <= 50, row
    assert set(row) == set(HEALTH_COLUMNS) and row["pid"] == os.getpid() and row["host"]
    assert 0 <= row["machine_cpu_percent"] <= 100 and row["worker"] == "w3"
