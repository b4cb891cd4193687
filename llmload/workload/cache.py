"""Prompt-cache control (`--cache warm|cold`, or one per tier): the pure parts (the run's side: run/cache.py).

How it works:
- cold: `salted(text, messages)` puts a fresh random salt (16 hex digits, not drawn from the seeded prompt
  stream, so a `--seed` still sends the same workload) at the very start of the prompt, or of the first message
  (a system prompt included), so no two requests, of this run or an earlier one, share a prefix.
- warm: `distinct_prompts(items, chat)` lists each distinct request of the dataset once, as the prompt source
  would send it (messages for chat, the joined text for completions); the run sends each once, max_tokens 1,
  at the start of every warm tier, so the measured requests find their prefix in the server's cache.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable

from llmload.workload.dataset import DatasetItem

SALT_HEX_DIGITS = 16
"""64 random bits: two requests sharing a salt is out of the question"""


def salt() -> str:
    return uuid.uuid4().hex[:SALT_HEX_DIGITS]


def salted(text: str, messages: list[dict] | None) -> tuple[str, list[dict] | None]:
    """The prompt and messages with one fresh salt opening them (the messages are copied, never changed)."""
    mark = salt()
    if not messages:
        return f"{mark} {text}", messages
    first = dict(messages[0])
    first["content"] = f"{mark} {first.get('content', '')}"
    return text, [first, *(dict(m) for m in messages[1:])]


def distinct_prompts(items: Iterable[DatasetItem], chat: bool) -> list[tuple[str, list[dict] | None]]:
    """(prompt, messages) of each distinct dataset request, in file order, as the prompt source sends it."""
    seen: set[str] = set()
    out: list[tuple[str, list[dict] | None]] = []
    for item in items:
        messages = [dict(m) for m in item.messages] if item.messages and chat else None
        prompt = item.prompt if chat or not item.messages else "\n".join(m["content"] for m in item.messages)
        key = json.dumps([prompt, messages], sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append((prompt, messages))
    return out
