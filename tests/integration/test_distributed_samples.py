"""Master + worker runners in one process: workers ship sample rows, the master writes one file."""

import csv

import gevent
import pytest
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments
from locust.env import Environment
from locust.event import Events

from llmload.run.lifecycle.listeners import install
from llmload.run.options.flags import add_options
from llmload.server.launch import EmbeddedServer
from llmload.users import ChatUser

pytestmark = pytest.mark.integration


class Chat(ChatUser):
    scenario = "dist"
    prompt_tokens = 8


def make_env(url, run_dir):
    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    add_options(parser)
    options = parser.parse_args(["--host", url, "--run-dir", str(run_dir), "--max-tokens", "4"])
    env = Environment(user_classes=[Chat], host=url, parsed_options=options, events=Events(), stop_timeout=5)
    install(env.events)
    return env


def wait_for(predicate, timeout_s):
    deadline = gevent.get_hub().loop.now() + timeout_s
    while not predicate() and gevent.get_hub().loop.now() < deadline:
        gevent.sleep(0.05)
    return predicate()


def test_worker_rows_reach_the_master_file(tmp_path):
    truth = tmp_path / "truth.csv"
    run_dir = tmp_path / "run"
    with EmbeddedServer(["--preset", "exact", "--truth-log", str(truth)]) as server:
        master_env = make_env(server.url, run_dir)
        master = master_env.create_master_runner("127.0.0.1", 0)
        master_env.events.init.fire(environment=master_env, runner=master, web_ui=None)
        worker_env = make_env(server.url, tmp_path / "worker-must-not-write")
        worker = worker_env.create_worker_runner("127.0.0.1", master.server.port)
        worker_env.events.init.fire(environment=worker_env, runner=worker, web_ui=None)
        try:
            assert wait_for(lambda: master.worker_count == 1, 10)
            master.start(3, spawn_rate=3)
            gevent.sleep(1.5)
            master.stop()
            assert wait_for(lambda: master.state == "stopped", 10)
            gevent.sleep(0.3)  # the worker's last shipment rides the same socket before "client_stopped"
        finally:
            worker.quit()
            master.quit()
            worker_env.events.quitting.fire(environment=worker_env, reason="test")
            master_env.events.quitting.fire(environment=master_env, reason="test")
    with open(run_dir / "samples.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(truth, newline="") as f:
        served = {r["request_id"] for r in csv.DictReader(f)}
    assert len(rows) >= 6
    assert {r["worker"] for r in rows} == {"w0"}
    assert {r["request_id"] for r in rows} == served
    assert all(r["error"] == "" and r["tier"] == "0" for r in rows)
    assert not (tmp_path / "worker-must-not-write").exists()
    with open(run_dir / "health.csv", newline="") as f:
        assert {h["worker"] for h in csv.DictReader(f)} == {"w0"}
