"""The simulated tokenizer and text generator.

How it works: the embedded server counts one token per whitespace-separated word of the
prompt (chat messages in order, each preceded by a role marker token). That is not any
real model's tokenizer, but it is exact and cheap, so a client that builds prompts of N
words knows the server sees N (+ role markers) tokens; an image part adds its patch tokens (images.py).
Output tokens are words drawn deterministically from a small vocabulary, each streamed with a leading space.

Structured prompts (asking for JSON or code, or `response_format` set) are recognised so
the engine can decode them faster, as speculative decoding does on predictable text.
"""

from __future__ import annotations

import json
import random
import re

from llmload.server.images import image_url_of, image_words

VOCABULARY = (
    "the model answers with a short stream of plain words so that every token is one word "
    "and clients can count them exactly while timing each chunk as it arrives on the socket"
).split()
_JSON_WORDS = '{"key": "value", "items": [1, 2, 3], "ok": true}'.split()

_STRUCTURED = re.compile(r"\bjson\b|```|\bcode\b|\bfunction\b|\bpython\b|\bsql\b", re.IGNORECASE)


def prompt_words(messages_or_prompt: list[dict] | str) -> list[str]:
    """The prompt as the token sequence the server counts (and caches prefixes of)."""
    if isinstance(messages_or_prompt, str):
        return messages_or_prompt.split()
    words: list[str] = []
    for message in messages_or_prompt:
        words.append(f"<|{message.get('role', 'user')}|>")
        content = message.get("content")
        if isinstance(content, str):
            words.extend(content.split())
        elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, {"type": "image_url", ...}]
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    words.extend(part["text"].split())
                elif isinstance(url := image_url_of(part), str):
                    words.extend(image_words(url))  # checked by parse.completion_body
    return words


def is_structured(body: dict, words: list[str]) -> bool:
    """Does the request ask for highly predictable output (JSON / code)?"""
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
        return True
    # instructions sit at the start (system prompt) or the end (the question)
    return bool(_STRUCTURED.search(" ".join(words[:64])) or _STRUCTURED.search(" ".join(words[-64:])))


class TextSource:
    """Deterministic output tokens, JSON-escaped once (they go into chunk templates)."""

    def __init__(self, seed: int):
        rng = random.Random(seed)
        self._plain = [json.dumps(" " + w)[1:-1] for w in VOCABULARY]
        self._json = [json.dumps(" " + w)[1:-1] for w in _JSON_WORDS]
        self._order = [rng.randrange(len(self._plain)) for _ in range(997)]

    def tokens(self, start: int, count: int, structured: bool) -> str:
        """`count` escaped tokens joined, beginning at position `start` of the stream."""
        if structured:
            return "".join(self._json[(start + i) % len(self._json)] for i in range(count))
        order = self._order
        if count == 1:
            return self._plain[order[start % len(order)]]
        return "".join(self._plain[order[(start + i) % len(order)]] for i in range(count))
