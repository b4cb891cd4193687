"""Synthetic prompts with approximate token targets, and the client-side output token count.

How it works: a prompt is built from short common English words, which most BPE
tokenizers encode as one token each (a leading space included), so `target_tokens`
words give roughly `target_tokens` prompt tokens (+ the chat template's few tokens).
Each prompt starts with a random word sequence so two requests do not share a prefix
(no accidental prefix-cache hits); scenarios that want cache hits pass `prefix`.

Client token counts: tiktoken's cl100k_base when the package is importable *and* its
encoding file is already in the local cache (there is no network here, and a download
would stall the generator); otherwise the number of text chunks (one token per chunk is
what OpenAI-compatible servers send by default). The source is returned with the count.
"""

from __future__ import annotations

import hashlib
import os
import random
import tempfile
from dataclasses import dataclass

_WORD_TEXT = (
    "the be to of and a in that have it for not on with he as you do at this but his by from they we say "
    "her she or an will my one all would there their what so up out if about who get which go me when make "
    "can like time no just him know take people into year your good some could them see other than then now "
    "look only come its over think also back after use two how our work first well way even new want because "
    "any these give day most us"
)
WORDS = tuple(_WORD_TEXT.split(" "))

_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


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


def _cached_encoding_path() -> str:
    cache_dir = (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    )
    return os.path.join(cache_dir, hashlib.sha1(_CL100K_URL.encode()).hexdigest())


_encoder: object | None = None
_encoder_probed = False


def offline_tokenizer():
    """tiktoken's cl100k_base encoder if usable without network, else None (probed once)."""
    global _encoder, _encoder_probed
    if _encoder_probed:
        return _encoder
    _encoder_probed = True
    if os.environ.get("LLMLOAD_TOKENIZER", "").lower() == "off":
        return None
    try:
        import tiktoken
    except ImportError:
        return None
    if not os.path.exists(_cached_encoding_path()):
        return None
    try:
        _encoder = tiktoken.get_encoding("cl100k_base")
    except Exception:  # a broken cache file: fall back to chunk counts
        _encoder = None
    return _encoder


def count_tokens(text: str, chunks: int) -> tuple[int, str]:
    """Client-side output token count of a response and its source: tokenizer or chunks."""
    encoder = offline_tokenizer()
    if encoder is not None and text:
        return len(encoder.encode(text, disallowed_special=())), "tokenizer"
    return chunks, "chunks"
