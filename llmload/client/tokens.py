"""Client-side output token count of a response, and where the count came from.

tiktoken's cl100k_base when the package is importable *and* its encoding file is already in
the local cache (a download would stall the generator); otherwise the number of text chunks
(one token per chunk is what OpenAI-compatible servers send by default). `LLMLOAD_TOKENIZER=off`
forces chunk counts.
"""

from __future__ import annotations

import hashlib
import os
import tempfile

_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


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
