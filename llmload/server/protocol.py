"""HTTP/1.1 over asyncio with httptools: keep-alive, one request at a time per connection.

The protocol parses requests and hands each complete one to the application; the
application writes the response through `send` (a socket write, no buffering of our
own, so the time a chunk is written is the time it leaves for the client). Requests
that arrive while a response is still streaming (pipelining) wait their turn. Bad HTTP
gets a 400 and the connection closes; the server keeps serving.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import httptools

from llmload.server import wire


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool
    arrival_s: float = 0.0
    conn: HttpProtocol | None = field(default=None, repr=False)
    query: str = ""
    """the raw query string (after `?`), '' when none"""
    request_id: str = ""
    """the client's X-Request-Id, else one the server assigns (set by the application)"""


class HttpProtocol(asyncio.Protocol):
    def __init__(self, handle: Callable[[Request], None], max_body_bytes: int, clock: Callable[[], float],
                 keepalive_requests: int = 0):
        self.handle = handle
        """the application's entry point: called with each complete request, one at a time"""
        self.max_body_bytes = max_body_bytes
        self.keepalive_requests = keepalive_requests
        """the answer to the connection's Nth request closes it (0: never)"""
        self.requests = 0
        self.clock = clock
        # None only until connection_made, which asyncio calls before any data arrives (so before
        # any send or close); typed non-optional so send(), run per chunk, needs no None check
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.parser = httptools.HttpRequestParser(self)
        self.closed = False
        self.busy = False
        self.pending: deque[Request] = deque()
        self.on_lost: Callable[[], None] | None = None
        """callback of the response in progress, run if the client goes away"""
        self._url = b""
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._body_bytes = 0
        self._too_large = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream server's transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.on_lost is not None:
            callback, self.on_lost = self.on_lost, None
            callback()

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(400, "Protocol upgrades are not supported.")
        except httptools.HttpParserError:
            self._fail(400, "Malformed HTTP request.")

    # httptools callbacks
    def on_message_begin(self) -> None:
        self._url, self._headers, self._body, self._body_bytes = b"", {}, [], 0
        self._too_large = False

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes > self.max_body_bytes:
            self._too_large = True
            self._body = []
        elif not self._too_large:
            self._body.append(body)

    def on_message_complete(self) -> None:
        path, _, query = self._url.decode("latin-1").partition("?")
        self.requests += 1
        last = 0 < self.keepalive_requests <= self.requests
        request = Request(self.parser.get_method().decode(), path, self._headers,
                          b"".join(self._body), self.parser.should_keep_alive() and not last, self.clock(), self, query)
        if self._too_large:
            self.send(wire.http_response(413, wire.error_body(
                413, f"Request body exceeds {self.max_body_bytes} bytes.", "invalid_request_error",
                "request_too_large"), keep_alive=False))
            self.close()
            return
        if self.busy:
            self.pending.append(request)
        else:
            self.busy = True
            self.handle(request)

    # used by the application
    def send(self, data: bytes) -> None:
        if not self.closed:
            self.transport.write(data)

    def finish(self, keep_alive: bool) -> None:
        """The response is complete: close, or serve the next pipelined request."""
        self.on_lost = None
        if not keep_alive:
            self.close()
            return
        self.busy = False
        if self.pending:
            self.busy = True
            self.handle(self.pending.popleft())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.transport.close()

    def _fail(self, status: int, message: str) -> None:
        self.send(wire.http_response(status, wire.error_body(status, message, "invalid_request_error"),
                                     keep_alive=False))
        self.close()
