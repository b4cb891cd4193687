"""A run without a shape flags its ramp as warm-up: every user's first request, and everything sent before
each user has had an answer after the last spawn, is phase=warmup; a later ramp (users added) is
warm-up again until the new users have each been answered. Locust's real LocalRunner, embedded server."""

from __future__ import annotations

import logging
import time

import gevent
import pytest

from llmload.run.state import run_state
from llmload.server.launch import EmbeddedServer
from llmload.users import ChatUser
from tests.helpers import read_csv

pytestmark = pytest.mark.integration


class Chat(ChatUser):
    scenario = "plain"
    prompt_tokens = 8


def start_run(server_url, run_dir, args=(), distributed=None):
    """A LocalRunner (or with `distributed`, "master" or the master's port: a master or worker runner)."""
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
    from locust.env import Environment
    from locust.event import Events

    from llmload.run.lifecycle.listeners import install

    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    events = Events()
    install(events)
    events.init_command_line_parser.fire(parser=parser)
    options = parser.parse_args(["--host", server_url, "--run-dir", str(run_dir), "--max-tokens", "4", *args])
    env = Environment(user_classes=[Chat], host=server_url, parsed_options=options, events=events, stop_timeout=5)
    if distributed == "master":
        runner = env.create_master_runner("127.0.0.1", 0)
    elif distributed is not None:
        runner = env.create_worker_runner("127.0.0.1", distributed)
    else:
        runner = env.create_local_runner()
    env.events.init.fire(environment=env, runner=runner, web_ui=None)
    return env, runner


def finish(env, runner):
    runner.quit()
    env.events.quitting.fire(environment=env, reason="test")
    return sorted(read_csv(run_state(env).sink.run_dir / "samples.csv"), key=lambda r: float(r["ts_start_s"]))


def first_rows(rows):
    firsts = {}
    for row in rows:
        firsts.setdefault(row["user"], row)
    return firsts


def end_s(row):
    return float(row["ts_start_s"]) + float(row["e2e_ms"]) / 1000.0


def test_ramp_and_first_requests_are_warmup_then_measure(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="llmload")
    with EmbeddedServer(["--preset", "exact"]) as server:
        env, runner = start_run(server.url, tmp_path / "run")
        runner.start(4, spawn_rate=4)  # one user every 0.25 s
        gevent.sleep(2.5)
        from llmload.webui.tab import LLMTab

        tab_rows = LLMTab(env).rows()
        runner.start(6, spawn_rate=20)  # two more users: a new ramp
        gevent.sleep(1.5)
        rows = finish(env, runner)
    phases = [r["phase"] for r in rows]
    assert set(phases) == {"warmup", "measure"} and all(r["tier"] == "0" for r in rows)
    firsts = first_rows(rows)
    assert len(firsts) == 6 and all(r["phase"] == "warmup" for r in firsts.values())
    # the first ramp: one warm-up stretch, then measure, until the new users came
    new_users = sorted(firsts.values(), key=lambda r: float(r["ts_start_s"]))[4:]
    second_ramp_s = min(float(r["ts_start_s"]) for r in new_users)
    first = [r for r in rows if float(r["ts_start_s"]) < second_ramp_s - 0.25]
    boundary_s = min(float(r["ts_start_s"]) for r in first if r["phase"] == "measure")
    assert all((r["phase"] == "measure") == (float(r["ts_start_s"]) >= boundary_s) for r in first)
    # it ended once every one of the 4 users had finished a request after the last of them was spawned
    last_spawn_s = max(float(r["ts_start_s"]) for r in list(firsts.values())[:4])
    for user in list(firsts)[:4]:
        mine = [r for r in first if r["user"] == user]
        assert any(last_spawn_s <= end_s(r) <= boundary_s + 0.05 for r in mine), user
    # the new users' first requests are warm-up again, later requests measured again
    assert any(r["phase"] == "measure" and float(r["ts_start_s"]) > second_ramp_s for r in rows)
    assert sum("warm-up over" in m for m in caplog.messages) == 2
    # the LLM tab's row leaves the warm-up out, and says so
    assert len(tab_rows) == 1 and tab_rows[0]["phase"] == "measure (warm-up excluded)"
    assert 0 < tab_rows[0]["requests"] < sum(1 for r in rows if float(r["ts_start_s"]) < second_ramp_s)


def test_warmup_seconds_given_flags_that_long_after_the_ramp(tmp_path):
    with EmbeddedServer(["--preset", "exact"]) as server:
        env, runner = start_run(server.url, tmp_path / "run", ["--warmup-seconds", "1.5"])
        started_s = time.time()
        runner.start(2, spawn_rate=100)
        gevent.sleep(2.5)
        rows = finish(env, runner)
    warm = [float(r["ts_start_s"]) - started_s for r in rows if r["phase"] == "warmup"]
    measured = [float(r["ts_start_s"]) - started_s for r in rows if r["phase"] == "measure"]
    assert warm and measured and max(warm) < min(measured)
    assert min(measured) >= 1.5 and max(warm) < 1.6  # the window: 1.5 s from the run's start (test_start)


def test_distributed_workers_stamp_their_rows_and_the_master_hears_when_it_is_over(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="llmload")
    with EmbeddedServer(["--preset", "exact"]) as server:
        master_env, master = start_run(server.url, tmp_path / "run", distributed="master")
        worker_env, worker = start_run(server.url, tmp_path / "worker", distributed=master.server.port)
        try:
            deadline = time.monotonic() + 10
            while master.worker_count < 1 and time.monotonic() < deadline:
                gevent.sleep(0.05)
            master.start(3, spawn_rate=3)
            gevent.sleep(2.5)
            master.stop()
            gevent.sleep(0.5)
        finally:
            worker.quit()
            rows = finish(master_env, master)
            worker_env.events.quitting.fire(environment=worker_env, reason="test")
    firsts = first_rows(rows)
    assert len(firsts) == 3 and all(r["phase"] == "warmup" and r["worker"] == "w0" for r in firsts.values())
    boundary_s = min(float(r["ts_start_s"]) for r in rows if r["phase"] == "measure")
    assert all((r["phase"] == "measure") == (float(r["ts_start_s"]) >= boundary_s) for r in rows)
    assert run_state(master_env).ramps.warmup.windows[0].end_s is not None  # the worker told the master
    assert sum("warm-up over" in m and "workers reported" in m for m in caplog.messages) == 1


def test_attempts_the_server_never_answered_do_not_end_the_warmup(tmp_path, caplog):
    """An unreachable host: every attempt fails to connect, so no user is ever answered and the warm-up stays
    open (it used to close on the failures and log that each user had 'finished a request')."""
    import socket

    caplog.set_level(logging.INFO, logger="llmload")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    env, runner = start_run(url, tmp_path / "run")
    runner.start(2, spawn_rate=100)
    gevent.sleep(1.5)
    warmup = run_state(env).ramps.warmup
    assert warmup.current is not None and warmup.current.spawned_s is not None  # spawned, still waiting
    assert warmup.progress() == "0 of 2 users answered"
    rows = finish(env, runner)
    assert len(rows) >= 4 and all(r["status"] in ("", "0") and r["phase"] == "warmup" for r in rows)
    assert not any("warm-up over" in m for m in caplog.messages)
