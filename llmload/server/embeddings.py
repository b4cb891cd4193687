"""`POST /v1/embeddings`: a prefill-only request through the same engine.

How it works: the request takes a slot like a completion (so embeddings queue behind
generation and show up in `/metrics`), holds it for the prefill time of all its inputs
(`prefill_base_ms + tokens x prefill_ms_per_token`, no prefix cache), then answers once with
one vector per input and `usage.prompt_tokens`. Vectors are unit-length, `--embedding-dim`
long (or the request's `dimensions`), and deterministic: the same text (or token ids) and
seed give the same vector. `encoding_format: base64` (the openai SDK's default) packs
little-endian float32, as OpenAI does.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import random
import struct
import zlib

from llmload.server import timers, wire
from llmload.server.engine import QueueFull, Sequence
from llmload.server.replies import reply_error
from llmload.server.state import ServerState


def embedding_vector(item: str | list[int], dim: int, seed: int) -> list[float]:
    key = item.encode() if isinstance(item, str) else struct.pack(f"<{len(item)}q", *item)
    rng = random.Random(zlib.crc32(key) ^ (seed << 32))
    values = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def encode(vector: list[float], fmt: str) -> list[float] | str:
    if fmt == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
    return vector


class EmbeddingJob:
    def __init__(self, state: ServerState, req, body: dict, counts: list[int], truth: dict,
                 headers: dict[str, str]):
        self.state, self.req, self.body, self.truth, self.headers = state, req, body, truth, headers
        value = body["input"]
        self.items = [value] if isinstance(value, str) or (value and isinstance(value[0], int)) else value
        self.seq = Sequence(req.request_id, sum(counts), 0, 0)
        self.finished = False
        self.timer: asyncio.TimerHandle | None = None
        self.admitted_s = 0.0

    def admit(self) -> None:
        conn = self.req.conn
        if conn.closed:
            self.truth.update(status=499, fault="client_closed")
            return self.state.truth.write(self.truth)
        self.admitted_s = self.state.clock()
        try:
            started = self.state.engine.submit(self.seq)
        except QueueFull:
            cfg = self.state.cfg
            self.truth.update(status=cfg.queue_full_status, fault="queue_full")
            self.state.truth.write(self.truth)
            return reply_error(self.req, cfg.queue_full_status, "The server is overloaded: too many "
                               "requests are queued. Please retry later.", "server_error",
                               "queue_full", headers=self.headers)
        conn.on_lost = self.abandon
        if started:
            self.start()
        else:
            self.seq.on_start = self.start

    def start(self) -> None:
        now = self.state.clock()
        self.truth["service_start_s"] = now
        self.state.metrics.queue_time.observe(now - self.admitted_s)
        self.truth["first_byte_due_s"] = now + self.state.engine.prefill_ms(self.seq) / 1000.0
        self.timer = self.state.loop.call_later(timers.delay_s(self.state.loop, self.truth["first_byte_due_s"], now),
                                                self.finish)

    def finish(self) -> None:
        again = timers.again_if_early(self.state.loop, self.truth["first_byte_due_s"], self.state.clock(), self.finish)
        if again is not None:  # the timer fired before the answer was due (uvloop's millisecond grain)
            self.timer = again
            return
        cfg, body = self.state.cfg, self.body
        dim = body.get("dimensions") or cfg.embedding_dim
        fmt = body.get("encoding_format", "float")
        data = [{"object": "embedding", "index": i, "embedding": encode(embedding_vector(item, dim, cfg.seed), fmt)}
                for i, item in enumerate(self.items)]
        tokens = self.seq.prompt_tokens
        payload = {"object": "list", "data": data, "model": body["model"],
                   "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        now = self.state.clock()  # before the write, as generation.py stamps its first byte
        self.req.conn.send(wire.http_response(200, json.dumps(payload).encode(), self.headers,
                                              keep_alive=self.req.keep_alive))
        self.state.metrics.ttft.observe(now - self.admitted_s)
        self.state.metrics.served(tokens, 0, "stop")
        self._end(200, now)
        self.req.conn.finish(self.req.keep_alive)

    def abandon(self) -> None:
        if self.finished:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.truth["fault"] = "client_closed"
        self._end(499, self.state.clock())

    def _end(self, status: int, now: float) -> None:
        self.finished = True
        self.truth.update(status=status, first_byte_s=now if status == 200 else None, last_byte_s=now,
                          output_tokens=0, cached_tokens=0)
        self.state.truth.write(self.truth)
        for nxt in self.state.engine.release(self.seq):
            assert nxt.on_start is not None  # set when the sequence was queued (admit)
            nxt.on_start()
