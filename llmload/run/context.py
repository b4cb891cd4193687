"""What one process shares between its users for the run: `RunContext`, on the environment.

Created by the `init` listener (or on first use in tests) as `environment.llmload_run`: the
row sink, the health monitor, the fatal-condition guard, the options validated once at test
start, a per-process request-id prefix, the warm-up of a run without a shape (`ramps`, whose
`stamp` sees every attempt's row first: `RunSink`), and the transport factory users call.

Workload parts shared by the process's users are built once, on first use: the dataset
(`dataset_items`) and the prompt sizer (`prompt_sizer`): a tokenizer, or one calibration probe
sent by the first user that needs it (the others wait for it; the probe is not a sample). The
sizing method lands in run.json as the option `prompt_token_sizing`.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from typing import Any

import gevent.event
from locust.runners import WorkerRunner

from llmload.client.request import StreamRequest
from llmload.run import overload
from llmload.run.guard import RunGuard
from llmload.run.health import HealthMonitor
from llmload.run.options import RunOptions
from llmload.run.ramps import RampWatch
from llmload.run.sink import RowSink
from llmload.workload.dataset import DatasetItem, load_dataset
from llmload.workload.sizing import PROBE_WORDS, CalibratedSizer, TokenizerSizer, probe_text

logger = logging.getLogger("llmload")


class RunSink(RowSink):
    """The row sink, with each attempt's row shown to the ramp watch first (a plain run's phase)."""

    def __init__(self, environment: Any, ramps: RampWatch) -> None:
        super().__init__(environment)
        self.ramps = ramps

    def add_sample(self, row: dict) -> None:
        self.ramps.stamp(row)
        super().add_sample(row)


class RunContext:
    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.token = uuid.uuid4().hex[:6]
        """short per-process prefix making request ids unique across workers and runs"""
        self.ramps = RampWatch(environment)
        """the warm-up windows of a run without a shape (run/ramps.py)"""
        self.sink: RowSink = RunSink(environment, self.ramps)
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
        self._dataset: tuple[str, list[DatasetItem]] | None = None
        self._sizer: Any = None
        self._sizing: gevent.event.Event | None = None

    @property
    def worker_index(self) -> int:
        runner = self.environment.runner
        return runner.worker_index if isinstance(runner, WorkerRunner) else 0

    def dataset_items(self, path: str) -> list[DatasetItem]:
        """The --dataset's requests, read once per process (DatasetError: one line)."""
        if self._dataset is None or self._dataset[0] != path:
            self._dataset = (path, load_dataset(path))
        return self._dataset[1]

    def prompt_sizer(self, opts: RunOptions, transport: Any, endpoint: str) -> Any:
        """The process's token sizer: the --tokenizer, else calibrated by one probe (SizingError: one line)."""
        if self._sizing is not None:
            self._sizing.wait()
            if self._sizer is not None:
                return self._sizer
        self._sizing = gevent.event.Event()
        try:
            if opts.workload.tokenizer:
                self._sizer = TokenizerSizer(opts.workload.tokenizer)
            else:
                probe = StreamRequest(endpoint=endpoint if endpoint != "embeddings" else "chat", model=opts.model,
                                      prompt=probe_text(), max_tokens=1, request_id=f"{self.token}-calibrate",
                                      stream=opts.stream)
                result = transport.stream(probe)
                self._sizer = CalibratedSizer.from_probe(PROBE_WORDS, result.input_tokens if result.ok else None)
            logger.info("llmload: prompt token sizing %s", self._sizer.describe())
            if self.environment.parsed_options is not None:
                self.environment.parsed_options.prompt_token_sizing = self._sizer.describe()
        finally:
            self._sizing.set()
        return self._sizer

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
            self.health = HealthMonitor(self.worker, self.sink.add_health, self.users_now, lambda: self.inflight,
                                        on_overload=lambda text: overload.announce(self.environment, self.worker, text))
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
                               insecure=opts.insecure, headers=opts.headers, query=opts.query,
                               api_key_header=opts.api_key_header)
    from llmload.client.fast import FastTransport

    return FastTransport(opts.base_url, opts.api_key, opts.timeouts, insecure=opts.insecure, headers=opts.headers,
                         query=opts.query, api_key_header=opts.api_key_header)
