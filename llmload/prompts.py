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

_WORD_TEXT = (
    "the be to of and a in that have it for not on with he as you do at this but his by from they we say "
    "her she or an will my one all would there their what so up out if about who get which go me when make "
    "can like time no just him know take people into year your good some could them see other than then now "
    "look only come its over think also back after use two how our work first well way even new want because "
    "any these give day most us"
)
WORDS = tuple(_WORD_TEXT.split(" "))

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
    body = " ".join(rng.choice(WORDS) for _ in range(n_words))
    text = f"{prefix} {body}" if prefix else body
    return Prompt(text=text, approx_tokens=n_prefix + n_words)
