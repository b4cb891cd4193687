"""StepShape on a real MasterRunner with two WorkerRunners in this process (zmq on 127.0.0.1, ephemeral
port), real chat users against the embedded server with 2 slots: the workers ship their rows, the master's
live verdicts see throughput stop growing past 2 users while requests wait, and --stop-at-knee ends the run
before its last tier."""

import csv
import time
from unittest import mock

import gevent
import pytest
from locust.env import Environment
from locust.event import Events

from llmload.run.lifecycle.listeners import install
from llmload.server.launch import EmbeddedServer
from llmload.shapes import StepShape
from llmload.users import ChatUser
from tests.helpers import in_process_cluster, llmload_options

pytestmark = pytest.mark.integration


class Chat(ChatUser):
    scenario = "knee"
    prompt_tokens = 8


class Shape(StepShape):
    progress_every_s = 1.0


def make_env(url, run_dir, shape=None):
    options = llmload_options(["--host", url, "--run-dir", str(run_dir), "--max-tokens", "16", "--no-confirm",
                               "--tiers", "1,2,8,16", "--tier-seconds", "4", "--warmup-seconds", "1", "--stop-at-knee",
                               "--min-tier-requests", "1"])
    env = Environment(user_classes=[Chat], host=url, parsed_options=options, events=Events(), shape_class=shape,
                      stop_timeout=5)
    install(env.events)
    return env


def test_distributed_step_tiers_and_knee_stop(tmp_path, caplog):
    with EmbeddedServer(["--preset", "demo", "--slots", "2"]) as server, \
            mock.patch("locust.runners.WORKER_REPORT_INTERVAL", new=0.3):
        master_env, master, workers = in_process_cluster(
            lambda run_dir: make_env(server.url, run_dir, Shape()), tmp_path)
        try:
            deadline = time.monotonic() + 10
            while master.worker_count < 2 and time.monotonic() < deadline:
                gevent.sleep(0.1)
            assert master.worker_count == 2
            caplog.set_level("INFO", logger="llmload.shape")
            master.start_shape()
            master.shape_greenlet.join(timeout=40)
        finally:
            for env, worker in workers:
                worker.quit()
                env.events.quitting.fire(environment=env, reason="test")
            master.quit()
            master_env.events.quitting.fire(environment=master_env, reason="test")
    with open(tmp_path / "run" / "tiers.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["target_users"] for r in rows] == ["1", "2", "8"]  # stopped at the knee, before the last tier
    assert all(r["end_s"] for r in rows)
    assert "tier 3: knee passed: compute saturation at 2 users (tier 2), and the server queues" in caplog.text
