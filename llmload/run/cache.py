"""Prompt-cache control in the run (`--cache warm|cold`, one for every tier or one per tier; docs/workloads.md).

How it works: `LLMUser.ask` hands every prompt to `controlled(user, prompt, messages)` before it is sent. It reads
the tier the request is sent in from the tier timeline (the shape's on a local run or the master, the replica the
master feeds a worker: sink/tierfeed.py; tier 0 without a shape) and that tier's mode (`llmload.rules.traffic`):
- cold: the prompt comes back salted (workload/cache.py): no prefix of it is in any cache;
- warm: the first request of the tier in this process starts the tier's priming pass in its own greenlet, and
  every request of the tier (that one included) waits for it to end, then goes on as it is: in the warm-up, so
  the measured requests find every prompt cached (open loop: the wait shows as schedule lag of warm-up
  arrivals). The pass sends each distinct --dataset prompt once
  (max_tokens 1, PRIME_CONNECTIONS at a time on connections of its own); these requests are no samples and fire no
  Locust events: they only fill the server's prefix cache during the warm-up, before the measure window. Each
  process primes every prompt (distributed runs: each worker, so every replica behind a balancer that routes by
  connection may still miss). One log line says how long it took; a warning when it ran into the measure window
  (lengthen --warmup-seconds).
"""

from __future__ import annotations

import dataclasses
import logging
import time
import weakref
from typing import Any

import gevent
from gevent.event import Event
from gevent.pool import Pool

from llmload.client.apis import CHAT_APIS
from llmload.client.request import StreamRequest
from llmload.rules.traffic import cache_mode
from llmload.run.options.targets import RoundRobin
from llmload.run.transport import make_transport
from llmload.sink.timeline import Tier
from llmload.workload.cache import distinct_prompts, salted

PRIME_CONNECTIONS = 4
"""priming requests in flight at once per process: a dataset's few hundred prompts in seconds, not minutes"""
logger = logging.getLogger("llmload.cache")
_PRIMED: weakref.WeakKeyDictionary[Any, dict[int, Event]] = weakref.WeakKeyDictionary()
"""per run state: tier -> set once this process's priming pass of it ended"""


def controlled(user: Any, prompt: Any, messages: list[dict] | None) -> tuple[Any, list[dict] | None]:
    """The prompt (an llmload.prompts.Prompt) as this tier's --cache mode sends it (unchanged without --cache)."""
    modes = user.options.workload.cache
    if not modes:
        return prompt, messages
    tier = current_tier(user.ctx)
    mode = cache_mode(modes, tier.tier)
    if mode == "cold":
        text, salted_messages = salted(prompt.text, messages)
        return dataclasses.replace(prompt, text=text, approx_tokens=prompt.approx_tokens + 1), salted_messages
    primed = _PRIMED.setdefault(user.ctx, {})
    done = primed.get(tier.tier)
    if done is None:
        done = primed[tier.tier] = Event()
        gevent.spawn(prime, user, tier).link(lambda _greenlet: done.set())  # set even if the pass failed
    done.wait()  # in the warm-up: the tier's requests start once the cache holds every prompt
    return prompt, messages


def current_tier(ctx: Any) -> Tier:
    """The tier a request sent now belongs to (the master's timeline replica on a worker)."""
    timeline = ctx.timeline if ctx.timeline.records else ctx.sink.replica.timeline
    return timeline.tier_at(time.time())[0]


def prime(user: Any, tier: Tier) -> None:
    """Send each distinct dataset prompt once (max_tokens 1), PRIME_CONNECTIONS at a time; log what it took."""
    opts, ctx = user.options, user.ctx
    endpoint = user.endpoint or opts.endpoint
    prompts = distinct_prompts(ctx.dataset_items(opts.workload.dataset), chat=endpoint in CHAT_APIS)
    lanes = max(1, min(PRIME_CONNECTIONS, len(prompts)))
    failed: list[int] = []
    started_s = time.time()

    def lane(index: int) -> None:
        # a connection carries one stream at a time; each prompt is sent once to every target, in turn
        transport = make_transport(opts, ctx.next_user_index(), RoundRobin((1.0,) * max(1, len(opts.targets))),
                                   endpoint)
        try:
            for n in range(index, len(prompts), lanes):
                text, messages = prompts[n]
                req = StreamRequest(endpoint=endpoint, model=opts.model, prompt=text, max_tokens=1,
                                    request_id=f"{ctx.token}-prime{tier.tier}-{n}", messages=messages,
                                    extra_body=opts.extra_body or None, stream=opts.stream)
                if not all([transport.stream(req).ok for _ in transport.transports]):
                    failed.append(n)
        finally:
            transport.close()

    Pool(lanes).map(lane, range(lanes))
    ended_s = time.time()
    late_s = ended_s - (tier.start_s + tier.warmup_s)
    where = f"tier {tier.tier}" if tier.tier else "the run"
    logger.info("cache warm: %s: %d distinct prompts sent once in %.1f s (%d failed)", where, len(prompts),
                ended_s - started_s, len(failed))
    if tier.tier and late_s > 0:
        logger.warning("cache warm: tier %d's priming ended %.1f s into its measure window: its first measured "
                       "requests may have missed the cache; lengthen --warmup-seconds", tier.tier, late_s)
