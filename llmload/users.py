"""The abstract streaming Locust users a scenario subclasses: LLMUser, ChatUser, CompletionsUser (more: api_users.py).

A scenario is a few lines (see `llmload.scenario.install` for what the one call registers):

    from locust import events

    import llmload.scenario
    from llmload.users import ChatUser

    llmload.scenario.install(events)

    class Chat(ChatUser):
        scenario = "chat-short"          # the event name in Locust's tables
        prompt_tokens = 64

Workloads (`--dataset`, `--input-tokens`, `--output-tokens`, `--repeat-ratio`, `--turns`, `--seed`; docs/workloads.md):
a seeded `PromptSource` (llmload/workload/) hands each user the next prompt, max_tokens and label, unless the
scenario overrides `prompt()`; `--cache warm|cold`: run/cache.py; `--images`: RunState.next_images. Request knobs
(`--extra-body`, `--header`, `--stream`, `--output-len-mode`) have class-attribute twins (`extra_body`, `headers`,
`stream`, `output_len_mode`); an instance's `request_headers` go on its next requests (agent sessions: llmload/agent/).

How an attempt flows: `ask()` builds a StreamRequest (synthetic prompt from `prompt()`, which a scenario may
override), the transport (`--transport fast|openai`) streams it into a StreamResult, `record()` fires the LLM/TTFT/ITL
events and hands one sample row to the sink. With `--retries N`, a 429 or 503 is retried (run/retry.py); every attempt
is its own row and event, the retry's `retry_of` naming the previous attempt. A broken target is not hammered: after a
failed connect the user pauses (0.1 s doubling to 2 s), after a 429 it waits the server's hint (`--on-429 wait`, the
default; a hint above `--max-retry-wait-s` is a `retry_after_too_long` failure instead), and after 3 consecutive other
failures it backs off (`--failure-backoff`, 0.1 s doubling to 5 s with jitter: run/retry.py, run/failures/guard.py).

Stopping: the run's RunGuard names the first fatal condition (401 before any success, cannot connect, no stream,
the first 20 requests all one 4xx, a server gone: run/failures/outage.py) and stops the run once, with one line
(exit code 2); users idle in Locust's WAITING state (as in retry and backoff pauses) until the runner stops them. A
confirmation window (shaping/confirm.py) turns a closed loop into arrivals on a clock: one user per process sends them.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import random
import time
from typing import Any

from locust import User, constant, task
from locust.exception import InterruptTaskSet, RescheduleTask, StopUser

from llmload.client.apis import CHAT_APIS
from llmload.client.request import StreamRequest, StreamResult
from llmload.openloop import user as openloop_user
from llmload.prompts import Prompt, make_prompt
from llmload.run.cache import controlled
from llmload.run.events import fire_events
from llmload.run.export.files import without_userinfo
from llmload.run.failures.crash import crashed
from llmload.run.failures.guard import FailureBackoff, failed_to_connect, next_connect_backoff_s
from llmload.run.lifecycle.stop import stop_run
from llmload.run.locust_compat import pause_user, user_is_stopping
from llmload.run.options.settings import OptionError, RunOptions, read_options
from llmload.run.retry import NextStep, mark_too_long, next_step
from llmload.run.state import run_state
from llmload.run.transport import make_transport
from llmload.sink.samples import sample_row
from llmload.workload.dataset import DatasetError
from llmload.workload.sizing import SizingError
from llmload.workload.source import PromptSource
from llmload.workload.spec import WorkloadSpec

logger = logging.getLogger(__name__)

HALTED_IDLE_S = 1.0


class LLMUser(User):
    """Streams completions back to back and reports them (abstract: subclass it)."""

    abstract = True
    wait_time = constant(0)
    endpoint: str | None = None
    """chat | completions | embeddings | responses | messages | rerank; None: the --api (--endpoint) option"""
    scenario: str | None = None
    """name of the LLM/TTFT/ITL events and the samples' `scenario`; default: the class name"""
    prompt_tokens: int | None = None
    """approximate prompt length; None: --prompt-tokens"""
    max_tokens: int | None = None
    """None: --max-tokens"""
    extra_body: dict | None = None
    """extra JSON fields of every request (temperature, seed, ...), merged over --extra-body"""
    headers: dict | None = None
    """extra request headers of this class, merged over --header"""
    stream: bool | None = None
    """None: --stream / --no-stream"""
    output_len_mode: str | None = None
    """usage | ignore-eos | min-tokens; None: --output-len-mode"""
    request_headers: dict[str, str] | None = None

    def on_start(self) -> None:
        self.ctx = run_state(self.environment)
        self.opts = self.ctx.opts
        if self.opts is None and not self.ctx.guard.halted:  # test_start did not read them (no install())
            try:
                self.opts = self.ctx.opts = read_options(self.environment)
                self.ctx.guard.base_url = without_userinfo(self.opts.base_url)
            except OptionError as exc:
                self.ctx.guard.halted = str(exc)
                stop_run(self.environment, str(exc))
        self.user_index = self.ctx.next_user_index()
        self.user_id = f"{self.ctx.worker}-{self.user_index}"
        if self.opts is not None and self.headers:
            self.opts = dataclasses.replace(self.opts, headers={**self.opts.headers, **self.headers})
        self.transport: Any = None if self.opts is None else make_transport(
            self.opts, self.user_index, self.ctx.round_robin, self.endpoint or "")
        if self.transport is not None:
            self.transport.prepare()  # untimed: the first request pays its connect, nothing else
        self.label = self.scenario or type(self).__name__
        self.rng = random.Random()
        self.source = self._prompt_source() if self.opts is not None else None
        self._request_seq = itertools.count(1)
        self._connect_backoff_s = 0.0
        self._rate_limited_streak = 0
        self._failures = FailureBackoff()

    @property
    def options(self) -> RunOptions:
        """The run's options; set whenever the user sends (`idle_while_halted` waits for them)."""
        assert self.opts is not None, "options read before they were validated"
        return self.opts

    def workload_spec(self, spec: WorkloadSpec) -> WorkloadSpec:
        """The workload of this user class; override to fix a grid or a sweep (the options' by default)."""
        return spec

    def _prompt_source(self) -> PromptSource | None:
        """The user's seeded workload (None: no workload option given, or prompt() overridden)."""
        spec = self.workload_spec(self.options.workload)
        if not spec.active or type(self).prompt is not LLMUser.prompt:
            return None
        endpoint = self.endpoint or self.options.endpoint
        try:
            items = self.ctx.dataset_items(spec.dataset) if spec.dataset else None
            sizer = self.ctx.prompt_sizer(self.options, self.transport, endpoint) if spec.needs_sizer else None
        except (DatasetError, SizingError) as exc:
            self.ctx.guard.halted = str(exc)
            stop_run(self.environment, str(exc))
            return None
        return PromptSource(spec, base_label=self.label, user_index=self.user_index,
                            worker_index=self.ctx.worker_index, items=items, sizer=sizer,
                            prompt_words=self.prompt_tokens or self.options.prompt_tokens, chat=endpoint in CHAT_APIS)

    def on_stop(self) -> None:
        openloop_user.close_transports(self)  # a confirmation window's (or an open-loop user's) own transports
        if getattr(self, "transport", None) is not None:
            self.transport.close()

    def stop(self, force: bool = False) -> bool:
        # two runner stops can race (a fatal error's, the shape's end): Locust raises when a user already stopping
        # gracefully is asked again; a second graceful stop changes nothing, so it is a no-op here
        return False if not force and user_is_stopping(self) else super().stop(force)

    def _pause(self, seconds: float) -> bool:
        """Sleep as Locust's wait does (a stop ends the user at once; a confirmation window's start wakes it, so a
        user parked on a Retry-After serves the window's arrivals on time); False if it is stopping."""
        return pause_user(self, seconds, openloop_user.CONTROL.changed)

    def idle_while_halted(self) -> None:
        """After a fatal stop (or with invalid options) send nothing until the runner stops the user."""
        while self.opts is None or self.ctx.guard.halted:
            if not self._pause(HALTED_IDLE_S):
                raise StopUser()  # Locust's own graceful-stop path (as its wait() does): no traceback

    def prompt(self) -> Prompt:
        """The next prompt; override for datasets, shared prefixes, repeats."""
        return make_prompt(self.prompt_tokens or self.options.prompt_tokens, self.rng)

    @task
    def _one_request(self) -> None:
        self.idle_while_halted()
        if openloop_user.CONTROL.target is not None:  # a confirmation window: the planned rate on a clock
            return openloop_user.serve(self)  # (llmload.shaping.confirm; one user per process, until it stops)
        # dispatch through the instance: @task captured this function at class creation,
        # so a subclass overriding `stream_completion` would otherwise never be called
        try:
            self.stream_completion()
        except (StopUser, RescheduleTask, InterruptTaskSet):
            raise  # Locust's control flow
        except Exception as exc:  # logged once per kind with a count, secrets redacted, then a pause
            crashed(self, exc)

    def stream_completion(self) -> None:
        """One unit of work of the user; override to build messages, chain turns, etc."""
        if self.source is None:
            self.ask()
            return
        item = self.source.next()
        result = self.ask(Prompt(item.prompt, item.approx_tokens or 0), messages=item.messages,
                          max_tokens=item.max_tokens, label=item.label, workload=item.columns)
        self.source.answered(result.text if result.ok else "")

    def ask(self, prompt: Prompt | None = None, *, messages: list[dict] | None = None,
            max_tokens: int | None = None, schedule_lag_ms: float | None = None, label: str | None = None,
            workload: dict | None = None) -> StreamResult:
        """Stream one completion (with up to --retries retries); returns the last attempt.

        Before it returns, a closed-loop user pauses as run/retry.py (--on-429) and the failure
        backoff (run/failures/guard.py) say; an open-loop arrival (`schedule_lag_ms` given) pauses only after
        a failed connect, so arrivals keep their schedule."""
        self.idle_while_halted()
        prompt, messages = controlled(self, prompt or self.prompt(), messages)  # --cache warm|cold
        retry_of, attempt = "", 0
        budget_end_s = time.monotonic() + self.options.timeouts.request_timeout_s
        closed_loop = schedule_lag_ms is None
        while True:
            req = StreamRequest(
                endpoint=self.endpoint or self.options.endpoint, model=self.options.model, prompt=prompt.text,
                max_tokens=max_tokens or self.max_tokens or self.options.max_tokens,
                request_id=f"{self.ctx.token}-{self.user_id}-{next(self._request_seq)}",
                input_tokens_estimate=prompt.approx_tokens, retry_of=retry_of, messages=messages,
                extra_body={**(self.options.extra_body or {}), **(self.extra_body or {})} or None,
                stream=self.options.stream if self.stream is None else self.stream,
                output_len_mode=self.output_len_mode or self.options.output_len_mode, headers=self.request_headers,
                images=self.ctx.next_images(self.endpoint or self.options.endpoint),
                documents=self.options.rerank_documents)
            self.ctx.inflight += 1
            try:
                result = self.transport.stream(req)
            finally:
                self.ctx.inflight -= 1
            result = mark_too_long(result, self.options.retry_policy)
            self.record(result, schedule_lag_ms, label, workload)
            step = self._next_step(result, attempt, budget_end_s)
            if not step.retry or self.ctx.guard.halted:
                if step.pause_s > 0 and not self.ctx.guard.halted and (closed_loop or failed_to_connect(result)):
                    self._pause(step.pause_s)
                return result
            if not self._pause(step.pause_s):
                return result  # the user is stopping: no retry
            attempt += 1
            retry_of = result.request_id
            schedule_lag_ms = None

    def _next_step(self, result: StreamResult, attempt: int, budget_end_s: float) -> NextStep:
        """Retry or not, and the pause first: connect backoff, --retries / --on-429, failure backoff."""
        if result.status:
            self._connect_backoff_s = 0.0
        if result.error in ("rate_limited", "retry_after_too_long"):
            self._rate_limited_streak += 1
        elif result.status:
            self._rate_limited_streak = 0
        if failed_to_connect(result):
            # a down or unreachable server: pause before the next attempt instead of hammering it
            self._connect_backoff_s = next_connect_backoff_s(self._connect_backoff_s)
            return NextStep(False, self._connect_backoff_s)
        step = next_step(result, attempt, self.options.retry_policy, self.rng, budget_end_s - time.monotonic(),
                         self._rate_limited_streak)
        if step.retry or not self.options.failure_backoff:
            return step
        return NextStep(False, max(step.pause_s, self._failures.pause_s(result, self.rng)))

    def record(self, result: StreamResult, schedule_lag_ms: float | None = None, label: str | None = None,
               workload: dict | None = None) -> None:
        """Fire the events of one attempt, write its sample row, stop the run on a fatal condition."""
        ctx = self.ctx
        label = label or self.label
        ctx.outage.mark(result)  # a refused connect after the server answered: server_gone (run/failures/outage.py)
        fire_events(self.environment.events.request, label, result, self.options.empty_answer_is_error)
        ctx.sink.add_sample(sample_row(
            result, worker=ctx.worker, user=self.user_id, scenario=label, users_now=ctx.users_now(),
            schedule_lag_ms=schedule_lag_ms, loop_lag_ms=ctx.loop_lag_ms, workload=workload,
        ))
        if result.ok and result.model_returned and result.model_returned != result.model_requested:
            ctx.model_mismatches += 1
            if ctx.model_mismatches == 1:
                logger.warning("llmload: asked for model %r, the answer names %r (silent downgrade?)",
                               result.model_requested, result.model_returned)
        now_s = time.monotonic()
        reason = ctx.guard.observe(result, now_s) or ctx.outage.watch(result, now_s, ctx.guard)
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


class EmbeddingsUser(LLMUser):
    """Sends /v1/embeddings requests back to back (abstract): latency, and input tokens/s from
    samples.csv (`input_tokens` / `e2e_ms`). Never streamed; no TTFT/ITL events."""

    abstract = True
    endpoint = "embeddings"
