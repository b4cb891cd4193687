"""OpenAI wire format: error bodies, SSE chunk templates, non-streamed bodies, HTTP framing.

Chunks are shaped exactly like OpenAI's: `chat.completion.chunk` objects, a role-only
first chunk (`"content": ""`), content deltas, a chunk with `finish_reason`, with
`stream_options.include_usage` a last chunk with empty `choices` and the usage, then
`data: [DONE]`. A content chunk is a precomputed prefix + escaped tokens + suffix, so
streaming costs one string concatenation and one socket write per chunk. Reasoning chunks
(`delta.reasoning_content`) and tool-call argument fragments (`delta.tool_calls`) are the
same kind of prefix + tokens + suffix pair.
"""

from __future__ import annotations

import json
from http import HTTPStatus

DONE = "data: [DONE]\n\n"


def error_body(status: int, message: str, err_type: str, code: str | int | None = None,
               param: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": err_type, "param": param,
                                 "code": code}}).encode()


def http_response(status: int, body: bytes, headers: dict[str, str] | None = None,
                  keep_alive: bool = True, content_type: str = "application/json") -> bytes:
    reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Overloaded"  # 529: Anthropic
    lines = [f"HTTP/1.1 {status} {reason}", f"content-type: {content_type}",
             f"content-length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if not keep_alive:
        lines.append("connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def stream_head(headers: dict[str, str], keep_alive: bool) -> bytes:
    lines = ["HTTP/1.1 200 OK", "content-type: text/event-stream; charset=utf-8",
             "cache-control: no-cache", "transfer-encoding: chunked"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if not keep_alive:
        lines.append("connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def frame(event: str) -> bytes:
    """One HTTP/1.1 chunk holding `event` (ASCII: tokens are JSON-escaped)."""
    return b"%x\r\n%s\r\n" % (len(event), event.encode())


LAST_FRAME = b"0\r\n\r\n"


class ChunkTemplates:
    """Precomputed SSE events of one streamed response."""

    def __init__(self, chat: bool, completion_id: str, created: int, model: str, include_usage: bool):
        self.chat = chat
        obj = "chat.completion.chunk" if chat else "text_completion"
        head = (f'{{"id":"{completion_id}","object":"{obj}","created":{created},'
                f'"model":{json.dumps(model)},')
        self._head = head
        usage_null = ',"usage":null' if include_usage else ""
        if chat:
            self.prefix = 'data: ' + head + '"choices":[{"index":0,"delta":{"content":"'
            self.suffix = '"},"logprobs":null,"finish_reason":null}]' + usage_null + "}\n\n"
            self.role = ('data: ' + head + '"choices":[{"index":0,"delta":{"role":"assistant",'
                         '"content":""},"logprobs":null,"finish_reason":null}]' + usage_null + "}\n\n")
        else:
            self.prefix = 'data: ' + head + '"choices":[{"index":0,"text":"'
            self.suffix = '","logprobs":null,"finish_reason":null}]' + usage_null + "}\n\n"
            self.role = ""
        self._usage_null = usage_null

    def delta_pair(self, delta_head: str, delta_tail: str) -> tuple[str, str]:
        """Prefix and suffix of a chat chunk whose delta is `delta_head` + tokens + `delta_tail`."""
        return ('data: ' + self._head + '"choices":[{"index":0,"delta":{' + delta_head,
                delta_tail + '},"logprobs":null,"finish_reason":null}]' + self._usage_null + "}\n\n")

    def reasoning_pair(self) -> tuple[str, str]:
        return self.delta_pair('"reasoning_content":"', '"')

    def tool_pair(self) -> tuple[str, str]:
        """A fragment of the arguments of tool call 0."""
        return self.delta_pair('"tool_calls":[{"index":0,"function":{"arguments":"', '"}}]')

    def tool_head(self, call_id: str, name: str) -> str:
        """The first tool-call chunk: id, type and function name, empty arguments."""
        call = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        prefix, suffix = self.delta_pair('"tool_calls":' + json.dumps([call], separators=(",", ":")), "")
        return prefix + suffix

    def content(self, escaped_tokens: str) -> str:
        return self.prefix + escaped_tokens + self.suffix

    def finish(self, reason: str) -> str:
        if self.chat:
            choice = f'{{"index":0,"delta":{{}},"logprobs":null,"finish_reason":"{reason}"}}'
        else:
            choice = f'{{"index":0,"text":"","logprobs":null,"finish_reason":"{reason}"}}'
        return "data: " + self._head + '"choices":[' + choice + "]" + self._usage_null + "}\n\n"

    def usage(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int,
              reasoning_tokens: int | None = None) -> str:
        return "data: " + self._head + '"choices":[],"usage":' + json.dumps(
            usage_dict(prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens)) + "}\n\n"

    def malformed(self) -> str:
        return "data: " + self._head + '"choices":[{"index":0,"delta":{"content":"\n\n'


def usage_dict(prompt_tokens: int, completion_tokens: int, cached_tokens: int,
               reasoning_tokens: int | None = None) -> dict:
    """OpenAI usage; `completion_tokens_details.reasoning_tokens` when reasoning is on."""
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens,
             "prompt_tokens_details": {"cached_tokens": cached_tokens}}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return usage


def error_event(message: str, code: int) -> str:
    return "data: " + json.dumps({"error": {"message": message, "type": "server_error",
                                            "param": None, "code": code}}) + "\n\n"


def full_body(chat: bool, completion_id: str, created: int, model: str, message: dict, reason: str,
              usage: dict) -> bytes:
    """A non-streamed answer; `message` holds `content` (and `reasoning_content`, `tool_calls`)."""
    if chat:
        choice = {"index": 0, "message": {"role": "assistant", "refusal": None, **message},
                  "logprobs": None, "finish_reason": reason}
        obj = "chat.completion"
    else:
        choice = {"index": 0, "text": message["content"], "logprobs": None, "finish_reason": reason}
        obj = "text_completion"
    return json.dumps({"id": completion_id, "object": obj, "created": created, "model": model,
                       "choices": [choice], "usage": usage}).encode()
