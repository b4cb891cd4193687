"""Abstract streaming Locust users and the listeners a locustfile installs.

A scenario is a few lines:

    from locust import events
    from llmload.users import ChatUser, install

    install(events)                      # options, sample writer, health, run.json

    class Chat(ChatUser):
        scenario = "chat-short"          # the event name in Locust's tables
        prompt_tokens = 64

How an attempt flows: `ask()` builds a StreamRequest (synthetic prompt from
`prompt()`, which a scenario may override), the transport (`--transport fast|openai`)
streams it into a StreamResult, `record()` fires the LLM/TTFT/ITL events and hands one
sample row to the RowSink. With `--retries N`, a 429 or 503 is retried after Retry-After
(else exponential backoff with jitter: 0.5 s * 2^k * U(0.5, 1.5), at most 30 s); a wait is
capped at RETRY_WAIT_CAP_S (60 s) and at what is left of --request-timeout-s counted from
the first attempt (no retry once that budget is spent); every attempt is its own row and
event, the retry's `retry_of` naming the previous attempt. After a failed connect the user
pauses (0.1 s doubling to 2 s, see guard.py) before its next request.

Stopping: options are validated once per process at test start; `guard.RunGuard` sees
every attempt and names the first fatal condition (401 before any success, cannot
connect, endpoint does not stream), which stops the run once with one line (exit code 2).
Users never raise StopUser for it: they idle in Locust's WAITING state until the runner
stops them (a stop kills a waiting user at once). Retry and backoff pauses are waits in
the same sense, so they never outlast the run's stop.

Per process state (row sink, health monitor, counters) lives in a RunContext attached to
the Locust Environment, created by the `init` listener (or on first use in tests).
"""

from __future__ import annotations

import itertools
import logging
import random
import time
import uuid

import gevent
from locust import User, constant, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner
from locust.user.task import LOCUST_STATE_RUNNING, LOCUST_STATE_STOPPING, LOCUST_STATE_WAITING

from llmload.client.request import StreamRequest, StreamResult
from llmload.prompts import Prompt, make_prompt
from llmload.run import files, samples
from llmload.run.guard import RunGuard, failed_to_connect, next_connect_backoff_s
from llmload.run.health import HealthMonitor
from llmload.run.options import OptionError, RunOptions, add_options, read_options
from llmload.run.sink import RowSink, stop_run

logger = logging.getLogger(__name__)

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
RETRY_WAIT_CAP_S = 60.0
"""longest wait before a retry, whatever Retry-After says"""
HALTED_IDLE_S = 1.0


class RunContext:
    """What one process shares between its users for the run."""

    def __init__(self, environment) -> None:
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


def context_for(environment) -> RunContext:
    ctx = getattr(environment, "llmload_run", None)
    if ctx is None:
        ctx = environment.llmload_run = RunContext(environment)
    return ctx


def _on_init(environment, **_kw) -> None:
    samples.use_precise_buckets()
    context_for(environment)


def _write_run_json(environment, ended_unix: float | None = None) -> None:
    ctx = context_for(environment)
    if ctx.sink.run_dir is None or ctx.started_unix is None:
        return
    runner = environment.runner
    # shapes2: the most workers seen during the run (at quit they have already disconnected)
    workers = max(runner.worker_count, ctx.sink.max_workers) if isinstance(runner, MasterRunner) else 1
    info = files.run_info(environment, run_id=ctx.sink.run_dir.name, scenario=ctx.scenario,
                             started_unix=ctx.started_unix, ended_unix=ended_unix, workers=workers)
    files.write_run_json(ctx.sink.run_dir, info)


def _on_test_start(environment, **_kw) -> None:
    import time

    ctx = context_for(environment)
    ctx.scenario = ",".join(sorted(cls.__name__ for cls in environment.user_classes))
    if ctx.sink.writes_files:
        ctx.sink.open(files.resolve_run_dir(getattr(environment.parsed_options, "run_dir", "")))
        ctx.started_unix = time.time()
        _write_run_json(environment)
    if not isinstance(environment.runner, MasterRunner):
        ctx.opts = None
        ctx.guard = RunGuard()
        try:
            opts = read_options(environment)
        except OptionError as exc:
            ctx.guard.halted = str(exc)
            stop_run(environment, str(exc))
            return
        ctx.opts = opts
        ctx.guard.base_url = opts.base_url
        if opts.transport == "openai":  # build the shared SDK client before any user starts
            from llmload.client.sdk import shared_client

            shared_client(opts.base_url, opts.api_key, opts.timeouts, insecure=opts.insecure)
        ctx.start_health()
    ctx.sink.start()


def _on_test_stop(environment, **_kw) -> None:
    ctx = context_for(environment)
    ctx.sink.flush()
    if ctx.model_mismatches:
        logger.warning("llmload: %d answers named another model than requested", ctx.model_mismatches)


def _on_quitting(environment, **_kw) -> None:
    import time

    ctx = context_for(environment)
    runner = environment.runner
    # shapes2: Locust's SIGTERM handler fires `quitting` before it stops the runner: stop it
    # here first, so in-flight requests finish (--stop-timeout) and their rows land before close
    if not isinstance(runner, WorkerRunner) and runner is not None and runner.state in ("spawning", "running"):
        runner.stop()
    if ctx.health is not None:
        ctx.health.stop()
    ctx.sink.stop()
    _write_run_json(environment, ended_unix=time.time())
    ctx.sink.close_files()


_installed: set[int] = set()


def install(events) -> None:
    """Register llmload's options and listeners on a Locust `events` object (once)."""
    if id(events) in _installed:
        return
    _installed.add(id(events))
    events.init_command_line_parser.add_listener(add_options)
    events.init.add_listener(_on_init)
    events.test_start.add_listener(_on_test_start)
    events.test_stop.add_listener(_on_test_stop)
    events.quitting.add_listener(_on_quitting)


def make_transport(opts: RunOptions, user_index: int = 0):
    if opts.transport == "openai":
        from llmload.client.sdk import OpenAITransport

        return OpenAITransport(opts.base_url, opts.api_key, opts.timeouts, user_index=user_index,
                               insecure=opts.insecure)
    from llmload.client.fast import FastTransport

    return FastTransport(opts.base_url, opts.api_key, opts.timeouts, insecure=opts.insecure)


def backoff_s(attempt: int, rng: random.Random) -> float:
    """Delay before retry number `attempt` (0-based) when the server gave no Retry-After."""
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt) * rng.uniform(0.5, 1.5)


def is_retryable(result: StreamResult) -> bool:
    return result.error == "rate_limited" or (result.error == "http_5xx" and result.status == 503)


class LLMUser(User):
    """Streams completions back to back and reports them (abstract: subclass it)."""

    abstract = True
    wait_time = constant(0)
    endpoint: str | None = None
    """chat | completions; None: the --endpoint option"""
    scenario: str | None = None
    """name of the LLM/TTFT/ITL events and the samples' `scenario`; default: the class name"""
    prompt_tokens: int | None = None
    """approximate prompt length; None: --prompt-tokens"""
    max_tokens: int | None = None
    """None: --max-tokens"""
    extra_body: dict | None = None
    """extra JSON fields of every request (temperature, seed, ...)"""

    def on_start(self) -> None:
        self.ctx = context_for(self.environment)
        self.opts = self.ctx.opts
        if self.opts is None and not self.ctx.guard.halted:  # test_start did not read them (no install())
            try:
                self.opts = self.ctx.opts = read_options(self.environment)
                self.ctx.guard.base_url = self.opts.base_url
            except OptionError as exc:
                self.ctx.guard.halted = str(exc)
                stop_run(self.environment, str(exc))
        self.user_index = self.ctx.next_user_index()
        self.user_id = f"{self.ctx.worker}-{self.user_index}"
        self.transport = make_transport(self.opts, self.user_index) if self.opts is not None else None
        self.label = self.scenario or type(self).__name__
        self.rng = random.Random()
        self._request_seq = itertools.count(1)
        self._connect_backoff_s = 0.0

    def on_stop(self) -> None:
        transport = getattr(self, "transport", None)
        if transport is not None:
            transport.close()

    def stop(self, force: bool = False) -> bool:
        # Two runner stops can race (ours after a fatal error, and the end of the shape / run
        # time): Locust raises when a user already stopping gracefully is asked again. A second
        # graceful stop changes nothing, so it is a no-op here.
        if not force and self._state == LOCUST_STATE_STOPPING:
            return False
        return super().stop(force)

    def _pause(self, seconds: float) -> bool:
        """Sleep as Locust's wait does (a stop ends the user at once); False if it is stopping."""
        if self._state == LOCUST_STATE_STOPPING:
            return False
        running = self._state == LOCUST_STATE_RUNNING
        if running:
            self._state = LOCUST_STATE_WAITING
        gevent.sleep(seconds)
        if running and self._state == LOCUST_STATE_WAITING:
            self._state = LOCUST_STATE_RUNNING
        return self._state != LOCUST_STATE_STOPPING

    def idle_while_halted(self) -> None:
        """After a fatal stop (or with invalid options) send nothing until the runner stops the user."""
        while self.opts is None or self.ctx.guard.halted:
            if not self._pause(HALTED_IDLE_S):
                raise StopUser()  # Locust's own graceful-stop path (as its wait() does): no traceback

    def prompt(self) -> Prompt:
        """The next prompt; override for datasets, shared prefixes, repeats."""
        return make_prompt(self.prompt_tokens or self.opts.prompt_tokens, self.rng)

    @task
    def _one_request(self) -> None:
        self.idle_while_halted()
        # dispatch through the instance: @task captured this function at class creation,
        # so a subclass overriding `stream_completion` would otherwise never be called
        self.stream_completion()

    def stream_completion(self) -> None:
        """One unit of work of the user; override to build messages, chain turns, etc."""
        self.ask()

    def ask(self, prompt: Prompt | None = None, *, messages: list[dict] | None = None,
            max_tokens: int | None = None, schedule_lag_ms: float | None = None) -> StreamResult:
        """Stream one completion (with up to --retries retries); returns the last attempt."""
        self.idle_while_halted()
        prompt = prompt or self.prompt()
        retry_of = ""
        attempt = 0
        budget_end_s = time.monotonic() + self.opts.timeouts.request_timeout_s
        while True:
            req = StreamRequest(
                endpoint=self.endpoint or self.opts.endpoint, model=self.opts.model, prompt=prompt.text,
                max_tokens=max_tokens or self.max_tokens or self.opts.max_tokens,
                request_id=f"{self.ctx.token}-{self.user_id}-{next(self._request_seq)}",
                input_tokens_estimate=prompt.approx_tokens, retry_of=retry_of, messages=messages,
                extra_body=self.extra_body,
            )
            self.ctx.inflight += 1
            try:
                result = self.transport.stream(req)
            finally:
                self.ctx.inflight -= 1
            self.record(result, schedule_lag_ms)
            if failed_to_connect(result):
                # a down or unreachable server: pause before the next attempt instead of hammering it
                self._connect_backoff_s = next_connect_backoff_s(self._connect_backoff_s)
                self._pause(self._connect_backoff_s)
                return result
            if result.status:
                self._connect_backoff_s = 0.0
            if result.ok or attempt >= self.opts.retries or not is_retryable(result) or self.ctx.guard.halted:
                return result
            delay_s = result.retry_after_s
            if delay_s is None:
                delay_s = backoff_s(attempt, self.rng)
            left_s = budget_end_s - time.monotonic()
            if left_s <= 0 or not self._pause(min(delay_s, RETRY_WAIT_CAP_S, left_s)):
                return result  # request budget spent, or the user is stopping: no retry
            attempt += 1
            retry_of = result.request_id
            schedule_lag_ms = None

    def record(self, result: StreamResult, schedule_lag_ms: float | None = None) -> None:
        """Fire the events of one attempt, write its sample row, stop the run on a fatal condition."""
        ctx = self.ctx
        samples.fire_events(self.environment.events.request, self.label, result)
        ctx.sink.add_sample(samples.sample_row(
            result, worker=ctx.worker, user=self.user_id, scenario=self.label, users_now=ctx.users_now(),
            schedule_lag_ms=schedule_lag_ms, loop_lag_ms=ctx.loop_lag_ms,
        ))
        if result.ok and result.model_returned and result.model_returned != result.model_requested:
            ctx.model_mismatches += 1
            if ctx.model_mismatches == 1:
                logger.warning("llmload: asked for model %r, the answer names %r (silent downgrade?)",
                               result.model_requested, result.model_returned)
        reason = ctx.guard.observe(result, time.monotonic())
        if reason:
            stop_run(self.environment, reason)


class ChatUser(LLMUser):
    """Streams /v1/chat/completions (abstract)."""

    abstract = True
    endpoint = "chat"


class CompletionsUser(LLMUser):
    """Streams /v1/completions (abstract)."""

    abstract = True
    endpoint = "completions"
