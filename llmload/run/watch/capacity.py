"""Scale by default: how many generator processes the users asked need, from this process's CPU per chunk.

How it works (`CapacityWatch`, fed every health window, 1 s, while a run goes): each window brings the
process's CPU (% of a core) and its user count, and the text chunks and attempts its finished attempts
decoded (client/attempt.py `chunks_decoded`, `attempts_finished`: both transports). Over the last WINDOWS
windows (5 s):

    CPU per chunk     = CPU seconds / chunks                      (µs, as the generator benchmark measures it)
    chunks per user   = chunks / seconds / mean users
    users per process = TARGET_CPU_SHARE (60 % of a core, overload.py) / (CPU per chunk x chunks per user)
    processes needed  = ceil(users asked / users per process)

Answers with no text chunks (embeddings, rerank) or one each (--no-stream, one-token answers) are counted per
request instead (MIN_ATTEMPTS attempts, fewer than two chunks per attempt): CPU per request x requests per
user, the same product (the CPU one user costs).
"Users asked" are a closed-loop shape's largest tier or the target user count (`overload.planned_streams`),
a worker's its own share. It is judged twice per number asked: first once the process runs a quarter of
them (JUDGE_FRACTION: the run is told early, while it ramps; a process running fewer streams spends a little
more per chunk, so this first figure is on the safe side), then once it runs them all (the figure that
stands). A judgment needs a whole window holding at least MIN_CHUNKS chunks (or MIN_ATTEMPTS attempts).
When more than one process
is needed, the log and the web UI's board of live warnings say how many, with `--processes N` (and
`--processes -1`, one per core, the way to run a big load on one machine); a final judgment that one
process is enough takes the early warning down. The advice stays up after the run, until the next one
starts. The overload warning (overload.py) remains the alarm
for a process that is overloaded now; this one plans.
"""

from __future__ import annotations

import math
import os
from collections import deque
from dataclasses import dataclass
from typing import Any

from llmload.run.watch import overload
from llmload.run.watch.overload import TARGET_CPU_SHARE, planned_streams

WINDOWS = 5
JUDGE_FRACTION = 0.25
MIN_CHUNKS = 1000
MIN_ATTEMPTS = 100
"""with fewer chunks than MIN_CHUNKS: attempts a window needs to be judged per request"""
FULL_FRACTION = 0.95
"""a process running this share of the users asked runs them all (a user starting or stopping)"""


@dataclass(frozen=True)
class Estimate:
    asked: int
    users: float
    """mean users over the window the figures come from"""
    cpu_percent: float
    cpu_us_per_unit: float
    """CPU per chunk, or per request when `unit` is 'request'"""
    units_per_user_s: float
    users_per_process: int
    needed: int
    unit: str = "chunk"
    """'chunk' (streamed text) or 'request' (answers with no chunks)"""


def estimate(asked: int, users: float, cpu_s: float, units: int, seconds: float, unit: str = "chunk") -> Estimate:
    """The figures of the module docstring for `asked` users, from a window's CPU seconds and chunks (or requests)."""
    per_unit_s = cpu_s / units
    per_user = units / seconds / users
    carried = TARGET_CPU_SHARE / (per_unit_s * per_user)
    needed = max(1, math.ceil(asked / carried - 1e-9))
    return Estimate(asked, users, 100.0 * cpu_s / seconds, per_unit_s * 1e6, per_user, int(carried), needed, unit)


def cost_text(est: Estimate) -> str:
    """'15 µs per chunk' / '310 µs per request'."""
    return f"{est.cpu_us_per_unit:.0f} µs per {est.unit}"


def advice(est: Estimate, worker: str, cores: int) -> str:
    """The sentence for the log and the web UI ('' when one process carries the load)."""
    if est.needed <= 1:
        return ""
    rate = f"{est.units_per_user_s:.0f}" if est.units_per_user_s >= 10 else f"{est.units_per_user_s:.1f}"
    measured = (f"at the CPU measured with {est.users:.0f} users ({cost_text(est)}, "
                f"{rate} {est.unit}s/s per user: {est.cpu_percent:.0f} % of a core), one "
                f"generator process carries ~{est.users_per_process} users within {TARGET_CPU_SHARE * 100:.0f} % "
                "of a core")
    if worker != "local":
        return (f"generator {worker} is asked {est.asked} users: {measured}, so its share needs ~{est.needed} "
                f"processes: run about {est.needed}x the worker processes (--processes, or more --worker machines)")
    where = (f" (or --processes -1: one per core, {cores} here)" if est.needed <= cores else
             f"; this machine has {cores} cores: --processes -1 (one per core) here and the rest as --worker "
             "processes on other machines")
    return (f"{est.asked} users asked: {measured}, so this load needs ~{est.needed} processes: run with "
            f"--processes {est.needed}{where}")


class CapacityWatch:
    """One process's judgments of the processes its load needs (module docstring)."""

    def __init__(self, worker: str, report_s: float = 1.0, cores: int | None = None) -> None:
        self.worker = worker
        self.report_s = report_s
        self.cores = cores or os.cpu_count() or 1
        self.windows: deque[tuple[float, int, int, int]] = deque(maxlen=WINDOWS)
        """(CPU %, users, chunks decoded in the window, attempts finished in it) of the last windows"""
        self.chunks_seen: int | None = None
        self.attempts_seen: int | None = None
        self.asked = 0
        self.judged_early = False
        self.judged_full = False
        self.text = ""
        """the advice posted now ('' when none)"""
        self.last: Estimate | None = None

    def reset(self) -> None:
        self.windows.clear()
        self.chunks_seen = self.attempts_seen = None
        self.asked = 0
        self.judged_early = self.judged_full = False
        self.text = ""
        self.last = None

    def observe(self, cpu_percent: float, users: int, chunks_total: int, asked: int,
                attempts_total: int = 0) -> str | None:
        """One health window; the advice when it changes ('' takes it down), else None."""
        if self.chunks_seen is None or self.attempts_seen is None:  # the counts' baseline: no window yet
            self.chunks_seen, self.attempts_seen = chunks_total, attempts_total
            return None
        delta, finished = chunks_total - self.chunks_seen, attempts_total - self.attempts_seen
        self.chunks_seen, self.attempts_seen = chunks_total, attempts_total
        self.windows.append((cpu_percent, users, delta, finished))
        if asked != self.asked:  # a new number asked (a web UI edit): judged anew
            self.asked, self.judged_early, self.judged_full = asked, False, False
        chunks, attempts = sum(w[2] for w in self.windows), sum(w[3] for w in self.windows)
        streamed = chunks >= MIN_CHUNKS and (chunks >= 2 * attempts or attempts < MIN_ATTEMPTS)
        units, unit = (chunks, "chunk") if streamed else (attempts, "request")
        enough = streamed or attempts >= MIN_ATTEMPTS
        if asked <= 0 or len(self.windows) < WINDOWS or not enough or not sum(w[0] for w in self.windows):
            return None
        fewest = min(w[1] for w in self.windows)
        full = fewest >= FULL_FRACTION * asked
        if self.judged_full or (not full and (self.judged_early or fewest < JUDGE_FRACTION * asked)):
            return None
        self.judged_early = True
        self.judged_full = full
        seconds = len(self.windows) * self.report_s
        users_mean = sum(w[1] for w in self.windows) / len(self.windows)
        cpu_s = sum(w[0] for w in self.windows) / 100.0 * self.report_s
        self.last = estimate(asked, users_mean, cpu_s, units, seconds, unit)
        text = advice(self.last, self.worker, self.cores)
        if text == self.text:
            return None
        self.text = text
        return text


def asked_users(environment: Any) -> int:
    """The users this process is asked to run: a worker's share, else what the run plans at most."""
    from locust.runners import WorkerRunner

    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        return int(runner.target_user_count or 0)
    return planned_streams(environment)


def announce(environment: Any, state: Any, text: str) -> None:
    """The advice changed: the log, and the web UI's board (a worker's through its master)."""
    last = state.health.capacity.last if state.health is not None else None
    ended = (f"one generator process carries the {last.asked} users asked after all ({cost_text(last)} "
             f"with all of them: {last.cpu_percent:.0f} % of a core)") if last is not None else ""
    overload.announce(environment, state.worker, text, key="capacity", ended=ended)
