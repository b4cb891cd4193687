"""The OpenAI Responses API stream (`POST /v1/responses`, `stream: true`) -> Events.

The events that matter, by `type` (every other one, e.g. `response.output_item.added`,
`response.content_part.added`, `response.output_text.done`, carries no new text and only dates `t_last`):

| event | what it gives |
|---|---|
| `response.created` / `response.in_progress` | `response.model` |
| `response.output_text.delta` | answer text (`delta`): the first non-empty one is the first token (TTFT) |
| `response.reasoning_summary_text.delta`, `response.reasoning_text.delta` | reasoning text (first reasoning token) |
| `response.function_call_arguments.delta` | tool-call arguments (generated text, as chat's `tool_calls`) |
| `response.completed` | `response.usage`; the end (finish `stop`) |
| `response.incomplete` | usage; the end, finish from `incomplete_details.reason` (`max_output_tokens` -> `length`) |
| `response.failed` | `response.error`: an in-stream error (samples' `error` is `stream_error`) |
| `error` | `code` / `message`: an in-stream error |

Usage is mapped to the chat shape: `input_tokens` -> prompt_tokens, `input_tokens_details.cached_tokens`,
`output_tokens` -> completion_tokens, `output_tokens_details.reasoning_tokens`.
"""

from __future__ import annotations

from llmload.client.events import NOTHING, Event, EventStreamBuilder, error_object, text_of

INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}
REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


def chat_usage(usage: object) -> dict | None:
    """Responses usage -> the chat usage fields StreamBuilder.fill reads (None when absent)."""
    if not isinstance(usage, dict):
        return None
    out: dict = {}
    if isinstance(usage.get("input_tokens"), int):
        out["prompt_tokens"] = usage["input_tokens"]
    if isinstance(usage.get("output_tokens"), int):
        out["completion_tokens"] = usage["output_tokens"]
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens")
    if isinstance(cached, int):
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens")
    if isinstance(reasoning, int):
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return out


def decode(obj: dict) -> Event:
    """One Responses stream event -> Event (see the module docstring)."""
    kind = obj.get("type")
    if kind == "response.output_text.delta" or kind == "response.function_call_arguments.delta":
        return Event(content=text_of(obj.get("delta")))
    if kind in REASONING_DELTAS:
        return Event(reasoning=text_of(obj.get("delta")))
    if kind == "error":
        return Event(error=error_object(obj.get("error") or obj, "error"))
    response = obj.get("response")
    if not isinstance(response, dict):
        return NOTHING
    model = response.get("model") if isinstance(response.get("model"), str) else None
    if kind == "response.completed":
        return Event(usage=chat_usage(response.get("usage")), model=model, finish_reason="stop", done=True)
    if kind == "response.incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason") or "incomplete"
        return Event(usage=chat_usage(response.get("usage")), model=model, done=True,
                     finish_reason=INCOMPLETE_REASONS.get(reason, str(reason)))
    if kind == "response.failed":
        return Event(error=error_object(response.get("error"), "response_failed"))
    return Event(model=model)


class ResponsesBuilder(EventStreamBuilder):
    __slots__ = ()
    decode = staticmethod(decode)
