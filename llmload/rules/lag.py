"""Why a load generator's event loop lagged: one decision table for the live banner and the report.

How it works: two pieces of evidence.
- The process's own CPU, judged by the caller from what it has ('busy': its own code held the loop;
  'idle': it hardly ran while late; 'unclear': between). Live (run/watch/overload.py) that is the mean CPU of the
  last 5 s against 60 % of a core; the report (analysis/tables/workers.py) has, per second, the CPU used
  during the worst wake-up against the lag (limits.BUSY_SHARE, IDLE_SHARE).
- The machine's load (`MachineLoad`, health.csv): its CPU pressure (/proc/pressure/cpu: the share of the
  time runnable tasks waited for a CPU), steal time (the hypervisor gave the CPU to other guests), the run
  queue (runnable tasks against CPUs) and its CPU %. It is *busy* when any figure it has passes its limit
  (limits: CPU_PRESSURE_BUSY_PERCENT, STEAL_BUSY_PERCENT, RUN_QUEUE_PER_CPU, MACHINE_BUSY_PERCENT); figures
  the machine does not offer (macOS, old kernels, containers that hide /proc/pressure) are NaN and say nothing.

  own busy                           -> busy     too many streams for one process: more processes help
  own idle, machine busy             -> starved  the machine is busy with other work: fewer other processes
  own idle, machine not busy         -> blocked  a blocking call in the process (DNS, disk, a non-gevent library)
  own idle and no machine figure, or own unclear -> unclear
"""

from __future__ import annotations

from dataclasses import dataclass

from llmload.rules.limits import (
    CPU_PRESSURE_BUSY_PERCENT,
    MACHINE_BUSY_PERCENT,
    RUN_QUEUE_PER_CPU,
    STEAL_BUSY_PERCENT,
)

NAN = float("nan")


@dataclass(frozen=True)
class MachineLoad:
    """The machine's load over a window; NaN where the machine does not say."""

    cpu_percent: float = NAN
    """the whole machine's CPU (all cores, 0-100)"""
    pressure_percent: float = NAN
    """share of the time (0-100) at least one runnable task waited for a CPU (/proc/pressure/cpu 'some')"""
    steal_percent: float = NAN
    """share of all CPUs' time (0-100) the hypervisor gave to other guests (/proc/stat steal)"""
    procs_running: float = NAN
    """runnable tasks (/proc/stat procs_running, this process's reading thread included)"""
    cpu_count: float = NAN
    """CPUs of the machine (os.cpu_count())"""

    def known(self) -> bool:
        return any(v == v for v in (self.cpu_percent, self.pressure_percent, self.steal_percent,
                                    self.run_queue_per_cpu()))

    def run_queue_per_cpu(self) -> float:
        return self.procs_running / self.cpu_count if self.cpu_count > 0 else NAN

    def busy(self) -> bool:
        """Any figure the machine gave past its limit (NaN compares false)."""
        return (self.pressure_percent >= CPU_PRESSURE_BUSY_PERCENT or self.steal_percent >= STEAL_BUSY_PERCENT
                or self.run_queue_per_cpu() > RUN_QUEUE_PER_CPU or self.cpu_percent >= MACHINE_BUSY_PERCENT)


def lag_cause(own: str, machine: MachineLoad) -> str:
    """'busy', 'starved', 'blocked' or 'unclear' from the process's own CPU ('busy', 'idle', 'unclear') and the
    machine's load (module docstring)."""
    if own == "busy":
        return "busy"
    if own != "idle" or not machine.known():
        return "unclear"
    return "starved" if machine.busy() else "blocked"


def machine_figures(machine: MachineLoad, pct: str = "%") -> str:
    """'CPU pressure 64%, steal 0%, 5 runnable tasks on 2 CPUs' from the figures the machine gave
    ('machine CPU 97%' when it gave no other)."""
    parts = []
    if machine.pressure_percent == machine.pressure_percent:
        parts.append(f"CPU pressure {machine.pressure_percent:.0f}{pct}")
    if machine.steal_percent == machine.steal_percent:
        parts.append(f"steal {machine.steal_percent:.0f}{pct}")
    if machine.run_queue_per_cpu() == machine.run_queue_per_cpu():
        parts.append(f"{machine.procs_running:.3g} runnable tasks on {machine.cpu_count:.0f} CPUs")
    if not parts and machine.cpu_percent == machine.cpu_percent:
        parts.append(f"machine CPU {machine.cpu_percent:.0f}{pct}")
    return ", ".join(parts)


def busy_machine_text(machine: MachineLoad, pct: str = "%", past: bool = False) -> str:
    """The starved cause in words, with the machine's figures (`past`: as the report tells a run that ended)."""
    is_, hold, waits = ("was", "held", "waited") if past else ("is", "hold", "waits")
    return (f"the machine {is_} busy with other work ({machine_figures(machine, pct)}): other processes {hold} the "
            f"CPUs and this one {waits} for a turn; run fewer other processes beside the generator (or move them, "
            "or lower their priority: renice them, and where the kernel groups sessions, sched_autogroup, their "
            "session's /proc/PID/autogroup), or give it a dedicated machine or cores of its own (a lag that stays "
            "once the machine is quiet is a blocking call in the process)")
