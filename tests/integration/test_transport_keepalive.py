"""A kept-alive connection the server closed while idle (its keep-alive timeout) is not a broken stream:
the fast transport sends the request again on a new connection (found against vLLM: a user's 5.0 s
pause met vLLM's 5 s idle timeout and the attempt came back 'connection closed', unanswered)."""

from __future__ import annotations

import locust  # noqa: F401  (gevent monkey-patching, as in a real run)
import pytest
from gevent.server import StreamServer

from llmload.client.fast import FastTransport
from llmload.client.request import StreamRequest

pytestmark = pytest.mark.integration

SSE = (b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'
       b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'
       b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n'
       b"data: [DONE]\n\n")


def read_request(sock) -> bytes | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            return None
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    while len(rest) < length:
        rest += sock.recv(65536)
    return head


def answer_once_per_connection(sock, _addr, answered: list, dropped: list):
    """Answer the first request of a connection keep-alive style (no Connection: close); close the
    connection on the next one without answering it: the race of an idle timeout with a new request."""
    head = read_request(sock)
    if head is None:
        return
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(SSE)
                 + SSE)
    answered.append(head)
    if read_request(sock) is not None:
        dropped.append(1)
    sock.close()


def request(i: int) -> StreamRequest:
    return StreamRequest(endpoint="chat", model="m", prompt="p", max_tokens=4, request_id=f"ka-{i}")


def test_a_connection_closed_while_idle_is_reopened_not_reported_broken():
    answered: list = []
    dropped: list = []
    server = StreamServer(("127.0.0.1", 0), lambda s, a: answer_once_per_connection(s, a, answered, dropped))
    server.start()
    try:
        transport = FastTransport(f"http://127.0.0.1:{server.server_port}/v1")
        results = []
        for i in range(3):
            results.append(transport.stream(request(i)))
        transport.close()
    finally:
        server.stop()
    assert [r.error for r in results] == ["", "", ""], [r.exception for r in results]
    assert [r.text for r in results] == ["hi", "hi", "hi"]
    assert len(answered) == 3 and len(dropped) == 2  # requests 2 and 3 met a closing connection, then went again
    assert all(r.conn_reused is False for r in results)  # each was answered on a new connection
