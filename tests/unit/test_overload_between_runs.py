"""No overload banner while no run is going: the monitor judges nothing between runs, the page shows no
generator's overload warning outside a run, and an ended run's health rows warn of nothing."""

from __future__ import annotations

import gc
from types import SimpleNamespace

from llmload.run.state import run_state
from llmload.run.watch.health import HealthMonitor
from llmload.run.watch.overload import withdraw
from llmload.webui.health import generator_health
from llmload.webui.pages import live_warnings

OVERLOAD = "generator local overloaded: event-loop lag p99 40 ms over the last 5 s (limit 10 ms), ..."
CEILING = "--transport openai with 128 streams per generator process is above its ceiling of 64 ..."


def _lagging_seconds(monitor: HealthMonitor, seconds: int) -> None:
    for _ in range(seconds):
        for _ in range(20):
            monitor.window.add(40.0)
        monitor._report()
    gc.unfreeze()


def test_the_banner_shows_a_generators_overload_only_while_a_run_goes():
    env = SimpleNamespace(runner=SimpleNamespace(state="running"))
    run_state(env).warnings.update({"overload local": OVERLOAD, "openai": CEILING})
    assert live_warnings(env) == [CEILING, OVERLOAD]
    for state in ("stopped", "stopping", "ready", "missing"):
        env.runner.state = state
        assert live_warnings(env) == [CEILING], state
    env.runner = None
    assert live_warnings(env) == [CEILING]


def test_the_monitor_judges_nothing_before_a_run_or_after_it():
    calls: list[str] = []
    rows: list[dict] = []
    monitor = HealthMonitor("local", rows.append, users=lambda: 0, inflight=lambda: 0, on_overload=calls.append)
    _lagging_seconds(monitor, 7)  # the web UI process before any run: rows, no verdict
    assert calls == [] and len(rows) == 7 and monitor.overload.text == ""
    monitor.judging = True  # start() of a run
    _lagging_seconds(monitor, 5)
    assert len(calls) == 1 and monitor.overload.text
    assert monitor.pause() is True and monitor.overload.text == ""  # the run ended during the episode
    _lagging_seconds(monitor, 7)  # idle after the run, the loop still late now and then
    assert len(calls) == 1 and monitor.pause() is False


def test_an_episode_cut_by_the_runs_end_is_taken_down():
    env = SimpleNamespace(runner=SimpleNamespace(state="stopped"))
    run_state(env).warnings["overload local"] = OVERLOAD
    withdraw(env, "local")
    assert run_state(env).warnings == {}


def test_an_ended_runs_health_rows_warn_of_nothing():
    rows = [{"ts_s": str(100.0 + i), "worker": "local", "loop_lag_ms_max": "300", "cpu_percent": "5"}
            for i in range(5)]
    assert generator_health(rows, now_s=106.0)[0]["warning"] == "loop lag 300 ms > 50 ms"
    started_after = generator_health(rows, now_s=106.0, since_s=105.5)  # a new run started at 105.5
    assert started_after[0]["warning"] == "" and started_after[0]["loop_lag_ms"] == 300.0
