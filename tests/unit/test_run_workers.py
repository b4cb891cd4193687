"""The master's worker book (run/distributed/workers.py) and the applied load (run/distributed/applied.py), driven by a
stand-in
master runner: joins, a worker going missing then coming back, quits, clock offsets, tier delivery, and
the skewed worker's rows moved onto the master's clock (no sockets, injected clock)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from locust.env import Environment
from locust.event import Events
from locust.runners import MasterRunner, WorkerNode, WorkerNodes

from llmload.run.distributed import workers
from llmload.run.distributed.applied import AppliedLoad
from llmload.run.state import run_state
from llmload.sink.rows import _to_master_clock
from llmload.sink.timeline import Tier


class StandInMaster(MasterRunner):
    def __init__(self, environment):  # no socket: only what the book reads
        self.environment = environment
        self.clients = WorkerNodes()
        self.custom_messages = {}
        self.worker_indexes: dict[str, int] = {}
        self.worker_index_max = 0
        self.sent: list[tuple] = []
        self.greenlet = None  # Runner.__del__ reads it

    def send_message(self, msg_type, data=None, client_id=None):
        self.sent.append((msg_type, data, client_id))


def node(client_id, state="running", users=2):
    n = WorkerNode(client_id, state=state)
    n.user_classes_count = {"Chat": users} if state != "missing" else {}
    return n


@pytest.fixture
def book(monkeypatch):
    monkeypatch.setattr(workers.gevent, "spawn", lambda *a, **k: None)  # no clock probes greenlet
    env = Environment(events=Events())
    env.runner = StandInMaster(env)
    clock = SimpleNamespace(now=1000.0)
    b = workers.WorkerBook(env, wall=lambda: clock.now)
    b.clock = clock
    return b


def test_join_loss_rejoin_and_quit_are_recorded(book, caplog):
    runner, clock = book.environment.runner, book.clock
    changes = []
    book.on_change = lambda: changes.append(clock.now)
    run_state(book.environment).timeline.begin_tier(Tier(tier=2, start_s=990.0, warmup_s=1.0, target_users=4))
    runner.clients["a"], runner.clients["b"] = node("a"), node("b")
    book.poll()
    clock.now = 1005.0
    book._on_heartbeat(client_id="b", timestamp=1001.0)
    runner.clients["b"] = node("b", state="missing")
    book.poll()
    clock.now = 1010.0
    runner.clients["b"] = node("b")
    book.poll()
    clock.now = 1020.0
    del runner.clients["a"]
    book.poll()
    nodes = {n["worker"]: n for n in book.to_json()["worker_nodes"]}
    assert nodes["w0"]["how_left"] == "quit" and nodes["w0"]["left_unix"] == 1020.0
    assert nodes["w1"]["left_unix"] == 1005.0 and nodes["w1"]["last_seen_unix"] == 1001.0
    assert nodes["w1"]["rejoined"] == 1 and nodes["w1"]["how_left"] == ""
    assert "worker w1 lost (no heartbeat; last seen 4.0 s ago) during tier 2" in caplog.text
    assert changes == [1000.0, 1005.0, 1020.0]
    assert book.applied.users == [4, 2, 4, 2] and book.applied.workers == [2, 1, 2, 1]


def test_applied_load_over_the_measure_window():
    load = AppliedLoad()
    for t, users, workers_ in ((0.0, 4, 2), (1.0, 4, 2), (2.0, 2, 1), (3.0, 2, 1), (4.0, 4, 2)):
        load.add(t, users, workers_)
    assert load.summary(1.0, 4.0) == {"users_min": 2, "users_mean": 2.67, "users_max": 4,
                                      "workers_min": 1, "workers_max": 2}
    assert load.summary(2.2, 2.8)["users_mean"] == 2  # shorter than a poll: the state when it began
    assert AppliedLoad().summary(0, 1) == dict.fromkeys(("users_min", "users_mean", "users_max",
                                                         "workers_min", "workers_max"))


def test_clock_offset_of_one_probe():
    offset_ms, rtt_ms = workers.clock_offset_ms(100.000, 100.205, 100.010)
    assert rtt_ms == pytest.approx(10.0) and offset_ms == pytest.approx(200.0)


def test_the_fastest_probe_wins_and_a_skew_moves_the_rows(book, caplog):
    runner = book.environment.runner
    runner.clients["a"] = node("a")
    book.poll()
    for sent, worker_unix, received in ((1000.0, 1000.230, 1000.060), (1000.5, 1000.705, 1000.51)):
        book.clock.now = received
        book._on_clock_answer(book.environment, SimpleNamespace(
            node_id="a", data={"master_unix": sent, "worker_unix": worker_unix}))
    entry = book.entries["a"]
    assert entry.clock_rtt_ms == pytest.approx(10.0) and entry.clock_offset_ms == pytest.approx(200.0)
    book._answers["a"] = workers.PROBES
    book._probe_clock(runner, entry)  # all answered: no more probes, the verdict
    assert entry.ts_corrected and "clock is +200 ms off" in caplog.text
    rows = [{"worker": "w0", "ts_start_s": 1000.2}, {"worker": "w9", "ts_start_s": 5.0}]
    _to_master_clock(rows, "ts_start_s", book.offset_s)
    assert rows[0]["ts_start_s"] == pytest.approx(1000.0) and rows[1]["ts_start_s"] == 5.0


def test_tier_delivery_is_measured_on_the_masters_clock(book, caplog):
    runner = book.environment.runner
    runner.clients["a"] = node("a")
    book.poll()
    book.entries["a"].clock_offset_ms = 50.0  # the worker's clock is 50 ms ahead
    timeline = run_state(book.environment).timeline
    timeline.begin_tier(Tier(tier=1, start_s=1000.0, warmup_s=0.0))
    timeline.begin_tier(Tier(tier=2, start_s=1010.0, warmup_s=0.0))
    seen = [{"kind": "spawn", "sent_unix": 1010.01, "worker_unix": 1010.08},
            {"kind": "spawn", "sent_unix": 1010.5, "worker_unix": 1010.6},  # a later step of the ramp
            {"kind": "target", "tier": 1, "worker_unix": 1000.3},
            {"kind": "target", "tier": 1, "worker_unix": 1000.9}]  # not the first of its kind
    for data in seen:
        book._on_seen(book.environment, SimpleNamespace(node_id="a", data=data))
    assert book.to_json()["tier_reach"] == [{"tier": 1, "worker": "w0", "kind": "target", "reach_ms": 250.0},
                                            {"tier": 2, "worker": "w0", "kind": "spawn", "reach_ms": 30.0}]
    assert "tier 1 reached worker w0 250 ms after it began" in caplog.text
