"""The prompt of a trace record: its shared prefix blocks, then text of its own, `input_tokens` long in all.

How it works: a record's `blocks` (Mooncake `hash_ids`, or a native `prefix_id`) are (key, tokens) pairs.
Each block's text is drawn by the run's sizer (`--tokenizer` exact, else calibrated: workload/sizing.py)
from a generator seeded by the key alone, so every record, worker and tier naming that block sends the
same text, and a server's prefix cache sees the shared prefix. The rest of the prompt (input_tokens minus
the blocks) is drawn from a generator seeded by (seed, record index): unique to the record, the same in
every tier. Texts are joined by a space (with a BPE tokenizer a join may merge or split a token). A record
that gives `prompt` or `messages` is sent as written. Texts are kept once built, per process.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from llmload.workload.trace_formats import TraceRecord


@dataclass(frozen=True)
class TracePrompt:
    text: str
    messages: list[dict] | None
    approx_tokens: int
    max_tokens: int


class TracePrompts:
    """Builds (and keeps) the prompts of one trace's records in this process."""

    def __init__(self, sizer: Any, seed: int = 0) -> None:
        self.sizer = sizer
        self.seed = seed
        self._blocks: dict[tuple[str, int], str] = {}
        self._prompts: dict[int, TracePrompt] = {}

    def _block(self, key: str, tokens: int) -> str:
        text = self._blocks.get((key, tokens))
        if text is None:
            text = self._blocks[(key, tokens)] = self.sizer.text(tokens, random.Random(f"llmload/trace-block/{key}"))
        return text

    def prompt(self, index: int, record: TraceRecord) -> TracePrompt:
        """The request of record `index` (its place in the trace, so every tier sends the same text)."""
        built = self._prompts.get(index)
        if built is None:
            built = self._prompts[index] = self._build(index, record)
        return built

    def _build(self, index: int, record: TraceRecord) -> TracePrompt:
        if record.messages:
            messages = [dict(m) for m in record.messages]
            last = next((m["content"] for m in reversed(messages) if m["role"] == "user"), messages[-1]["content"])
            return TracePrompt(last, messages, record.input_tokens, record.output_tokens)
        if record.prompt:
            return TracePrompt(record.prompt, None, record.input_tokens, record.output_tokens)
        parts = [self._block(key, tokens) for key, tokens in record.blocks]
        rest = record.input_tokens - sum(tokens for _, tokens in record.blocks)
        if rest > 0:
            parts.append(self.sizer.text(rest, random.Random(f"llmload/trace/{self.seed}/{index}")))
        return TracePrompt(" ".join(parts), None, record.input_tokens, record.output_tokens)
