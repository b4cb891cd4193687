"""One response in progress: admission, prefill, decode steps and their socket writes.

How it works: `admit()` submits the sequence to the engine; when it gets a slot
(`start()`), the response headers and the role-only chunk go out (with
`--headers-when service`; on `arrival` they go out before queueing), the prefix cache is
consulted, and the first decode step is scheduled after the prefill time. Each `step()`
writes one chunk and schedules the next step `step_ms` later (times are computed from
the intended schedule, so a late timer does not push every later token back). At the end
the finish chunk, the usage chunk (if asked) and `[DONE]` go out in one write.

What is generated follows the request's `OutputPlan` (plan.py): a reasoning phase
(`reasoning_content` deltas) then the answer (content deltas, or the arguments of one tool
call whose id and name go out in the same write as the first fragment). A phase is a
prefix/suffix template pair, so the per-chunk work is the same whatever the kind. Faults
drawn at arrival change this path (stall, cut, malformed chunk, error event, swapped model, empty text).
A refusal from a full queue is an HTTP status, or with `--queue-full-mode error-event` a
200 stream carrying one error event. If the client goes away, the slot is released at
once, as real engines abort.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable

from llmload.server import timers, wire
from llmload.server.config import ServerConfig, retry_styles
from llmload.server.engine import QueueFull, Sequence
from llmload.server.faults import Faults
from llmload.server.plan import OutputPlan
from llmload.server.replies import reply_error
from llmload.server.retry_hints import retry_headers
from llmload.server.state import ServerState

TOOL_OPEN, TOOL_CLOSE = json.dumps('{"input":"')[1:-1], json.dumps('"}')[1:-1]
"""the tool-call arguments are `{"input":"<answer tokens>"}`, escaped as inside a JSON string"""


class Generation:
    def __init__(self, state: ServerState, req, chat: bool, body: dict, words: list[str], plan: OutputPlan,
                 faults: Faults, truth: dict, structured: bool, headers: dict[str, str]):
        cfg: ServerConfig = state.cfg
        self.state, self.req, self.chat, self.words, self.faults = state, req, chat, words, faults
        self.plan, self.truth, self.headers = plan, truth, headers
        self.stream = bool(body.get("stream"))
        self.model = cfg.swap_model if faults.model_swap else body["model"]
        self.completion_id = ("chatcmpl-" if chat else "cmpl-") + req.request_id
        self.created = int(time.time())
        self.structured = structured and plan.tool_name is None  # tool arguments use plain words
        per_step = cfg.spec_decode_tokens_per_step if structured else 1
        self.tokens_per_chunk = per_step * cfg.tokens_per_chunk
        self.steps_per_chunk = cfg.tokens_per_chunk
        self.seq = Sequence(req.request_id, len(words), 0, plan.output_tokens)
        self.include_usage = self.stream and bool((body.get("stream_options") or {}).get("include_usage"))
        self.templates = wire.ChunkTemplates(chat, self.completion_id, self.created, self.model,
                                             self.include_usage) if self.stream else None
        self.text_start = state.requests_total * 7
        self.pieces: list[str] = []
        self.reasoning_pieces: list[str] = []
        self.lead = ""
        """written before the first answer chunk (the tool call's id and name)"""
        self.wrap: Callable[[str, bool, bool], str] | None = None
        """tool calls: puts the argument braces around the first and last fragments"""
        if plan.reasoning_tokens:
            self.phase_end, self.answering, self.first_answer_pending = plan.reasoning_tokens, False, False
            self.prefix, self.suffix = self.templates.reasoning_pair() if self.templates is not None else ("", "")
        else:
            self._begin_answer()
        self.head_sent = False
        self.finished = False
        self.timer: asyncio.TimerHandle | None = None
        self.due_s = 0.0
        self.admitted_s = 0.0

    def _begin_answer(self) -> None:
        self.phase_end, self.answering = self.plan.output_tokens, True
        self.first_answer_pending = True
        self.reasoning_pieces, self.pieces = self.pieces, []
        if self.plan.tool_name is not None:
            self.wrap = _tool_fragment
            if self.templates is not None:  # streaming
                self.lead = self.templates.tool_head("call_" + self.seq.request_id, self.plan.tool_name)
        templates = self.templates
        if templates is None:  # not streaming
            self.prefix = self.suffix = ""
        elif self.wrap is not None:
            self.prefix, self.suffix = templates.tool_pair()
        else:
            self.prefix, self.suffix = templates.prefix, templates.suffix

    # admission and service
    def admit(self) -> None:
        conn, engine = self.req.conn, self.state.engine
        if conn.closed:
            self.truth.update(status=499, fault=_join(self.truth.get("fault"), "client_closed"))
            self.state.truth.write(self.truth)
            return
        self.admitted_s = self.state.clock()
        try:
            started = engine.submit(self.seq)
        except QueueFull:
            return self._refuse()
        conn.on_lost = self.abandon
        if self.stream and self.state.cfg.headers_when == "arrival" and not self.faults.stall_s:
            self._send_head()
        if started:
            self.start()
        else:
            self.seq.on_start = self.start

    def _refuse(self) -> None:
        cfg, engine = self.state.cfg, self.state.engine
        self.truth["fault"] = _join(self.truth.get("fault"), "queue_full")
        if cfg.queue_full_mode == "error-event" and self.stream:
            if not self.head_sent:
                self._send_head()
            return self._error_event("The server is overloaded: too many requests are queued. "
                                     "Please retry later.")
        self.truth["status"] = cfg.queue_full_status
        self.state.truth.write(self.truth)
        retry_s = max(cfg.queue_full_retry_after_s, engine.estimated_wait_s()) \
            if cfg.queue_full_retry_after_s > 0 else 0.0
        headers = {**self.headers, **retry_headers(retry_styles(cfg), retry_s, "requests", time.time())}
        return reply_error(
            self.req, cfg.queue_full_status, "The server is overloaded: too many requests are "
            "queued. Please retry later.", "server_error" if cfg.queue_full_status == 503 else "requests",
            "queue_full", headers=headers)

    def start(self) -> None:
        now = self.state.clock()
        self.truth["service_start_s"] = now
        self.state.metrics.queue_time.observe(now - self.admitted_s)
        self.seq.cached_tokens = self.state.cache.lookup(self.words)
        if self.faults.stall_s:
            self.timer = self.state.loop.call_later(self.faults.stall_s, self._after_stall)
        elif self.stream and not self.head_sent:
            self._send_head()
        self.due_s = now + self.faults.stall_s + self.state.engine.prefill_ms(self.seq) / 1000.0
        self.truth["first_byte_due_s"] = self.due_s
        self._schedule()

    def _after_stall(self) -> None:
        if self.stream and not self.head_sent and not self.finished:
            self._send_head()

    def _send_head(self) -> None:
        self.head_sent = True
        head = wire.stream_head(self.headers, self.req.keep_alive)
        assert self.templates is not None  # only streamed responses send a stream head
        role = self.templates.role
        self.req.conn.send(head + wire.frame(role) if role else head)

    def _schedule(self) -> None:
        loop = self.state.loop
        self.timer = loop.call_later(timers.delay_s(loop, self.due_s, self.state.clock()), self.step)

    def step(self) -> None:
        if self.finished:
            return
        again = timers.again_if_early(self.state.loop, self.due_s, self.state.clock(), self.step)
        if again is not None:  # the timer fired before the token was due (uvloop's millisecond grain)
            self.timer = again
            return
        seq, conn = self.seq, self.req.conn
        first = seq.generated == 0
        if first:
            self.state.cache.insert(self.words)
            self.state.metrics.ttft.observe(self.state.clock() - self.admitted_s)
            if self.stream and self.faults.error_event:
                return self._error_event("The engine rejected the request: admission raced with "
                                         "other requests. Please retry.")
        elif self.stream and (self.faults.cut or self.faults.malformed) \
                and seq.generated >= seq.output_tokens // 2:
            if self.faults.cut:
                return self._cut()
            self.faults = Faults(**{**self.faults.__dict__, "malformed": False})
            assert self.templates is not None  # streaming (checked above); once per response
            conn.send(wire.frame(self.templates.malformed()))
        count = min(self.tokens_per_chunk, self.phase_end - seq.generated)
        text = "" if self.faults.empty else self.state.text.tokens(self.text_start + seq.generated, count,
                                                                     self.structured)
        seq.generated += count
        first_answer = self.first_answer_pending
        if self.wrap is not None:
            text = self.wrap(text, first_answer, seq.generated >= seq.output_tokens)
        if self.stream:
            # the truth is stamped before the write: on loopback the kernel dates the client's read inside
            # this send(), so a stamp after it would be late by the syscall (and any preemption in it)
            if first_answer:
                self.truth["first_byte_s"] = self.state.clock()
                conn.send(wire.frame(self.lead + self.prefix + text + self.suffix))
                self.first_answer_pending = False
            else:
                if first:
                    self.truth["first_reasoning_byte_s"] = self.state.clock()
                conn.send(wire.frame(self.prefix + text + self.suffix))
        else:
            self.pieces.append(text)
            self.first_answer_pending = False
        if seq.generated >= self.phase_end:
            if seq.generated >= seq.output_tokens:
                return self._complete()
            self._begin_answer()
        self.due_s += self.state.engine.step_ms() * self.steps_per_chunk / 1000.0
        self._schedule()

    def _reasoning_count(self) -> int | None:
        return min(self.seq.generated, self.plan.reasoning_tokens) if self.state.cfg.reasoning_tokens else None

    def _complete(self) -> None:
        seq, conn, plan = self.seq, self.req.conn, self.plan
        reasoning = self._reasoning_count()
        if self.templates is not None:  # streaming
            tail = self.templates.finish(plan.finish_reason)
            if self.include_usage:
                tail += self.templates.usage(seq.prompt_tokens, seq.generated, seq.cached_tokens, reasoning)
            conn.send(wire.frame(tail + wire.DONE) + wire.LAST_FRAME)
        else:
            usage = wire.usage_dict(seq.prompt_tokens, seq.generated, seq.cached_tokens, reasoning)
            body = wire.full_body(self.chat, self.completion_id, self.created, self.model,
                                  self._message(), plan.finish_reason, usage)
            self.truth["first_byte_s"] = self.state.clock()
            conn.send(wire.http_response(200, body, self.headers, keep_alive=self.req.keep_alive))
        self._end(200, self.req.keep_alive, plan.finish_reason)

    def _message(self) -> dict:
        """The non-streamed assistant message: content, reasoning_content, tool_calls."""
        answer = _unescape(self.pieces) if self.answering else ""
        message: dict = {"content": answer.lstrip()}
        if self.plan.reasoning_tokens:
            reasoning = self.reasoning_pieces if self.answering else self.pieces
            message["reasoning_content"] = _unescape(reasoning).lstrip()
        if self.wrap is not None:
            message["content"] = None
            message["tool_calls"] = [{"id": "call_" + self.seq.request_id, "type": "function",
                                      "function": {"name": self.plan.tool_name, "arguments": answer}}]
        return message

    def _error_event(self, message: str) -> None:
        event = wire.error_event(message, 503)
        self.req.conn.send(wire.frame(event + wire.DONE) + wire.LAST_FRAME)
        self._end(200, self.req.keep_alive, None)

    def _cut(self) -> None:
        self.req.conn.on_lost = None
        self._end(200, False, None)

    def _end(self, status: int, keep_alive: bool, finish_reason: str | None) -> None:
        self.finished = True
        truth, seq = self.truth, self.seq
        truth.update(status=status, last_byte_s=self.state.clock(), cached_tokens=seq.cached_tokens,
                     output_tokens=seq.generated, finish_reason=finish_reason or "",
                     reasoning_tokens=self._reasoning_count())
        self.state.truth.write(truth)
        self._served(finish_reason)
        self._release()
        self.req.conn.finish(keep_alive)

    def _served(self, finish_reason: str | None) -> None:
        if "service_start_s" in self.truth:  # engine-level reasons, as vLLM counts them
            engine_reason = "stop" if finish_reason == "tool_calls" else finish_reason
            self.state.metrics.served(self.seq.prompt_tokens, self.seq.generated, engine_reason)

    def _release(self) -> None:
        for nxt in self.state.engine.release(self.seq):
            assert nxt.on_start is not None  # set when the sequence was queued (admit)
            nxt.on_start()

    def abandon(self) -> None:
        """The client went away mid-response: free the slot (or the queue place) at once."""
        if self.finished:
            return
        self.finished = True
        if self.timer is not None:
            self.timer.cancel()
        self.truth.update(status=499, fault=_join(self.truth.get("fault"), "client_closed"),
                          last_byte_s=self.state.clock(), output_tokens=self.seq.generated,
                          cached_tokens=self.seq.cached_tokens, reasoning_tokens=self._reasoning_count())
        self.state.truth.write(self.truth)
        self._served(None)
        self._release()


def _tool_fragment(text: str, first: bool, last: bool) -> str:
    if first:
        text = TOOL_OPEN + text
    return text + TOOL_CLOSE if last else text


def _unescape(pieces: list[str]) -> str:
    return json.loads('"' + "".join(pieces) + '"')


def _join(a: str | None, b: str) -> str:
    return f"{a}+{b}" if a else b
