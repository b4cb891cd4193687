"""The trace formats `--trace` reads: one function per format turns one parsed record into a `TraceRecord`.

Formats (the columns each needs; `trace.py` detects which one a file is):
  * native (JSONL or CSV, ours): `timestamp_s` (seconds), `input_tokens`, `output_tokens`; optional
    `session_id`, `prefix_id` + `prefix_tokens` (a prefix of that many tokens shared by every record with
    that id; default DEFAULT_PREFIX_TOKENS, cut to the prompt), `hash_ids` (Mooncake blocks), and
    `prompt` or `messages` (sent as written instead of a synthetic text of `input_tokens`).
  * mooncake (JSONL): `timestamp` (milliseconds), `input_length`, `output_length`, `hash_ids` (the prompt's
    512-token blocks; equal ids are equal text, so records sharing ids share a prefix).
  * azure (CSV, Azure LLM inference traces): `TIMESTAMP` (a date-time string), `ContextTokens`,
    `GeneratedTokens`.
  * burstgpt (CSV): `Timestamp` (seconds), `Request tokens`, `Response tokens`.
A value that cannot be read raises `TraceError` with one line naming the record and the column to fix.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

MOONCAKE_BLOCK_TOKENS = 512
"""tokens per Mooncake hash block (the trace's own block size)"""
DEFAULT_PREFIX_TOKENS = 512
"""native `prefix_id` without `prefix_tokens`: one Mooncake-sized block shared"""
FORMATS = ("native", "mooncake", "azure", "burstgpt")
COLUMNS = {
    "native": ("timestamp_s", "input_tokens", "output_tokens"),
    "mooncake": ("timestamp", "input_length", "output_length"),
    "azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    "burstgpt": ("Timestamp", "Request tokens", "Response tokens"),
}


class TraceError(ValueError):
    """A trace that cannot be replayed (the message is one line saying what to fix)."""


@dataclass(frozen=True)
class TraceRecord:
    timestamp_s: float
    """arrival in seconds on the trace's own clock (only differences matter)"""
    input_tokens: int
    output_tokens: int
    session_id: str = ""
    blocks: tuple[tuple[str, int], ...] = ()
    """the shared prefix: (block key, tokens) in prompt order; equal keys are equal text"""
    prompt: str | None = None
    messages: tuple[dict, ...] | None = None


def _count(row: dict, column: str, where: str) -> int:
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise TraceError(f"{where}: no {column!r} (a token count is needed)")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TraceError(f"{where}: {column!r} must be a whole number of tokens, got {value!r}") from None
    if number < 0 or not math.isfinite(number) or number != int(number):
        raise TraceError(f"{where}: {column!r} must be a whole number of tokens >= 0, got {value!r}")
    return int(number)


def _seconds(row: dict, column: str, where: str, scale: float = 1.0) -> float:
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise TraceError(f"{where}: no {column!r} (the arrival time is needed)")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TraceError(f"{where}: {column!r} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise TraceError(f"{where}: {column!r} must be a finite number, got {value!r}")
    return number * scale


_FRACTION = re.compile(r"(\.\d{6})\d+")


def _datetime_s(row: dict, column: str, where: str) -> float:
    """Azure's `TIMESTAMP` ('2023-11-16 18:15:46.6805900', time zone optional: UTC) -> unix seconds."""
    value = str(row.get(column) or "").strip()
    if not value:
        raise TraceError(f"{where}: no {column!r} (the arrival time is needed)")
    try:
        when = datetime.fromisoformat(_FRACTION.sub(r"\1", value))
    except ValueError:
        raise TraceError(f"{where}: {column!r} must be a date-time like 2023-11-16 18:15:46.680, "
                         f"got {value!r}") from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _hash_blocks(hash_ids: Any, input_tokens: int, where: str) -> tuple[tuple[str, int], ...]:
    """Mooncake `hash_ids`: block i holds tokens i*512 .. (i+1)*512 of the prompt (the last one may be cut)."""
    if hash_ids in (None, ""):
        return ()
    if isinstance(hash_ids, str):  # a CSV cell: "1 2 3" or "[1, 2, 3]"
        hash_ids = [p for p in re.split(r"[\s,;\[\]]+", hash_ids) if p]
    if not isinstance(hash_ids, list):
        raise TraceError(f"{where}: 'hash_ids' must be a list of block ids, got {hash_ids!r}")
    blocks = []
    for i, block in enumerate(hash_ids):
        tokens = min(MOONCAKE_BLOCK_TOKENS, input_tokens - i * MOONCAKE_BLOCK_TOKENS)
        if tokens <= 0:
            break
        blocks.append((f"hash:{block}", tokens))
    return tuple(blocks)


def _messages(row: dict, where: str) -> tuple[dict, ...] | None:
    messages = row.get("messages")
    if messages in (None, ""):
        return None
    if isinstance(messages, str):
        try:
            messages = json.loads(messages)
        except ValueError:
            raise TraceError(f"{where}: 'messages' is not JSON") from None
    good = isinstance(messages, list) and messages and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages)
    if not good:
        raise TraceError(f"{where}: 'messages' must be [{{\"role\": string, \"content\": string}}, ...]")
    return tuple(dict(m) for m in messages)


def native(row: dict, where: str) -> TraceRecord:
    inp = _count(row, "input_tokens", where)
    blocks = _hash_blocks(row.get("hash_ids"), inp, where)
    prefix = str(row.get("prefix_id") or "").strip()
    if prefix and not blocks:
        size = _count(row, "prefix_tokens", where) if row.get("prefix_tokens") not in (None, "") \
            else DEFAULT_PREFIX_TOKENS
        blocks = ((f"prefix:{prefix}", min(size, inp)),) if min(size, inp) > 0 else ()
    prompt = row.get("prompt")
    if prompt not in (None, "") and not isinstance(prompt, str):
        raise TraceError(f"{where}: 'prompt' must be a string")
    return TraceRecord(
        timestamp_s=_seconds(row, "timestamp_s", where), input_tokens=inp,
        output_tokens=_count(row, "output_tokens", where), session_id=str(row.get("session_id") or "").strip(),
        blocks=blocks, prompt=prompt or None, messages=_messages(row, where))


def mooncake(row: dict, where: str) -> TraceRecord:
    inp = _count(row, "input_length", where)
    return TraceRecord(timestamp_s=_seconds(row, "timestamp", where, scale=0.001), input_tokens=inp,
                       output_tokens=_count(row, "output_length", where),
                       blocks=_hash_blocks(row.get("hash_ids"), inp, where))


def azure(row: dict, where: str) -> TraceRecord:
    return TraceRecord(timestamp_s=_datetime_s(row, "TIMESTAMP", where),
                       input_tokens=_count(row, "ContextTokens", where),
                       output_tokens=_count(row, "GeneratedTokens", where))


def burstgpt(row: dict, where: str) -> TraceRecord:
    return TraceRecord(timestamp_s=_seconds(row, "Timestamp", where),
                       input_tokens=_count(row, "Request tokens", where),
                       output_tokens=_count(row, "Response tokens", where))


READERS: dict[str, Callable[[dict, str], TraceRecord]] = {
    "native": native, "mooncake": mooncake, "azure": azure, "burstgpt": burstgpt}


def detect(columns: list[str]) -> str | None:
    """The format whose required columns the first record has (None: none fits)."""
    have = set(columns)
    for name in ("mooncake", "azure", "burstgpt", "native"):
        if set(COLUMNS[name]) <= have:
            return name
    return None
