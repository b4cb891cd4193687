"""`RunState`: everything one process keeps for its run, declared in one place.

How it works: `run_state(environment)` gives the environment's state, created on first use (by
the `init` listener, or a test) and kept under one attribute of the environment (`ATTRIBUTE`);
nothing else is hung on Locust's environment. Every field is declared in `__init__` with its
docstring on the line under it, as Locust's own `Environment` declares its attributes. Creating
the state starts nothing: the message handlers and listeners of its parts are registered by the
`init` listener (run/lifecycle/listeners.py).

The state imports none of the parts that read it (watch/, export/, distributed/, lifecycle/ import the state):
the parts a process builds for its run are declared by what the state's readers call on them (`HealthPart`,
`ScraperPart`, `WorkerBookPart`) and put in by their owners (the init and test_start listeners, the worker book).

A field that a higher layer fills is declared here all the same, so the data contract lives with
the readers: the load shape (shaping/) writes `shape_info`, which run.json (run/export/files.py), the end
reason (run/lifecycle/ending.py) and the SDK's ceiling (run/watch/overload.py) read; the web UI (webui/) puts its
tab in `webui`.

The state also builds, once per process, what the process's users share: the dataset
(`dataset_items`) and the prompt sizer (`prompt_sizer`): a tokenizer, or one calibration probe
sent by the first user that needs it (the others wait for it; the probe is not a sample). The
sizing method lands in run.json as the option `prompt_token_sizing`, the dataset's counts (records
read, loaded, skipped by reason) as the option `dataset_records`.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import gevent.event

from llmload.client.apis import IMAGE_APIS, NOT_GENERATING
from llmload.client.request import StreamRequest
from llmload.run.failures.guard import RunGuard
from llmload.run.failures.outage import OutageWatch
from llmload.run.failures.repeats import RepeatedErrors
from llmload.run.options.settings import RunOptions
from llmload.run.options.targets import RoundRobin
from llmload.sink.ramps import RampWatch
from llmload.sink.roles import is_worker
from llmload.sink.rows import RowSink
from llmload.sink.timeline import Timeline
from llmload.workload.dataset import DatasetItem, load_dataset
from llmload.workload.images import ImagePool
from llmload.workload.sizing import PROBE_WORDS, CalibratedSizer, TokenizerSizer, probe_text

if TYPE_CHECKING:
    from llmload.server.launch import EmbeddedServer

ATTRIBUTE = "llmload_state"
"""the one attribute of Locust's environment that llmload sets: its RunState"""
logger = logging.getLogger("llmload")


class HealthPart(Protocol):
    """run/watch/health.py's HealthMonitor of a generating process, as the state's readers use it"""
    capacity: Any

    @property
    def loop_lag_ms(self) -> float: ...
    def start(self) -> None: ...
    def pause(self) -> bool: ...
    def stop(self) -> None: ...


class ScraperPart(Protocol):
    """run/export/server_metrics.py's scrapers of the target's /metrics, as the state's readers use them"""
    def waiting_mean(self, start_s: float, end_s: float) -> float: ...
    def queue_len(self, start_s: float, end_s: float) -> float: ...
    def stop(self) -> None: ...


class WorkerBookPart(Protocol):
    """run/distributed/workers.py's WorkerBook (local runner or master), as the state's readers use it"""
    applied: Any

    def send_tiers(self) -> None: ...


class RunState:
    redirects_not_followed: Sequence[dict] = ()
    """this run's side requests answered with a redirect to another origin (run.json; client/outbound.py)"""

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        """the Locust environment this state belongs to"""
        self.token = uuid.uuid4().hex[:6]
        """short per-process prefix making request ids unique across workers and runs"""
        self.opts: RunOptions | None = None
        """the run's options, validated at test start on a generating process (None: invalid, unread, a master)"""
        self.guard = RunGuard()
        """fatal-condition detector of this run (reset at test start)"""
        self.outage = OutageWatch()
        """the server went away after answering: live lines, server_gone rows, the stop (run/failures/outage.py)"""
        self.scenario = ""
        """the run's user classes, comma-joined (run.json `scenario`)"""
        self.run_dir: Path | None = None
        """the folder the current run writes to (run/export/files.py claims it; None between runs)"""
        self.last_run_dir: Path | None = None
        """the folder the last ended run wrote to (the web UI's files and report after the run)"""
        self.started_unix: float | None = None
        """when the run's files were opened (run.json `started_unix`; None before the first run)"""
        self.end: dict | None = None
        """how the run ended (run.json `end`, run/lifecycle/ending.py); None while it runs"""
        self.stop_reason: str | None = None
        """the line a fatal stop logged (run/lifecycle/stop.py; run.json `end`: `fatal: ...`)"""
        self.signal: str | None = None
        """SIGINT or SIGTERM when one interrupted the run (run/lifecycle/ending.py)"""
        self.signals_watched = False
        """run/lifecycle/ending.py's signal watchers are installed (once per process)"""
        self.sigterm_watcher: Any = None
        """the gevent SIGTERM watcher beside Locust's (kept so it is not collected)"""
        self.shape_info: dict[str, Any] = {}
        """run.json's `shape`: the shape's plan and, once it ended, why (`stopped`); {} without a shape"""
        self.timeline = Timeline()
        """the tier timeline: written by the shape, rows stamped from it, the web UI's per-tier snapshots"""
        self.ramps = RampWatch(environment)
        """the warm-up windows of a run without a shape (sink/ramps.py)"""
        self.sink: RowSink = RowSink(environment, self.timeline, self.ramps)
        """where sample, health and histogram rows go (sink/rows.py)"""
        self.workers: WorkerBookPart | None = None
        """the local runner's or master's worker book (run/distributed/workers.py; None on a worker)"""
        self.health: HealthPart | None = None
        """event-loop lag and CPU of this generating process (run/watch/health.py; started at test start)"""
        self.server_metrics: ScraperPart | None = None
        """the scrapers of the target's /metrics (and a GPU exporter's) during a run (run/export/server_metrics.py)"""
        self.inflight = 0
        """requests of this process on the wire now (health.csv `inflight`)"""
        self.repeats = RepeatedErrors()
        """errors that escaped a request, logged once per kind with a count (run/failures/crash.py, repeats.py)"""
        self.model_mismatches = 0
        """answers that named another model than requested (one warning at test stop)"""
        self.warnings: dict[str, str] = {}
        """the live warnings the web UI shows, key -> sentence (run/watch/overload.py posts them)"""
        self.gate_output = ""
        """what --check-slo's check printed (run/lifecycle/gate.py), shown after Locust's summary"""
        self.embedded_server: EmbeddedServer | None = None
        """the embedded server started for `--host embedded` (run/lifecycle/embedded.py)"""
        self.webui: Any = None
        """the web UI's LLM tab on the process serving the UI (webui/tab.py); None elsewhere"""
        self._init_shared()

    def _init_shared(self) -> None:
        """What the process's users share, built on first use (module docstring)."""
        self._user_ids = itertools.count(0)
        self._dataset: tuple[str, list[DatasetItem]] | None = None
        self._sizer: Any = None
        self._sizing: gevent.event.Event | None = None
        self.round_robin: RoundRobin | None = None
        """which target each request of this process goes to (run/options/targets.py; built at test start)"""
        self.image_pool: ImagePool | None = None
        """the --images of this process's chat, responses and messages requests (workload/images.py; generated at
        test start)"""

    def begin_run(self) -> None:
        """A new run on this process (a run without a shape after a shape's, a start from the web UI): nothing of
        an earlier run's tiers, shape record, end or warnings stays (a shape's first tick then writes its own)."""
        self.shape_info = {}
        self.timeline.reset()
        self.end = None
        self.warnings.clear()

    @property
    def worker_index(self) -> int:
        runner = self.environment.runner
        return runner.worker_index if is_worker(runner) else 0

    @property
    def worker(self) -> str:
        """w0, w1, ... on a worker, else local: the `worker` of this process's rows."""
        runner = self.environment.runner
        if is_worker(runner):
            return f"w{runner.worker_index}"
        return "local"

    def prepare_requests(self, opts: RunOptions) -> None:
        """At test start, before users start: the round robin over the targets, the images generated once."""
        self.round_robin = RoundRobin(tuple(t.weight for t in opts.targets) or (1.0,))
        self.image_pool = ImagePool(opts.images, opts.workload.seed) if opts.images.active else None

    def next_images(self, endpoint: str) -> tuple[str, ...]:
        """The images of the next request (chat, responses, messages: IMAGE_APIS; () without --images)."""
        return self.image_pool.next() if self.image_pool is not None and endpoint in IMAGE_APIS else ()

    def next_user_index(self) -> int:
        return next(self._user_ids)

    def users_now(self) -> int:
        runner = self.environment.runner
        return runner.user_count if runner is not None else 0

    @property
    def loop_lag_ms(self) -> float | None:
        return self.health.loop_lag_ms if self.health is not None else None

    def dataset_items(self, path: str) -> list[DatasetItem]:
        """The --dataset's requests, read once per process (DatasetError: one line)."""
        if self._dataset is None or self._dataset[0] != path:
            dataset = load_dataset(path)
            self._dataset = (path, dataset.items)
            if self.environment.parsed_options is not None:
                self.environment.parsed_options.dataset_records = dataset.facts()
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
                probe = StreamRequest(endpoint=endpoint if endpoint not in NOT_GENERATING else "chat", model=opts.model,
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


def run_state(environment: Any) -> RunState:
    """The environment's RunState (created on first use; module docstring)."""
    state = getattr(environment, ATTRIBUTE, None)
    if state is None:
        state = RunState(environment)
        setattr(environment, ATTRIBUTE, state)
    return state
