"""Did the server shed load at a tier: refuse with 503s or in-stream errors instead of queueing (knees.py's onset).

An engine with a cap on its queue (vLLM's --max-num-queued-reqs, a gateway's concurrency cap) refuses where another
would queue: its overload starts where refusals start, even if its waiting queue stays short. 429s are left to the
limiter and saturation rules (a quota's or a rate limiter's refusals say nothing of the engine's slots).
"""

from __future__ import annotations

from llmload.rules.limits import REJECT_LIMIT
from llmload.rules.text import plural
from llmload.rules.tier import Tier


def sheds(tier: Tier) -> bool:
    """The server refused more than REJECT_LIMIT of the tier's attempts with 503s or in-stream errors: overload
    shed, not queued (429s are a quota's or a limiter's: `limiter.py`, `saturation.py`)."""
    shed = tier.n_503 + tier.n_stream_error
    return tier.sent > 0 and shed / tier.sent > REJECT_LIMIT


def evidence(row: Tier, with_wait: bool = True) -> str:
    """'the server shed 30% of requests (64 x 503) instead of queueing them (estimated wait 0 ms)'; `with_wait`
    False: without the queue or wait in brackets (said beside it already)."""
    parts = [f"{row.n_503} x 503"] if row.n_503 else []
    parts += [plural(row.n_stream_error, "in-stream error")] if row.n_stream_error else []
    waiting = "" if not with_wait else (f" (its queue held {row.srv_queue:.1f})" if row.has_server_queue else
               f" (estimated wait {row.wait_ms:.0f} ms)" if row.wait_ms == row.wait_ms else "")
    return (f"the server shed {(row.n_503 + row.n_stream_error) / row.sent:.0%} of requests ({', '.join(parts)}) "
            f"instead of queueing them{waiting}")
