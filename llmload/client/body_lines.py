"""The body of a streamed answer -> SSE lines stamped with the read that delivered them.

`take_lines` moves the complete lines the HTTP parser de-chunked into the stash of
(read time, block of lines); `read_rest` reads the rest of a stream after its first token
through the process's reactor (client/reactor.py), which decodes each read as it comes, at
its read time (a TLS stream's plaintext decrypted before the handover first, client/tlssock.py):
one call of the builder per read, with the read's whole block of lines. The per-read step is C
when the compiled decoder is built (client/decoder.py), else `pure_consumer`: the same.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from types import ModuleType

from llmload.client import decoder, ghc_compat, reactor, tlssock


def take_lines(body: bytearray, t: float, pending: list[tuple[float, bytes]]) -> None:
    """Move the complete lines of the body buffer to `pending`, stamped with read time `t`."""
    end = body.rfind(b"\n")
    if end >= 0:
        pending.append((t, bytes(body[:end + 1])))
        del body[:end + 1]


def pure_consumer(resp, feed: Callable[[float, bytes], bool],
                  pending: list[tuple[float, bytes]]) -> Callable[[float, bytes], bool]:
    """`consume(t, data)` for every read of the stream after its first token: the HTTP parser de-chunks the
    read into the body buffer, its complete lines go to `feed` as one block; True once the stream is over.

    A read the HTTP parser rejects (the connection closed mid-message) leaves the lines de-chunked before it
    in `pending`, for the attempt to decode on its way out.
    """
    body = ghc_compat.body_buffer(resp)
    parse = ghc_compat.parser_feed(resp)

    def consume(t: float, data: bytes) -> bool:  # every read of the stream: keep it lean
        try:
            parse(data)
        except BaseException:
            take_lines(body, t, pending)
            raise
        end = body.rfind(b"\n") + 1
        if end:
            if end == len(body):
                block = bytes(body)
                body.clear()
            else:
                block = bytes(body[:end])
                del body[:end]
            if feed(t, block):
                return True
        return not data or resp.message_complete

    return consume


def consumer(resp, feed: Callable[[float, bytes], bool], pending: list[tuple[float, bytes]],
             module: ModuleType | None = decoder.MODULE) -> Callable[[float, bytes], bool]:
    """`pure_consumer`'s consume, in C when the compiled decoder runs (client/decoder.py `MODULE`): the same."""
    if module is None:
        return pure_consumer(resp, feed, pending)
    return partial(module.consume, ghc_compat.parser_feed(resp), ghc_compat.body_buffer(resp), resp, feed, pending)


def read_rest(resp, raw, feed: Callable[[float, bytes], bool], pending: list[tuple[float, bytes]]) -> None:
    """After the first token: the process's reactor reads, stamps and decodes each read as it comes
    (`consumer`, called in the reactor's greenlet); the user waits for the end of its stream.

    A cap that ends the wait early leaves every read consumed so far decoded, at its read time. `raw`: the
    non-blocking TCP socket, or the stream's TLSSocket, whose plaintext decrypted but not taken yet (epoll cannot
    see it) is consumed first, at the time it arrived.
    """
    consume, recv = consumer(resp, feed, pending), reactor.tcp_recv
    if isinstance(raw, tlssock.TLSSocket):
        recv = tlssock.recv
        data, t = raw.take_plain()
        if data and consume(t, data):
            return
    stream = reactor.READER.add(raw, consume, recv)
    try:
        reactor.READER.wait(stream)
    finally:
        reactor.READER.remove(stream)
    if stream.error is not None:
        raise stream.error
