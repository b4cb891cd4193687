"""What both generator benchmarks share: percentiles, the truth log, and CPU read from /proc.

CPU comes from /proc (no psutil needed): `/proc/PID/stat` fields utime + stime + cutime +
cstime (a process's own CPU plus that of its children it has waited for) in clock ticks, and
`/proc/stat`'s first line for the whole machine. `CpuSampler` reads them every 0.1 s while a
client runs, stamped with `time.perf_counter()` (CLOCK_MONOTONIC, the clock of the server's
truth log), so the CPU of any window the truth log defines is a linear interpolation.
"""

from __future__ import annotations

import csv
import itertools
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile of unsorted values (q in 0..100), as llmload's timing uses."""
    from llmload.client.timing import percentile as sorted_percentile

    return sorted_percentile(sorted(values), q)


def pcts(values: list[float]) -> tuple[float | None, float | None, float | None]:
    """(p50, p99, max) rounded to 0.01, or Nones for no values."""
    if not values:
        return None, None, None
    return round(percentile(values, 50), 2), round(percentile(values, 99), 2), round(max(values), 2)


def proc_cpu_s(pid: int) -> float | None:
    """CPU seconds of a process and its waited-for children (user + system), None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return sum(int(f) for f in fields[11:15]) / CLK_TCK  # utime stime cutime cstime (fields 14-17)


def tree_cpu_s(pid: int) -> float | None:
    """CPU seconds of a process and all its live descendants (for tools that start worker processes)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        cpu = proc_cpu_s(current)
        if cpu is None and current == pid:
            return None
        total += cpu or 0.0
        todo += parents.get(current, [])
    return total


def machine_busy_s() -> float:
    """Busy CPU seconds of the whole machine, all cores (user nice system irq softirq; no idle, iowait, steal)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    return (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / CLK_TCK


class CpuSampler:
    """CPU seconds of named processes, this process and the machine, sampled over time."""

    def __init__(self, pids: dict[str, int], trees: frozenset[str] = frozenset()) -> None:
        self.pids = pids
        self.trees = trees
        """names whose whole process tree is counted (multi-process tools)"""
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.last: dict[str, float] = {}

    def sample(self) -> None:
        now = time.perf_counter()
        values = {"machine": machine_busy_s(), "self": time.process_time()}
        for name, pid in self.pids.items():
            cpu = tree_cpu_s(pid) if name in self.trees else proc_cpu_s(pid)
            values[name] = self.last.get(name, 0.0) if cpu is None else cpu
        self.last = values
        self.samples.append((now, values))

    def at(self, name: str, when_s: float) -> float:
        """CPU seconds of `name` at perf_counter time `when_s` (linear between samples)."""
        points = self.samples
        if when_s <= points[0][0]:
            return points[0][1][name]
        for (t1, v1), (t2, v2) in itertools.pairwise(points):
            if when_s <= t2:
                share = (when_s - t1) / (t2 - t1) if t2 > t1 else 1.0
                return v1[name] + share * (v2[name] - v1[name])
        return points[-1][1][name]

    def between(self, name: str, start_s: float, end_s: float) -> float:
        return self.at(name, end_s) - self.at(name, start_s)


def read_truth(path: Path) -> dict[str, dict[str, float]]:
    """The server's truth log: request_id -> its times (perf_counter s) and output tokens, answered ones only."""
    rows = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["first_byte_s"] and row["arrival_s"]:
                rows[row["request_id"]] = {
                    key: float(row[key]) for key in ("arrival_s", "first_byte_s", "first_byte_due_s", "last_byte_s")
                    if row[key]} | {"output_tokens": float(row["output_tokens"] or 0)}
    return rows


def truth_ttft_ms(row: dict[str, float]) -> float:
    """The server's own TTFT: first content byte written minus request arrival."""
    return (row["first_byte_s"] - row["arrival_s"]) * 1000


CALIBRATION_LINE = (b'{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
                    b'"choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}]}')


def calibration_ms(lines: int = 20000, repeats: int = 5) -> float:
    """This machine's single-core Python speed right now: the fastest of `repeats` runs of a fixed
    workload (json-decode `lines` OpenAI chunk lines and read their content), in ms. A shared VM's
    speed drifts over hours (the same code measured 34 and 48 µs per chunk on one day): compare CPU
    figures of runs made at different times only scaled by their calibrations."""
    import json

    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(lines):
            json.loads(CALIBRATION_LINE)["choices"][0]["delta"]["content"]
        best = min(best, time.perf_counter() - started)
    return round(best * 1000.0, 1)


def machine_facts() -> dict:
    return {"cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
            "load_avg_5m_at_start": round(os.getloadavg()[1], 2), "calibration_ms_at_start": calibration_ms()}


def self_signed(folder: Path) -> tuple[Path, Path] | None:
    """A throw-away self-signed EC P-256 certificate for 127.0.0.1 (its own CA) in `folder`: (cert, key);
    None without the `openssl` command."""
    if not shutil.which("openssl"):
        return None
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "2", "-subj", "/CN=llmload bench", "-keyout", str(key), "-out", str(cert),
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-addext", "basicConstraints=critical,CA:TRUE"], check=True, capture_output=True)
    return cert, key
