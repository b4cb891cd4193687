"""SIGTERM for a headless shape run: Locust installs its own handler only after a headless shape run
returns, so the shape installs one at its first tick (`hook`); it ends the shape (`shape.end("SIGTERM")`)
and kills the shape greenlet, and Locust's quit follows as after a finished shape. Only in a `locust`
process (its main() runs on the global events), never inside a test process."""

from __future__ import annotations

import logging
import signal
from typing import Any

import gevent
import locust

from llmload.run import locust_compat

logger = logging.getLogger("llmload.shape")


def hook(shape: Any) -> None:
    if getattr(shape, "_sigterm_hooked", False) or shape.runner is None:
        return
    if shape.runner.environment.events is not locust.events:
        return
    shape._sigterm_hooked = True
    gevent.signal_handler(signal.SIGTERM, on_sigterm, shape)


def on_sigterm(shape: Any) -> None:
    logger.info("got SIGTERM: stopping the run (in-flight requests finish, at most --stop-timeout)")
    shape.end("SIGTERM")
    shape_greenlet = locust_compat.shape_greenlet(shape.runner)
    if shape_greenlet is not None and shape_greenlet is not gevent.getcurrent():
        shape_greenlet.kill(block=False)
