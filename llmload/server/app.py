"""The application: routing, validation, auth, rate limits, faults, then the engine.

How a completion request goes: log it (`--request-log`) -> parse and validate the JSON
(OpenAI-style 4xx on bad input, parse.py) -> check the bearer key (401) -> draw this
request's faults from the seeded RNG (500/503 answer at once) -> take from the rate limiter
(429 with the retry hint in the `--retry-after-header` styles) -> plan the output (plan.py)
-> wait `gateway_ms` -> submit to the engine (refused when its queue is full). The response
itself is driven by `generation.Generation`; embeddings by `embeddings.EmbeddingJob`. The Responses API and
Anthropic Messages (parse_apis.py folds their bodies into chat's) stream through `event_generation.EventGeneration`,
rerank is a `rerank.RerankJob`. On `/v1/messages` the key may come as `x-api-key`, `anthropic-version` is required,
errors have Anthropic's shape (an overload, 503, is its 529), the quota headers its `anthropic-ratelimit-*` names and
a refusal's hint its `retry-after` + `anthropic-ratelimit-*-reset` (whatever --retry-after-header says, unless none).
`GET /metrics` renders the engine's state in Prometheus format (metrics.py). The handlers get the server's shared
parts (state.py), never the application; replies.py writes the JSON and error replies.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Callable

from llmload.server import wire
from llmload.server.config import ServerConfig, retry_styles
from llmload.server.embeddings import EmbeddingJob
from llmload.server.event_generation import EVENT_PATHS, EventGeneration
from llmload.server.faults import Faults
from llmload.server.generation import Generation
from llmload.server.images import count_images
from llmload.server.metrics import CONTENT_TYPE
from llmload.server.parse import BadRequest, completion_body, embedding_inputs, max_tokens
from llmload.server.parse_apis import messages_body, rerank_body, responses_body
from llmload.server.plan import OutputPlan, plan_output, tool_results
from llmload.server.protocol import HttpProtocol, Request
from llmload.server.ratelimit import RateLimiter
from llmload.server.replies import is_anthropic, reply_error, reply_json
from llmload.server.requestlog import RequestLog
from llmload.server.rerank import RerankJob
from llmload.server.retry_hints import quota_headers, retry_headers
from llmload.server.state import ServerState
from llmload.server.tokens import is_structured, prompt_words
from llmload.server.wire_events import anthropic_quota, anthropic_retry

COMPLETION_PATHS = {"/v1/chat/completions": True, "/v1/completions": False}


class App:
    def __init__(self, cfg: ServerConfig, loop: asyncio.AbstractEventLoop,
                 clock: Callable[[], float] = time.perf_counter):
        self.cfg = cfg
        self.clock = clock
        self.state = ServerState(cfg, loop, clock)
        """what the request handlers share with the application: engine, cache, truth log, metrics"""
        self.limiter = RateLimiter(cfg.rpm, cfg.tpm, clock(), cfg.rate_burst_s, cfg.rate_window_s)
        self.started_s = clock()
        self.rng = random.Random(cfg.seed)
        self.stop_rng = random.Random(cfg.seed + 1)
        """early-stop draws (their own stream: the fault draws stay as they were)"""
        self.requests = RequestLog(cfg.request_log)
        self._ids = itertools.count(1)

    def protocol(self) -> HttpProtocol:
        return HttpProtocol(self.handle, self.cfg.max_body_bytes, self.clock, self.cfg.keepalive_requests)

    # entry point from the protocol
    def handle(self, req: Request) -> None:
        if self.cfg.fault_slowdown_after_s > 0 and self.clock() - self.started_s >= self.cfg.fault_slowdown_after_s:
            self.state.engine.slowdown = self.cfg.fault_slowdown_factor  # every later prefill and step (config.py)
        req.request_id = req.headers.get("x-request-id") or f"srv-{next(self._ids)}"
        if self.requests.enabled:
            self.requests.write(req.request_id, req)
        try:
            self._route(req)
        except BadRequest as exc:
            reply_error(req, exc.status, str(exc), "invalid_request_error", exc.code, exc.param)
        except Exception as exc:  # never a traceback to the client; keep serving
            reply_error(req, 500, f"Internal error: {type(exc).__name__}", "server_error")

    def _route(self, req: Request) -> None:
        if req.path == "/health":
            engine = self.state.engine
            return reply_json(req, 200, {"status": "ok", "active": engine.active, "queued": len(engine.queue)})
        if req.path in ("/v1/models", "/models"):
            self._check_method(req, "GET")
            self._check_auth(req)
            return reply_json(req, 200, {"object": "list", "data": [
                {"id": self.cfg.model, "object": "model", "created": 0, "owned_by": "llmload"}]})
        if req.path == "/metrics":
            self._check_method(req, "GET")
            state = self.state
            page = state.metrics.render(state.engine.active, len(state.engine.queue), state.cache.usage())
            conn = req.conn
            assert conn is not None  # the protocol hands over every request with its connection
            conn.send(wire.http_response(200, page, keep_alive=req.keep_alive, content_type=CONTENT_TYPE))
            return conn.finish(req.keep_alive)
        if req.path in ("/v1/embeddings", "/embeddings"):
            self._check_method(req, "POST")
            self._check_auth(req)
            return self._embeddings(req)
        if req.path in ("/v1/rerank", "/rerank", "/v2/rerank"):
            self._check_method(req, "POST")
            self._check_auth(req)
            return self._rerank(req)
        if req.path in EVENT_PATHS:
            self._check_method(req, "POST")
            self._check_auth(req)
            messages = is_anthropic(req)
            if messages and not req.headers.get("anthropic-version"):
                raise BadRequest("anthropic-version: header is required")
            return self._completion(req, True, messages_body(req.body, self.cfg) if messages
                                    else responses_body(req.body, self.cfg))
        chat = COMPLETION_PATHS.get(req.path)
        if chat is None:
            raise BadRequest(f"Unknown request URL: {req.method} {req.path}.", status=404,
                             code="unknown_url")
        self._check_method(req, "POST")
        self._check_auth(req)
        self._completion(req, chat, completion_body(req.body, self.cfg, chat))

    def _check_method(self, req: Request, method: str) -> None:
        if req.method != method:
            raise BadRequest(f"Method {req.method} not allowed on {req.path}; use {method}.",
                             status=405, code="method_not_allowed")

    def _check_auth(self, req: Request) -> None:
        if self.cfg.api_key is None:
            return
        if is_anthropic(req) and req.headers.get("x-api-key") == self.cfg.api_key:
            return
        if req.headers.get("authorization", "") != f"Bearer {self.cfg.api_key}":
            raise BadRequest("Incorrect API key provided. Pass the key with "
                             "'Authorization: Bearer <key>'.", status=401, code="invalid_api_key")

    def _completion(self, req: Request, chat: bool, body: dict) -> None:
        self.state.requests_total += 1
        words = prompt_words(body["messages"] if chat else body["prompt"])
        plan = plan_output(self.cfg, body, chat, self.stop_rng)
        limit = max_tokens(body)
        truth = {"request_id": req.request_id, "endpoint": req.path, "stream": int(bool(body.get("stream"))),
                 "arrival_s": req.arrival_s, "arrival_unix": time.time(), "prompt_tokens": len(words),
                 "max_tokens": limit if limit is not None else "", "tool_results": tool_results(body) if chat else ""}
        if chat:
            truth["images"], truth["image_tokens"] = count_images(body["messages"])
        asked = limit if limit is not None else self.cfg.default_output_tokens
        gate = self._gate(req, truth, len(words) + asked)  # limiters count the tokens asked for
        if gate is None:
            return
        if gate[0].empty:  # an answer with no text: one token of empty text, stopped at the length limit
            plan = OutputPlan(1, 0, "length")
        generation = (EventGeneration if req.path in EVENT_PATHS else Generation)(
            self.state, req, chat, body, words, plan, gate[0], truth, is_structured(body, words), gate[1])
        if self.cfg.gateway_ms > 0:
            self.state.loop.call_later(self.cfg.gateway_ms / 1000.0, generation.admit)
        else:
            generation.admit()

    def _embeddings(self, req: Request) -> None:
        body, counts = embedding_inputs(req.body, self.cfg)
        truth = {"request_id": req.request_id, "endpoint": req.path, "stream": 0, "arrival_s": req.arrival_s,
                 "arrival_unix": time.time(), "prompt_tokens": sum(counts)}
        gate = self._gate(req, truth, sum(counts))
        if gate is not None:
            job = EmbeddingJob(self.state, req, body, counts, truth, gate[1])
            if self.cfg.gateway_ms > 0:
                self.state.loop.call_later(self.cfg.gateway_ms / 1000.0, job.admit)
            else:
                job.admit()

    def _rerank(self, req: Request) -> None:
        body, documents, tokens = rerank_body(req.body, self.cfg)
        truth = {"request_id": req.request_id, "endpoint": req.path, "stream": 0, "arrival_s": req.arrival_s,
                 "arrival_unix": time.time(), "prompt_tokens": tokens, "documents": len(documents)}
        gate = self._gate(req, truth, tokens)
        if gate is not None:
            job = RerankJob(self.state, req, body, documents, tokens, truth, gate[1])
            if self.cfg.gateway_ms > 0:
                self.state.loop.call_later(self.cfg.gateway_ms / 1000.0, job.admit)
            else:
                job.admit()

    def _gate(self, req: Request, truth: dict, token_cost: int) -> tuple[Faults, dict[str, str]] | None:
        """Faults and rate limits: (faults, response headers) if the request goes on, None if refused."""
        faults = Faults.draw(self.cfg, self.rng)
        truth["fault"] = faults.name
        if faults.http_status:
            truth["status"] = 529 if faults.http_status == 503 and is_anthropic(req) else faults.http_status
            self.state.truth.write(truth)
            message = "The server had an error while processing your request." \
                if faults.http_status == 500 else "The engine is currently overloaded, please try again later."
            reply_error(req, faults.http_status, message, "server_error")
            return None
        headers = {"x-request-id": req.request_id}
        if self.limiter.enabled:
            decision = self.limiter.take(token_cost, self.clock())
            if self.cfg.quota_headers != "none":
                quota = quota_headers(self.limiter, decision)
                headers.update(anthropic_quota(quota) if is_anthropic(req) else quota)
            if not decision.allowed:
                truth["status"] = 429
                self.state.truth.write(truth)
                hints = retry_headers(retry_styles(self.cfg), decision.retry_after_s, decision.limit, time.time())
                headers.update(anthropic_retry(decision.retry_after_s, decision.limit, time.time())
                               if is_anthropic(req) and hints else hints)
                reply_error(req, 429, f"Rate limit reached for {decision.limit} per minute. "
                            f"Please try again in {decision.retry_after_s:.3f}s.", decision.limit,
                            "rate_limit_exceeded", headers=headers)
                return None
        return faults, headers

    def close(self) -> None:
        self.state.close()
        self.requests.close()
