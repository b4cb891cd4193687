"""One request attempt's outcome (`StreamResult`), its failure kinds, and the fold that builds it.

How it works: both transports stamp each line with the time of the read that delivered it
and feed `(t, line)` to a `StreamBuilder` (the fast transport may do so after the stream,
with the read times kept; see transport_fast). The builder parses (sse.parse_line) after
the stamp, keeps the timing points in a `StreamTiming`, the text, usage, model and finish
reason, and stops at `[DONE]` or an in-stream error. `finish()` turns that into a
`StreamResult`: timing figures, token counts (server usage first, else the client count
from prompts.count_tokens - a tokenizer when one is usable offline, else chunks), and the
failure, if any, as one of the exception classes below. Locust groups failures by the
exception's repr, so the message of each class is stable (no per-request numbers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llmload.client import sse
from llmload.client.timing import StreamTiming, TimingFigures
from llmload.client.tokens import count_tokens


class LLMError(Exception):
    """Base of every failure a user reports; `kind` is the samples.csv `error` value."""

    kind = "protocol"
    status = 0
    detail = ""


class RateLimited(LLMError):
    kind = "rate_limited"

    def __init__(self, retry_after_s: float | None = None, detail: str = "") -> None:
        super().__init__("HTTP 429")
        self.status = 429
        self.retry_after_s = retry_after_s
        self.detail = detail


class HTTP4xx(LLMError):
    kind = "http_4xx"

    def __init__(self, status: int, detail: str = "") -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.detail = detail


class HTTP5xx(LLMError):
    kind = "http_5xx"

    def __init__(self, status: int, detail: str = "") -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.detail = detail


class ConnectError(LLMError):
    """No connection to the server: the message names the host and the OS reason (stable per host)."""

    kind = "connect"

    def __init__(self, host: str = "", reason: str = "", detail: str = "") -> None:
        super().__init__(f"cannot connect to {host}: {reason}" if host else "cannot connect")
        self.host = host
        self.reason = reason
        self.detail = detail or str(self)


class Timeout(LLMError):
    kind = "timeout"

    def __init__(self, phase: str, limit_s: float | None = None, detail: str = "") -> None:
        super().__init__(f"{phase} timeout")
        self.phase = phase
        """connect | first_token | total | read"""
        self.limit_s = limit_s
        self.detail = detail or (f"{phase} timeout after {limit_s:g} s" if limit_s else f"{phase} timeout")


class StreamBroken(LLMError):
    kind = "stream_broken"

    def __init__(self, detail: str = "") -> None:
        super().__init__("stream ended before [DONE]")
        self.detail = detail


class ProtocolError(LLMError):
    kind = "protocol"
    not_sse = False
    """True for a 200 whose body is not an event stream (see `not_sse_error`)"""

    def __init__(self, detail: str = "", message: str = "malformed response") -> None:
        super().__init__(message)
        self.detail = detail


def not_sse_error(content_type: str) -> ProtocolError:
    """The failure for a 200 answer that is not `text/event-stream` (a non-streaming endpoint)."""
    message = f"not an SSE response (content-type: {content_type[:60]})"
    exc = ProtocolError(message, message)
    exc.not_sse = True
    return exc


def is_event_stream(content_type: str | None) -> bool:
    """Whether a 200's content-type allows an SSE body (a missing one is given the benefit of the doubt)."""
    return not content_type or content_type.split(";", 1)[0].strip().lower() == "text/event-stream"


def connect_reason(exc: BaseException) -> str:
    """The OS-level reason of a failed connect, from the exception or the ones it wraps.

    "connection refused", "name or service not known", "certificate verify failed: self-signed
    certificate", ...: short, lower-case, without errno numbers (stable for Locust's grouping).
    """
    seen = set()
    cause: BaseException | None = exc
    fallback = ""
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        verify = getattr(cause, "verify_message", None)
        if verify:
            return f"certificate verify failed: {verify}"
        strerror = getattr(cause, "strerror", None) if isinstance(cause, OSError) else None
        if strerror:
            return strerror[0].lower() + strerror[1:]
        if not fallback and str(cause):
            fallback = f"{type(cause).__name__}: {cause}"
        cause = cause.__cause__ or cause.__context__
    return fallback[:120] or type(exc).__name__


class StreamError(LLMError):
    kind = "stream_error"

    def __init__(self, code: object = None, detail: str = "") -> None:
        super().__init__(f"error event in stream (code {code})")
        self.code = code
        self.detail = detail


def parse_retry_after_s(headers: dict[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` (preferred, OpenAI style) or `Retry-After` (seconds).

    `headers` keys must be lower-case. An HTTP-date Retry-After is not parsed (returns None).
    """
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    seconds = headers.get("retry-after")
    if seconds:
        try:
            return max(0.0, float(seconds))
        except ValueError:
            return None
    return None


_SECRET_LIKE = re.compile(r"(?i)(bearer\s+)\S+|\bsk-[A-Za-z0-9_\-]{4,}")


def redact_secrets(text: str) -> str:
    """Mask key-like strings (`Bearer ...`, `sk-...`): some gateways echo the key in their 401 bodies."""
    return _SECRET_LIKE.sub(lambda m: (m.group(1) or "") + "***", text)


def error_for_status(status: int, headers: dict[str, str], body: str) -> LLMError:
    """The failure for a non-200 response (headers lower-cased, body truncated by the caller)."""
    detail = redact_secrets(" ".join(body.split()))[:200]
    if status == 429:
        return RateLimited(parse_retry_after_s(headers), detail)
    if 400 <= status < 500:
        return HTTP4xx(status, detail)
    if status >= 500:
        return HTTP5xx(status, detail)
    return ProtocolError(f"unexpected HTTP {status}: {detail}")


@dataclass(frozen=True)
class Timeouts:
    connect_timeout_s: float = 10.0
    first_token_timeout_s: float = 60.0
    """t0 -> first text token (answer or reasoning)"""
    request_timeout_s: float = 300.0
    """t0 -> end of stream, wall clock (a read timeout alone is per read)"""


@dataclass
class StreamRequest:
    """What one attempt sends (both transports build the same JSON body from it)."""

    endpoint: str
    """chat | completions"""
    model: str
    prompt: str
    max_tokens: int
    request_id: str
    input_tokens_estimate: int | None = None
    retry_of: str = ""
    messages: list[dict] | None = None
    """chat only: full message list (system prompt, history); default one user message"""
    extra_body: dict | None = None
    """merged into the JSON body (temperature, seed, ignore_eos, ...)"""

    def body(self) -> dict:
        body: dict = {"model": self.model, "max_tokens": self.max_tokens, "stream": True,
                      "stream_options": {"include_usage": True}}
        if self.endpoint == "chat":
            body["messages"] = self.messages or [{"role": "user", "content": self.prompt}]
        else:
            body["prompt"] = self.prompt
        if self.extra_body:
            body.update(self.extra_body)
        return body


@dataclass(slots=True)
class StreamResult:
    request_id: str
    endpoint: str
    transport: str
    ts_start_s: float
    """unix seconds at t0"""
    status: int = 0
    exception: LLMError | None = None
    timing: TimingFigures | None = None
    connect_ms: float | None = None
    conn_reused: bool | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    output_tokens_client: int | None = None
    cached_tokens: int | None = None
    tokens_source: str = ""
    model_requested: str = ""
    model_returned: str = ""
    finish_reason: str = ""
    text: str = ""
    retry_of: str = ""
    elapsed_ms: float | None = None
    """t0 -> end of the attempt, also for failures (what the LLM event reports then)"""
    t0_perf_s: float | None = None
    """t0 on the monotonic clock (time.perf_counter), to align with the server's truth log"""

    @property
    def ok(self) -> bool:
        return self.exception is None

    @property
    def error(self) -> str:
        return self.exception.kind if self.exception else ""

    @property
    def retry_after_s(self) -> float | None:
        return getattr(self.exception, "retry_after_s", None)


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

    def feed(self, t: float, line: bytes) -> bool:
        """One line read at time `t`; True once the stream is over ([DONE] or error event).

        Raises sse.MalformedChunk for a data line that is not a JSON chunk.
        """
        chunk = sse.parse_line(line)
        if chunk is None:
            return False
        if chunk is sse.DONE:
            self.saw_done = True
            return True
        if chunk.error is not None:
            self.error_event = chunk.error
            return True
        content = chunk.content
        reasoning = chunk.reasoning
        self.timing.chunk(t, bool(content), bool(reasoning))
        if content:
            self.parts.append(content)
        if reasoning:
            self.parts.append(reasoning)
        if chunk.usage:
            self.usage = chunk.usage
        if chunk.model and not self.model:
            self.model = chunk.model
        if chunk.finish_reason:
            self.finish_reason = chunk.finish_reason
        return False

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
        result.input_tokens = prompt if isinstance(prompt, int) else input_tokens_estimate
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        result.cached_tokens = cached if isinstance(cached, int) else None
        result.model_returned = self.model
        result.finish_reason = self.finish_reason
        result.text = text
        result.timing = self.timing.figures(result.output_tokens)
