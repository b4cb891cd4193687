"""The machine's CPU load, read cheaply once a second from Linux's /proc (no subprocess).

How it works: each `MachineSampler.sample()` reads three small files and compares with its last reading:
- /proc/pressure/cpu (PSI, Linux >= 4.20): the `some` line's `avg10` (the kernel's 10 s average, %) and
  `total` (microseconds during which at least one runnable task waited for a CPU, since boot). The delta of
  `total` over the elapsed wall time is the share of the last second the machine made runnable tasks wait:
  `cpu_pressure_percent`.
- /proc/stat: the `cpu` line's steal jiffies against all its jiffies (the share of all CPUs' time a hypervisor
  gave to other guests: `steal_percent`), and `procs_running` (runnable tasks right now; /proc/loadavg's
  fourth field when /proc/stat lacks it).
- os.cpu_count() for the run queue's scale.
A file that is not there (macOS, an old kernel, a container that hides it) or cannot be parsed gives None,
and the figures built on it are absent ('' in health.csv): nothing fails, the diagnosis uses what it has.
The first sample has no delta yet: its pressure and steal figures are absent.
"""

from __future__ import annotations

import os
from pathlib import Path

PRESSURE_PATH = Path("/proc/pressure/cpu")
STAT_PATH = Path("/proc/stat")
LOADAVG_PATH = Path("/proc/loadavg")


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


def read_pressure(path: Path = PRESSURE_PATH) -> tuple[float, int] | None:
    """(some avg10 %, some total µs) or None."""
    text = _text(path)
    for line in (text or "").splitlines():
        fields = line.split()
        if fields and fields[0] == "some":
            values = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
            try:
                return float(values["avg10"]), int(values["total"])
            except (KeyError, ValueError):
                return None
    return None


def read_stat(path: Path = STAT_PATH) -> tuple[tuple[int, int] | None, int | None]:
    """((steal jiffies, all jiffies) of the `cpu` line or None, procs_running or None)."""
    cpu, running = None, None
    for line in (_text(path) or "").splitlines():
        fields = line.split()
        try:
            if fields[:1] == ["cpu"] and len(fields) >= 9:
                jiffies = [int(v) for v in fields[1:]]
                # guest and guest_nice (fields 9, 10) are already counted in user and nice
                cpu = jiffies[7], sum(jiffies[:8])
            elif fields[:1] == ["procs_running"] and len(fields) == 2:
                running = int(fields[1])
        except ValueError:
            continue
    return cpu, running


def read_loadavg_running(path: Path = LOADAVG_PATH) -> int | None:
    """Runnable tasks from /proc/loadavg's 'running/total' field, or None."""
    fields = (_text(path) or "").split()
    try:
        return int(fields[3].split("/")[0])
    except (IndexError, ValueError):
        return None


class MachineSampler:
    """Per-second machine figures for a health row (module docstring); paths injectable for tests."""

    def __init__(self, pressure_path: Path = PRESSURE_PATH, stat_path: Path = STAT_PATH,
                 loadavg_path: Path = LOADAVG_PATH, cpu_count: int | None = None) -> None:
        self.pressure_path, self.stat_path, self.loadavg_path = pressure_path, stat_path, loadavg_path
        self.cpu_count = cpu_count if cpu_count is not None else os.cpu_count()
        self._last_pressure: tuple[float, int] | None = None
        """(wall time s, stall total µs) of the last reading"""
        self._last_cpu: tuple[int, int] | None = None
        """(steal, all) jiffies of the last reading"""

    def sample(self, now_s: float) -> dict:
        """cpu_pressure_percent, cpu_pressure_avg10, steal_percent, procs_running, cpu_count (None when absent)."""
        pressure = read_pressure(self.pressure_path)
        cpu, running = read_stat(self.stat_path)
        if running is None:
            running = read_loadavg_running(self.loadavg_path)
        out: dict = {"cpu_pressure_percent": None, "cpu_pressure_avg10": None, "steal_percent": None,
                     "procs_running": running, "cpu_count": self.cpu_count}
        if pressure is not None:
            out["cpu_pressure_avg10"] = pressure[0]
            last = self._last_pressure
            if last is not None and now_s > last[0] and pressure[1] >= last[1]:
                share = (pressure[1] - last[1]) / 1e6 / (now_s - last[0])
                out["cpu_pressure_percent"] = round(min(100.0, 100.0 * share), 2)
            self._last_pressure = (now_s, pressure[1])
        if cpu is not None:
            last_cpu = self._last_cpu
            if last_cpu is not None and cpu[1] > last_cpu[1] and cpu[0] >= last_cpu[0]:
                out["steal_percent"] = round(100.0 * (cpu[0] - last_cpu[0]) / (cpu[1] - last_cpu[1]), 2)
            self._last_cpu = cpu
        return out
