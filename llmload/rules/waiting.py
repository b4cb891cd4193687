"""Did a tier's requests wait for a slot? Measured by the server when it says, else estimated.

How it works, over every tier of a run (the lowest load is the baseline):
- `wait_ms` (client-side estimate): mean TTFT minus the lowest tier's mean TTFT scaled by how
  much slower the engine's steps got, `ttft_0 x tpot_mean / tpot_mean_0`. A batch that slows
  down (CPU engines, GPUs at their compute limit) stretches prefill and decode alike, so
  that part of the TTFT growth is compute, not waiting; what is left is time spent waiting.
  Without TPOT the ratio is 1. The lowest tier waits 0 by definition (it is the baseline), so
  a single-tier run cannot see a queue from the client side. Answers with no first token
  (embeddings, rerank: `latency.py`) grow from mean e2e latency instead of TTFT (no TPOT: ratio 1).
- `queue_len`: requests waiting on average, Little's law on the wait: ok req/s x wait_ms.
- `wait_share`: wait_ms / (mean e2e - wait_ms), the wait as a share of the service time.
- `waits`, first source that exists:
  1. the server's own queue (`Tier.srv_queue`: by Little's law on its queue-time histogram, else its waiting
     gauge's mean): > WAIT_MIN_REQUESTS;
  2. open loop: more than REJECT_LIMIT of arrivals dropped at the in-flight cap (requests
     piled up to the cap);
  3. the client estimate: queue_len > WAIT_MIN_REQUESTS and wait_share > WAIT_SHARE.
- `wait_source`: 'server', 'dropped', 'client' or '' (no evidence of waiting).
"""

from __future__ import annotations

import dataclasses

from llmload.rules.latency import first_ms, mark
from llmload.rules.limits import REJECT_LIMIT, WAIT_MIN_REQUESTS, WAIT_SHARE
from llmload.rules.tier import NAN, Tier


def _baseline(tiers: list[Tier]) -> Tier | None:
    usable = [t for t in tiers if t.ok > 0 and first_ms(t) == first_ms(t)]
    return min(usable, key=lambda t: t.load) if usable else None  # min keeps the first of equal loads


def _wait_ms(tier: Tier, base: Tier | None) -> float:
    if base is None or first_ms(tier) != first_ms(tier):
        return NAN
    tpot0 = base.tpot_mean_ms
    ratio = 1.0
    if tpot0 == tpot0 and tpot0 > 0:
        ratio = tier.tpot_mean_ms / tpot0 if tier.tpot_mean_ms == tier.tpot_mean_ms else 1.0
        ratio = max(ratio, 1.0)
    return max(first_ms(tier) - first_ms(base) * ratio, 0.0)


def judge(tier: Tier, wait_ms: float) -> Tier:
    """The tier with wait_ms, queue_len, wait_share, waits and wait_source set (module docstring)."""
    queue_len = tier.ok_rps * wait_ms / 1000.0
    service = tier.e2e_mean_ms - wait_ms
    wait_share = wait_ms / service if service > 0 else NAN
    client = queue_len > WAIT_MIN_REQUESTS and wait_share > WAIT_SHARE
    dropped = tier.drop_rate > REJECT_LIMIT
    if tier.has_server_queue:
        waits, source = tier.srv_queue > WAIT_MIN_REQUESTS, "server"
    else:
        waits, source = dropped or client, "dropped" if dropped else "client"
    return dataclasses.replace(tier, wait_ms=wait_ms, queue_len=queue_len, wait_share=wait_share, waits=waits,
                               wait_source=source if waits else "")


def estimate(tiers: list[Tier]) -> list[Tier]:
    """Every tier (same order), marked when its answers have no first token (`latency.mark`), judged for waiting
    against the run's lowest-load tier."""
    tiers = mark(tiers)
    base = _baseline(tiers)
    return [judge(t, _wait_ms(t, base)) for t in tiers]
