"""A rerank answer (`POST /v1/rerank`, vLLM / Cohere / Jina style) -> the attempt's figures.

The answer is one JSON body, timed when it is in (like embeddings: no first token, e2e only):
`{"id", "model", "results": [{"index", "relevance_score", "document"}, ...], "usage": {"total_tokens"}}`.
Nothing is generated (0 output tokens); the input tokens are `usage.prompt_tokens`, else vLLM's
`usage.total_tokens` (all of it is input), else the client's estimate. An `{"error": ...}` body, or a
`results` that is not a list, is a failure. The documents ranked per second come from the row's
`documents` (the count sent) over its `e2e_ms`.
"""

from __future__ import annotations

from llmload.client import sse
from llmload.client.builder import StreamBuilder


class RerankBuilder(StreamBuilder):
    __slots__ = ()

    def feed_answer(self, t: float, raw: bytes, embeddings: bool = False) -> None:
        try:
            obj = sse.answer_loads(raw)
        except ValueError as exc:
            raise sse.MalformedChunk(f"answer is not JSON: {raw[:80]!r}") from exc
        if not isinstance(obj, dict):
            raise sse.MalformedChunk(f"answer is not a JSON object: {raw[:80]!r}")
        self.saw_done = True
        error = obj.get("error")
        if error is not None:
            self.error_event = error if isinstance(error, dict) else {"message": str(error)}
            return
        if not isinstance(obj.get("results"), list):
            raise sse.MalformedChunk(f"rerank answer without a results list: {raw[:80]!r}")
        self.timing.chunk(t, False, False)
        usage = obj.get("usage")
        prompt = usage.get("prompt_tokens", usage.get("total_tokens")) if isinstance(usage, dict) else None
        self.usage = {"completion_tokens": 0, **({"prompt_tokens": prompt} if isinstance(prompt, int) else {})}
        model = obj.get("model")
        self.model = model if isinstance(model, str) else ""
