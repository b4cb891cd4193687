"""What one attempt sends (`StreamRequest`), its caps (`Timeouts`) and its outcome (`StreamResult`).

`StreamRequest.body()` is the JSON both transports send: chat (`messages`), completions
(`prompt`) or embeddings (`input`); streamed (`stream: true` + `include_usage`) or not; the Responses,
Messages and rerank bodies are built by client/apis.py.
The output-length mode adds vLLM's sampling extras: `ignore-eos` -> `"ignore_eos": true`,
`min-tokens` -> `"min_tokens": max_tokens`; `extra_body` is merged last (it wins). A chat, Responses or
Messages request's `images` (PNG data URIs, workload/images.py) become content parts after the text of its
last user message: chat `image_url`, Responses `input_image`, Messages base64 `image` blocks (apis.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from llmload.client.apis import EVENT_STREAMS, NOT_GENERATING, event_body, rerank_body, with_images
from llmload.client.errors import LLMError
from llmload.client.timing import TimingFigures
from llmload.contract import EMPTY_ANSWER


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
    """the API (client/apis.py APIS): chat | completions | embeddings | responses | messages | rerank"""
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
    stream: bool = True
    """False: one JSON answer (TTFT is then the whole answer's time); embeddings are never streamed"""
    output_len_mode: str = "usage"
    """usage (ask max_tokens only) | ignore-eos | min-tokens (see OUTPUT_LEN_MODES)"""
    headers: dict[str, str] | None = None
    """this request's own headers, over the transport's (an agent session's sticky-session header)"""
    images: tuple[str, ...] = ()
    """chat, responses, messages: image URLs (PNG data URIs) sent with the last user message (apis.with_images)"""
    documents: int = 0
    """rerank: how many documents to rank (--rerank-documents)"""

    @property
    def streamed(self) -> bool:
        return self.stream and self.endpoint not in NOT_GENERATING

    def body(self) -> dict:
        if self.endpoint == "rerank":
            body: dict = rerank_body(self.model, self.prompt, self.documents)
        elif self.endpoint in EVENT_STREAMS:
            body = event_body(self.endpoint, self.model, self.prompt, self.max_tokens, self.messages, self.stream,
                              self.images)
        elif self.endpoint == "embeddings":
            body = {"model": self.model, "input": self.prompt, "encoding_format": "float"}
        else:
            body = {"model": self.model, "max_tokens": self.max_tokens, "stream": self.stream}
            if self.stream:
                body["stream_options"] = {"include_usage": True}
            if self.endpoint == "chat":
                body["messages"] = self.messages or [{"role": "user", "content": self.prompt}]
                if self.images:
                    body["messages"] = with_images("chat", body["messages"], self.images)
            else:
                body["prompt"] = self.prompt
            if self.output_len_mode == "ignore-eos":
                body["ignore_eos"] = True
            elif self.output_len_mode == "min-tokens":
                body["min_tokens"] = self.max_tokens
        if self.extra_body:
            body.update(self.extra_body)
        return body

    @property
    def length_asked(self) -> str:
        """What the body asks beside max_tokens for a fixed output length: `ignore_eos`, `min_tokens`, both
        joined by '+', or '' (as sent: --output-len-mode, a class's output_len_mode or an extra_body's field)."""
        if self.endpoint in NOT_GENERATING:
            return ""
        body = self.body()
        return "+".join(k for k in ("ignore_eos", "min_tokens") if body.get(k))


OUTPUT_LEN_MODES = ("usage", "ignore-eos", "min-tokens")
"""how a fixed output length is asked for: max_tokens only, + ignore_eos, + min_tokens = max_tokens"""


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
    output_tokens_client_source: str = ""
    """what the client counted: `tokenizer` (the run's --tokenizer) or `chunks` (client/tokens.py)"""
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
    streamed: bool = True
    """False: a non-streamed answer, whose ttft_ms is the whole answer's time (= e2e_ms)"""
    reasoning_tokens: int | None = None
    """usage.completion_tokens_details.reasoning_tokens, when the server sends it"""
    max_tokens: int | None = None
    """the max_tokens asked (None for embeddings and rerank)"""
    length_asked: str = ""
    """StreamRequest.length_asked: ignore_eos, min_tokens, both ('+') or ''"""
    empty_answer: bool = False
    """an HTTP 200 answer that ended cleanly ([DONE] / finish_reason) with no text at all (no answer, reasoning or
    tool-call delta): answered, nothing to time. Its own outcome (`error` says `empty_answer`), not a failure"""
    images: int = 0
    """images the request carried (StreamRequest.images)"""
    target: str = ""
    """the target's label (run/options/targets.py) when the run's transport named it"""
    documents: int | None = None
    """rerank: the documents sent to be ranked (None for other APIs)"""

    @property
    def ok(self) -> bool:
        """No failure: an empty answer is an answer (the analysis counts it apart, llmload.contract.EMPTY_ANSWER)."""
        return self.exception is None

    @property
    def error(self) -> str:
        """The samples.csv `error`: the failure's kind, `empty_answer`, or '' for an answer with text."""
        if self.exception is not None:
            return self.exception.kind
        return EMPTY_ANSWER if self.empty_answer else ""

    @property
    def itl_gaps_ms(self) -> list[float]:
        """Every gap between consecutive text chunks, ms, ascending (empty with fewer than two)."""
        gaps = self.timing.itl_gaps_ms if self.timing is not None else None
        return gaps if gaps is not None else []

    @property
    def retry_after_s(self) -> float | None:
        return getattr(self.exception, "retry_after_s", None)

    @property
    def retry_after_source(self) -> str:
        return getattr(self.exception, "retry_after_source", "")
