"""The truth log: what really happened to each request, as the server saw it.

One CSV row per request, written when the response ends. Times are
`time.perf_counter()` seconds (CLOCK_MONOTONIC on Linux, the same clock a client on the
same machine reads), so a test can compare a client's measured TTFT with the time the
server actually wrote the first content byte, stamped just before the write (on loopback the kernel
dates the client's read inside the server's send, so a stamp after it would be late by the syscall).
Rows are flushed at least every second.

`first_byte_s` is the first answer byte (content or tool-call arguments; for non-streamed
answers and embeddings, the whole body); `first_reasoning_byte_s` the first reasoning byte;
`first_byte_due_s` when the first generated token was due (end of prefill). `max_tokens` is
what the request asked ('' when unset), `finish_reason` what the answer ended with ('' if it
did not complete), `reasoning_tokens` how many of `output_tokens` were reasoning ('' when
`--reasoning-tokens` is off), `tool_results` how many tool results (`tool` messages) a chat request's
conversation held ('' for other endpoints), `images` how many images a chat, Responses or Messages request's
messages carried and `image_tokens` the prompt tokens they count for (images.py; both in `prompt_tokens`, ''
for other endpoints),
`documents` how many documents a rerank request held ('' for other endpoints). `endpoint` is the path served
(/v1/chat/completions, /v1/responses, /v1/messages, /v1/rerank, ...).
"""

from __future__ import annotations

import csv
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from _csv import Writer

COLUMNS = ("request_id", "endpoint", "status", "stream", "arrival_s", "service_start_s",
           "first_byte_due_s", "first_byte_s", "last_byte_s", "arrival_unix", "prompt_tokens",
           "cached_tokens", "output_tokens", "fault", "max_tokens", "finish_reason", "reasoning_tokens",
           "first_reasoning_byte_s", "tool_results", "images", "image_tokens", "documents")


class TruthLog:
    def __init__(self, path: str | None):
        self._file: TextIO | None = None
        self._writer: Writer | None = None
        if path:
            self._file = open(path, "w", newline="")
            self._writer = csv.writer(self._file)
            self._writer.writerow(COLUMNS)
            self._file.flush()
        self._flushed_s = time.monotonic()

    def write(self, row: dict[str, Any]) -> None:
        if self._writer is None:
            return
        self._writer.writerow([_fmt(row.get(c)) for c in COLUMNS])
        now = time.monotonic()
        if now - self._flushed_s >= 1.0:
            self.flush()
            self._flushed_s = now

    def flush(self) -> None:
        if self._file:
            self._file.flush()

    def close(self) -> None:
        if self._file:
            self._file.close()
            self._file = self._writer = None


def _fmt(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6f}"
    return str(value)
