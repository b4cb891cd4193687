"""Request bodies checked as OpenAI checks them; a bad one is a `BadRequest` (an OpenAI error body).

Completions: `model`, `messages` (chat; an image part a PNG data URI: images.py) or `prompt` (text), `n=1`, a positive
`max_tokens` / `max_completion_tokens`, boolean `stream`, vLLM's `ignore_eos` (boolean) and
`min_tokens` (0 .. max_tokens). Embeddings: `model` and `input` (a string, a list of
strings, a list of token ids, or a list of such lists).
"""

from __future__ import annotations

import json
from typing import Any

from llmload.server.config import ServerConfig
from llmload.server.images import count_images


class BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None, status: int = 400,
                 code: str | None = None):
        super().__init__(message)
        self.param, self.status, self.code = param, status, code


def json_body(raw: bytes, cfg: ServerConfig) -> dict:
    """The body as a JSON object naming a model (404 for another one with --strict-model)."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("We could not parse the JSON body of your request.") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("You must provide a model parameter.", "model")
    if cfg.strict_model and body["model"] != cfg.model:
        raise BadRequest(f"The model `{body['model']}` does not exist.", "model", 404, "model_not_found")
    return body


def completion_body(raw: bytes, cfg: ServerConfig, chat: bool) -> dict:
    body = json_body(raw, cfg)
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            raise BadRequest("'messages' must be a non-empty array of message objects.", "messages")
        try:
            count_images(messages)
        except ValueError as exc:
            raise BadRequest(f"Invalid image: {exc}.", "messages") from None
    else:
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            body["prompt"] = prompt = prompt[0]
        if not isinstance(prompt, str):
            raise BadRequest("'prompt' must be a string.", "prompt")
    if body.get("n", 1) != 1:
        raise BadRequest("Only n=1 is supported.", "n")
    limit = max_tokens(body)
    if limit is not None and not _positive_int(limit):
        raise BadRequest("'max_tokens' must be a positive integer.", "max_tokens")
    if not isinstance(body.get("stream", False), bool):
        raise BadRequest("'stream' must be a boolean.", "stream")
    if not isinstance(body.get("ignore_eos", False), bool):
        raise BadRequest("'ignore_eos' must be a boolean.", "ignore_eos")
    min_tokens = body.get("min_tokens", 0)
    if not _positive_int(min_tokens) and min_tokens != 0:
        raise BadRequest("'min_tokens' must be a non-negative integer.", "min_tokens")
    if limit is not None and min_tokens > limit:
        raise BadRequest(f"min_tokens ({min_tokens}) must be less than or equal to "
                         f"max_tokens ({limit}).", "min_tokens")
    return body


def max_tokens(body: dict) -> Any:
    return body.get("max_completion_tokens", body.get("max_tokens"))


def embedding_inputs(raw: bytes, cfg: ServerConfig) -> tuple[dict, list[int]]:
    """The body and the token count of each input."""
    body = json_body(raw, cfg)
    value = body.get("input")
    items: list[str | list[Any]]
    if isinstance(value, str):
        items = [value]
    elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        items = [value]  # one input given as token ids
    elif isinstance(value, list) and value and all(isinstance(v, str | list) for v in value):
        items = value
    else:
        raise BadRequest("'input' must be a string, an array of strings or an array of token arrays.",
                         "input")
    counts = [len(v.split()) if isinstance(v, str) else len(v) for v in items]
    if any(c == 0 for c in counts):
        raise BadRequest("'input' cannot contain an empty string or token array.", "input")
    fmt = body.get("encoding_format", "float")
    if fmt not in ("float", "base64"):
        raise BadRequest("'encoding_format' must be 'float' or 'base64'.", "encoding_format")
    dims = body.get("dimensions")
    if dims is not None and not _positive_int(dims):
        raise BadRequest("'dimensions' must be a positive integer.", "dimensions")
    return body, counts


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
