"""The body of a streamed answer -> SSE lines stamped with the read that delivered them.

`take_lines` moves the complete lines the HTTP parser de-chunked into the stash of
(read time, block of lines); `fed` feeds one stamped read to the parser; `read_rest` reads
the rest of a stream after its first token through the process's reactor (client/reactor.py),
which decodes each read as it comes, at its read time.
"""

from __future__ import annotations

from collections.abc import Callable

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
    """After the first token: the process's reactor reads, stamps and decodes each read as it comes
    (`consume`, called in the reactor's greenlet); the user waits for the end of its stream.

    A cap that ends the wait early leaves every read consumed so far decoded, at its read time.
    """
    body = ghc_compat.body_buffer(resp)

    def consume(t: float, data: bytes) -> bool:
        if fed(resp, body, t, data, pending):  # the peer closed
            sse.feed_blocks(pending, feed)
            return True
        return sse.feed_blocks(pending, feed) or resp.message_complete

    stream = reactor.READER.add(raw, consume)
    try:
        reactor.READER.wait(stream)
    finally:
        reactor.READER.remove(stream)
    if stream.error is not None:
        raise stream.error
