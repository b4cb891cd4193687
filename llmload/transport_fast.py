"""The `fast` transport: geventhttpclient, one keep-alive connection per user, timed at the read.

How it works: each user owns one `geventhttpclient.HTTPClient` (the client Locust's
FastHttpUser is built on) with a pool of one connection. An attempt is

    t0 = clock(); resp = client.request(POST)      # (connect +) send + wait for headers
    t_headers = clock()
    loop: wait readable; data = sock.recv(16 KiB); t = clock(); complete lines += (t, lines)

Every complete SSE line is stamped with the time of the socket read that completed it
(Locust's `iter_lines` waits for 1 KiB, which would make TTFT late by several chunks and
smooth ITL). Only the timestamp and cheap byte tests sit on the per-chunk path: until the
first text token the lines are parsed at once (the first-token cap must be cancelled on
time), then they are stashed as (read time, block of lines) and JSON-decoded when the
stream ends, except a block whose bytes may hold `[DONE]` or an error event, which is
parsed at once to stop reading there. The figures are those of parsing line by line at
the read; the CPU is lower (one recv per chunk instead of readline's data recv + EAGAIN
recv + per-line copies). This reads the response's socket and body buffer directly
(geventhttpclient's `_sock` / `_body_buffer`; its HTTP parser still de-chunks the body).
We call HTTPClient directly rather than through
FastHttpSession because the session fires its own request event timed to the headers only,
and hides the connection pool we need for connection facts: the pool's socket factory is
wrapped, so an attempt that opened a connection reports `conn_reused=0` and its TCP (+TLS)
connect time; an attempt on a kept-alive connection reports `conn_reused=1`.

Caps: connect timeout on the socket; first-token and total wall-clock caps with
`gevent.Timeout` (a socket read timeout is per read and never bounds a trickling stream).
Reads have no per-read timeout: gevent would arm and cancel a timer around every recv
(~5 µs per chunk), and the two caps already bound every read.
After `[DONE]` the rest of the HTTP message is drained so the connection is reused.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from urllib.parse import urlparse

import gevent
from geventhttpclient import HTTPClient
from geventhttpclient.response import HTTPParseError

from llmload import sse
from llmload.result import (
    ConnectError,
    LLMError,
    ProtocolError,
    StreamBroken,
    StreamBuilder,
    StreamRequest,
    StreamResult,
    Timeout,
    Timeouts,
    error_for_status,
)
from llmload.sse import MalformedChunk
from llmload.timing import StreamTiming

PATHS = {"chat": "/chat/completions", "completions": "/completions"}
BLOCK_SIZE = 16384
"""bytes per socket read"""


class FastTransport:
    name = "fast"

    def __init__(self, base_url: str, api_key: str = "", timeouts: Timeouts | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        url = urlparse(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"host must look like http://HOST:PORT[/v1], got {base_url!r}")
        self.timeouts = timeouts or Timeouts()
        self.clock = clock
        self.prefix = url.path.rstrip("/")
        self.url = url
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._connect_s: float | None = None
        self._connecting = False
        self.client = self._new_client()

    def _new_client(self) -> HTTPClient:
        url = self.url
        client = HTTPClient(
            url.hostname, port=url.port, ssl=url.scheme == "https", insecure=True, concurrency=1,
            connection_timeout=self.timeouts.connect_timeout_s,
            network_timeout=None, block_size=BLOCK_SIZE,
        )
        pool = client._connection_pool
        create_socket = pool._create_socket
        clock = self.clock

        def timed_create_socket():
            self._connecting = True
            started = clock()
            sock = create_socket()
            self._connect_s = clock() - started
            self._connecting = False
            return sock

        pool._create_socket = timed_create_socket
        return client

    def close(self) -> None:
        self.client.close()

    def _read_stream(self, resp, builder: StreamBuilder, timing: StreamTiming, first: gevent.Timeout) -> None:
        """Read the SSE body to `[DONE]`, an error event or its end, stamping every socket read.

        All complete lines a read delivered get that read's time (the same time `readline`
        would give them, a little more exact for the later ones). Until the first text token
        each block is parsed at once (the first-token cap must be cancelled on time); after
        it, blocks are only stashed with their time, unless a cheap byte test says the block
        may end the stream ([DONE] or an error event), and are parsed when the stream ends.
        """
        clock = self.clock
        feed = builder.feed
        text_times = timing.text_times
        body = resp._body_buffer  # the de-chunked body bytes the response's HTTP parser appends to
        sock = resp._sock  # None when the whole message came in with the headers
        if sock is not None:
            wait, read_event = sock._wait, sock._read_event  # gevent's own wait-until-readable
        pending: list[tuple[float, bytes]] = []
        t = timing.t_headers
        waiting_first = True
        while True:
            end = body.rfind(b"\n")
            if end >= 0:
                block = bytes(body[:end + 1])
                del body[:end + 1]
                pending.append((t, block))
                if waiting_first or sse.may_end_stream(block):
                    if sse.feed_blocks(pending, feed):
                        return
                    if waiting_first and text_times:
                        first.cancel()
                        waiting_first = False
            if resp.message_complete or sock is None:
                sse.feed_blocks(pending, feed)
                return
            if not waiting_first:
                # the next chunk is usually not there yet: wait for readability first instead of
                # a recv that fails with EAGAIN (a wasted syscall and exception per chunk)
                wait(read_event)
            data = sock.recv(BLOCK_SIZE)
            t = clock()
            resp.feed(data)  # raises HTTPParseError when the connection closed mid-message
            if not data:
                sse.feed_blocks(pending, feed)
                return

    def stream(self, req: StreamRequest) -> StreamResult:
        clock = self.clock
        body = json.dumps(req.body()).encode()
        headers = dict(self.headers)
        headers["X-Request-Id"] = req.request_id
        timing = StreamTiming(clock)
        builder = StreamBuilder(timing)
        result = StreamResult(request_id=req.request_id, endpoint=req.endpoint, transport=self.name,
                              ts_start_s=time.time(), model_requested=req.model, retry_of=req.retry_of)
        limits = self.timeouts
        total = gevent.Timeout(limits.request_timeout_s)
        first = gevent.Timeout(limits.first_token_timeout_s)
        self._connect_s = None
        self._connecting = False
        exc: LLMError | None = None
        failed_at: float | None = None
        resp = None
        total.start()
        first.start()
        try:
            timing.start()
            resp = self.client.request("POST", self.prefix + PATHS[req.endpoint], body=body, headers=headers)
            timing.headers()
            result.status = status = resp.status_code
            if status != 200:
                raw = resp.read(65536)
                lower = {k.lower(): v for k, v in resp.items()}
                exc = error_for_status(status, lower, raw.decode("utf-8", "replace"))
            else:
                self._read_stream(resp, builder, timing, first)
                exc = builder.failure()
                if exc is None and not resp.message_complete:
                    resp.read()  # drain the terminating chunk so the connection is kept
        except gevent.Timeout as t_exc:
            if t_exc is total:
                exc = Timeout("total", limits.request_timeout_s)
            elif t_exc is first:
                exc = Timeout("first_token", limits.first_token_timeout_s)
            else:
                raise
        except MalformedChunk as m_exc:
            exc = ProtocolError(str(m_exc))
            failed_at = getattr(m_exc, "read_time_s", None)
        except TimeoutError as s_exc:  # socket.timeout: connect or a single read
            phase = "connect" if self._connecting else "read"
            exc = Timeout(phase, limits.connect_timeout_s if self._connecting else None, str(s_exc))
        except HTTPParseError as p_exc:
            if timing.t_headers is None and "closed" not in str(p_exc):
                exc = ProtocolError(f"bad HTTP response: {p_exc}")
            else:
                exc = StreamBroken(f"connection closed: {p_exc}")
        except (OSError, socket.gaierror) as o_exc:
            if self._connecting:
                exc = ConnectError(f"{type(o_exc).__name__}: {o_exc}")
            else:
                exc = StreamBroken(f"{type(o_exc).__name__}: {o_exc}")
        finally:
            total.close()
            first.close()
            if resp is not None:
                resp.release()
            elif isinstance(exc, Timeout) and exc.phase in ("total", "first_token"):
                # interrupted inside HTTPClient.request (e.g. in sendall), which then keeps its
                # pool slot: start over with a fresh client rather than block on it next time
                self.client.close()
                self.client = self._new_client()
        end = failed_at if failed_at is not None else clock()
        result.exception = exc
        if self._connect_s is not None:
            result.conn_reused = False
            result.connect_ms = self._connect_s * 1000.0
        elif timing.t_headers is not None:
            result.conn_reused = True
        builder.fill(result, req.input_tokens_estimate)
        result.t0_perf_s = timing.t0
        if timing.t0 is not None:
            result.elapsed_ms = (end - timing.t0) * 1000.0
        return result
