"""What one process shares between its users for the run: `RunContext`, on the environment.

Created by the `init` listener (or on first use in tests) as `environment.llmload_run`: the
row sink, the health monitor, the fatal-condition guard, the options validated once at test
start, a per-process request-id prefix, and the transport factory users call.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from locust.runners import WorkerRunner

from llmload.run.guard import RunGuard
from llmload.run.health import HealthMonitor
from llmload.run.options import RunOptions
from llmload.run.sink import RowSink


class RunContext:
    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.token = uuid.uuid4().hex[:6]
        """short per-process prefix making request ids unique across workers and runs"""
        self.sink = RowSink(environment)
        self.health: HealthMonitor | None = None
        self.inflight = 0
        self.model_mismatches = 0
        self.guard = RunGuard()
        """fatal-condition detector of this run (reset at test start)"""
        self.opts: RunOptions | None = None
        """the run's options, validated once at test start (None: invalid or not read yet)"""
        self.started_unix: float | None = None
        self.scenario = ""
        self._user_ids = itertools.count(0)

    @property
    def worker(self) -> str:
        runner = self.environment.runner
        if isinstance(runner, WorkerRunner):
            return f"w{runner.worker_index}"
        return "local"

    def next_user_index(self) -> int:
        return next(self._user_ids)

    def users_now(self) -> int:
        runner = self.environment.runner
        return runner.user_count if runner is not None else 0

    def start_health(self) -> None:
        if self.health is None:
            self.health = HealthMonitor(self.worker, self.sink.add_health, self.users_now, lambda: self.inflight)
        self.health.start()

    @property
    def loop_lag_ms(self) -> float | None:
        return self.health.loop_lag_ms if self.health is not None else None


def context_for(environment: Any) -> RunContext:
    ctx = getattr(environment, "llmload_run", None)
    if ctx is None:
        ctx = environment.llmload_run = RunContext(environment)
    return ctx


def make_transport(opts: RunOptions, user_index: int = 0) -> Any:
    """The `--transport` of the run for one user (the SDK is imported only when chosen)."""
    if opts.transport == "openai":
        from llmload.client.sdk import OpenAITransport

        return OpenAITransport(opts.base_url, opts.api_key, opts.timeouts, user_index=user_index,
                               insecure=opts.insecure)
    from llmload.client.fast import FastTransport

    return FastTransport(opts.base_url, opts.api_key, opts.timeouts, insecure=opts.insecure)
