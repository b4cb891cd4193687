"""What one attempt sends (`StreamRequest`), its caps (`Timeouts`) and its outcome (`StreamResult`)."""

from __future__ import annotations

from dataclasses import dataclass

from llmload.client.errors import LLMError
from llmload.client.timing import TimingFigures


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
    ratelimit_remaining_requests: int | None = None
    ratelimit_remaining_tokens: int | None = None
    """`x-ratelimit-remaining-*` of the answer, when the server sends them"""

    @property
    def ok(self) -> bool:
        return self.exception is None

    @property
    def error(self) -> str:
        return self.exception.kind if self.exception else ""

    @property
    def retry_after_s(self) -> float | None:
        return getattr(self.exception, "retry_after_s", None)

    @property
    def retry_after_source(self) -> str:
        return getattr(self.exception, "retry_after_source", "")
