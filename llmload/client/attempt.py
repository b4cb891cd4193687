"""The bookkeeping every transport shares around one attempt on the wire.

An `Attempt` holds the attempt's StreamTiming, StreamBuilder and StreamResult, and its two
wall-clock caps (`gevent.Timeout`: a socket read timeout is per read and never bounds a
trickling stream): `total` (t0 -> end of stream) and `first` (t0 -> first text token; the
transport cancels it when the first token arrives). A transport does only the wire part:

    attempt = Attempt(req, "fast", timeouts, clock)
    attempt.arm()
    try:
        ... attempt.timing.start(); send; attempt.timing.headers(); feed lines to attempt.builder
    except gevent.Timeout as exc:
        attempt.exc = attempt.cap_error(exc)
    ...
    finally:
        attempt.disarm()
    return attempt.finish(opened=..., connect_ms=...)

`finish` is the shared tail: the failure, connection facts (`conn_reused`, `connect_ms`),
timing figures and token counts (`StreamBuilder.fill`), t0 on the monotonic clock and
`elapsed_ms` (t0 -> the end of the attempt, or -> the read that delivered a malformed chunk), and whether
it was an empty answer (no failure, not one character of text: `StreamResult.empty_answer`).
A non-streamed request (`--no-stream`, embeddings) has no first token to wait for: only
its `total` cap is armed, and `answer(raw)` folds the whole body, timed when it was read.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gevent

from llmload.client import sse
from llmload.client.apis import NOT_GENERATING
from llmload.client.builder import StreamBuilder
from llmload.client.errors import LLMError, ProtocolError, Timeout
from llmload.client.events_messages import MessagesBuilder
from llmload.client.events_rerank import RerankBuilder
from llmload.client.events_responses import ResponsesBuilder
from llmload.client.request import StreamRequest, StreamResult, Timeouts
from llmload.client.retry_hints import remaining_quota
from llmload.client.timing import StreamTiming

BUILDERS = {"responses": ResponsesBuilder, "messages": MessagesBuilder, "rerank": RerankBuilder}
"""the decoder of each API whose answer is not an OpenAI chat/completions chunk stream (client/apis.py)"""
_decoded = [0]
_finished = [0]


def chunks_decoded() -> int:
    """Text chunks of every attempt this process finished, both transports (run/watch/capacity.py's CPU per chunk)."""
    return _decoded[0]


def attempts_finished() -> int:
    """Attempts this process finished, both transports (run/watch/capacity.py's CPU per request, for answers with no
    chunks: embeddings, rerank, --no-stream)."""
    return _finished[0]


class Attempt:
    __slots__ = ("builder", "clock", "exc", "failed_at", "first", "limits", "req", "result", "timing", "total")

    def __init__(self, req: StreamRequest, transport: str, limits: Timeouts, clock: Callable[[], float]) -> None:
        self.req = req
        self.clock = clock
        self.limits = limits
        self.timing = StreamTiming(clock)
        self.builder = BUILDERS.get(req.endpoint, StreamBuilder)(self.timing)
        streamed, generating = req.streamed, req.endpoint not in NOT_GENERATING
        self.result = StreamResult(request_id=req.request_id, endpoint=req.endpoint, transport=transport,
                                   ts_start_s=time.time(), model_requested=req.model, retry_of=req.retry_of,
                                   streamed=streamed,
                                   max_tokens=req.max_tokens if generating else None,
                                   length_asked=req.length_asked, images=len(req.images),
                                   documents=req.documents if req.endpoint == "rerank" else None)
        self.total = gevent.Timeout(limits.request_timeout_s)
        self.first = gevent.Timeout(limits.first_token_timeout_s)
        self.exc: LLMError | None = None
        self.failed_at: float | None = None
        """perf_counter time the attempt failed at when that is earlier than its end (a malformed chunk)"""

    def arm(self) -> None:
        self.total.start()
        if self.result.streamed:
            self.first.start()

    def answer(self, raw: bytes) -> None:
        """A non-streamed answer's whole body, read just now."""
        self.builder.feed_answer(self.clock(), raw, embeddings=self.req.endpoint in NOT_GENERATING)
        self.exc = self.builder.failure()

    def disarm(self) -> None:
        self.total.close()
        self.first.close()

    def cap_error(self, exc: gevent.Timeout) -> LLMError:
        """The failure for one of this attempt's caps; any other gevent.Timeout is re-raised."""
        if exc is self.total:
            return Timeout("total", self.limits.request_timeout_s)
        if exc is self.first:
            return Timeout("first_token", self.limits.first_token_timeout_s)
        raise exc

    @property
    def cap_expired(self) -> bool:
        return isinstance(self.exc, Timeout) and self.exc.phase in ("total", "first_token")

    def malformed(self, exc: sse.MalformedChunk) -> None:
        """A chunk that is not JSON: a protocol failure at the read that delivered it."""
        self.exc = ProtocolError(str(exc))
        self.failed_at = getattr(exc, "read_time_s", None)

    def feed_pending(self, pending: list[tuple[float, bytes]]) -> None:
        """Lines read before the attempt ended early (timeout, cut) still count, at their read times."""
        if not pending:
            return
        try:
            sse.feed_blocks(pending, self.builder.feed)
        except sse.MalformedChunk as exc:  # it arrived before the failure that ended the read
            self.malformed(exc)

    def note_headers(self, headers: dict[str, str]) -> None:
        """Quota headers of the answer (lower-case names), whatever its status."""
        result = self.result
        result.ratelimit_remaining_requests, result.ratelimit_remaining_tokens = remaining_quota(headers)

    def finish(self, *, opened: bool, connect_ms: float | None) -> StreamResult:
        """The shared tail (module docstring); `opened`: this attempt opened a new connection."""
        end = self.failed_at if self.failed_at is not None else self.clock()
        result, timing = self.result, self.timing
        result.exception = self.exc
        if opened:
            result.conn_reused = False
            result.connect_ms = connect_ms
        elif timing.t_headers is not None:
            result.conn_reused = True
        self.builder.fill(result, self.req.input_tokens_estimate)
        _decoded[0] += len(timing.text_times)
        _finished[0] += 1
        result.empty_answer = (self.exc is None and self.req.endpoint not in NOT_GENERATING and timing.t0 is not None
                               and not timing.text_times)  # answered cleanly, not one character of text
        result.t0_perf_s = timing.t0
        if timing.t0 is not None:
            result.elapsed_ms = (end - timing.t0) * 1000.0
        return result
