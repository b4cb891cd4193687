"""The `openai` transport: the official SDK as an application uses it, under gevent.

How it works: users share `openai.OpenAI` clients (`shared_client`; the first is built in
the users' test_start listener before any user starts: constructing one costs ~30 ms CPU),
with `max_retries=0` (the SDK's own retries would hide 429s and 5xx inside one latency)
and an httpx2 connection pool without caps (`Limits(None, None)`): every user keeps its
own kept-alive connection, whatever the user count (the SDK default keeps only 100, so
users beyond 100 would reconnect on every request). httpx2's per-request INFO line
(logger `httpx2`) is silenced. One client serves `USERS_PER_CLIENT` (32) users: httpcore2
scans every pooled connection on each request (a gevent `poll` per idle one, ~25 µs), so a
single pool of 512 connections costs milliseconds of CPU per request and stalls the
generator; 32-connection shards keep that scan short, at ~30 ms CPU per extra client.

An attempt calls `chat.completions.with_streaming_response.create(stream=True, ...)` and
reads the raw SSE lines with `iter_lines()`: still the SDK's request building, auth,
headers and status-to-exception mapping, but without its typed chunk objects (pydantic
model per chunk, about 200 µs each), and the timestamp is taken when the line arrives,
before our JSON decode. t0 is taken just before `create()` (so it includes the SDK's
request building, ~0.1-0.3 ms, which an application pays too).

A 200 whose content-type is not `text/event-stream` fails as a protocol error ("not an
SSE response") without being read as a stream. A failed connect reports the host and the
OS reason ("cannot connect to HOST:PORT: connection refused"). TLS certificates and host names
are verified against the fast transport's trust (client/cabundle.py: --ca-bundle, SSL_CERT_FILE);
`insecure=True` (--insecure) checks neither.

Connection facts come from httpcore2's `trace` extension, installed by an httpx2 request
hook and keyed by the request's X-Request-Id: a `connection.connect_tcp` event means the
attempt opened a new connection (connect_ms = TCP connect + TLS handshake); none means
the pooled connection was reused.

Non-streamed requests (`--no-stream`) and embeddings go through the same
`with_streaming_response` call with `stream=False` (embeddings: `embeddings.create`); the
whole body is read and timed when it is in. The Responses API is `responses.create(stream=True)`,
its raw event lines read the same way; rerank, which the SDK has no method for, is the client's own
`post("/rerank")` (its auth, headers, errors). Anthropic Messages: client/sdk_anthropic.py.
Request knobs: `headers` and `query` become the client's `default_headers` / `default_query`; with
`api_key_header` the key goes in that header and the SDK's `Authorization` header is omitted.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlparse

import gevent
import httpx2
import openai

from llmload.client import cabundle, outbound, resolve, startgate
from llmload.client.attempt import Attempt
from llmload.client.errors import (
    ConnectError,
    ProtocolError,
    StreamBroken,
    Timeout,
    connect_reason,
    error_for_status,
    is_event_stream,
    not_sse_error,
)
from llmload.client.request import StreamRequest, StreamResult, Timeouts
from llmload.client.sse import MalformedChunk

_SDK_ARGS = ("model", "max_tokens", "stream", "stream_options", "messages", "prompt", "input", "encoding_format",
             "max_output_tokens", "instructions", "system")

USERS_PER_CLIENT = 32
"""users sharing one SDK client (see the module docstring: httpcore2's pool scan)"""

_clients: dict[tuple, tuple[openai.OpenAI, ConnectTracer]] = {}


class ConnectTracer:
    """httpcore2 trace callback target: per request id, when its connect started / ended."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.connects: dict[str, list[float | None]] = {}
        self.connecting: set[str] = set()

    def on_request(self, request: httpx2.Request) -> None:
        rid = request.headers.get("x-request-id")
        if rid:
            request.extensions["trace"] = functools.partial(self.trace, rid, request.url.scheme == "https")

    def trace(self, rid: str, tls: bool, event: str, info: dict) -> None:
        """Connecting lasts until TCP is up, or for https until the TLS handshake is done: a
        handshake that times out or fails is a connect failure, not a read timeout."""
        if event == "connection.connect_tcp.started":
            self.connects[rid] = [self.clock(), None]
            self.connecting.add(rid)
        elif event == "connection.connect_tcp.complete" or event == "connection.start_tls.complete":
            span = self.connects.get(rid)
            if span is not None:
                span[1] = self.clock()
            if not tls or event == "connection.start_tls.complete":
                self.connecting.discard(rid)

    def pop(self, rid: str) -> tuple[bool, float | None, bool]:
        """(opened a new connection, connect ms, still connecting) for request `rid`."""
        span = self.connects.pop(rid, None)
        connecting = rid in self.connecting
        self.connecting.discard(rid)
        if span is None:
            return False, None, connecting
        started, ended = span
        if started is None or ended is None:
            return True, None, connecting
        return True, (ended - started) * 1000.0, connecting


def shared_client(base_url: str, api_key: str, timeouts: Timeouts, shard: int = 0,
                  clock: Callable[[], float] = time.perf_counter, insecure: bool = False,
                  headers: dict[str, str] | None = None, query: str = "",
                  api_key_header: str = "", ca_bundle: str = "") -> tuple[openai.OpenAI, ConnectTracer]:
    """The SDK client of pool shard `shard` for this base URL / key / knobs (each built once)."""
    key = (base_url, api_key, timeouts, shard, insecure, tuple(sorted((headers or {}).items())), query,
           api_key_header, ca_bundle)
    if key not in _clients:
        tracer = ConnectTracer(clock)
        http_client = traced_http_client(base_url, tracer, timeouts, insecure, ca_bundle)
        default_headers: dict = dict(headers or {})
        if api_key_header:
            default_headers[api_key_header] = api_key  # and each request omits Authorization (stream())
        client = openai.OpenAI(base_url=base_url, api_key=api_key or "no-key", max_retries=0,
                               http_client=http_client, default_headers=default_headers or None,
                               default_query=dict(parse_qsl(query)) or None)
        # The SDK's platform headers are lru-cached but computed on first use with a blocking
        # `uname -p` subprocess: under gevent every user's first request would miss the cache
        # at once and fork one subprocess each. Fill the cache now, before users start.
        client.platform_headers()
        _clients[key] = (client, tracer)
    return _clients[key]


def traced_http_client(base_url: str, tracer: ConnectTracer, timeouts: Timeouts, insecure: bool,
                       ca_bundle: str = "") -> httpx2.Client:
    """An SDK's httpx2 client: no pool caps, the attempt's timeouts, connects traced (module docstring), TLS
    trusting what the fast transport trusts (client/cabundle.py); bound to `base_url`'s origin, redirects not
    followed (client/outbound.py)."""
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    return outbound.sdk_http_client(
        base_url,
        limits=httpx2.Limits(max_connections=None, max_keepalive_connections=None),
        timeout=httpx2.Timeout(timeouts.request_timeout_s, connect=timeouts.connect_timeout_s),
        request_hooks=[tracer.on_request],
        verify=cabundle.context(ca_bundle, insecure),
    )


class OpenAITransport:
    name = "openai"
    status_error: Any = openai.APIStatusError
    timeout_errors: tuple = (openai.APITimeoutError, httpx2.TimeoutException)
    connection_errors: tuple = (openai.APIConnectionError, httpx2.TransportError)
    """the SDK's exception classes (client/sdk_anthropic.py has Anthropic's)"""

    def __init__(self, base_url: str, api_key: str = "", timeouts: Timeouts | None = None,
                 clock: Callable[[], float] = time.perf_counter, user_index: int = 0,
                 insecure: bool = False, headers: dict[str, str] | None = None, query: str = "",
                 api_key_header: str = "", ca_bundle: str = "") -> None:
        self.timeouts = timeouts or Timeouts()
        self.clock = clock
        url = urlparse(base_url)
        self.host = f"{url.hostname}:{url.port or (443 if url.scheme == 'https' else 80)}"
        shard = user_index // USERS_PER_CLIENT
        self.client, self.tracer = shared_client(base_url, api_key, self.timeouts, shard, clock, insecure,
                                                 headers, query, api_key_header, ca_bundle)
        self.auth_omitted: dict = {"Authorization": openai.omit} if api_key_header else {}
        """the SDK accepts a missing Authorization only when a request omits it explicitly"""
        self.started = False
        """has this user sent a request yet (the pool is shared: its first opens a connection)"""

    def close(self) -> None:
        """The client is shared by the process's users: nothing to close per user."""

    def prepare(self) -> None:
        """Before the first timed request: resolve the host once, which starts gevent's resolver
        thread (httpx2 still resolves on each new connection, then at a thread's cost only)."""
        host, _, port = self.host.rpartition(":")
        resolve.prepare(host, int(port))

    def warm(self, endpoint: str) -> None:
        """Untimed, before the first request: the SDK imports an API's module on its first use (the Responses
        API's costs ~0.25 s), which the first request's TTFT would otherwise carry."""
        if endpoint == "responses":
            self.client.responses.with_streaming_response  # noqa: B018  (touching it imports it)

    def _read_stream(self, resp, attempt: Attempt) -> None:
        """Raw SSE lines stamped as they arrive, to [DONE] (then drained: the connection is kept)."""
        clock, feed = self.clock, attempt.builder.feed
        times, waiting_first = attempt.timing.text_times, True
        lines = resp.iter_lines()
        for line in lines:
            t = clock()
            if feed(t, line.encode()):
                break
            if waiting_first and times:
                attempt.first.cancel()
                waiting_first = False
        if attempt.builder.saw_done:
            for _ in lines:  # read to the end of the HTTP message: the connection is kept
                pass
        attempt.exc = attempt.builder.failure()

    def _create(self, req: StreamRequest, kwargs: dict, headers: dict, body: dict) -> Any:
        """The SDK call of the request's API: a context manager giving the raw HTTP response."""
        if req.endpoint == "rerank":
            return contextlib.nullcontext(self.client.post("/rerank", cast_to=httpx2.Response, body={**kwargs, **body},
                                                           options={"headers": headers}))
        api: Any
        if req.endpoint == "chat":
            api = self.client.chat.completions
        elif req.endpoint == "responses":
            api = self.client.responses
        else:  # touching client.embeddings imports its module (once): only when used
            api = self.client.completions if req.endpoint == "completions" else self.client.embeddings
        return api.with_streaming_response.create(**kwargs, extra_headers=headers, extra_body=body or None)

    def stream(self, req: StreamRequest) -> StreamResult:
        clock, body = self.clock, req.body()
        kwargs = {k: body.pop(k) for k in _SDK_ARGS if k in body}
        attempt = Attempt(req, self.name, self.timeouts, clock)
        timing = attempt.timing
        if not self.started:
            self.started = True
            startgate.take_turn()  # untimed: a user's first request opens its connection (client/startgate.py)
        attempt.arm()
        try:
            timing.start()
            headers = {**(req.headers or {}), "X-Request-Id": req.request_id, **self.auth_omitted}
            with self._create(req, kwargs, headers, body) as resp:
                timing.headers()
                attempt.result.status = resp.status_code
                attempt.note_headers({k.lower(): v for k, v in resp.headers.items()})
                content_type = resp.headers.get("content-type")
                if not req.streamed:
                    attempt.answer(resp.read())
                elif not is_event_stream(content_type):
                    raise not_sse_error(content_type)
                else:
                    self._read_stream(resp, attempt)
        except gevent.Timeout as t_exc:
            attempt.exc = attempt.cap_error(t_exc)
        except self.status_error as s_exc:
            if timing.t_headers is None:
                timing.headers()
            attempt.result.status = s_exc.status_code
            headers = {k.lower(): v for k, v in s_exc.response.headers.items()}
            attempt.note_headers(headers)
            decoded = getattr(s_exc, "body", None)  # the decoded error body (Anthropic's message holds its repr)
            attempt.exc = error_for_status(s_exc.status_code, headers,
                                           json.dumps(decoded) if isinstance(decoded, dict) else str(s_exc.message),
                                           str(self.client.base_url))
        except MalformedChunk as m_exc:
            attempt.malformed(m_exc)
        except ProtocolError as p_exc:  # not an event stream
            attempt.exc = p_exc
        except self.timeout_errors as to_exc:
            connecting = req.request_id in self.tracer.connecting
            attempt.exc = Timeout("connect" if connecting else "read",
                                  self.timeouts.connect_timeout_s if connecting else None, type(to_exc).__name__)
        except self.connection_errors as c_exc:
            detail = f"{type(c_exc).__name__}: {c_exc.__cause__ or c_exc}"
            if timing.t_headers is not None:
                attempt.exc = StreamBroken(detail)
            else:
                attempt.exc = ConnectError(self.host, connect_reason(c_exc), detail)
        finally:
            attempt.disarm()
        opened, connect_ms, _ = self.tracer.pop(req.request_id)
        return attempt.finish(opened=opened, connect_ms=connect_ms)
