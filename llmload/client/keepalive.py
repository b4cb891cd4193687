"""Is a pooled keep-alive connection still usable? Checked without yielding to the event loop.

geventhttpclient checks each pooled connection before reusing it with gevent's
`select.select(..., 0.0)`, which ends with a `sleep(0)`: the request's greenlet goes to the
back of the loop's queue between its t0 and its send. Under load that put the whole loop's
lag into TTFT (256 streams: the send came 150 ms after t0 for 1 request in 100). Also,
`select` refuses descriptors above 1023, so past ~1000 connections every reuse check
failed and each request opened a new connection. This check polls the descriptor with
the real `poll` (no yield, any descriptor): an idle connection is not readable; readable
means the server closed it (FIN) or sent something unexpected, so it is not reused.
"""

from __future__ import annotations

import select
from typing import Any

from gevent import monkey

_poll: Any = monkey.get_original("select", "poll") if monkey.is_module_patched("select") else select.poll


def is_idle(sock: Any) -> bool:
    """True when `sock` is open and has nothing to read (a clean idle keep-alive connection)."""
    if sock is None:
        return False
    try:
        fd = sock.fileno()
        if fd < 0:
            return False
        poller = _poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        return not poller.poll(0)
    except (OSError, ValueError):
        return False
