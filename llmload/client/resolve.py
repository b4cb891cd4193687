"""Host names resolved before the first timed request and shared by every user of the process.

Why: geventhttpclient resolves the host on every new connection, through gevent's resolver
thread pool. The first resolution of a process starts that pool's thread (~15 ms here, for
`127.0.0.1` too), and 16 users opening their connections at once queue behind it: the first
requests of a run reported `connect_ms` of 16-40 ms for a loopback connect of ~0.1 ms. So a
user's `prepare()` (on start, untimed) resolves its host once, and new connections reuse the
addresses for `TTL_S` (the next connect after that resolves again, inside its connect time).
A failed resolution is not cached: the first connect then reports it as it always did.
"""

from __future__ import annotations

import time
from typing import Any

import gevent.socket

TTL_S = 60.0
"""how long resolved addresses are reused (a DNS-balanced endpoint is looked up again after it)"""

_cache: dict[tuple[str, int], tuple[float, list[Any]]] = {}


def addresses(host: str, port: int) -> list[Any]:
    """getaddrinfo(host, port) for a TCP connection, from the cache while it is fresh."""
    now = time.monotonic()
    hit = _cache.get((host, port))
    if hit is not None and now - hit[0] < TTL_S:
        return hit[1]
    infos = gevent.socket.getaddrinfo(host, port, 0, gevent.socket.SOCK_STREAM, gevent.socket.SOL_TCP)
    _cache[(host, port)] = (now, infos)
    return infos


def prepare(host: str, port: int) -> bool:
    """Resolve before the first timed request; False (nothing cached) when it fails."""
    try:
        addresses(host, port)
    except OSError:
        return False
    return True
