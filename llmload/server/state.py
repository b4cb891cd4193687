"""The state of one server that the application and its request handlers share.

The application (app.py) builds one `ServerState` and hands it to every request it admits
(`generation.Generation`, `embeddings.EmbeddingJob`, `rerank.RerankJob`); the handlers drive
the engine, write the truth log and the metrics through it, and never see the application.
What only the application uses (the rate limiter, the fault and early-stop draws, the request
log, the request ids) stays in the application.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from llmload.server.config import ServerConfig
from llmload.server.engine import Engine
from llmload.server.metrics import ServerMetrics
from llmload.server.prefix_cache import PrefixCache
from llmload.server.tokens import TextSource
from llmload.server.truthlog import TruthLog


class ServerState:
    def __init__(self, cfg: ServerConfig, loop: asyncio.AbstractEventLoop, clock: Callable[[], float]):
        self.cfg = cfg
        """every knob of the server (config.py)"""
        self.loop = loop
        """the event loop the timers of prefill and decode steps run on"""
        self.clock = clock
        """monotonic seconds (perf_counter): the truth log's and the client's clock"""
        self.engine = Engine(cfg)
        """the slots, the queue and the prefill/decode arithmetic"""
        self.cache = PrefixCache(cfg.cache_block_tokens, cfg.cache_capacity_tokens)
        """the prefix cache a completion's prompt is looked up in and inserted into"""
        self.text = TextSource(cfg.seed)
        """the generated text (seeded)"""
        self.truth = TruthLog(cfg.truth_log)
        """what really happened per request (--truth-log)"""
        self.metrics = ServerMetrics(cfg.model)
        """the histograms and counters `GET /metrics` renders"""
        self.requests_total = 0
        """completion requests so far (each one's generated text starts at its own place)"""

    def close(self) -> None:
        self.truth.close()
