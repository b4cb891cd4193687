"""Host names resolved before the first timed request and shared by every user of the process.

Why: geventhttpclient resolves the host on every new connection, through gevent's resolver
thread pool. The first resolution of a process starts that pool's threads (~15 ms here, for
`127.0.0.1` too), and 16 users opening their connections at once queued behind it: the first
requests of a run reported `connect_ms` of 16-40 ms for a loopback connect of ~0.1 ms. So a
user's `prepare()` (on start, untimed) resolves its host, and new connections reuse the
addresses for `TTL_S` (the next connect after that resolves again, inside its connect time).
An address literal (`127.0.0.1`, `[::1]`) is converted on the spot, without the pool; a name
is looked up once however many users ask at the same time (the others wait for that answer).
A failed resolution is not cached: the first connect then reports it as it always did.
"""

from __future__ import annotations

import _socket
import ipaddress
import time
from typing import Any

import gevent.socket
from gevent.event import AsyncResult

TTL_S = 60.0
"""how long resolved addresses are reused (a DNS-balanced endpoint is looked up again after it)"""

_cache: dict[tuple[str, int], tuple[float, list[Any]]] = {}
_in_flight: dict[tuple[str, int], AsyncResult] = {}


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def addresses(host: str, port: int) -> list[Any]:
    """getaddrinfo(host, port) for a TCP connection, from the cache while it is fresh."""
    key = (host, port)
    now = time.monotonic()
    hit = _cache.get(key)
    if hit is not None and now - hit[0] < TTL_S:
        return hit[1]
    if _is_address(host):  # no lookup: the C call converts it at once, no thread involved
        infos = _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM, _socket.SOL_TCP, _socket.AI_NUMERICHOST)
        _cache[key] = (now, infos)
        return infos
    waiting = _in_flight.get(key)
    if waiting is not None:
        return waiting.get()  # another user is looking it up: its answer (or its error)
    _in_flight[key] = answer = AsyncResult()
    try:
        infos = gevent.socket.getaddrinfo(host, port, 0, gevent.socket.SOCK_STREAM, gevent.socket.SOL_TCP)
    except BaseException as exc:
        answer.set_exception(exc if isinstance(exc, OSError) else OSError(f"name lookup interrupted: {exc!r}"))
        raise
    finally:
        del _in_flight[key]
    _cache[key] = (now, infos)
    answer.set(infos)
    return infos


def prepare(host: str, port: int) -> bool:
    """Resolve before the first timed request; False (nothing cached) when it fails."""
    try:
        addresses(host, port)
    except OSError:
        return False
    return True
