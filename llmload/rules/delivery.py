"""When a request's output tokens arrived, and whether a tier was long enough for its requests.

How it works: samples.csv keeps one row per attempt (its send, TTFT, e2e and output tokens), not the time of
every chunk, so a successful request's output tokens are spread evenly over its decode, from its first token
(send + TTFT) to its last (send + e2e); an answer that came in one piece (not streamed, one chunk) delivers them
all at that instant. The tokens a tier delivered are the shares of every request's decode inside its measure
window, whichever tier sent the request: a request that outlasts a tier counts its tokens where they arrived,
not where it was sent, so output tokens/s is the engine's while the tier held (the report's tier table:
llmload/analysis/tables/delivery.py, the same rule on arrays; the live book: llmload/sink/live.py).

A tier is *too short for its requests* when its measure window is shorter than MIN_WINDOW_REQUESTS times its
longest successful request: such requests span the window's edges, so what is counted by send (attempts, req/s,
latencies) mixes the load of the tiers around it: it is left out of the knees, the capacity and the saturation
verdict (llmload.rules.trust.judged, as a tier cut too short). The length to hold each tier is its warm-up plus
that many of the run's longest requests.
"""

from __future__ import annotations

import math

from llmload.rules.limits import MIN_WINDOW_REQUESTS
from llmload.rules.tier import Tier


def decode_span(ts_start_s: float, ttft_ms: float, e2e_ms: float) -> tuple[float, float]:
    """(first token, last token) in unix seconds; the last never before the first."""
    first_s = ts_start_s + ttft_ms / 1000.0
    return first_s, max(first_s, ts_start_s + e2e_ms / 1000.0)


def share_in(first_s: float, last_s: float, start_s: float, end_s: float) -> float:
    """The share of a request's output tokens delivered in [start_s, end_s) (module docstring)."""
    if last_s <= first_s:
        return 1.0 if start_s <= first_s < end_s else 0.0
    inside = min(last_s, end_s) - max(first_s, start_s)
    return inside / (last_s - first_s) if inside > 0 else 0.0


def too_short(measure_s: float, longest_s: float) -> bool:
    """The tier's measure window is shorter than MIN_WINDOW_REQUESTS of its longest successful request (NaN:
    not known, never too short)."""
    return longest_s == longest_s and measure_s == measure_s and measure_s < MIN_WINDOW_REQUESTS * longest_s


def tier_too_short(tier: Tier) -> bool:
    """`too_short` on a rule-book tier: its rate window against its longest request."""
    return too_short(tier.rate_window_s, tier.longest_ms / 1000.0)


def hold_s(warmup_s: float, longest_s: float) -> float:
    """Seconds to hold a tier for requests this long: its warm-up plus MIN_WINDOW_REQUESTS of them, rounded up."""
    return float(math.ceil((warmup_s if warmup_s == warmup_s else 0.0) + MIN_WINDOW_REQUESTS * longest_s))
