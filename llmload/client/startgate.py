"""Requests that open a new connection start one at a time, each once the loop has gone idle.

Why: when many users start together (`-u 64 -r 64` spawns 64 at once; a step tier adds its users
at once), each one's first request takes t0 and yields in `connect()`, and the next user runs its
start-up and its own request build in the same loop turn. A loopback connect is done in ~0.1 ms,
but the first user is resumed only after all the others had their turn: its `connect_ms`, and its
TTFT, grew by ~0.2 ms per user started with it (64 users: the first one's connect read 16-19 ms
for a ~0.1 ms connect; TTFT error p99 of a 64-stream run 17-24 ms, all from that first wave).

The gate: before t0 of a request that will open a connection, its user waits for its turn (one
user at a time) and then for an idle loop: every pending event went first, so the user before it
was resumed from its connect and sent. The wait comes before t0 (untimed) and lasts at most
`MAX_WAIT_S` when the loop never idles (a saturated process, which the overload warning names).
The first requests of N users starting together thus go out over N x ~0.1-0.3 ms (their start
times in samples.csv say so) instead of all in one turn with each connect time wrong.
Requests on a kept-alive connection never wait here.
"""

from __future__ import annotations

import gevent
from gevent.lock import Semaphore

MAX_WAIT_S = 0.02
"""the longest a request waits for an idle loop (its turn among other openers comes first)"""

_turn: Semaphore | None = None


def take_turn(max_wait_s: float = MAX_WAIT_S) -> None:
    """Block until this greenlet's turn among the connection openers, then until the loop idles."""
    global _turn
    if _turn is None:  # made on first use: importing the package creates nothing of gevent's
        _turn = Semaphore(1)
    with _turn, gevent.Timeout(max_wait_s, False):
        gevent.idle()
