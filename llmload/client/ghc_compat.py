"""Every reach into geventhttpclient's private names, in one place (checked against 2.6.1).

The fast transport needs what the public API does not offer:
- the connection pool's socket factory (`HTTPClient._connection_pool._create_socket`), wrapped
  so an attempt knows whether it opened a connection and how long the connect took;
- a response's de-chunked body buffer (`HTTPSocketPoolResponse._body_buffer`) and its socket
  (`._sock`), so every `recv` is stamped at the read instead of after 1 KiB is buffered;
- gevent's own wait-until-readable of that socket (`sock._wait(sock._read_event)`).
- the pool's connect of a new socket (`ConnectionPool._connect_socket`), replaced for https by the TCP
  connect plus client/tlssock.py's handshake (instead of a gevent.ssl socket);
- whether the pool holds a kept-alive connection (`._socket_queue`), for the start gate;
- the C parser's own `feed` (`geventhttpclient._parser.HTTPResponseParser.feed`), which the
  reactor calls for every read without `HTTPResponse.feed`'s Python frame (that frame only mends
  a HEAD answer that carries a body: never a streamed POST);
- the parser's body callback (`_on_body`, looked up on the instance for every body piece), set to
  the body buffer's own `extend` (`direct_body`): no Python frame per piece.
`tests/unit/test_compat.py` fails when any of these stops existing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from geventhttpclient._parser import HTTPResponseParser

CHECKED_VERSION = "2.6.1"

_parser_feed: Any = HTTPResponseParser.feed


def wrap_socket_factory(client: Any, wrap: Callable[[Callable[[], Any]], Callable[[], Any]]) -> None:
    """Replace the client's pool socket factory by `wrap(original_factory)`."""
    pool = client._connection_pool
    pool._create_socket = wrap(pool._create_socket)


def body_buffer(resp: Any) -> bytearray:
    """The de-chunked body bytes the response's HTTP parser appends to."""
    return resp._body_buffer


def response_socket(resp: Any) -> Any:
    """The response's socket; None when the whole message came in with the headers."""
    return resp._sock


def readable_waiter(sock: Any) -> tuple[Callable[[Any], None], Any]:
    """(wait, event): `wait(event)` blocks the greenlet until `sock` is readable."""
    return sock._wait, sock._read_event


def raw_socket(sock: Any) -> Any:
    """The non-blocking `_socket.socket` under a gevent socket (gevent's `_sock`; checked against 26.9)."""
    return sock._sock


def set_resolver(client: Any, resolve: Callable[[], list[Any]]) -> None:
    """Replace the pool's per-connection name resolution (`ConnectionPool._resolve`)."""
    client._connection_pool._resolve = resolve


def set_alive_check(client: Any, is_idle: Callable[[Any], bool]) -> None:
    """Replace the pool's reuse check of a pooled socket (`ConnectionPool._is_socket_alive`)."""
    client._connection_pool._is_socket_alive = is_idle


def set_tcp_socket_factory(client: Any, factory: Callable[[int, int, int], Any]) -> None:
    """Replace the pool's plain socket constructor (`ConnectionPool._create_tcp_socket(family, type, proto)`)."""
    client._connection_pool._create_tcp_socket = factory


def has_kept_connection(client: Any) -> bool:
    """Does the client's pool hold a kept-alive connection (the next request may reuse it)?"""
    return not client._connection_pool._socket_queue.empty()


def parser_feed(resp: Any) -> Callable[[bytes], None]:
    """`resp.feed` without its Python wrapper: the C parser's feed bound to `resp` (no Python frame
    per call; raises HTTPParseError alike)."""
    return _parser_feed.__get__(resp)


def direct_body(resp: Any) -> None:
    """Let the parser append body pieces to the body buffer itself (`bytearray.extend`, C) instead of
    through `HTTPResponse._on_body`'s Python frame (`self._body_buffer += buf`: the same bytes)."""
    resp._on_body = resp._body_buffer.extend


def set_connector(client: Any, connect: Callable[[Any, Any], Any]) -> None:
    """Replace the pool's connect of a new socket (`ConnectionPool._connect_socket(sock, address)` -> the socket
    requests use; SSLConnectionPool's own connects, then wraps it in a gevent.ssl socket)."""
    client._connection_pool._connect_socket = connect
