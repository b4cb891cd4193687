"""The event streams of the Responses API and of Anthropic Messages, as precomputed templates.

Like wire.ChunkTemplates, a text event is a fixed prefix + JSON-escaped tokens + a fixed suffix, so a
token costs one concatenation and one write whatever the API. Each template set has the same parts
`generation.Generation` writes: `role` (the events sent with the headers), `reasoning_pair()` and
`prefix`/`suffix` (reasoning and answer deltas), `answer_lead()` (the events that open the answer, sent in
the same write as its first delta), `end(...)` (the events that close the stream, usage included), `error()`
(an in-stream error) and `malformed()` (a data line that is not JSON).

Responses (`/v1/responses`): `response.created`, `response.in_progress`, a reasoning item
(`response.reasoning_summary_text.delta`) when reasoning is on, the message item
(`response.output_item.added`, `response.content_part.added`, `response.output_text.delta` ...), then
`response.completed` with usage, or `response.incomplete` (`max_output_tokens`) when the length limit
stopped it; an error is `response.failed`. Events carry no `sequence_number` (fixed templates) and the
`.done` events that repeat the whole text are left out: a client times by the deltas and the terminal event.

Messages (`/v1/messages`): `message_start` (input usage), `ping`, a `thinking` block (`thinking_delta`,
closed by a `signature_delta`) when reasoning is on, the `text` block (`content_block_start`,
`text_delta` deltas, `content_block_stop`), `message_delta` (stop reason, usage: output tokens and the
input counts again) and `message_stop`; an error is `event: error` with an `overloaded_error`.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

MESSAGES_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def event(kind: str, fields: dict) -> str:
    """One SSE event: `event: <kind>` and its JSON data (which repeats the kind as `type`)."""
    return f"event: {kind}\ndata: " + json.dumps({"type": kind, **fields}, separators=(",", ":")) + "\n\n"


def _delta_pair(kind: str, fields: str, key: str) -> tuple[str, str]:
    return (f'event: {kind}\ndata: {{"type":"{kind}",{fields},"{key}":"', '"}\n\n')


class ResponsesTemplates:
    def __init__(self, request_id: str, created: int, model: str, reasoning: bool):
        self.id, self.created, self.model, self.reasoning = "resp_" + request_id, created, model, reasoning
        self.message_id, self.reasoning_id = "msg_" + request_id, "rs_" + request_id
        self.index = 1 if reasoning else 0
        role = event("response.created", {"response": self._response("in_progress")}) + \
            event("response.in_progress", {"response": self._response("in_progress")})
        if reasoning:
            role += event("response.output_item.added", {"output_index": 0, "item": {
                "id": self.reasoning_id, "type": "reasoning", "summary": []}})
        self.role = role
        self.prefix, self.suffix = _delta_pair(
            "response.output_text.delta", f'"item_id":"{self.message_id}","output_index":{self.index},'
                                          '"content_index":0', "delta")

    def _response(self, status: str, **extra) -> dict:
        return {"id": self.id, "object": "response", "created_at": self.created, "status": status,
                "model": self.model, "output": [], **extra}

    def reasoning_pair(self) -> tuple[str, str]:
        return _delta_pair("response.reasoning_summary_text.delta",
                           f'"item_id":"{self.reasoning_id}","output_index":0,"summary_index":0', "delta")

    def answer_lead(self) -> str:
        lead = event("response.output_item.done", {"output_index": 0, "item": {
            "id": self.reasoning_id, "type": "reasoning", "summary": []}}) if self.reasoning else ""
        return lead + event("response.output_item.added", {"output_index": self.index, "item": {
            "id": self.message_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}) + \
            event("response.content_part.added", {"item_id": self.message_id, "output_index": self.index,
                                                  "content_index": 0, "part": {"type": "output_text", "text": ""}})

    def end(self, finish_reason: str, prompt_tokens: int, output_tokens: int, cached_tokens: int,
            reasoning_tokens: int | None) -> str:
        usage = {"input_tokens": prompt_tokens, "input_tokens_details": {"cached_tokens": cached_tokens},
                 "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": reasoning_tokens or 0},
                 "total_tokens": prompt_tokens + output_tokens}
        if finish_reason == "length":
            return event("response.incomplete", {"response": self._response(
                "incomplete", incomplete_details={"reason": "max_output_tokens"}, usage=usage)})
        return event("response.completed", {"response": self._response("completed", usage=usage)})

    def error(self, message: str) -> str:
        return event("response.failed", {"response": self._response(
            "failed", error={"code": "server_error", "message": message})})

    def malformed(self) -> str:
        return 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"\n\n'


class MessagesTemplates:
    def __init__(self, request_id: str, created: int, model: str, reasoning: bool):
        self.id, self.model, self.reasoning = "msg_" + request_id, model, reasoning
        self.index = 1 if reasoning else 0
        self.role = ""
        self.prefix, self.suffix = _delta_pair("content_block_delta", f'"index":{self.index},"delta":{{"type":'
                                                                      '"text_delta"', "text")
        self.suffix = '"}}\n\n'

    def open(self, prompt_tokens: int, cached_tokens: int) -> None:
        """The opening events, with the input usage known when the headers go out."""
        usage = {**self._input(prompt_tokens, cached_tokens), "output_tokens": 1}
        message: dict = {"id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": [],
                   "stop_reason": None, "stop_sequence": None, "usage": usage}
        self.role = event("message_start", {"message": message})
        self.role += event("ping", {})
        if self.reasoning:
            self.role += event("content_block_start", {"index": 0, "content_block": {"type": "thinking",
                                                                                     "thinking": ""}})

    @staticmethod
    def _input(prompt_tokens: int, cached_tokens: int) -> dict:
        return {"input_tokens": prompt_tokens - cached_tokens, "cache_read_input_tokens": cached_tokens,
                "cache_creation_input_tokens": 0}

    def reasoning_pair(self) -> tuple[str, str]:
        prefix, _ = _delta_pair("content_block_delta", '"index":0,"delta":{"type":"thinking_delta"', "thinking")
        return prefix, '"}}\n\n'

    def answer_lead(self) -> str:
        lead = ""
        if self.reasoning:
            lead = event("content_block_delta", {"index": 0, "delta": {"type": "signature_delta",
                                                                       "signature": "c2ltdWxhdGVk"}})
            lead += event("content_block_stop", {"index": 0})
        return lead + event("content_block_start", {"index": self.index, "content_block": {"type": "text",
                                                                                           "text": ""}})

    def end(self, finish_reason: str, prompt_tokens: int, output_tokens: int, cached_tokens: int,
            reasoning_tokens: int | None) -> str:
        usage = {**self._input(prompt_tokens, cached_tokens), "output_tokens": output_tokens}
        return event("content_block_stop", {"index": self.index}) + event("message_delta", {
            "delta": {"stop_reason": MESSAGES_STOP.get(finish_reason, finish_reason), "stop_sequence": None},
            "usage": usage}) + event("message_stop", {})

    def error(self, message: str) -> str:
        return event("error", {"error": {"type": "overloaded_error", "message": message}})

    def malformed(self) -> str:
        return 'event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"\n\n'


ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                         404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                         500: "api_error", 529: "overloaded_error"}


def anthropic_error(status: int, message: str) -> tuple[int, bytes]:
    """An error answer in Anthropic's shape; an overload (503) is Anthropic's 529."""
    status = 529 if status == 503 else status
    kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return status, json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def anthropic_retry(wait_s: float, limit: str, now_unix: float) -> dict[str, str]:
    """Anthropic's hints of a 429: `retry-after` (whole seconds, rounded up) and the refused bucket's reset time
    (RFC 3339, `anthropic-ratelimit-requests-reset` or `-tokens-reset`)."""
    reset = datetime.fromtimestamp(now_unix + wait_s, tz=UTC).isoformat(timespec="milliseconds")
    kind = "tokens" if limit == "tokens" else "requests"
    return {"retry-after": str(max(1, math.ceil(wait_s))),
            f"anthropic-ratelimit-{kind}-reset": reset.replace("+00:00", "Z")}


def anthropic_quota(headers: dict[str, str]) -> dict[str, str]:
    """OpenAI's x-ratelimit-(limit|remaining)-(requests|tokens) in Anthropic's names (others kept)."""
    out = {}
    for name, value in headers.items():
        for part in ("limit", "remaining"):
            for kind in ("requests", "tokens"):
                if name == f"x-ratelimit-{part}-{kind}":
                    name = f"anthropic-ratelimit-{kind}-{part}"
        out[name] = value
    return out
