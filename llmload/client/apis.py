"""The wire APIs a request can speak: their paths, request bodies and stream decoders.

| api | path | body | answer (decoder) |
|---|---|---|---|
| chat | /chat/completions | `messages`, `max_tokens` | `chat.completion.chunk` (sse.py) |
| completions | /completions | `prompt`, `max_tokens` | `text_completion` chunks (sse.py) |
| embeddings | /embeddings | `input` | one JSON body (builder.py) |
| responses | /responses | `input`, `max_output_tokens` | `response.*` events (events_responses.py) |
| messages | /messages | `messages`, `max_tokens` (Anthropic) | `message_*`, `content_block_*` (events_messages.py) |
| rerank | /rerank | `query`, `documents`, `top_n` (vLLM, Cohere) | one JSON body (events_rerank.py) |

A rerank request is built from the prompt: its first `RERANK_QUERY_WORDS` words are the query, and
each of the `documents` documents is the whole prompt rotated by a different offset (so every document
is about the prompt's length and no two are equal). Embeddings and rerank generate nothing (`NOT_GENERATING`):
no first token, no max_tokens, never an empty answer. Images (`--images`) ride chat, Responses and Messages
requests (`IMAGE_APIS`), each in its API's content part (`image_part`).
"""

from __future__ import annotations

from llmload.contract import NOT_GENERATING_APIS

APIS = ("chat", "completions", "embeddings", "responses", "messages", "rerank")
"""every --api (the older --endpoint spelling takes the same values)"""
PATHS = {"chat": "/chat/completions", "completions": "/completions", "embeddings": "/embeddings",
         "responses": "/responses", "messages": "/messages", "rerank": "/rerank"}
"""the path of each API under the base URL (…/v1)"""
NOT_GENERATING = NOT_GENERATING_APIS
"""APIs whose answer is one JSON body with nothing generated (the analysis reads the same tuple)"""
CHAT_APIS = ("chat", "responses", "messages")
"""APIs whose prompts are conversations (a dataset's messages, --turns sessions)"""
IMAGE_APIS = ("chat", "responses", "messages")
"""APIs whose requests carry --images (`with_images`); the others refuse the flag"""
EVENT_STREAMS = ("responses", "messages")
"""APIs whose stream is typed events (`data: {"type": ...}`), not OpenAI chunks"""
ANTHROPIC_VERSION = "2023-06-01"
"""the `anthropic-version` header of every Messages request"""
RERANK_QUERY_WORDS = 16


def rerank_body(model: str, prompt: str, documents: int) -> dict:
    """A rerank body: the prompt's first words as the query, `documents` rotations of the prompt."""
    words = prompt.split() or ["document"]
    count = max(1, documents)
    docs = [" ".join(words[k:] + words[:k]) for k in (i * len(words) // count for i in range(count))]
    return {"model": model, "query": " ".join(words[:RERANK_QUERY_WORDS]), "documents": docs, "top_n": count}


def event_body(endpoint: str, model: str, prompt: str, max_tokens: int, messages: list[dict] | None,
               stream: bool, images: tuple[str, ...] = ()) -> dict:
    """A Responses or Messages body (system messages of a chat conversation become `instructions` / `system`);
    `images` (PNG data URIs) go after the text of the last user turn, as each API carries them (`with_images`)."""
    turns = messages or [{"role": "user", "content": prompt}]
    system = "\n".join(str(m.get("content") or "") for m in turns if m.get("role") == "system")
    turns = [m for m in turns if m.get("role") != "system"]
    if images:
        turns = with_images(endpoint, turns, images)
    if endpoint == "responses":
        plain = messages is None and not images
        body: dict = {"model": model, "input": prompt if plain else turns, "max_output_tokens": max_tokens,
                      "stream": stream}
        if system:
            body["instructions"] = system
        return body
    body = {"model": model, "messages": turns, "max_tokens": max_tokens, "stream": stream}
    if system:
        body["system"] = system
    return body


PNG_DATA = "data:image/png;base64,"


def image_part(endpoint: str, url: str) -> dict:
    """One image as a content part: chat `image_url`, Responses `input_image` (the data URI), Messages a base64
    `image` block (the URI's data)."""
    if endpoint == "responses":
        return {"type": "input_image", "image_url": url}
    if endpoint == "messages":
        data = url[len(PNG_DATA):] if url.startswith(PNG_DATA) else url
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    return {"type": "image_url", "image_url": {"url": url}}


def with_images(endpoint: str, messages: list[dict], images: tuple[str, ...]) -> list[dict]:
    """The messages with `images` as the API's content parts after the text of the last user message (a copy)."""
    out = list(messages)
    last = max((i for i, m in enumerate(out) if m.get("role") == "user"), default=len(out) - 1)
    content = out[last].get("content")
    kind = "input_text" if endpoint == "responses" else "text"
    parts = list(content) if isinstance(content, list) else [{"type": kind, "text": str(content or "")}]
    out[last] = {**out[last], "content": parts + [image_part(endpoint, url) for url in images]}
    return out
