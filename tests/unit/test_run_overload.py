"""Overload episodes, the processes-needed formula and the SDK's ceiling (run/watch/overload.py), no loop."""

from __future__ import annotations

import gc
from types import SimpleNamespace

from llmload.rules.lag import MachineLoad
from llmload.run.state import run_state
from llmload.run.watch.health import HealthMonitor
from llmload.run.watch.overload import OverloadWatch, check_ceiling, openai_ceiling, processes_needed

CALM = [0.2] * 98
LATE = [25.0] * 40


def machine(cpu_percent: float) -> MachineLoad:
    """A machine that gave only its CPU % (no /proc/pressure, as on macOS)."""
    return MachineLoad(cpu_percent=cpu_percent)


def test_one_warning_per_episode_judged_over_whole_windows():
    watch = OverloadWatch("local")
    assert [watch.observe(LATE, 20.0, machine(30.0)) for _ in range(4)] == [None] * 4  # less than 5 s seen: no verdict
    text = watch.observe(LATE, 20.0, machine(30.0))
    assert text and text.startswith("generator local overloaded: event-loop lag p99 25 ms over the last 5 s")
    assert "blocked by a blocking call" in text and "more processes will not help" in text
    assert [watch.observe(LATE, 20.0, machine(30.0)) for _ in range(3)] == [None] * 3  # the same episode
    calm = [watch.observe(CALM, 20.0, machine(30.0)) for _ in range(10)]
    assert calm.count("") == 1 and calm.index("") == 4  # once the whole last 5 s are clean
    assert watch.text == ""


def test_a_single_stall_is_not_an_overload():
    watch = OverloadWatch("w1")
    windows = [CALM] * 4 + [[*CALM, 300.0]]  # one 300 ms stall among ~490 wake-ups: p99 stays low
    assert [watch.observe(w, 30.0, machine(30.0)) for w in windows] == [None] * 5


def test_cpu_bound_suggests_processes_starved_does_not():
    busy = OverloadWatch("w2")
    texts = [busy.observe(CALM, 97.0, machine(60.0)) for _ in range(5)]
    assert texts[:4] == [None] * 4
    assert "CPU 97 % of a core (limit 85 %)" in texts[4]
    assert "needs ~2 generator processes here (ceil(CPU 97 % / 60 % per process)): run with --processes 2" in texts[4]
    starved = OverloadWatch("local")
    text = [starved.observe(LATE, 30.0, machine(97.0)) for _ in range(5)][-1]
    assert "the machine is busy with other work (machine CPU 97 %)" in text
    assert (processes_needed(30.0), processes_needed(60.0), processes_needed(97.0), processes_needed(121.0)) == \
        (1, 1, 2, 3)


def test_openai_ceiling_per_process():
    assert openai_ceiling("fast", 512, 1) == ""
    assert openai_ceiling("openai", 64, 1) == "" and openai_ceiling("openai", 256, 4) == ""
    text = openai_ceiling("openai", 128, 1)
    assert text.startswith("--transport openai with 128 streams per generator process is above its ceiling of 64")
    assert text.endswith("use --transport fast, or --processes 2 (64 streams each)")


def test_health_monitor_calls_back_once_per_episode():
    calls = []
    monitor = HealthMonitor("local", lambda row: None, users=lambda: 0, inflight=lambda: 0, on_overload=calls.append)
    monitor.judging = True  # what start() sets when a run starts (without spawning the greenlet here)
    for _ in range(7):
        for _ in range(20):
            monitor.window.add(40.0)
        monitor._report()
    gc.unfreeze()
    assert len(calls) == 1 and calls[0].startswith("generator local overloaded")


def test_ceiling_checked_on_the_plan_once_per_run(caplog):
    plain = SimpleNamespace(runner=SimpleNamespace(target_user_count=100), shape_class=None, host=None,
                            parsed_options=SimpleNamespace(transport="openai"))
    check_ceiling(plain)
    check_ceiling(plain)  # spawning_complete: already said
    board = run_state(plain).warnings
    assert list(board) == ["openai"] and "with 100 streams per generator process" in board["openai"]
    assert sum("above its ceiling" in r.getMessage() for r in caplog.records) == 1
    shaped = SimpleNamespace(runner=SimpleNamespace(target_user_count=1), shape_class=object, host=None,
                             parsed_options=SimpleNamespace(transport="openai"))
    run_state(shaped).shape_info = {"open_loop": False, "tiers": [8, 16, 80]}
    check_ceiling(shaped)
    assert "with 80 streams" in run_state(shaped).warnings["openai"]  # the largest tier, from the start
