"""How a run ended (run/lifecycle/ending.py): the reason and `planned` from what the process saw, and the
exit code of an interrupted run (no sockets, no signals sent)."""

import argparse
import types

import pytest

from llmload.run.lifecycle import ending
from llmload.run.state import run_state


def env(headless=True, run_time=None, shape=None, stopped=None, fatal=None, signal_name=None, code=None):
    e = types.SimpleNamespace(parsed_options=argparse.Namespace(headless=headless, run_time=run_time), host=None,
                              shape_class=shape, process_exit_code=code)
    state = run_state(e)
    if stopped is not None:
        state.shape_info = {"stopped": stopped}
    if fatal:
        state.stop_reason = fatal
    if signal_name:
        state.signal = signal_name
    return e


@pytest.mark.parametrize(("environment", "reason", "planned"), [
    (env(shape=object, stopped="last tier done"), "shape finished", True),
    (env(shape=object, stopped="knee passed at tier 4"), "shape finished", True),
    (env(shape=object, stopped="-t/--run-time 5s reached"), "-t", True),
    (env(shape=object, stopped="SIGTERM"), "SIGTERM", False),
    (env(shape=object, stopped="test stopped", signal_name="SIGINT"), "SIGINT", False),
    (env(shape=object, stopped="last tier done", signal_name="SIGTERM"), "SIGTERM", False),
    (env(fatal="HTTP 401 from http://h/v1: the API key was refused", signal_name="SIGINT"),
     "fatal: HTTP 401 from http://h/v1: the API key was refused", False),
    (env(run_time=10), "-t", True),
    (env(run_time=30), "quit", False),
    (env(shape=object, stopped="test stopped"), "quit", False),
    (env(headless=False, shape=object, stopped="test stopped"), "stopped from the web UI", False),
    (env(headless=False, shape=object, stopped="last tier done"), "shape finished", True),
])
def test_end_reason(environment, reason, planned):
    end = ending.end_of_run(environment, started_unix=1000.0, now_unix=1009.5)
    assert (end["reason"], end["planned"]) == (reason, planned)


def test_reset_forgets_the_previous_runs_fatal_line():
    e = env(headless=False, fatal="boom")
    ending.reset(e)
    assert ending.end_of_run(e, 0.0)["reason"] == "stopped from the web UI"


@pytest.mark.parametrize(("reason", "before", "after"), [
    ("SIGINT", None, 130), ("SIGTERM", 1, 143), ("SIGTERM", 2, 2), ("-t", None, None), ("shape finished", 1, 1),
])
def test_interrupted_runs_exit_non_zero(reason, before, after):
    e = env(code=before)
    ending.apply_exit_code(e, {"reason": reason, "planned": reason in ending.PLANNED})
    assert e.process_exit_code == after
