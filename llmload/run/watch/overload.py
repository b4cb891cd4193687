"""Live warnings that a load generator's timestamps cannot be trusted: overload, and the SDK's ceiling.

Overload, judged per generating process (`OverloadWatch`, fed every second by health.py):
  * over the last WINDOW_S (5 s): the event-loop lag p99 (the lateness of each 10 ms wake-up of the
    health greenlet in those seconds) above LAG_P99_LIMIT_MS (10 ms), or the process's CPU (mean
    of its 1 s readings) above CPU_LIMIT_PERCENT (85 % of one core). Nothing is judged before a
    whole window has been seen. A late wake-up is a late timestamp: every chunk that arrived
    meanwhile is stamped that much late;
  * an episode starts when either limit is passed and ends once a whole window is back under both
    (so at least WINDOW_S after the last late wake-up): the log warns once at its start and says
    once that it ended; the text goes to the web UI's banner (`post`) while the episode lasts, a
    worker's by a `llmload_overload` message to the master;
  * processes needed = ceil(CPU share / TARGET_CPU_SHARE), TARGET_CPU_SHARE = 0.6 of a core: a
    gevent process far from saturation keeps its loop lag near zero (a lean reader at 256 streams
    held TTFT within +1 / +4 ms of the truth at ~65 % of a core; at 85-100 % every
    wake-up queues behind the others), so each process is planned at 60 % of a core. 97 % of a
    core -> ceil(0.97 / 0.6) = 2 processes;
  * a lagging loop at low CPU is not too many streams, and more processes will not help. Why, is the
    rule book's (llmload.rules.lag, the report's too) on the window's mean machine load (CPU pressure,
    steal, run queue, machine CPU): a busy machine -> "the machine is busy with other work" (fewer other
    processes, a dedicated machine), an idle one -> blocked (a blocking call: DNS, disk, a library gevent
    cannot patch);
  * only a run is judged: `HealthMonitor.pause()` at the run's end resets the watch, and the web UI shows
    no overload warning while no run is going.
The SDK's ceiling (`openai_ceiling`): the `openai` transport costs ~80-100 µs of CPU per chunk,
so a run planning more than OPENAI_STREAMS_PER_PROCESS streams per process is warned at its start.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from typing import Any

from llmload.client.timing import percentile
from llmload.rules.lag import NAN, MachineLoad, busy_machine_text, lag_cause, machine_figures
from llmload.run.options.settings import settings_of
from llmload.run.state import run_state

WINDOW_S = 5.0
LAG_P99_LIMIT_MS = 10.0
CPU_LIMIT_PERCENT = 85.0
TARGET_CPU_SHARE = 0.6
OPENAI_STREAMS_PER_PROCESS = 64
"""docs/benchmarks.md (Generator cost and accuracy): the openai transport costs ~80-100 µs of CPU per
chunk; 64 streams of 100 tokens/s held 60 % of a core with TTFT error p99 4 ms, 256 saturated the core
(ratio 0.47 of the ideal request rate)"""
OVERLOAD_MESSAGE = "llmload_overload"
logger = logging.getLogger("llmload")


def processes_needed(cpu_percent: float) -> int:
    """Processes that would each hold TARGET_CPU_SHARE of a core for this CPU (module docstring)."""
    return max(1, math.ceil(cpu_percent / 100.0 / TARGET_CPU_SHARE - 1e-9))


def overload_text(worker: str, lag_p99_ms: float, cpu_percent: float, machine: MachineLoad) -> str:
    """The warning's sentence (the log line and the web UI banner)."""
    head = (f"generator {worker} overloaded: event-loop lag p99 {lag_p99_ms:.0f} ms over the last {WINDOW_S:g} s "
            f"(limit {LAG_P99_LIMIT_MS:g} ms), CPU {cpu_percent:.0f} % of a core (limit {CPU_LIMIT_PERCENT:g} %); "
            "its timestamps (TTFT, gaps) run late by about the lag")
    own = "busy" if cpu_percent >= TARGET_CPU_SHARE * 100 else "idle"
    cause = lag_cause(own, machine)
    if cause == "busy":
        needed = processes_needed(cpu_percent)
        return (f"{head}. This load needs ~{needed} generator processes here (ceil(CPU {cpu_percent:.0f} % / "
                f"{TARGET_CPU_SHARE * 100:.0f} % per process)): run with --processes {needed}, or spread it over "
                "more workers")
    low = f"{head}. Not too many streams (CPU below {TARGET_CPU_SHARE * 100:.0f} %): "
    if cause == "starved":
        return f"{low}{busy_machine_text(machine, ' %')}; more processes will not help"
    figures = machine_figures(machine, " %")
    idle = f" on a machine that is not busy ({figures})" if figures else ""
    return (f"{low}the loop is blocked by a blocking call (DNS, disk, a library gevent cannot patch){idle}; "
            "more processes will not help")


def _mean(values: list[float]) -> float:
    known = [v for v in values if v == v]
    return sum(known) / len(known) if known else NAN


def window_load(loads: list[MachineLoad]) -> MachineLoad:
    """The mean of each figure over the window's seconds (NaN when no second had it)."""
    return MachineLoad(**{name: _mean([getattr(m, name) for m in loads]) for name in (
        "cpu_percent", "pressure_percent", "steal_percent", "procs_running", "cpu_count")})


class OverloadWatch:
    """One process's overload episodes, from its health windows (module docstring)."""

    def __init__(self, worker: str, windows: int = 5) -> None:
        self.worker = worker
        self.lags: deque[list[float]] = deque(maxlen=windows)
        self.cpus: deque[float] = deque(maxlen=windows)
        self.machine: deque[MachineLoad] = deque(maxlen=windows)
        self.text = ""
        """the warning of the episode going on ('' when none)"""

    def reset(self) -> None:
        self.lags.clear()
        self.cpus.clear()
        self.machine.clear()
        self.text = ""

    def observe(self, lags_ms: list[float], cpu_percent: float, machine: MachineLoad) -> str | None:
        """One health window; the warning when an episode starts, '' when it ends, else None."""
        self.lags.append(lags_ms)
        self.cpus.append(cpu_percent)
        self.machine.append(machine)
        if len(self.cpus) < (self.cpus.maxlen or 1):
            return None
        ordered = sorted(lag for window in self.lags for lag in window)
        lag_p99_ms = percentile(ordered, 99) if ordered else 0.0
        cpu_mean = sum(self.cpus) / len(self.cpus)
        over = lag_p99_ms > LAG_P99_LIMIT_MS or cpu_mean > CPU_LIMIT_PERCENT
        if over == bool(self.text):
            return None
        self.text = overload_text(self.worker, lag_p99_ms, cpu_mean, window_load(list(self.machine))) if over else ""
        return self.text


def post(environment: Any, key: str, text: str) -> None:
    """Show `text` under `key` on the web UI's board of live warnings (RunState.warnings; '' takes it down)."""
    if text:
        run_state(environment).warnings[key] = text
    else:
        run_state(environment).warnings.pop(key, None)


def announce(environment: Any, worker: str, text: str, key: str = "overload", ended: str = "") -> None:
    """A warning of the process that measured it: an overload episode (or, `key` "capacity", the processes
    the load needs: capacity.py) started (`text`) or ended ('': `ended` is logged, if any)."""
    from locust.runners import WorkerRunner

    if text:
        logger.warning("llmload: %s", text)
    elif key == "overload":
        logger.info("llmload: generator %s is no longer overloaded (lag p99 and CPU under the limits for %g s)",
                    worker, WINDOW_S)
    elif ended:
        logger.info("llmload: %s", ended)
    if isinstance(environment.runner, WorkerRunner):
        environment.runner.send_message(OVERLOAD_MESSAGE, {"worker": worker, "text": text, "key": key})
    else:
        post(environment, f"{key} {worker}", text)


def withdraw(environment: Any, worker: str) -> None:
    """The run ended during an overload episode: take its warning down (no 'no longer overloaded' line)."""
    from locust.runners import WorkerRunner

    if isinstance(environment.runner, WorkerRunner):
        environment.runner.send_message(OVERLOAD_MESSAGE, {"worker": worker, "text": ""})
    else:
        post(environment, f"overload {worker}", "")


def listen(environment: Any) -> None:
    """Master: show each worker's overload episodes and capacity advice."""
    def on_message(environment: Any, msg: Any, **_kw: Any) -> None:
        data = msg.data if isinstance(msg.data, dict) else {}
        key = "capacity" if data.get("key") == "capacity" else "overload"
        post(environment, f"{key} {data.get('worker', msg.node_id)}", str(data.get("text") or ""))

    environment.runner.register_message(OVERLOAD_MESSAGE, on_message)


def openai_ceiling(transport: str, streams: int, processes: int) -> str:
    """'' or the warning for an `openai` run planning more streams per process than its ceiling."""
    per_process = math.ceil(streams / max(1, processes))
    if transport != "openai" or per_process <= OPENAI_STREAMS_PER_PROCESS:
        return ""
    needed = math.ceil(streams / OPENAI_STREAMS_PER_PROCESS)
    return (f"--transport openai with {per_process} streams per generator process is above its ceiling of "
            f"{OPENAI_STREAMS_PER_PROCESS} (the SDK costs ~80-100 µs of CPU per chunk: docs/benchmarks.md), so its "
            f"timestamps will run late: use --transport fast, or --processes {needed} ({OPENAI_STREAMS_PER_PROCESS} "
            "streams each)")


def planned_streams(environment: Any) -> int:
    """Streams the run plans at most: a closed-loop shape's largest tier, else the target user count."""
    info = run_state(environment).shape_info  # filled by the shape at its first tick
    if getattr(environment, "shape_class", None) is not None and info:
        tiers = [t for t in info.get("tiers") or [] if t]
        return 0 if info.get("open_loop") or not tiers else int(max(tiers))
    return int(getattr(environment.runner, "target_user_count", 0) or 0)


def check_ceiling(environment: Any) -> None:
    """test_start and spawning_complete (local / master): warn once per run above the SDK's ceiling."""
    from locust.runners import MasterRunner

    runner = environment.runner
    if runner is None or "openai" in run_state(environment).warnings:
        return
    processes = runner.worker_count if isinstance(runner, MasterRunner) else 1
    text = openai_ceiling(settings_of(environment).transport, planned_streams(environment), processes)
    if text:
        logger.warning("llmload: %s", text)
        post(environment, "openai", text)
