"""The machine's CPU pressure, read for real: busy-loop children (more than the CPUs, ended by PID within a few
seconds) make runnable tasks wait, and run/watch/machine.py sees it as the rule book's busy machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from llmload.rules.lag import MachineLoad, lag_cause
from llmload.run.watch.machine import PRESSURE_PATH, MachineSampler

pytestmark = pytest.mark.timeout(60)


@pytest.mark.skipif(not PRESSURE_PATH.exists(), reason="no /proc/pressure/cpu (not Linux >= 4.20, or hidden)")
def test_busy_loops_beside_the_process_are_a_busy_machine():
    spin = "import time\nend = time.time() + 8\nwhile time.time() < end: pass"  # bounded even if never killed
    spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range((os.cpu_count() or 1) + 1)]
    try:
        sampler = MachineSampler()
        time.sleep(1.0)
        sampler.sample(time.monotonic())
        time.sleep(2.0)
        row = sampler.sample(time.monotonic())
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait(timeout=10)
    load = MachineLoad(pressure_percent=float(row["cpu_pressure_percent"]), procs_running=float(row["procs_running"]),
                       cpu_count=float(row["cpu_count"]))
    assert row["cpu_pressure_percent"] >= 50, row  # cpu_count + 1 spinners: someone always waits
    assert lag_cause("idle", load) == "starved", row
