"""A worker's side of the master's worker book (run/distributed/workers.py): clock probes and tier delivery.

How it works: at init a worker registers the answer to the master's `llmload_clock` probes (the
master's time sent back beside the worker's own, so the master can estimate the offset), and
watches every message from the master as it comes off the socket: a `spawn` message (a closed-loop
tier change) or an open-loop target is reported to the master with the time it arrived
(`llmload_seen`), which the master turns into the tier's `reach_ms`. It also sends the handshake
(handshake.py).
"""

from __future__ import annotations

import time
from typing import Any

from llmload.run import locust_compat
from llmload.run.distributed import handshake
from llmload.run.distributed.workers import CLOCK_MESSAGE, OPENLOOP_MESSAGE, SEEN_MESSAGE


def attach_worker(runner: Any) -> None:
    """Worker: answer clock probes, and tell the master when each tier change arrived."""

    def answer(environment: Any, msg: Any, **_kw: Any) -> None:
        runner.send_message(CLOCK_MESSAGE, {"master_unix": msg.data["master_unix"], "worker_unix": time.time()})

    def seen(msg: Any, unix_s: float) -> bool:
        if msg.type == "spawn" and isinstance(msg.data, dict):
            runner.send_message(SEEN_MESSAGE, {"kind": "spawn", "worker_unix": unix_s,
                                               "sent_unix": msg.data.get("timestamp")})
        elif msg.type == OPENLOOP_MESSAGE and isinstance(msg.data, dict):
            runner.send_message(SEEN_MESSAGE, {"kind": "target", "worker_unix": unix_s, "tier": msg.data["tier"]})
        return True

    runner.register_message(CLOCK_MESSAGE, answer)
    locust_compat.observe_worker_messages(runner, seen)
    handshake.attach_worker(runner)
