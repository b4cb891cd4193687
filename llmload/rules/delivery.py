"""When a request's output tokens arrived, and whether a tier was long enough for its requests.

How it works: samples.csv keeps one row per attempt (its send, TTFT, e2e and output tokens), not the time of
every chunk, so a successful request's output tokens are spread evenly over its decode, from its first token
(send + TTFT) to its last (send + e2e); an answer that came in one piece (not streamed, one chunk) delivers them
all at that instant. The tokens a tier delivered are the shares of every request's decode inside its measure
window, whichever tier sent the request: a request that outlasts a tier counts its tokens where they arrived,
not where it was sent, so output tokens/s is the engine's while the tier held (the report's tier table:
llmload/analysis/tables/delivery.py, the same rule on arrays; the live book: llmload/sink/live.py).

A tier is *too short for its requests* when the longest decode of its successful measured requests (first token
to last) lasted more than LONGEST_DECODE_SHARE of its measure window: such requests stream across the window's
edges, so what is counted by send (attempts, req/s, TPOT) mixes the load of the tiers around it (a request long
only because it waited does not count: its wait is its TTFT, the tier's own figure). Such a tier is left out of
the knees, the capacity and the saturation verdict (llmload.rules.trust.judged, as a tier cut too short). The
length to hold each tier is its warm-up plus HOLD_REQUESTS of the run's longest decodes.
"""

from __future__ import annotations

import math

from llmload.rules.limits import HOLD_REQUESTS, LONGEST_DECODE_SHARE
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


def too_short(measure_s: float, decode_max_s: float) -> bool:
    """The tier's longest decode lasted more than LONGEST_DECODE_SHARE of its measure window (NaN: not known,
    never too short)."""
    return decode_max_s == decode_max_s and measure_s == measure_s and decode_max_s > LONGEST_DECODE_SHARE * measure_s


def tier_too_short(tier: Tier) -> bool:
    """`too_short` on a rule-book tier: its rate window against its longest decode."""
    return too_short(tier.rate_window_s, tier.decode_max_ms / 1000.0)


def hold_s(warmup_s: float, decode_max_s: float) -> float:
    """Seconds to hold a tier for decodes this long: its warm-up plus HOLD_REQUESTS of them, rounded up."""
    return float(math.ceil((warmup_s if warmup_s == warmup_s else 0.0) + HOLD_REQUESTS * decode_max_s))
