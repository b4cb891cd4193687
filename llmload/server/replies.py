"""Whole replies in one write: a JSON body, or an error in OpenAI's shape (Anthropic's on `/v1/messages`).

The application answers its own refusals (bad input, auth, faults, rate limits) with these, and the
request handlers a refusal from a full queue; each closes the response (`finish`), so the connection
serves its next pipelined request or closes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from llmload.server import wire
from llmload.server.wire_events import anthropic_error

if TYPE_CHECKING:
    from llmload.server.protocol import Request

ANTHROPIC_PATHS = ("/v1/messages", "/messages")
"""the Anthropic Messages paths: their auth header, error shape and quota names"""


def is_anthropic(req: Request) -> bool:
    """Is this an Anthropic Messages request (its auth header, error shape and quota names)?"""
    return req.path in ANTHROPIC_PATHS


def reply_json(req: Request, status: int, payload: dict) -> None:
    conn = req.conn
    assert conn is not None  # the protocol hands over every request with its connection
    conn.send(wire.http_response(status, json.dumps(payload).encode(), keep_alive=req.keep_alive))
    conn.finish(req.keep_alive)


def reply_error(req: Request, status: int, message: str, err_type: str, code: str | None = None,
                param: str | None = None, headers: dict[str, str] | None = None) -> None:
    body = wire.error_body(status, message, err_type, code, param)
    if is_anthropic(req):
        status, body = anthropic_error(status, message)
    conn = req.conn
    assert conn is not None  # the protocol hands over every request with its connection
    conn.send(wire.http_response(status, body, headers, keep_alive=req.keep_alive))
    conn.finish(req.keep_alive)
