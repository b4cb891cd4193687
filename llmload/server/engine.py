"""The engine model: continuous batching over S slots with a FIFO queue.

How it works (the behaviour a load test must find, at places the configuration fixes):
- A request that passed auth and rate limits becomes a `Sequence`. If a slot is free
  and nobody waits, it starts service at once; else it joins a FIFO queue. When the
  queue already holds `queue_limit` sequences the request is refused (429 or 503).
- A sequence in service first prefills: `prefill_base_ms + uncached_prompt_tokens *
  prefill_ms_per_token` (prefix-cache hits are not recomputed). Then it decodes one
  step at a time; a step takes `decode_ms_per_token + decode_ms_per_extra_seq *
  (active - 1)` where `active` counts sequences in service at that moment, so decoding
  slows as the batch fills. A step yields one token (generation.py emits
  `spec_decode_tokens_per_step` per step for structured output, as speculative decoding
  accepts several draft tokens per step).
- When a sequence finishes (or its client goes away) its slot goes to the head of the
  queue. So with closed-loop N users: N <= S have no queueing; N > S queue, and TTFT
  grows by about (N - S) / S service times. The knee is at S.

This module is pure bookkeeping with no clock or I/O: the HTTP layer asks it what to do
and when, and drives the timers. That keeps the queueing arithmetic unit-testable.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from llmload.server.config import ServerConfig

QUEUED, RUNNING, DONE = "queued", "running", "done"


@dataclass(eq=False)
class Sequence:
    request_id: str
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    """tokens to generate"""
    state: str = QUEUED
    generated: int = 0
    on_start: Callable[[], None] | None = field(default=None, repr=False)
    """callback the HTTP layer runs when the sequence gets a slot"""

    @property
    def uncached_tokens(self) -> int:
        return self.prompt_tokens - self.cached_tokens


class QueueFull(Exception):
    """The engine refuses a request: every slot busy and the queue at its limit."""


class Engine:
    def __init__(self, cfg: ServerConfig):
        self.cfg = cfg
        self.running: set[Sequence] = set()
        self.queue: deque[Sequence] = deque()
        self.slowdown = 1.0
        """every prefill and decode step takes this many times as long (--fault-slowdown-factor, once due)"""

    @property
    def active(self) -> int:
        return len(self.running)

    def submit(self, seq: Sequence) -> bool:
        """Admit `seq`: True if it starts now, False if it queues; QueueFull if refused."""
        if len(self.running) < self.cfg.slots and not self.queue:
            self._start(seq)
            return True
        if len(self.queue) >= self.cfg.queue_limit:
            raise QueueFull
        self.queue.append(seq)
        return False

    def release(self, seq: Sequence) -> list[Sequence]:
        """`seq` finished or was abandoned; return the queued sequences that start now."""
        if seq.state == RUNNING:
            self.running.discard(seq)
        elif seq.state == QUEUED:
            try:
                self.queue.remove(seq)
            except ValueError:
                pass
        seq.state = DONE
        started = []
        while self.queue and len(self.running) < self.cfg.slots:
            nxt = self.queue.popleft()
            self._start(nxt)
            started.append(nxt)
        return started

    def _start(self, seq: Sequence) -> None:
        seq.state = RUNNING
        self.running.add(seq)

    def prefill_ms(self, seq: Sequence) -> float:
        return (self.cfg.prefill_base_ms + seq.uncached_tokens * self.cfg.prefill_ms_per_token) * self.slowdown

    def step_ms(self) -> float:
        """Time of one decode step now, given the sequences in service."""
        extra = max(0, len(self.running) - 1)
        return (self.cfg.decode_ms_per_token + self.cfg.decode_ms_per_extra_seq * extra) * self.slowdown

    def estimated_wait_s(self) -> float:
        """A rough wait for a new arrival (used for Retry-After on refusals)."""
        if len(self.running) < self.cfg.slots:
            return 0.0
        per_request_ms = self.cfg.prefill_base_ms + self.cfg.default_output_tokens * self.step_ms()
        return (len(self.queue) + 1) / self.cfg.slots * per_request_ms / 1000.0
