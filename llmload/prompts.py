"""Synthetic prompts with approximate token targets.

How it works: a prompt is built from short common English words, which most BPE
tokenizers encode as one token each (a leading space included), so `target_tokens`
words give roughly `target_tokens` prompt tokens (+ the chat template's few tokens).
Each prompt starts with a random word sequence so two requests do not share a prefix
(no accidental prefix-cache hits); scenarios that want cache hits pass `prefix`.

Client-side token counts of responses live in `llmload.client.tokens`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llmload.workload.words import WORDS, random_words  # WORDS re-exported: scenarios import it from here

__all__ = ["WORDS", "Prompt", "make_prompt"]


@dataclass(frozen=True)
class Prompt:
    text: str
    approx_tokens: int
    """word count: the prompt-token estimate used when the server sends no usage"""


def make_prompt(target_tokens: int, rng: random.Random | None = None, prefix: str = "") -> Prompt:
    """A prompt of about `target_tokens` tokens (words), after an optional shared `prefix`."""
    rng = rng or random.Random()
    n_prefix = len(prefix.split())
    n_words = max(1, target_tokens - n_prefix)
    body = random_words(rng, n_words)  # a pooled slice after a random head: ~5 µs, whatever the length
    text = f"{prefix} {body}" if prefix else body
    return Prompt(text=text, approx_tokens=n_prefix + n_words)
