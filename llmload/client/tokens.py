"""Client-side output token count of a response, and what was counted.

The run's `--tokenizer` (the model's own tokenizer.json) when given: `use_tokenizer(count)` sets it for
the process (run/lifecycle/listeners.py at test start), and the count is the tokens of the text received
(content and reasoning), re-encoded without special tokens. Without it, the number of text chunks:
one chunk carries one token or more (a server may send several tokens a step, a gateway may merge
chunks), and a token that decodes to no text yet (part of a UTF-8 character) or at all (a special
token) arrives in no text chunk, so usage is expected at or above the chunk count. The source
(`tokenizer` or `chunks`) is recorded beside the count (samples.csv `output_tokens_client_source`).
"""

from __future__ import annotations

from collections.abc import Callable

_count: Callable[[str], int] | None = None


def use_tokenizer(count: Callable[[str], int] | None) -> None:
    """Count output tokens with `count(text)` (the run's --tokenizer) from now on; None: count chunks."""
    global _count
    _count = count


def count_tokens(text: str, chunks: int) -> tuple[int, str]:
    """Client-side output token count of a response and its source: tokenizer or chunks."""
    if _count is not None:
        return _count(text) if text else 0, "tokenizer"
    return chunks, "chunks"
