"""Request bodies of the Responses API, Anthropic Messages and rerank, checked and folded for the engine.

Responses and Messages are folded into the chat body the engine already serves (`messages`,
`max_tokens`, `stream`), so prompts are counted, cached and planned exactly as chat's:
- Responses: `input` (a string, or a list of `{"role", "content"}` items whose content is a string or
  `input_text` and `input_image` parts), `instructions` (a system message first), `max_output_tokens`.
- Messages: `messages` (content a string or `text` and base64 `image` blocks), `system` (a string or `text`
  blocks), `max_tokens` (required, as Anthropic requires it).
An image (a Responses `input_image` data URI, a Messages `image/png` base64 source) becomes chat's `image_url`
part, so it costs the prompt tokens chat's does (images.py) and the truth log counts it.
Both are served streamed only (`stream: true`; a non-streamed request is a 400 saying so).
Rerank (vLLM / Cohere / Jina): `query` (a non-empty string) and `documents` (strings or `{"text"}` objects),
optional `top_n`; tokens are the query's words plus every document's.
"""

from __future__ import annotations

from llmload.server.config import ServerConfig
from llmload.server.images import PNG_PREFIX, count_images
from llmload.server.parse import BadRequest, _positive_int, json_body


def _image_url(block: dict) -> str | None:
    """A Responses `input_image` or a Messages base64 `image` block as the data URI chat carries (None: no image);
    BadRequest for an image source the simulator cannot read."""
    if block.get("type") == "input_image":
        url = block.get("image_url")
        return url if isinstance(url, str) else ""
    if block.get("type") != "image":
        return None
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64" or source.get("media_type") != "image/png":
        raise BadRequest("image: the simulator reads base64 image/png sources only (it fetches nothing)", "messages")
    return PNG_PREFIX + str(source.get("data") or "")


def _text_blocks(value: object, param: str) -> str | list:
    """The content as chat content: text parts, and images as `image_url` parts (counted as chat's: images.py)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(b, dict) for b in value):
        parts = [{"type": "image_url", "image_url": {"url": url}} if (url := _image_url(b)) is not None
                 else {"type": "text", "text": b.get("text") or ""} for b in value]
        try:
            count_images([{"content": parts}])
        except ValueError as exc:
            raise BadRequest(f"Invalid image: {exc}.", param) from None
        return parts
    raise BadRequest(f"'{param}' must be a string or an array of content blocks.", param)


def _streamed(body: dict, path: str) -> None:
    if body.get("stream") is not True:
        raise BadRequest(f"The simulator serves {path} streamed only: set 'stream': true.", "stream")


def responses_body(raw: bytes, cfg: ServerConfig) -> dict:
    """A Responses request as a chat body (module docstring)."""
    body = json_body(raw, cfg)
    value = body.get("input")
    if isinstance(value, str) and value:
        messages: list[dict] = [{"role": "user", "content": value}]
    elif isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        messages = [{"role": m.get("role", "user"), "content": _text_blocks(m.get("content") or "", "input")}
                    for m in value]
    else:
        raise BadRequest("'input' must be a non-empty string or an array of input items.", "input")
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        messages.insert(0, {"role": "system", "content": body["instructions"]})
    limit = body.get("max_output_tokens")
    if limit is not None and not _positive_int(limit):
        raise BadRequest("'max_output_tokens' must be a positive integer.", "max_output_tokens")
    _streamed(body, "/v1/responses")
    return {"model": body["model"], "messages": messages, "max_tokens": limit, "stream": True}


def messages_body(raw: bytes, cfg: ServerConfig) -> dict:
    """A Messages request as a chat body (module docstring)."""
    body = json_body(raw, cfg)
    turns = body.get("messages")
    if not isinstance(turns, list) or not turns or not all(isinstance(m, dict) for m in turns):
        raise BadRequest("messages: at least one message is required", "messages")
    messages = [{"role": m.get("role", "user"), "content": _text_blocks(m.get("content") or "", "messages")}
                for m in turns]
    if body.get("system"):
        messages.insert(0, {"role": "system", "content": _text_blocks(body["system"], "system")})
    if not _positive_int(body.get("max_tokens")):
        raise BadRequest("max_tokens: Field required (a positive integer)", "max_tokens")
    _streamed(body, "/v1/messages")
    return {"model": body["model"], "messages": messages, "max_tokens": body["max_tokens"], "stream": True}


def rerank_body(raw: bytes, cfg: ServerConfig) -> tuple[dict, list[str], int]:
    """The body, the documents' texts and the token count of query + documents."""
    body = json_body(raw, cfg)
    query, docs = body.get("query"), body.get("documents")
    if not isinstance(query, str) or not query.split():
        raise BadRequest("'query' must be a non-empty string.", "query")
    if not isinstance(docs, list) or not docs:
        raise BadRequest("'documents' must be a non-empty array.", "documents")
    texts = [d if isinstance(d, str) else d.get("text") if isinstance(d, dict) else None for d in docs]
    if not all(isinstance(t, str) for t in texts):
        raise BadRequest("'documents' must hold strings or objects with a 'text'.", "documents")
    top_n = body.get("top_n", len(docs))
    if not _positive_int(top_n):
        raise BadRequest("'top_n' must be a positive integer.", "top_n")
    return body, [str(t) for t in texts], len(query.split()) + sum(len(str(t).split()) for t in texts)
