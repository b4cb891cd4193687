"""StepShape on a real MasterRunner with two WorkerRunners in this process (zmq on 127.0.0.1,
ephemeral port). The stand-in user queues on 2 shared "slots" (no HTTP), so TTFT grows once
more than 2 users run: the master must see it through the workers' stats reports and stop."""

import csv
import time
from unittest import mock

import gevent
import pytest
from gevent.lock import BoundedSemaphore
from locust import User, constant, task
from locust.argument_parser import get_parser
from locust.env import Environment
from locust.event import Events

from llmload.shapes import StepShape
from llmload.shaping.flags import add_shape_arguments

pytestmark = pytest.mark.integration
SLOTS = BoundedSemaphore(2)
SERVICE_S = 0.05


class Queued(User):
    wait_time = constant(0)

    @task
    def ask(self):
        t0 = time.perf_counter()
        with SLOTS:
            ttft_ms = (time.perf_counter() - t0) * 1000 + 10
            gevent.sleep(SERVICE_S)
        fire = self.environment.events.request.fire
        fire(request_type="TTFT", name="chat", response_time=ttft_ms, response_length=5, exception=None, context={})
        fire(request_type="LLM", name="chat", response_time=ttft_ms + 40, response_length=8, exception=None,
             context={})


class Shape(StepShape):
    progress_every_s = 1.0


def test_distributed_step_tiers_and_knee_stop(tmp_path, caplog):
    parser = get_parser(default_config_files=[])
    add_shape_arguments(parser)
    options = parser.parse_args(["--tiers", "1,2,8,16", "--tier-seconds", "2.5", "--warmup-seconds", "0.5",
                                 "--stop-at-knee", "--knee-factor", "3", "--min-tier-requests", "1"])
    options.run_dir = str(tmp_path)
    with mock.patch("locust.runners.WORKER_REPORT_INTERVAL", new=0.3):
        master_env = Environment(user_classes=[Queued], events=Events(), shape_class=Shape(), parsed_options=options)
        master = master_env.create_master_runner("127.0.0.1", 0)
        workers = []
        for _ in range(2):
            env = Environment(user_classes=[Queued], events=Events(), shape_class=Shape())
            workers.append(env.create_worker_runner("127.0.0.1", master.server.port))
        deadline = time.monotonic() + 10
        while len(master.clients.ready) < 2 and time.monotonic() < deadline:
            gevent.sleep(0.1)
        assert len(master.clients.ready) == 2
        caplog.set_level("INFO", logger="llmload.shape")
        master.start_shape()
        master.shape_greenlet.join(timeout=30)
        master.quit()
        for w in workers:
            w.quit()
    with open(tmp_path / "tiers.csv") as f:
        rows = list(csv.DictReader(f))
    users = [r["target_users"] for r in rows]
    assert users[:2] == ["1", "2"] and "16" not in users  # stopped at the knee, before the last tier
    assert all(r["end_s"] for r in rows)
    assert "knee passed" in caplog.text
    assert any("tier" in r.getMessage() and "p99 TTFT" in r.getMessage() for r in caplog.records)
