"""The body of a streamed answer -> SSE lines stamped with the read that delivered them.

`take_lines` moves the complete lines the HTTP parser de-chunked into the stash of
(read time, block of lines); `fed` feeds one stamped read to the parser; `read_rest` reads
the rest of a stream after its first token through the process's reactor (client/reactor.py)
and decodes the reads when one may end the stream, or when a cap or a failure ends the attempt.
"""

from __future__ import annotations

from collections.abc import Callable

from geventhttpclient.response import HTTPParseError

from llmload.client import ghc_compat, reactor, sse


def take_lines(body: bytearray, t: float, pending: list[tuple[float, bytes]]) -> None:
    """Move the complete lines of the body buffer to `pending`, stamped with read time `t`."""
    end = body.rfind(b"\n")
    if end >= 0:
        pending.append((t, bytes(body[:end + 1])))
        del body[:end + 1]


def fed(resp, body: bytearray, t: float, data: bytes, pending: list[tuple[float, bytes]]) -> bool:
    """Feed one read (`data`, read at `t`) to the HTTP parser and stash its complete lines;
    True when the body ended (the peer closed: `data` is empty). Raises HTTPParseError when
    the connection closed mid-message, after stashing the lines de-chunked before it."""
    try:
        resp.feed(data)
    finally:
        take_lines(body, t, pending)
    return not data


def read_rest(resp, raw, feed: Callable[[float, bytes], bool], pending: list[tuple[float, bytes]]) -> None:
    """After the first token: the process's reactor reads and stamps; decode when a read may end.

    The reads of an attempt ended early (a cap) are decoded too, at their read times.
    """
    body = ghc_compat.body_buffer(resp)
    stream = reactor.READER.add(raw)
    try:
        while True:
            reactor.READER.wait(stream)
            reads, stream.reads = stream.reads, []
            for t, data in reads:
                if not data and stream.error is not None:
                    raise stream.error
                if fed(resp, body, t, data, pending):
                    sse.feed_blocks(pending, feed)
                    return
            if sse.feed_blocks(pending, feed) or resp.message_complete:
                return
    finally:
        reactor.READER.remove(stream)
        try:
            for t, data in stream.reads:  # read before a cap or a failure ended the attempt
                if fed(resp, body, t, data, pending):
                    break
        except (HTTPParseError, OSError):
            pass
