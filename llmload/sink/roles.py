"""The part a process plays in a Locust run: the master, a worker, or neither (a local runner).

Locust's runner classes are imported on first use, not with this module: importing the run's state
(run/state.py) and its parts must not import Locust, whose import gevent-patches the process, so the
web UI, which reads that state, stays importable in a process Locust has not patched (its unit
tests share their process with the browser tests' Playwright).
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def _runner_classes() -> tuple[type, type]:
    from locust.runners import MasterRunner, WorkerRunner

    return MasterRunner, WorkerRunner


def is_master(runner: Any) -> bool:
    return isinstance(runner, _runner_classes()[0])


def is_worker(runner: Any) -> bool:
    return isinstance(runner, _runner_classes()[1])
