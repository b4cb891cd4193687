"""Stopping the whole run with one clear line, from any process.

The process that steers the run (local runner or master) logs the reason, sets exit code 2
and quits (headless) or stops (web UI). A worker cannot stop the run: it forwards the reason
to the master with a `llmload_stop` message (`listen` registers the master's handler).
"""

from __future__ import annotations

import logging
from typing import Any

import gevent
from locust.runners import MasterRunner, WorkerRunner

from llmload.run.options.settings import settings_of
from llmload.run.state import run_state

STOP_MESSAGE = "llmload_stop"
logger = logging.getLogger("llmload")


def stop_run(environment: Any, reason: str) -> None:
    """Stop the whole run with one clear line (the master / local runner decides)."""
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        # Locust hints `data` as a dict, but any msgpack-serialisable value travels; the master's
        # handler (listen) reads str(msg.data)
        runner.send_message(STOP_MESSAGE, reason)  # type: ignore[arg-type]
        return
    logger.error(reason)
    run_state(environment).stop_reason = reason  # run.json's end (run/lifecycle/ending.py)
    environment.process_exit_code = 2
    headless = settings_of(environment).headless
    gevent.spawn(runner.quit if headless else runner.stop)


def listen(environment: Any) -> None:
    """On a master: stop the run when a worker forwards a fatal condition."""
    runner = environment.runner
    if isinstance(runner, MasterRunner):
        runner.register_message(STOP_MESSAGE, lambda environment, msg, **_kw: stop_run(environment, str(msg.data)))
