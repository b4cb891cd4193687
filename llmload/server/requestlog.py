"""The request log: what each request looked like on arrival, so tests can check what a client sent.

One JSON object per line, written (and flushed) when the request is complete on the wire,
before it is validated: `request_id` (the client's `X-Request-Id`, else the server's own),
`arrival_s` (perf_counter seconds, the truth log's clock), `method`, `path`, `query` (the raw
query string), `headers` (every header, names lower-cased; credentials masked to their last
4 characters), and `body` (the parsed JSON, or the raw text when it is not JSON). Nothing is
written when the option is off.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llmload.server.protocol import Request

SECRET_HEADERS = frozenset(("authorization", "proxy-authorization", "api-key", "x-api-key"))


def mask_secret(value: str) -> str:
    """`Bearer sk-abcdef123456` -> `Bearer ***3456`; values of 4 characters or fewer -> `***`."""
    scheme, sep, secret = value.partition(" ")
    if not sep:
        scheme, secret = "", value
    masked = "***" + secret[-4:] if len(secret) > 4 else "***"
    return f"{scheme} {masked}" if scheme else masked


class RequestLog:
    def __init__(self, path: str | None):
        self._file = open(path, "w") if path else None

    @property
    def enabled(self) -> bool:
        return self._file is not None

    def write(self, request_id: str, req: Request) -> None:
        if self._file is None:
            return
        headers = {k: mask_secret(v) if k in SECRET_HEADERS else v for k, v in req.headers.items()}
        try:
            body = json.loads(req.body) if req.body else None
        except (ValueError, UnicodeDecodeError):
            body = req.body.decode("utf-8", errors="replace")
        record = {"request_id": request_id, "arrival_s": round(req.arrival_s, 6), "method": req.method,
                  "path": req.path, "query": req.query, "headers": headers, "body": body}
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file:
            self._file.close()
            self._file = None
