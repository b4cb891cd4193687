"""The Anthropic Messages stream (`POST /v1/messages`, `stream: true`) -> Events.

The events, by `type`:

| event | what it gives |
|---|---|
| `message_start` | `message.model`; input usage: prompt_tokens = `input_tokens` + `cache_read_input_tokens` + |
|  | `cache_creation_input_tokens`, cached_tokens = `cache_read_input_tokens` |
| `content_block_start` | nothing yet (a text block opens empty; a tool_use block names its tool) |
| `content_block_delta` | `text_delta`: answer text (the first non-empty one is the first token, TTFT); |
|  | `thinking_delta`: reasoning text; `input_json_delta`: tool-call arguments; `signature_delta`: nothing |
| `content_block_stop` | nothing |
| `message_delta` | `delta.stop_reason` (`end_turn` / `stop_sequence` -> stop, `max_tokens` -> length, `tool_use` -> |
|  | tool_calls) and `usage.output_tokens` (cumulative: completion_tokens; input counts again when present) |
| `message_stop` | the end |
| `ping` | a keep-alive: not a chunk |
| `error` | `error.type` (`overloaded_error`, `api_error`, ...) and `message`: an in-stream error |

`message_start`'s `usage.output_tokens` (1 or 0, before anything is generated) is not read: the count is
`message_delta`'s, so a stream cut before it has no server output count (the client's count stands in).
"""

from __future__ import annotations

from llmload.client.events import NOTHING, Event, EventStreamBuilder, error_object, text_of

STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls"}
KEEPALIVE = Event(keepalive=True)


def input_usage(usage: object) -> dict:
    """Anthropic input usage -> chat prompt_tokens (all input, cached included) and cached_tokens."""
    if not isinstance(usage, dict):
        return {}
    parts = [usage.get(k) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
    counts = [p for p in parts if isinstance(p, int)]
    if not counts:
        return {}
    out: dict = {"prompt_tokens": sum(counts)}
    if isinstance(usage.get("cache_read_input_tokens"), int):
        out["prompt_tokens_details"] = {"cached_tokens": usage["cache_read_input_tokens"]}
    return out


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _delta(delta: object) -> Event:
    if not isinstance(delta, dict):
        return NOTHING
    kind = delta.get("type")
    if kind == "text_delta":
        return Event(content=text_of(delta.get("text")))
    if kind == "thinking_delta":
        return Event(reasoning=text_of(delta.get("thinking")))
    if kind == "input_json_delta":
        return Event(content=text_of(delta.get("partial_json")))
    return NOTHING


def decode(obj: dict) -> Event:
    """One Messages stream event -> Event (see the module docstring)."""
    kind = obj.get("type")
    if kind == "content_block_delta":
        return _delta(obj.get("delta"))
    if kind == "ping":
        return KEEPALIVE
    if kind == "message_start":
        message = _dict(obj.get("message"))
        model = message.get("model")
        return Event(usage=input_usage(message.get("usage")) or None, model=model if isinstance(model, str) else None)
    if kind == "message_delta":
        usage = _dict(obj.get("usage"))
        fields = input_usage(usage) if "input_tokens" in usage else {}
        if isinstance(usage.get("output_tokens"), int):
            fields["completion_tokens"] = usage["output_tokens"]
        delta = obj.get("delta")
        reason = delta.get("stop_reason") if isinstance(delta, dict) else None
        return Event(usage=fields or None, finish_reason=STOP_REASONS.get(reason, reason) if reason else None)
    if kind == "message_stop":
        return Event(done=True)
    if kind == "error":
        return Event(error=error_object(obj.get("error"), "error"))
    return NOTHING


class MessagesBuilder(EventStreamBuilder):
    __slots__ = ()
    decode = staticmethod(decode)
