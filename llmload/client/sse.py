"""Server-sent-event lines of an OpenAI-compatible stream -> chunk events (pure, no I/O).

How it works: a streaming response is a sequence of lines. The transports stamp each line
with the time of the read that delivered it (the fast transport stamps socket reads and may
parse later, see client/fast.py), then hand the raw bytes to `parse_line`, which

- returns None for lines that carry nothing: blank separators, `: keep-alive` comments,
  `event:` / `id:` / `retry:` fields;
- returns `DONE` for `data: [DONE]`;
- decodes `data: {...}` JSON into one `Chunk` (raises `MalformedChunk` when it is not JSON).

A `Chunk` folds both wire shapes: chat (`choices[0].delta.content`, reasoning text in
`delta.reasoning_content` or `delta.reasoning`) and completions (`choices[0].text`). A chunk
may carry several tokens, the finish reason, usage (often in a last chunk whose `choices`
is empty) and an in-stream error (`data: {"error": {...}}`, sent by engines whose admission
fails after the 200 status went out). Role-only and empty deltas give a chunk with no
text: they are not tokens. A tool call is generated output too: a delta whose only payload
is `tool_calls` gives the call's argument fragments (or its function name, for the chunk
that opens the call) as the chunk's text; it is looked at only when the delta has no answer
or reasoning text, so text chunks cost nothing more. `answer_from_obj` folds a non-streamed
answer (`choices[0].message`, or `text`) the same way. CRLF and LF line ends are both accepted. Each `data:` line is
one event (OpenAI-compatible servers never split a JSON chunk over several `data:` lines).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

DONE = "[DONE]"
"""Sentinel returned for `data: [DONE]`."""

_raw_decode = json.JSONDecoder().raw_decode
"""json.loads without its two whitespace regex passes and its bytes-encoding sniffing"""

_fast_loads: Callable[[bytes], object] | None
try:
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - orjson is pinned in requirements.txt
    _fast_loads = None
"""orjson (~2 µs less per chunk); the standard decoder still judges what orjson refuses
(NaN, Infinity, integers beyond 64 bits are valid to Python's json)"""


def may_end_stream(block: bytes) -> bool:
    """Cheap byte test: can this block of lines hold `[DONE]` or an error event?

    False means it surely holds neither (so parsing it can wait until the stream ends);
    True means parse it now (a token text containing "[DONE]" is a harmless false alarm).
    """
    return b"[DONE]" in block or b'"error"' in block


class MalformedChunk(ValueError):
    read_time_s: float | None = None
    """when the bad chunk arrived (set by feed_blocks: the attempt failed then, not when parsed)"""

    """A `data:` line whose payload is not a JSON object."""


@dataclass(slots=True)
class Chunk:
    content: str = ""
    """generated answer text in this chunk ('' for role-only / empty deltas)"""
    reasoning: str = ""
    """reasoning ("thinking") text in this chunk"""
    finish_reason: str | None = None
    usage: dict | None = None
    """the `usage` object when the server sent one (include_usage)"""
    model: str | None = None
    error: dict | None = None
    """the `error` object of an in-stream error event"""


def feed_blocks(pending: list[tuple[float, bytes]], feed: Callable[[float, bytes], bool]) -> bool:
    """Feed stashed (read time, block of lines) in order, a block per call (`StreamBuilder.feed`);
    True once the stream is over."""
    try:
        for t, block in pending:
            if feed(t, block):
                return True
    except MalformedChunk as exc:
        exc.read_time_s = t  # the attempt failed when the bad chunk arrived, not when it was parsed
        raise
    finally:
        pending.clear()
    return False


def parse_line(line: bytes) -> Chunk | str | None:
    """One raw SSE line (with or without its CR/LF) -> Chunk, DONE or None."""
    if not line.startswith(b"data:"):
        return None  # blank separator, ': comment', event:/id:/retry: fields
    payload = line[5:].strip()
    if payload == b"[DONE]":
        return DONE
    if not payload:
        return None
    return Chunk(*chunk_fields(payload_object(payload)))


def line_fields(payload: bytes) -> tuple[str, str, str | None, dict | None, str | None, dict | None]:
    """A `data:` line's payload (stripped, not `[DONE]`) -> `chunk_fields` of its object: the pure-Python
    decoder, and the compiled one's fallback for what it does not handle (client/decoder.py)."""
    return chunk_fields(payload_object(payload))


def payload_object(payload: bytes) -> dict:
    """A `data:` line's JSON payload -> its object; MalformedChunk when it is not a JSON object."""
    try:
        obj = _fast_loads(payload) if _fast_loads is not None else _std_loads(payload)
    except ValueError:
        obj = _std_loads(payload)
    if type(obj) is not dict:
        raise MalformedChunk(f"chunk is not a JSON object: {payload[:80]!r}")
    return obj


def answer_loads(raw: bytes) -> object:
    """A whole non-streamed JSON answer (an embeddings vector is thousands of numbers: orjson parses it ~5x faster);
    the standard decoder for what orjson refuses (NaN, Infinity); ValueError when neither parses it."""
    if _fast_loads is not None:
        try:
            return _fast_loads(raw)
        except ValueError:
            pass
    return json.loads(raw)


def _std_loads(payload: bytes) -> object:
    try:
        text = payload.decode()
        obj, end = _raw_decode(text)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise MalformedChunk(f"chunk is not JSON: {payload[:80]!r}") from exc
    if end != len(text):
        raise MalformedChunk(f"chunk has trailing data: {payload[:80]!r}")
    return obj


def chunk_from_obj(obj: dict) -> Chunk:
    """Fold a decoded chunk object (chat or completions shape) into a Chunk."""
    return Chunk(*chunk_fields(obj))


def chunk_fields(obj: dict) -> tuple[str, str, str | None, dict | None, str | None, dict | None]:
    """A decoded chunk object's (content, reasoning, finish_reason, usage, model, error): a Chunk's
    fields in order, as a tuple (this runs once per chunk: no object built on the hot path)."""
    error = obj.get("error")
    if error is not None:
        return "", "", None, obj.get("usage"), obj.get("model"), \
            error if isinstance(error, dict) else {"message": str(error)}
    choices = obj.get("choices")
    if not choices:
        return "", "", None, obj.get("usage"), obj.get("model"), None
    choice = choices[0]
    if type(choice) is not dict:
        raise MalformedChunk(f"choices[0] is not an object: {choice!r:.80}")
    delta = choice.get("delta")
    content, reasoning = message_text(delta) if type(delta) is dict else (choice.get("text") or "", "")
    return content, reasoning, choice.get("finish_reason"), obj.get("usage"), obj.get("model"), None


def message_text(message: dict) -> tuple[str, str]:
    """A delta (or a whole message) -> (answer text, reasoning text); a tool call's text when it has neither."""
    content = message.get("content") or ""
    reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    if not content and not reasoning:
        calls = message.get("tool_calls")
        if calls:
            content = tool_call_text(calls)
    return content, reasoning


def tool_call_text(calls: object) -> str:
    """The generated text of `tool_calls` entries: argument fragments, else the function names."""
    if not isinstance(calls, list):
        return ""
    arguments, names = [], []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            arguments.append(function.get("arguments") or "")
            names.append(function.get("name") or "")
    return "".join(arguments) or "".join(names)


def answer_from_obj(obj: dict) -> Chunk:
    """A non-streamed answer object (chat `message` or completions `text`) folded into one Chunk."""
    chunk = Chunk(model=obj.get("model"), usage=obj.get("usage"))
    error = obj.get("error")
    if error is not None:
        chunk.error = error if isinstance(error, dict) else {"message": str(error)}
        return chunk
    choices = obj.get("choices")
    if choices and isinstance(choices[0], dict):
        choice = choices[0]
        chunk.finish_reason = choice.get("finish_reason")
        message = choice.get("message")
        if isinstance(message, dict):
            chunk.content, chunk.reasoning = message_text(message)
        else:
            chunk.content = choice.get("text") or ""
    return chunk
