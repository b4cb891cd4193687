"""Why a generator's loop lagged (llmload.rules.lag): each branch of the one decision table, in the live
banner's sentence (run/watch/overload.py) and the report's cause (analysis/tables/workers.py), from given figures."""

from __future__ import annotations

import pytest

from llmload.analysis.tables import workers
from llmload.rules.lag import MachineLoad, lag_cause, machine_figures
from llmload.run.watch.overload import OverloadWatch, overload_text

QUIET = MachineLoad(cpu_percent=30.0, pressure_percent=1.0, steal_percent=0.0, procs_running=1, cpu_count=2)
PRESSED = MachineLoad(cpu_percent=55.0, pressure_percent=64.0, steal_percent=0.0, procs_running=2, cpu_count=2)
STOLEN = MachineLoad(cpu_percent=40.0, pressure_percent=3.0, steal_percent=35.0, procs_running=1, cpu_count=2)
QUEUED = MachineLoad(cpu_percent=60.0, procs_running=5, cpu_count=2)  # no PSI, no steal: the run queue says it
UNKNOWN = MachineLoad()


@pytest.mark.parametrize(("own", "machine", "cause"), [
    ("busy", PRESSED, "busy"),          # its own code held the loop: more processes help, whatever else runs
    ("idle", PRESSED, "starved"),       # CPU pressure 64 %
    ("idle", STOLEN, "starved"),        # steal 35 %
    ("idle", QUEUED, "starved"),        # 5 runnable tasks on 2 CPUs
    ("idle", MachineLoad(cpu_percent=97.0), "starved"),  # only the machine's CPU % (macOS)
    ("idle", QUIET, "blocked"),
    ("idle", UNKNOWN, "unclear"),       # nothing known of the machine
    ("unclear", PRESSED, "unclear"),
])
def test_decision_table(own, machine, cause):
    assert lag_cause(own, machine) == cause


def test_figures_name_only_what_the_machine_gave():
    assert machine_figures(PRESSED) == "CPU pressure 64%, steal 0%, 2 runnable tasks on 2 CPUs"
    assert machine_figures(QUEUED, " %") == "5 runnable tasks on 2 CPUs"
    assert machine_figures(MachineLoad(cpu_percent=97.0)) == "machine CPU 97%"
    assert machine_figures(UNKNOWN) == ""


HEAD = ("generator local overloaded: event-loop lag p99 40 ms over the last 5 s (limit 10 ms), CPU {cpu} % of a core "
        "(limit 85 %); its timestamps (TTFT, gaps) run late by about the lag. ")


def test_live_own_cpu_pegged_asks_for_processes():
    text = overload_text("local", 40.0, 97.0, PRESSED)
    assert text == HEAD.format(cpu=97) + ("This load needs ~2 generator processes here (ceil(CPU 97 % / 60 % per "
                                          "process)): run with --processes 2, or spread it over more workers")


def test_live_low_cpu_on_a_pressed_machine_says_the_machine_is_busy():
    text = overload_text("local", 40.0, 8.0, PRESSED)
    assert text == HEAD.format(cpu=8) + (
        "Not too many streams (CPU below 60 %): the machine is busy with other work (CPU pressure 64 %, steal 0 %, "
        "2 runnable tasks on 2 CPUs): other processes hold the CPUs and this one waits for a turn; run fewer other "
        "processes beside the generator (or move them, or lower their priority: renice them, and where the kernel "
        "groups sessions, sched_autogroup, their session's /proc/PID/autogroup), or give it a dedicated machine or "
        "cores of its own (a lag "
        "that stays once the machine is quiet is a blocking call in the process); more processes will not help")
    assert "blocked by a blocking call" not in text
    assert "the machine is busy with other work (CPU pressure 3 %, steal 35 %" in overload_text("w1", 40, 8, STOLEN)


def test_live_low_cpu_on_a_quiet_machine_is_a_blocking_call():
    text = overload_text("local", 40.0, 8.0, QUIET)
    assert text == HEAD.format(cpu=8) + (
        "Not too many streams (CPU below 60 %): the loop is blocked by a blocking call (DNS, disk, a library gevent "
        "cannot patch) on a machine that is not busy (CPU pressure 1 %, steal 0 %, 1 runnable tasks on 2 CPUs); more "
        "processes will not help")


def test_live_window_takes_the_mean_machine_load():
    watch = OverloadWatch("local")
    loads = [QUIET, QUIET, PRESSED, PRESSED, PRESSED]  # pressure mean (1+1+64*3)/5 = 38.8 %
    texts = [watch.observe([40.0] * 50, 8.0, m) for m in loads]
    assert texts[:4] == [None] * 4 and "busy with other work (CPU pressure 39 %" in texts[4]


@pytest.mark.parametrize(("lag_cpu_ms", "machine", "cause"), [
    (280.0, PRESSED, "busy"), (3.0, PRESSED, "starved"), (3.0, STOLEN, "starved"), (3.0, QUIET, "blocked"),
    (100.0, PRESSED, "unclear"), (3.0, UNKNOWN, "unclear"),
])
def test_report_cause_is_the_same_rule(lag_cpu_ms, machine, cause):
    assert workers.cause(300.0, lag_cpu_ms, machine) == cause
