"""Following the ramps of a run without a load shape (the warm-up rule itself is in warmup.py).

How it works, on every process of a run whose locustfile has no shape:
  * test_start (`start`, given --warmup-seconds by run/lifecycle/listeners.py): `RampWarmup.begin`, and a
    greenlet that every POLL_S (0.2 s) compares the runner's target user count with the one it saw last: a
    growth opens a window from that previous poll (so no attempt sent after the change is missed),
    and a window whose time has come closes (--warmup-seconds, or nothing to wait for);
  * spawning_complete (`on_spawned`): a generating process now waits for the users the ramp added;
    a master for its workers;
  * every attempt's row passes `stamp(row)` on the process that made it (rows.RowSink), before it
    is written or shipped: it gets tier 0 and its phase, and counts for the window if the server
    answered it (status > 0: a connect error or a timeout before the headers warmed nothing);
  * a worker tells the master (`llmload_warm`, its time moved onto the master's clock there) when
    its window closed, or at once when the ramp gave it no users; the master closes its own window
    (the one its LLM tab reads) once every worker has told it.
The process that writes the files logs one line when a warm-up is over. A run with a load shape
leaves all this alone: the shape's tiers decide the phase.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import gevent

from llmload.sink.histograms import number
from llmload.sink.roles import is_master, is_worker
from llmload.sink.warmup import RampWarmup
from llmload.sink.window import scenario_snapshots

WARM_MESSAGE = "llmload_warm"
POLL_S = 0.2
logger = logging.getLogger("llmload")


class RampWatch:
    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.warmup = RampWarmup()
        self.worker_offset_s: Callable[[str], float] = lambda worker: 0.0
        """master: seconds to subtract from a worker's unix times (clock offset; run/distributed/workers.py)"""
        self._greenlet: Any = None
        self._checked_s = 0.0
        self._began_s = 0.0

    @property
    def runner(self) -> Any:
        return self.environment.runner

    def listen(self) -> None:
        """init: the spawning_complete listener, and on a master the workers' reports."""
        self.environment.events.spawning_complete.add_listener(self.on_spawned)
        if is_master(self.runner):
            self.runner.register_message(WARM_MESSAGE, self.on_report)

    def start(self, fixed_s: float | None) -> None:
        """test_start of a run without a shape: begin its first window (`fixed_s`: --warmup-seconds)."""
        self.stop()
        stats = self.environment.stats
        snapshot = dict if is_worker(self.runner) else (lambda: scenario_snapshots(stats))
        now_s = time.time()
        self._checked_s = self._began_s = now_s
        self.warmup.begin(now_s, fixed_s, new_only=not is_master(self.runner), snapshot=snapshot)
        self._greenlet = gevent.spawn(self._poll)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def end(self) -> None:
        """test_start of a run with a shape (its tiers decide the phase), or of one that cannot start."""
        self.stop()
        self.warmup.end()

    def _target(self) -> int:
        return int(getattr(self.runner, "target_user_count", 0) or 0)

    def _sync(self, now_s: float) -> None:
        self.warmup.open_window(self._checked_s, self._target())
        self._checked_s = now_s

    def _poll(self) -> None:
        while self.warmup.active:
            now_s = time.time()
            self._sync(now_s)
            if self.warmup.tick(now_s):
                self._closed()
            gevent.sleep(POLL_S)

    def on_spawned(self, **_kw: Any) -> None:
        """spawning_complete: every user is spawned (on a worker: on every worker)."""
        if not self.warmup.active:
            return
        now_s = time.time()
        self._sync(now_s)
        had_window = self.warmup.current is not None
        workers = self.runner.worker_count if is_master(self.runner) else None
        if self.warmup.spawned(now_s, workers):
            self._closed()
        elif not had_window:
            self._report(now_s)  # the ramp gave this worker no users

    def stamp(self, row: dict) -> None:
        """An attempt just ended on this process: count it, stamp its tier (0) and phase."""
        if not self.warmup.active or row.get("tier") not in (None, ""):
            return
        now_s = time.time()
        answered = int(number(row.get("status")) or 0) > 0
        closed = self.warmup.saw((row.get("worker"), row.get("user")), now_s, now_s, answered)
        row["tier"], row["phase"] = 0, self.warmup.phase_at(float(row["ts_start_s"]))
        if closed:
            self._closed()

    def on_report(self, environment: Any, msg: Any, **_kw: Any) -> None:
        """Master: a worker's warm-up is over."""
        data = msg.data if isinstance(msg.data, dict) else {}
        offset_s = self.worker_offset_s(str(data.get("worker", "")))
        now_s = time.time()
        if self.warmup.saw(msg.node_id, float(data.get("end_s", now_s)) - offset_s, now_s):
            self._closed()

    def _report(self, end_s: float) -> None:
        if is_worker(self.runner):
            worker = f"w{self.runner.worker_index}"
            self.runner.send_message(WARM_MESSAGE, {"worker": worker, "end_s": end_s})

    def _closed(self) -> None:
        window = self.warmup.windows[-1]
        if is_worker(self.runner):
            self._report(window.end_s or time.time())
            return
        after_s = (window.end_s or 0.0) - self._began_s
        if self.warmup.fixed_s is not None:
            why = f"--warmup-seconds {self.warmup.fixed_s:g} after the ramp began, and every user spawned"
        elif is_master(self.runner):
            why = f"each of the {window.counted} workers reported its users' first requests done"
        else:
            why = (f"each of the {window.counted} users the ramp added has had an answer from the server "
                   "(a success or a refusal) after the last spawn")
        logger.info("llmload: warm-up over at +%.1f s (%s); requests sent from now on are phase=measure",
                    after_s, why)
