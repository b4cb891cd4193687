"""The workers of a run, as the master sees them: joins, losses, clock offsets, tier delivery.

How it works (master; a local run only samples its user count):
  * A greenlet polls the runner every `poll_s` (0.25 s) from init. A worker id seen for the first time
    has joined (`joined_unix`). Locust marks a worker "missing" when its heartbeats stopped for
    ~3 s (it keeps it 60 s more, users counted 0, and does not move them to the other workers):
    that worker is lost (`left_unix`, `how_left` "missing"; a warning names it and the tier).
    A worker that disappears without being missing left on its own (`how_left` "quit": the end
    of the run, or a worker stopped with Ctrl-C). A missing worker whose heartbeats come back
    is counted in `rejoined` (and left_unix is kept: its users were gone meanwhile).
    `last_seen_unix` is the last heartbeat or row shipment: a lost worker died within a second of it.
  * Each poll also samples the users and workers running (applied.py): tiers.csv's applied load, and
    every FEED_EVERY_S (1 s) the connected workers get the tier timeline (sink/tierfeed.py).
  * Clock offset: after a worker joins the master sends it `llmload_clock` with its time
    (`PROBES` times, `PROBE_GAP_S` apart, retried until answered: the worker may register its
    handler after its first heartbeat); the worker answers with its own time (worker_side.py); per probe offset =
    worker - (master_send + rtt/2), and the probe with the smallest round trip is kept (its error is at most rtt/2).
    |offset| > `SKEW_WARN_MS` is a warning, and the master moves that worker's `ts_start_s` (and health `ts_s`) onto
    its own clock before stamping the tier (sink/rows.py), noted as `ts_corrected` in run.json.
  * Tier delivery: a worker stamps every `spawn` message (closed loop: Locust's) and open-loop
    target (`llmload_openloop`) as it takes it off the socket and tells the master
    (`llmload_seen`); the master stores, per tier and worker, `reach_ms` = that stamp on the
    master's clock minus the tier's start (tiers.csv start_s). The first message of each tier
    counts, per kind (an open-loop tier 1 has both: the one user per worker, then its rate). Its
    error is the offset's (about rtt/2) plus a few ms of the shape's own stamping, so a message
    read right away can show a few ms below 0. Over `REACH_WARN_MS` is a warning.
run.json gets `worker_nodes` (one entry per worker) and `tier_reach` (one per tier and worker).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import gevent
from locust.runners import MasterRunner, WorkerRunner

from llmload.run import locust_compat
from llmload.run.distributed.applied import AppliedLoad
from llmload.run.state import run_state
from llmload.sink.tierfeed import send_timeline

CLOCK_MESSAGE = "llmload_clock"
SEEN_MESSAGE = "llmload_seen"
OPENLOOP_MESSAGE = "llmload_openloop"
"""openloop/user.py's MSG_TYPE (not imported: openloop sits above run/)"""
PROBES = 5
PROBE_GAP_S = 0.2
SKEW_WARN_MS = 50.0
REACH_WARN_MS = 100.0
FEED_EVERY_S = 1.0
logger = logging.getLogger("llmload")


@dataclass
class WorkerEntry:
    """One worker of the run (run.json `worker_nodes`); times are the master's unix seconds."""

    worker: str
    """w0, w1, ...: the `worker` of its samples.csv / health.csv rows"""
    client_id: str
    joined_unix: float
    left_unix: float | None = None
    how_left: str = ""
    """"" (still there at the end), "missing" (lost: heartbeats stopped), "quit" (left on its own)"""
    last_seen_unix: float | None = None
    rejoined: int = 0
    clock_offset_ms: float | None = None
    """worker clock - master clock, estimated over the message channel (error <= clock_rtt_ms / 2)"""
    clock_rtt_ms: float | None = None
    ts_corrected: bool = False
    """its rows' times were moved onto the master's clock (|offset| > SKEW_WARN_MS)"""
    rows_shipped: int = 0
    """sample rows its shipments carried (every 1 s)"""
    llm_reported: int = 0
    """LLM attempts Locust's stats reports counted from it (every 3 s): above rows_shipped for a lost worker,
    the difference is attempts whose rows were lost with it"""

    def to_json(self) -> dict:
        out = asdict(self)
        for key in ("joined_unix", "left_unix", "last_seen_unix", "clock_offset_ms", "clock_rtt_ms"):
            out[key] = round(out[key], 3) if out[key] is not None else None
        return out


class WorkerBook:
    def __init__(self, environment: Any, poll_s: float = 0.25, wall: Callable[[], float] = time.time) -> None:
        self.environment = environment
        self.poll_s = poll_s
        self.wall = wall
        self.entries: dict[str, WorkerEntry] = {}
        self.applied = AppliedLoad()
        self.reach: dict[tuple[int, float, str, str], dict] = {}
        """(tier, its start_s, worker, kind) -> run.json's tier_reach entry"""
        self.on_change: Callable[[], None] | None = None
        """called after a worker joined or was lost (listeners rewrite run.json)"""
        self._best_rtt: dict[str, float] = {}
        self._answers: dict[str, int] = {}
        self._greenlet: gevent.Greenlet | None = None
        runner = environment.runner
        if isinstance(runner, MasterRunner):
            runner.register_message(CLOCK_MESSAGE, self._on_clock_answer)
            runner.register_message(SEEN_MESSAGE, self._on_seen)
            environment.events.heartbeat_sent.add_listener(self._on_heartbeat)
            environment.events.worker_report.add_listener(self._on_report)

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Start the poll (init: workers join before the test starts; idempotent)."""
        if self._greenlet is None or self._greenlet.dead:
            self._greenlet = gevent.spawn(self._poll_loop)

    def begin_run(self) -> None:
        """Test start: a new run's series (workers still connected stay)."""
        self.applied.reset()
        # the shape's first tick (and its tier 1) comes before test_start: keep what this run's tiers have
        starts = {(t.tier, t.start_s) for t in run_state(self.environment).timeline.tiers()}
        self.reach = {k: v for k, v in self.reach.items() if k[:2] in starts}
        self.entries = {k: e for k, e in self.entries.items() if e.left_unix is None}
        self.start()

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def _poll_loop(self) -> None:
        fed_s = 0.0
        while True:
            try:
                self.poll()
                if time.monotonic() - fed_s >= FEED_EVERY_S:
                    fed_s = time.monotonic()
                    self.send_tiers()
            except Exception:  # the bookkeeping must never end the run
                logger.exception("llmload: worker bookkeeping failed")
            gevent.sleep(self.poll_s)

    def send_tiers(self) -> None:
        """Master: every connected worker gets the tier timeline, on its clock (sink/tierfeed.py)."""
        runner = self.environment.runner
        if isinstance(runner, MasterRunner):
            workers = [(c, self.offset_s(self.entries[c].worker) if c in self.entries else 0.0)
                       for c in locust_compat.connected_workers(runner)]
            send_timeline(runner, run_state(self.environment).timeline, workers)

    def poll(self) -> None:
        runner = self.environment.runner
        now = self.wall()
        if not isinstance(runner, MasterRunner):
            self.applied.add(now, runner.user_count if runner is not None else 0, 1)
            return
        nodes = locust_compat.worker_nodes(runner)
        changed = False
        for client_id, state, _users in nodes:
            entry = self.entries.get(client_id)
            if entry is None:
                changed = True
                entry = self._join(runner, client_id, now)
            if state == "missing" and entry.how_left != "missing":
                changed = True
                self._lost(entry, now)
            elif state != "missing" and entry.how_left == "missing":
                entry.how_left, entry.rejoined = "", entry.rejoined + 1
                logger.warning("llmload: worker %s is back (heartbeats resumed)", entry.worker)
        present = {client_id for client_id, _state, _users in nodes}
        for entry in self.entries.values():
            if entry.client_id not in present and entry.left_unix is None:
                entry.left_unix, entry.how_left, changed = now, "quit", True
        self.applied.add(now, runner.user_count, runner.worker_count)
        if changed and self.on_change is not None:
            self.on_change()

    def _join(self, runner: Any, client_id: str, now: float) -> WorkerEntry:
        worker = f"w{locust_compat.worker_index(runner, client_id)}"
        entry = self.entries[client_id] = WorkerEntry(worker=worker, client_id=client_id, joined_unix=now,
                                                      last_seen_unix=now)
        gevent.spawn(self._probe_clock, runner, entry)
        return entry

    def _lost(self, entry: WorkerEntry, now: float) -> None:
        entry.left_unix, entry.how_left = now, "missing"
        tier, _phase = run_state(self.environment).timeline.tier_at(now)
        seen = f"{now - entry.last_seen_unix:.1f} s ago" if entry.last_seen_unix else "never"
        logger.warning("llmload: worker %s lost (no heartbeat; last seen %s)%s: its users are not replaced",
                       entry.worker, seen, f" during tier {tier.tier}" if tier.tier else "")

    # --- messages ---------------------------------------------------------------------------
    def _on_heartbeat(self, client_id: str, timestamp: float, **_kw: Any) -> None:
        entry = self.entries.get(client_id)
        if entry is not None:
            entry.last_seen_unix = timestamp

    def seen(self, client_id: str, rows: int = 0) -> None:
        """A row shipment from the worker arrived (sink/rows.py), with `rows` sample rows."""
        entry = self.entries.get(client_id)
        if entry is not None:
            entry.last_seen_unix = self.wall()
            entry.rows_shipped += rows

    def _on_report(self, client_id: str, data: dict, **_kw: Any) -> None:
        """Locust's stats report from a worker: its LLM attempts since the last one."""
        entry = self.entries.get(client_id)
        if entry is not None:
            entry.llm_reported += sum(int(e.get("num_requests") or 0) for e in data.get("stats") or ()
                                      if isinstance(e, dict) and e.get("method") == "LLM")

    def _probe_clock(self, runner: Any, entry: WorkerEntry) -> None:
        for _ in range(PROBES * 5):  # unanswered probes (handler not registered yet) are retried
            if entry.left_unix is not None or self._answers.get(entry.client_id, 0) >= PROBES:
                break
            runner.send_message(CLOCK_MESSAGE, {"master_unix": self.wall()}, client_id=entry.client_id)
            gevent.sleep(PROBE_GAP_S)
        if entry.clock_offset_ms is not None and abs(entry.clock_offset_ms) > SKEW_WARN_MS:
            entry.ts_corrected = True
            logger.warning("llmload: worker %s's clock is %+.0f ms off the master's (round trip %.1f ms): "
                           "its samples' times are moved onto the master's clock; run chrony/NTP on every "
                           "machine", entry.worker, entry.clock_offset_ms, entry.clock_rtt_ms)
        if self.on_change is not None:
            self.on_change()

    def _on_clock_answer(self, environment: Any, msg: Any, **_kw: Any) -> None:
        received = self.wall()
        entry = self.entries.get(msg.node_id)
        if entry is None or not isinstance(msg.data, dict):
            return
        sent, worker_unix = float(msg.data["master_unix"]), float(msg.data["worker_unix"])
        offset_ms, rtt_ms = clock_offset_ms(sent, worker_unix, received)
        self._answers[msg.node_id] = self._answers.get(msg.node_id, 0) + 1
        if rtt_ms < self._best_rtt.get(msg.node_id, float("inf")):
            self._best_rtt[msg.node_id] = rtt_ms
            entry.clock_offset_ms, entry.clock_rtt_ms = offset_ms, rtt_ms

    def _on_seen(self, environment: Any, msg: Any, retry: bool = True, **_kw: Any) -> None:
        if msg.node_id not in self.entries:
            self.poll()  # it joined since the last poll
        entry = self.entries.get(msg.node_id)
        if entry is None or not isinstance(msg.data, dict):
            return
        entry.last_seen_unix = self.wall()
        offset_s = (entry.clock_offset_ms or 0.0) / 1000.0
        worker_unix = float(msg.data["worker_unix"]) - offset_s
        timeline = run_state(self.environment).timeline
        anchor = msg.data.get("sent_unix")
        tier = msg.data.get("tier") or timeline.tier_at(float(anchor) if anchor else worker_unix)[0].tier
        start_s = next((t.start_s for t in timeline.tiers() if t.tier == tier), None)
        if tier and start_s is None and retry:  # an open-loop target is sent just before its tier begins
            gevent.spawn_later(0.5, self._on_seen, environment, msg, retry=False)
            return
        if not tier or start_s is None:
            return
        key = (int(tier), float(start_s), entry.worker, str(msg.data["kind"]))
        if key in self.reach:
            return
        reach_ms = (worker_unix - start_s) * 1000.0
        self.reach[key] = {"tier": tier, "worker": entry.worker, "kind": key[3], "reach_ms": round(reach_ms, 1)}
        if reach_ms > REACH_WARN_MS:
            logger.warning("llmload: tier %d reached worker %s %.0f ms after it began", tier, entry.worker, reach_ms)

    def offset_s(self, worker: str) -> float:
        """Seconds to subtract from a worker's unix times to put them on the master's clock (0 unless
        its skew was over SKEW_WARN_MS)."""
        for entry in self.entries.values():
            if entry.worker == worker and entry.ts_corrected and entry.clock_offset_ms is not None:
                return entry.clock_offset_ms / 1000.0
        return 0.0

    def to_json(self) -> dict:
        return {"worker_nodes": [e.to_json() for e in sorted(self.entries.values(), key=lambda e: e.joined_unix)],
                "tier_reach": [self.reach[k] for k in sorted(self.reach)]}


def clock_offset_ms(master_send_unix: float, worker_unix: float, master_receive_unix: float) -> tuple[float, float]:
    """(offset, round trip) in ms of one probe: offset = worker - (master_send + rtt/2)."""
    rtt_s = master_receive_unix - master_send_unix
    return (worker_unix - (master_send_unix + rtt_s / 2.0)) * 1000.0, rtt_s * 1000.0


def book_for(environment: Any) -> WorkerBook | None:
    """The run's WorkerBook (created on first use on a local runner or master, and given to the sink and
    the ramp watch for the workers' clocks; None on a worker or without a runner)."""
    runner = environment.runner
    if runner is None or isinstance(runner, WorkerRunner):
        return None
    state = run_state(environment)
    if state.workers is None:
        state.workers = book = WorkerBook(environment)
        state.sink.worker_offset_s = state.ramps.worker_offset_s = book.offset_s
        state.sink.on_shipment = book.seen
    assert isinstance(state.workers, WorkerBook)  # the state's only WorkerBookPart
    return state.workers


def applied_load(runner: Any) -> Callable[[float, float], dict] | None:
    """tiers.csv's applied-load summary of this run (None without a runner)."""
    book = book_for(runner.environment) if runner is not None else None
    return book.applied.summary if book is not None else None
