"""The end of a distributed run: workers finish in-flight requests and ship their rows first.

Locust's `MasterRunner.quit()` (shape finished, -t, SIGTERM) tells workers to quit and stops
listening 0.5 s later, while workers are still finishing in-flight requests: their last rows
(and stats) would be lost. So when the master fires `test_stopping` it sends every connected
worker `llmload_drain`; a worker stops its users gracefully (in-flight requests finish, bounded
by --stop-timeout), ships its outbox and answers `llmload_drained`; the master waits for every
connected worker's answer (at most --stop-timeout + DRAIN_MARGIN_S) before Locust goes on to
stop and quit. A worker lost meanwhile is not waited for.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from gevent.event import Event

from llmload.run.locust_compat import connected_workers
from llmload.sink.roles import is_master, is_worker

DRAIN_MESSAGE = "llmload_drain"
DRAINED_MESSAGE = "llmload_drained"
DRAIN_MARGIN_S = 10.0
logger = logging.getLogger("llmload")


class Drain:
    def __init__(self, environment: Any, ship: Any, before: Any = None) -> None:
        """`ship()` sends a worker's outbox to the master now; `before(environment)` runs on the master
        just before the workers are asked to drain (the last tier timeline they get: run/distributed/workers.py)."""
        self.environment = environment
        self.ship = ship
        self.before = before
        self._drained: set[str] = set()
        self._event = Event()

    def listen(self) -> None:
        """init: the master waits for the workers at test_stopping; a worker answers the master."""
        environment = self.environment
        runner = environment.runner
        if is_master(runner):
            runner.register_message(DRAINED_MESSAGE, self._receive_drained)
            environment.events.test_stopping.add_listener(self.drain_workers)
        elif is_worker(runner):
            # concurrent: the worker's message loop keeps running (heartbeats) while users finish
            runner.register_message(DRAIN_MESSAGE, self._on_drain, concurrent=True)

    def drain_workers(self, environment: Any, **_kw: Any) -> None:
        """Master, test_stopping: wait until every worker finished and shipped (module docstring)."""
        runner = environment.runner
        waiting = set(connected_workers(runner))
        if not waiting:
            return
        self._drained = set()
        if self.before is not None:
            self.before(environment)
        timeout_s = float(environment.stop_timeout or 0.0) + DRAIN_MARGIN_S
        logger.info("llmload: waiting for %d workers to finish in-flight requests (at most %.0f s)",
                    len(waiting), timeout_s)
        for client_id in sorted(waiting):
            runner.send_message(DRAIN_MESSAGE, None, client_id=client_id)
        deadline = time.monotonic() + timeout_s
        while True:
            self._event.clear()
            pending = (waiting - self._drained) & set(connected_workers(runner))
            left = deadline - time.monotonic()
            if not pending or left <= 0:
                break
            self._event.wait(min(left, 1.0))
        if pending:
            logger.warning("llmload: %d workers did not finish within --stop-timeout + %.0f s; "
                           "their last rows may be missing", len(pending), DRAIN_MARGIN_S)

    def _receive_drained(self, environment: Any, msg: Any, **_kw: Any) -> None:
        self._drained.add(msg.node_id)
        self._event.set()

    def _on_drain(self, environment: Any, msg: Any, **_kw: Any) -> None:
        """Worker: stop users gracefully (test_stop ships the rows), then answer."""
        runner = environment.runner
        try:
            runner.stop()
        finally:
            self.ship()
            runner.send_message(DRAINED_MESSAGE, None)
