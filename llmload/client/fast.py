"""The `fast` transport: geventhttpclient, one keep-alive connection per user, timed at the read.

How it works: each user owns one `geventhttpclient.HTTPClient` (the client Locust's
FastHttpUser is built on) with a pool of one connection. An attempt is

    t0 = clock(); resp = client.request(POST)      # (connect +) send + wait for headers
    t_headers = clock()
    loop: wait readable; data = sock.recv(16 KiB); t = clock(); complete lines += (t, lines)

Every complete SSE line is stamped with the time of the socket read that delivered it: the
kernel's arrival time of its last packet (client/kstamp.py); https is decrypted by client/tlssock.py
over that same stamped socket, each record dated by the raw read that completed it. Until the first
text token the lines are parsed at once (the first-token cap must be cancelled on time); after it
the process's one reactor (client/reactor.py) reads the streams of every user, plain and TLS, stamps
and decodes each read as it comes (client/body_lines.py), and wakes the user when its stream is over.
(A body sized by Content-Length, or an injected clock, reads on the user's greenlet: blocks of lines
are stashed and parsed when one may hold `[DONE]` or an error event.) Every exit path (end of
stream, a cap, a cut, a bad frame, a malformed chunk) parses what arrived, at the read times it arrived.

Connection facts: the pool's socket factory is wrapped (ghc_compat), so an attempt that opened
a connection reports `conn_reused=0` and its TCP (+TLS handshake) connect time, else `conn_reused=1`.
TLS is verified (client/cabundle.py: --ca-bundle, SSL_CERT_FILE) unless `insecure=True` (--insecure).
Reads have no per-read timeout: the attempt's two caps (attempt.py) bound every read (a per-read
timer would cost ~5 µs per chunk). After `[DONE]` the rest of the HTTP message is drained so the
connection is reused. A non-streamed answer (`--no-stream`, embeddings) is read whole, timed when in.
Request knobs: `headers` are sent on every request, `query` is appended to every path, and
`api_key_header` (e.g. Azure's `api-key`) carries the key instead of `Authorization: Bearer`. The client is the
outbound policy's (client/outbound.py `load_client`): one host and port; a 3xx is the answer (failure kind
`redirect`, naming the target's origin), never followed.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import gevent
from geventhttpclient.response import HTTPParseError

from llmload.client import body_lines, cabundle, ghc_compat, keepalive, reactor, resolve, sse, startgate, tlssock
from llmload.client.apis import PATHS
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
from llmload.client.outbound import load_client
from llmload.client.request import StreamRequest, StreamResult, Timeouts
from llmload.client.sse import MalformedChunk
from llmload.client.tlsresume import Tickets

BLOCK_SIZE = 16384
"""bytes per socket read"""
STAMPED = tlssock.STAMPED


def _tls_connect(sock, address, context, host_name: str, tickets: Tickets) -> tlssock.TLSSocket:
    """The pool's connect of an https socket: TCP, then the TLS handshake, resuming the last session (both timed
    as the connect)."""
    sock.connect(address)
    return tickets.connect(sock, context, host_name)


def _read(sock, line_by_line: bool, clock: Callable[[], float]) -> tuple[bytes, float]:
    """One read and when it arrived: the kernel's time on a StampedSocket or TLSSocket (line by line until
    the first token, so a backlog does not date the first token at the last packet's arrival)."""
    if not isinstance(sock, STAMPED):
        return sock.recv(BLOCK_SIZE), clock()
    data = sock.recv_line(BLOCK_SIZE) if line_by_line else sock.recv(BLOCK_SIZE)
    return data, sock.read_time_s


class FastTransport:
    name = "fast"

    def __init__(self, base_url: str, api_key: str = "", timeouts: Timeouts | None = None,
                 clock: Callable[[], float] = time.perf_counter, insecure: bool = False,
                 headers: dict[str, str] | None = None, query: str = "", api_key_header: str = "",
                 ca_bundle: str = "") -> None:
        url = urlparse(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"host must look like http://HOST:PORT[/v1], got {base_url!r}")
        self.timeouts = timeouts or Timeouts()
        self.clock = clock
        self.prefix = url.path.rstrip("/")
        self.url = url
        self.insecure = insecure
        self.tls_context = cabundle.context(ca_bundle, insecure) if url.scheme == "https" else None
        """the TLS client context (client/cabundle.py: --ca-bundle, SSL_CERT_FILE, --insecure); None: plain http"""
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.host = f"{url.hostname}:{self.port}"
        self.headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if api_key:
            if api_key_header:
                self.headers[api_key_header] = api_key
            else:
                self.headers["Authorization"] = f"Bearer {api_key}"
        self.headers.update(headers or {})
        self.query = f"?{query}" if query else ""
        self._connect_s: float | None = None
        self._connecting = False
        self.tickets = Tickets(resume=self.headers.get("Connection", "").lower() != "close")
        """https: the session a reconnect resumes (none with --new-connection-per-request: each request a new
        client's, a full handshake), and the handshakes so far (full, resumed)"""
        self.kernel_times = clock is time.perf_counter
        """on the kernel's clock: packets stamped at arrival (kstamp), TLS decrypted by tlssock, read by the reactor"""
        self.client = self._new_client()

    def _new_client(self) -> Any:
        # HTTPClient directly, not Locust's FastHttpSession: the session fires its own request event
        # timed to the headers only, and hides the connection pool the connection facts need.
        url, tls_context = self.url, self.tls_context
        client = load_client(url.hostname or "", url.port, tls_context, self.insecure,
                             self.timeouts.connect_timeout_s, BLOCK_SIZE)
        clock = self.clock

        def timed(create_socket):
            def timed_create_socket():
                self._connecting = True
                started = clock()
                sock = create_socket()
                self._connect_s = clock() - started
                self._connecting = False
                return sock
            return timed_create_socket

        ghc_compat.wrap_socket_factory(client, timed)
        host, port = url.hostname or "", self.port
        ghc_compat.set_resolver(client, lambda: resolve.addresses(host, port))
        ghc_compat.set_alive_check(client, keepalive.is_idle)  # no yield between t0 and the send
        if self.kernel_times:
            ghc_compat.set_tcp_socket_factory(client, tlssock.stamped_socket)
        if self.kernel_times and tls_context is not None:
            tickets = self.tickets
            ghc_compat.set_connector(client, lambda sock, address: _tls_connect(sock, address, tls_context, host,
                                                                                tickets))
        return client

    def prepare(self) -> None:
        """Before the first timed request (a user's start): resolve the host (client/resolve.py)."""
        resolve.prepare(self.url.hostname or "", self.port)

    def close(self) -> None:
        self.client.close()

    def _read_stream(self, resp, attempt: Attempt, pending: list[tuple[float, bytes]]) -> None:
        """Read the SSE body to `[DONE]`, an error event or its end, stamping every socket read.

        All complete lines a read delivered get that read's time (the same time `readline`
        would give them, a little more exact for the later ones). Until the first text token
        each block is parsed at once (the first-token cap must be cancelled on time); after
        it the reactor reads and decodes (plain TCP), or blocks are stashed in `pending` and parsed when a
        cheap byte test says one may end the stream, at the end, or by the caller on a cap or
        a cut. (Locust's `iter_lines` waits for 1 KiB before it yields a line: hence this.)
        """
        clock = self.clock
        feed = attempt.builder.feed
        timing = attempt.timing
        first = attempt.first
        text_times = timing.text_times
        body = ghc_compat.body_buffer(resp)
        ghc_compat.direct_body(resp)
        sock = ghc_compat.response_socket(resp)
        raw = None  # on the perf_counter clock: read with the kernel's arrival times (TLS: the tlssock)
        if sock is not None:
            wait, read_event = ghc_compat.readable_waiter(sock)
            # TLS: decrypted bytes not taken yet do not make the socket readable
            tls_pending = getattr(sock, "pending", None)
            if isinstance(sock, STAMPED):
                raw = sock if isinstance(sock, tlssock.TLSSocket) else ghc_compat.raw_socket(sock)
        by_reactor = raw is not None and reactor.available() and resp.get("content-length") is None
        t: float = timing.t_headers or 0.0  # set: the headers are in (lines that came with them: that time)
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
                if by_reactor:
                    body_lines.read_rest(resp, raw, feed, pending)
                    return
                if not (tls_pending is not None and tls_pending()):
                    # the next chunk is usually not there yet: wait for readability first instead of
                    # a recv that fails with EAGAIN (a wasted syscall and exception per chunk)
                    wait(read_event)
            data, t = _read(sock, waiting_first, clock)
            try:
                resp.feed(data)  # raises HTTPParseError when the connection closed mid-message
            except HTTPParseError:
                body_lines.take_lines(body, t, pending)  # lines the parser de-chunked before the error
                raise
            if not data:
                sse.feed_blocks(pending, feed)
                return

    def _read_response(self, resp, req: StreamRequest, attempt: Attempt, pending: list[tuple[float, bytes]]) -> None:
        """Status and headers are in: read the error body, the whole answer, or the stream."""
        attempt.result.status = status = resp.status_code
        content_type = str(resp.get("content-type") or "")
        lower = {k.lower(): v for k, v in resp.items()}
        attempt.note_headers(lower)
        if status != 200:
            raw = resp.read(65536)
            attempt.exc = error_for_status(status, lower, raw.decode("utf-8", "replace"), self.url.geturl())
        elif not req.streamed:
            attempt.answer(resp.read())
        elif not is_event_stream(content_type):
            attempt.exc = not_sse_error(content_type)  # the connection is closed on release (body unread)
        else:
            self._read_stream(resp, attempt, pending)
            attempt.exc = attempt.builder.failure()
            if attempt.exc is None and not resp.message_complete:
                resp.read()  # drain the terminating chunk so the connection is kept

    def stream(self, req: StreamRequest) -> StreamResult:
        result, stale = self._stream_once(req)
        if stale:
            # the server closed the kept-alive connection just as the request went out (its idle
            # timeout, e.g. vLLM's 5 s, met a user's pause): nothing was answered, so send it once
            # more on a new connection, as HTTP clients do, instead of reporting a broken stream
            result, _ = self._stream_once(req)
        return result

    def _stream_once(self, req: StreamRequest) -> tuple[StreamResult, bool]:
        """One attempt on the wire; also whether it met a stale kept-alive connection (closed before
        any byte of an answer, on a connection this attempt did not open)."""
        body = json.dumps(req.body()).encode()
        headers = {**self.headers, **(req.headers or {}), "X-Request-Id": req.request_id}
        attempt = Attempt(req, self.name, self.timeouts, self.clock)
        timing = attempt.timing
        self._connect_s = None
        self._connecting = False
        resp = None
        pending: list[tuple[float, bytes]] = []  # blocks read but not parsed yet: parsed on every exit
        if not ghc_compat.has_kept_connection(self.client):
            startgate.take_turn()  # untimed: openers start one at a time (client/startgate.py)
        attempt.arm()
        try:
            timing.start()
            resp = self.client.request("POST", self.prefix + PATHS[req.endpoint] + self.query, body=body,
                                       headers=headers)
            timing.headers()
            head_sock = ghc_compat.response_socket(resp)
            if isinstance(head_sock, STAMPED):  # the headers: when they arrived
                timing.t_headers = max(head_sock.read_time_s, timing.t0 or 0.0)
            self._read_response(resp, req, attempt, pending)
        except gevent.Timeout as t_exc:
            attempt.exc = attempt.cap_error(t_exc)
        except MalformedChunk as m_exc:
            attempt.malformed(m_exc)
        except TimeoutError as s_exc:  # socket.timeout: connect or a single read
            phase = "connect" if self._connecting else "read"
            attempt.exc = Timeout(phase, self.timeouts.connect_timeout_s if self._connecting else None, str(s_exc))
        except HTTPParseError as p_exc:
            if timing.t_headers is None and "closed" not in str(p_exc):
                attempt.exc = ProtocolError(f"bad HTTP response: {p_exc}")
            else:
                attempt.exc = StreamBroken(f"connection closed: {p_exc}")
        except (OSError, socket.gaierror) as o_exc:
            if self._connecting:
                attempt.exc = ConnectError(self.host, connect_reason(o_exc), f"{type(o_exc).__name__}: {o_exc}")
            else:
                attempt.exc = StreamBroken(f"{type(o_exc).__name__}: {o_exc}")
        finally:
            attempt.disarm()
            if resp is not None:
                resp.release()
        if resp is None and attempt.cap_expired:
            # interrupted inside HTTPClient.request (e.g. in sendall), which then keeps its
            # pool slot: start over with a fresh client rather than block on it next time
            self.client.close()
            self.client = self._new_client()
        attempt.feed_pending(pending)
        connect_s = self._connect_s
        stale = (resp is None and timing.t_headers is None and connect_s is None and not self._connecting
                 and isinstance(attempt.exc, StreamBroken))
        return attempt.finish(opened=connect_s is not None,
                              connect_ms=connect_s * 1000.0 if connect_s is not None else None), stale
