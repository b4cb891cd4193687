"""One response in progress: admission, prefill, decode steps and their socket writes.

How it works: `admit()` submits the sequence to the engine; when it gets a slot
(`start()`), the response headers and the role-only chunk go out (with
`--headers-when service`; on `arrival` they go out before queueing), the prefix cache is
consulted, and the first decode step is scheduled after the prefill time. Each `step()`
writes one chunk and schedules the next step `step_ms` later (times are computed from
the intended schedule, so a late timer does not push every later token back). At the end
the finish chunk, the usage chunk (if asked) and `[DONE]` go out in one write. Faults
drawn at arrival change this path (stall, cut, malformed chunk, error event, swapped model).
If the client goes away, the slot is released at once, as real engines abort.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass

from llmload.server import wire
from llmload.server.config import ServerConfig
from llmload.server.engine import QueueFull, Sequence


@dataclass(frozen=True)
class Faults:
    http_status: int = 0
    stall_s: float = 0.0
    cut: bool = False
    malformed: bool = False
    error_event: bool = False
    model_swap: bool = False

    @property
    def name(self) -> str:
        parts = [f"http_{self.http_status}"] if self.http_status else []
        parts += [n for n in ("cut", "malformed", "error_event", "model_swap") if getattr(self, n)]
        if self.stall_s:
            parts.append("stall")
        return "+".join(parts)

    @classmethod
    def draw(cls, cfg: ServerConfig, rng: random.Random) -> Faults:
        """Draw this request's faults; always 7 draws, so the sequence stays deterministic."""
        r = [rng.random() for _ in range(7)]
        status = 500 if r[0] < cfg.fault_500_prob else 503 if r[1] < cfg.fault_503_prob else 0
        return cls(http_status=status,
                   stall_s=cfg.fault_stall_ms / 1000.0 if r[2] < cfg.fault_stall_prob else 0.0,
                   cut=r[3] < cfg.fault_cut_prob, malformed=r[4] < cfg.fault_malformed_prob,
                   error_event=r[5] < cfg.fault_error_event_prob,
                   model_swap=r[6] < cfg.fault_model_swap_prob)


class Generation:
    def __init__(self, app, req, chat: bool, body: dict, words: list[str], output_tokens: int,
                 faults: Faults, request_id: str, truth: dict, structured: bool):
        cfg: ServerConfig = app.cfg
        self.app, self.req, self.chat, self.words, self.faults = app, req, chat, words, faults
        self.truth = truth
        self.stream = bool(body.get("stream"))
        self.model = cfg.swap_model if faults.model_swap else body["model"]
        self.completion_id = ("chatcmpl-" if chat else "cmpl-") + request_id
        self.created = int(time.time())
        self.structured = structured
        limited = body.get("max_completion_tokens", body.get("max_tokens")) is not None
        self.finish_reason = "length" if limited else "stop"
        per_step = cfg.spec_decode_tokens_per_step if structured else 1
        self.tokens_per_chunk = per_step * cfg.tokens_per_chunk
        self.steps_per_chunk = cfg.tokens_per_chunk
        self.seq = Sequence(request_id, len(words), 0, output_tokens)
        include_usage = self.stream and bool((body.get("stream_options") or {}).get("include_usage"))
        self.include_usage = include_usage
        self.templates = wire.ChunkTemplates(chat, self.completion_id, self.created, self.model,
                                             include_usage) if self.stream else None
        self.text_start = app.requests_total * 7
        self.pieces: list[str] = []
        self.head_sent = False
        self.finished = False
        self.timer = None
        self.due_s = 0.0

    # admission and service
    def admit(self) -> None:
        conn, engine = self.req.conn, self.app.engine
        if conn.closed:
            self.truth.update(status=499, fault=_join(self.truth.get("fault"), "client_closed"))
            self.app.truth.write(self.truth)
            return
        try:
            started = engine.submit(self.seq)
        except QueueFull:
            cfg = self.app.cfg
            self.truth.update(status=cfg.queue_full_status, fault=_join(self.truth.get("fault"), "queue_full"))
            self.app.truth.write(self.truth)
            retry_s = max(cfg.queue_full_retry_after_s, engine.estimated_wait_s()) \
                if cfg.queue_full_retry_after_s > 0 else 0.0
            headers = {"retry-after": str(max(1, round(retry_s))),
                       "retry-after-ms": str(int(retry_s * 1000))} if retry_s else {}
            return self.app.reply_error(
                self.req, cfg.queue_full_status, "The server is overloaded: too many requests are "
                "queued. Please retry later.", "server_error" if cfg.queue_full_status == 503 else "requests",
                "queue_full", headers=headers)
        conn.on_lost = self.abandon
        if self.stream and self.app.cfg.headers_when == "arrival" and not self.faults.stall_s:
            self._send_head()
        if started:
            self.start()
        else:
            self.seq.on_start = self.start

    def start(self) -> None:
        now = self.app.clock()
        self.truth["service_start_s"] = now
        self.seq.cached_tokens = self.app.cache.lookup(self.words)
        if self.faults.stall_s:
            self.timer = self.app.loop.call_later(self.faults.stall_s, self._after_stall)
        elif self.stream and not self.head_sent:
            self._send_head()
        self.due_s = now + self.faults.stall_s + self.app.engine.prefill_ms(self.seq) / 1000.0
        self.truth["first_byte_due_s"] = self.due_s
        self._schedule()

    def _after_stall(self) -> None:
        if self.stream and not self.head_sent and not self.finished:
            self._send_head()

    def _send_head(self) -> None:
        self.head_sent = True
        head = wire.stream_head({"x-request-id": self.seq.request_id}, self.req.keep_alive)
        role = self.templates.role
        self.req.conn.send(head + wire.frame(role) if role else head)

    def _schedule(self) -> None:
        delay_s = self.due_s - self.app.clock()
        self.timer = self.app.loop.call_later(delay_s if delay_s > 0 else 0, self.step)

    def step(self) -> None:
        if self.finished:
            return
        seq, conn = self.seq, self.req.conn
        first = seq.generated == 0
        if first:
            self.app.cache.insert(self.words)
        if self.stream:
            if first and self.faults.error_event:
                return self._error_event()
            if self.faults.cut and seq.generated >= seq.output_tokens // 2 and not first:
                return self._cut()
            if self.faults.malformed and seq.generated >= seq.output_tokens // 2 and not first:
                self.faults = Faults(**{**self.faults.__dict__, "malformed": False})
                conn.send(wire.frame(self.templates.malformed()))
        count = min(self.tokens_per_chunk, seq.output_tokens - seq.generated)
        text = self.app.text.tokens(self.text_start + seq.generated, count, self.structured)
        seq.generated += count
        if self.stream:
            conn.send(wire.frame(self.templates.prefix + text + self.templates.suffix))
            if first:
                self.truth["first_byte_s"] = self.app.clock()
        else:
            self.pieces.append(text)
        if seq.generated >= seq.output_tokens:
            return self._complete()
        self.due_s += self.app.engine.step_ms() * self.steps_per_chunk / 1000.0
        self._schedule()

    def _complete(self) -> None:
        seq, conn = self.seq, self.req.conn
        reason = self.finish_reason
        if self.stream:
            tail = self.templates.finish(reason)
            if self.include_usage:
                tail += self.templates.usage(seq.prompt_tokens, seq.generated, seq.cached_tokens)
            conn.send(wire.frame(tail + wire.DONE) + wire.LAST_FRAME)
        else:
            text = json.loads('"' + "".join(self.pieces) + '"')
            body = wire.full_body(self.chat, self.completion_id, self.created, self.model, text.lstrip(),
                                  reason, seq.prompt_tokens, seq.generated, seq.cached_tokens)
            conn.send(wire.http_response(200, body, {"x-request-id": seq.request_id},
                                         keep_alive=self.req.keep_alive))
            self.truth["first_byte_s"] = self.app.clock()
        self._end(200, keep_alive=self.req.keep_alive)

    def _error_event(self) -> None:
        event = wire.error_event("The engine rejected the request: admission raced with other "
                                 "requests. Please retry.", 503)
        self.req.conn.send(wire.frame(event + wire.DONE) + wire.LAST_FRAME)
        self._end(200, keep_alive=self.req.keep_alive)

    def _cut(self) -> None:
        self.req.conn.on_lost = None
        self._end(200, keep_alive=False)

    def _end(self, status: int, keep_alive: bool) -> None:
        self.finished = True
        truth = self.truth
        truth.update(status=status, last_byte_s=self.app.clock(), cached_tokens=self.seq.cached_tokens,
                     output_tokens=self.seq.generated)
        self.app.truth.write(truth)
        self._release()
        self.req.conn.finish(keep_alive)

    def _release(self) -> None:
        for nxt in self.app.engine.release(self.seq):
            nxt.on_start()

    def abandon(self) -> None:
        """The client went away mid-response: free the slot (or the queue place) at once."""
        if self.finished:
            return
        self.finished = True
        if self.timer is not None:
            self.timer.cancel()
        self.truth.update(status=499, fault=_join(self.truth.get("fault"), "client_closed"),
                          last_byte_s=self.app.clock(), output_tokens=self.seq.generated,
                          cached_tokens=self.seq.cached_tokens)
        self.app.truth.write(self.truth)
        self._release()


def _join(a: str | None, b: str) -> str:
    return f"{a}+{b}" if a else b
