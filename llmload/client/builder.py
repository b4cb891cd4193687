"""`StreamBuilder`: folds the timestamped SSE lines of one attempt into a StreamResult.

How it works: both transports stamp each line with the time of the read that delivered it
and feed `(t, line)` to the builder (the fast transport may do so after the stream, with the
read times kept). The builder parses (`sse.parse_line`) after the stamp, keeps the timing
points in a `StreamTiming`, the text, usage, model and finish reason, and stops at `[DONE]`
or an in-stream error. `fill()` puts timing figures and token counts into the result:
server usage first, else the client count (`tokens.count_tokens`).

A non-streamed answer (or an embeddings answer) is one JSON body: `feed_answer(t, raw)`
folds it as a single chunk read at `t`, the time the whole body was in, so its TTFT is
its end-to-end time (the row says `streamed=0`). An embeddings answer generates nothing:
its output tokens are 0 and its input tokens come from `usage.prompt_tokens`.
"""

from __future__ import annotations

from llmload.client import decoder, sse
from llmload.client.errors import LLMError, StreamBroken, StreamError
from llmload.client.request import StreamResult
from llmload.client.timing import StreamTiming
from llmload.client.tokens import count_tokens


class StreamBuilder:
    """Folds timestamped SSE lines of one attempt into a StreamResult."""

    __slots__ = ("error_event", "finish_reason", "model", "parts", "saw_done", "timing", "usage")

    def __init__(self, timing: StreamTiming) -> None:
        self.timing = timing
        self.parts: list[str] = []
        self.usage: dict | None = None
        self.model = ""
        self.finish_reason = ""
        self.saw_done = False
        self.error_event: dict | None = None

    def feed(self, t: float, lines: bytes) -> bool:
        """The SSE lines of one read (one line or a block of them, `\\n`-separated), read at time `t`;
        True once the stream is over ([DONE] or an error event: the lines after it are not looked at).

        Raises sse.MalformedChunk for a data line that is not a JSON chunk. This runs for every chunk
        of every stream, in the reactor's pass: `feed_compiled` (C, client/decoder.py) when it is
        built, else `feed_pure`; both do the same. (This body is replaced by one of them at the end
        of the module: it only declares the method.)
        """
        return self.feed_pure(t, lines)

    def feed_pure(self, t: float, lines: bytes) -> bool:
        """`feed` in Python, the line parsing inlined (`sse.parse_line` does the same for one line)."""
        timing = self.timing
        for line in lines.split(b"\n"):
            if not line.startswith(b"data:"):
                continue  # blank separator, ': comment', event:/id:/retry: fields
            payload = line[5:].strip()
            if payload == b"[DONE]":
                self.saw_done = True
                return True
            if not payload:
                continue
            try:
                content, reasoning, finish_reason, usage, model, error = sse.line_fields(payload)
            except sse.MalformedChunk as exc:
                exc.read_time_s = t  # the attempt failed when the bad chunk arrived, not when it was parsed
                raise
            if error is not None:
                self.error_event = error
                return True
            timing.t_last = t  # StreamTiming.chunk, inlined
            if content or reasoning:
                timing.text_times.append(t)
                if content:
                    self.parts.append(content)
                    if timing.t_first_content is None:
                        timing.t_first_content = t
                if reasoning:
                    self.parts.append(reasoning)
                    if timing.t_first_reasoning is None:
                        timing.t_first_reasoning = t
            if usage:
                self.usage = usage
            if model and not self.model:
                self.model = model
            if finish_reason:
                self.finish_reason = finish_reason
        return False

    def feed_answer(self, t: float, raw: bytes, embeddings: bool = False) -> None:
        """A whole non-streamed JSON answer read by time `t`; MalformedChunk when it is not a JSON object."""
        try:
            obj = sse.answer_loads(raw)
        except ValueError as exc:
            raise sse.MalformedChunk(f"answer is not JSON: {raw[:80]!r}") from exc
        if not isinstance(obj, dict):
            raise sse.MalformedChunk(f"answer is not a JSON object: {raw[:80]!r}")
        self.saw_done = True
        chunk = sse.answer_from_obj(obj)
        if chunk.error is not None:
            self.error_event = chunk.error
            return
        if embeddings:
            self.timing.chunk(t, False, False)
            usage = chunk.usage
            self.usage = dict(usage, completion_tokens=0) if isinstance(usage, dict) else None
            self.model = chunk.model or ""
            return
        self.timing.chunk(t, bool(chunk.content), bool(chunk.reasoning))
        self.parts += [text for text in (chunk.content, chunk.reasoning) if text]
        self.usage = chunk.usage or None
        self.model = chunk.model or ""
        self.finish_reason = chunk.finish_reason or ""

    def failure(self) -> LLMError | None:
        """The failure the stream's content implies (error event, or no [DONE]/finish)."""
        if self.error_event is not None:
            err = self.error_event
            code = err.get("code") or err.get("type")
            return StreamError(code, str(err.get("message", ""))[:200])
        if not self.saw_done and not self.finish_reason:
            return StreamBroken("connection closed before [DONE] or a finish_reason")
        return None

    def fill(self, result: StreamResult, input_tokens_estimate: int | None) -> None:
        """Timing figures, token counts, model and text into `result`."""
        text = "".join(self.parts)
        client_tokens, client_source = count_tokens(text, chunks=len(self.timing.text_times))
        usage = self.usage or {}
        completion = usage.get("completion_tokens")
        prompt = usage.get("prompt_tokens")
        details = usage.get("prompt_tokens_details") or {}
        if isinstance(completion, int):
            result.output_tokens = completion
            result.tokens_source = "usage"
        else:
            result.output_tokens = client_tokens
            result.tokens_source = client_source
        result.output_tokens_client = client_tokens
        result.output_tokens_client_source = client_source
        result.input_tokens = prompt if isinstance(prompt, int) else input_tokens_estimate
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        result.cached_tokens = cached if isinstance(cached, int) else None
        completion_details = usage.get("completion_tokens_details")
        if isinstance(completion_details, dict) and isinstance(completion_details.get("reasoning_tokens"), int):
            result.reasoning_tokens = completion_details["reasoning_tokens"]
        result.model_returned = self.model
        result.finish_reason = self.finish_reason
        result.text = text
        result.timing = self.timing.figures(result.output_tokens)


_compiled = decoder.compiled_module()  # built: bound even when LLMLOAD_PURE_DECODER=1 (the tests compare both)
feed_compiled = _compiled.bind(StreamBuilder, sse.line_fields, sse.MalformedChunk) if _compiled else None
"""the compiled `StreamBuilder.feed` (a method: `feed_compiled(builder, t, lines)`), None when not built"""
if feed_compiled is not None and decoder.MODULE is not None:
    StreamBuilder.feed = feed_compiled  # type: ignore[method-assign]
else:
    StreamBuilder.feed = StreamBuilder.feed_pure  # type: ignore[method-assign]  # no extra frame per read
