"""`EventStreamBuilder`: a StreamBuilder for typed event streams (the Responses API, Anthropic Messages).

How it works: these streams send `event: <type>` + `data: {"type": "<type>", ...}` pairs and end with a
terminal event instead of `data: [DONE]`. The `event:` lines are skipped (the JSON repeats the type);
each `data:` object is decoded by the API's `decode` function (client/events_responses.py,
client/events_messages.py) into an `Event`: answer text, reasoning text, usage (already in the chat
shape `StreamBuilder.fill` reads: `prompt_tokens`, `completion_tokens`, `prompt_tokens_details`,
`completion_tokens_details`), model, finish reason, an error object, and whether the stream is over.
Timing follows the chat stream exactly: every event but a keep-alive (`ping`) dates `t_last`, text
events date the first token (answer or reasoning) and the inter-token gaps; usage fields of later
events update earlier ones (Anthropic sends input tokens first, output tokens at the end).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from llmload.client import sse
from llmload.client.builder import StreamBuilder


@dataclass(slots=True)
class Event:
    content: str = ""
    reasoning: str = ""
    usage: dict | None = None
    """chat-shaped usage fields this event states (merged over the earlier ones)"""
    model: str | None = None
    finish_reason: str | None = None
    error: dict | None = None
    """an error object (`code` or `type`, `message`): the stream failed"""
    done: bool = False
    """a terminal event: the answer is complete"""
    keepalive: bool = False
    """carries nothing (Anthropic's `ping`): not a chunk of the answer"""


NOTHING = Event()


def merge_usage(old: dict | None, new: dict) -> dict:
    """Usage fields of a later event over the earlier ones (nested details merged too)."""
    merged = dict(old or {})
    for key, value in new.items():
        merged[key] = {**merged[key], **value} if isinstance(value, dict) and isinstance(merged.get(key), dict) \
            else value
    return merged


class EventStreamBuilder(StreamBuilder):
    """Folds the timestamped lines of a typed event stream; `decode` maps one data object to an Event."""

    __slots__ = ()
    decode: Callable[[dict], Event] = staticmethod(lambda obj: NOTHING)

    def feed(self, t: float, lines: bytes) -> bool:
        timing = self.timing
        for line in lines.split(b"\n"):
            if not line.startswith(b"data:"):
                continue  # `event:` names (the data repeats them), blank separators, comments
            payload = line[5:].strip()
            if not payload or payload == b"[DONE]":  # a gateway's extra [DONE] after the terminal event
                if payload:
                    self.saw_done = True
                    return True
                continue
            try:
                event = self.decode(sse.payload_object(payload))
            except sse.MalformedChunk as exc:
                exc.read_time_s = t
                raise
            if event.error is not None:
                self.error_event = event.error
                return True
            if event.keepalive:
                continue
            timing.t_last = t
            if event.content or event.reasoning:
                timing.text_times.append(t)
                if event.content:
                    self.parts.append(event.content)
                    if timing.t_first_content is None:
                        timing.t_first_content = t
                if event.reasoning:
                    self.parts.append(event.reasoning)
                    if timing.t_first_reasoning is None:
                        timing.t_first_reasoning = t
            if event.usage:
                self.usage = merge_usage(self.usage, event.usage)
            if event.model and not self.model:
                self.model = event.model
            if event.finish_reason:
                self.finish_reason = event.finish_reason
            if event.done:
                self.saw_done = True
                return True
        return False


def text_of(value: object) -> str:
    """A delta's text ('' when it is not a string)."""
    return value if isinstance(value, str) else ""


def error_object(value: object, fallback_code: str) -> dict:
    """An error object with a `code` (or `type`) and a `message`, whatever shape the event gave."""
    if isinstance(value, dict) and (value.get("code") or value.get("type") or value.get("message")):
        return {"code": value.get("code") or value.get("type") or fallback_code,
                "message": str(value.get("message") or "")}
    return {"code": fallback_code, "message": str(value or "")}
