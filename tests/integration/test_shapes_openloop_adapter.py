"""OpenLoopUser + OpenLoopShape on Locust's real LocalRunner with a stand-in request (no sockets).

This checks the wiring (rates reach the scheduler, tiers switch, the cap drops and counts), not timing
accuracy (that is the open-loop integration run and the bench): a launch is late by the event loop's lag,
measured meanwhile by the generator's own health monitor, and not much more.
"""

import time

import gevent
import pytest
from locust import User
from locust.env import Environment
from locust.event import Events

from llmload.openloop import user as openloop_user
from llmload.openloop.user import OpenLoopUser
from llmload.run.watch.health import HealthMonitor
from llmload.shapes import OpenLoopShape
from tests.helpers import shape_flags

pytestmark = pytest.mark.integration


def run_shape(tmp_path, service_s, **flags):
    sent = []

    class Stand(OpenLoopUser, User):
        def send_request(self, intended_t0_perf=None):
            sent.append((intended_t0_perf, time.perf_counter()))
            gevent.sleep(service_s)

    class Shape(OpenLoopShape):
        progress_every_s = None

    options = shape_flags()
    vars(options).update(run_dir=str(tmp_path), tier_seconds=1.5, warmup_seconds=0.2, min_tier_requests=1)
    vars(options).update(flags)
    openloop_user.CONTROL.set(None)
    env = Environment(user_classes=[Stand], events=Events(), shape_class=Shape(), parsed_options=options)
    runner = env.create_local_runner()
    runner.start_shape()
    runner.shape_greenlet.join(timeout=10)
    runner.quit()
    return sent, env


def test_rates_reach_the_scheduler_and_lag_stays_small(tmp_path):
    health: list[dict] = []
    monitor = HealthMonitor("local", health.append, users=lambda: 0, inflight=lambda: 0, report_s=0.5)
    monitor.start()
    try:
        sent, env = run_shape(tmp_path, service_s=0.05, rate_tiers="20,40", arrival="constant")
    finally:
        monitor.stop()
    assert 0.85 * 90 <= len(sent) <= 1.1 * 90  # 20/s x 1.5 s + 40/s x 1.5 s
    lags_ms = sorted((actual - intended) * 1000 for intended, actual in sent)
    loop_lag_p99s_ms = sorted(float(row["loop_lag_ms_p99"]) for row in health)
    assert len(loop_lag_p99s_ms) >= 4 and lags_ms[0] >= 0
    # the typical launch is no later than a late wake-up of this loop meanwhile (the median half-second's p99)
    assert lags_ms[len(lags_ms) // 2] <= loop_lag_p99s_ms[len(loop_lag_p99s_ms) // 2] + 1.0, (lags_ms,
                                                                                               loop_lag_p99s_ms)
    assert sum(e.num_failures for e in env.stats.entries.values()) == 0  # nothing dropped


def test_inflight_cap_drops_and_counts(tmp_path):
    sent, env = run_shape(tmp_path, service_s=5.0, rate_tiers="20", tier_seconds=1.0, max_inflight=3)
    assert len(sent) == 3  # the first three never return during the tier
    dropped = env.stats.get("dropped (max-inflight)", "SCHED")
    assert dropped.num_failures >= 10


def test_without_a_shape_the_user_sends_one_request_per_second():
    sent = []

    class Stand(OpenLoopUser, User):
        def send_request(self, intended_t0_perf=None):
            sent.append(intended_t0_perf)

    env = Environment(user_classes=[Stand], events=Events())
    runner = env.create_local_runner()
    runner.start(1, spawn_rate=1)
    gevent.sleep(1.5)
    runner.quit()
    assert len(sent) == 2
