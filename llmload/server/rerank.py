"""`POST /v1/rerank`: a prefill-only request (query + documents) through the same engine.

How it works: as an embeddings request (embeddings.py): the request takes a slot, holds it for the prefill
time of the query's and all documents' tokens, then answers once, vLLM-style: `results` sorted by
`relevance_score` (the share of the query's words a document holds: deterministic), the first `top_n`,
each with its `index` and its `document` text, and `usage.total_tokens` (all of it input).
"""

from __future__ import annotations

import asyncio
import json

from llmload.server import timers, wire
from llmload.server.embeddings import EmbeddingJob
from llmload.server.engine import Sequence
from llmload.server.state import ServerState


def relevance(query: str, document: str) -> float:
    """The share of the query's distinct words found in the document (0..1)."""
    words = set(query.lower().split())
    return round(len(words & set(document.lower().split())) / len(words), 6) if words else 0.0


class RerankJob(EmbeddingJob):
    def __init__(self, state: ServerState, req, body: dict, documents: list[str], tokens: int, truth: dict,
                 headers: dict[str, str]):
        self.state, self.req, self.body, self.truth, self.headers = state, req, body, truth, headers
        self.documents = documents
        self.seq = Sequence(req.request_id, tokens, 0, 0)
        self.finished = False
        self.timer: asyncio.TimerHandle | None = None
        self.admitted_s = 0.0

    def finish(self) -> None:
        again = timers.again_if_early(self.state.loop, self.truth["first_byte_due_s"], self.state.clock(), self.finish)
        if again is not None:
            self.timer = again
            return
        query, tokens = self.body["query"], self.seq.prompt_tokens
        ranked = sorted(range(len(self.documents)), key=lambda i: (-relevance(query, self.documents[i]), i))
        results = [{"index": i, "relevance_score": relevance(query, self.documents[i]),
                    "document": {"text": self.documents[i]}} for i in ranked[:self.body.get("top_n", len(ranked))]]
        payload = {"id": "rerank-" + self.req.request_id, "model": self.body["model"], "results": results,
                   "usage": {"total_tokens": tokens}}
        now = self.state.clock()  # before the write, as generation.py stamps its first byte
        self.req.conn.send(wire.http_response(200, json.dumps(payload).encode(), self.headers,
                                              keep_alive=self.req.keep_alive))
        self.state.metrics.ttft.observe(now - self.admitted_s)
        self.state.metrics.served(tokens, 0, "stop")
        self._end(200, now)
        self.req.conn.finish(self.req.keep_alive)
