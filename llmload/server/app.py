"""The application: routing, validation, auth, rate limits, faults, then the engine.

How a completion request goes: parse and validate the JSON (OpenAI-style 4xx on bad
input) -> check the bearer key (401) -> draw this request's faults from the seeded RNG
(500/503 answer at once) -> take from the rate limiter (429 + Retry-After) -> wait
`gateway_ms` -> submit to the engine (429/503 when its queue is full). The response
itself is driven by `generation.Generation`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import time

from llmload.server import wire
from llmload.server.config import ServerConfig
from llmload.server.engine import Engine
from llmload.server.generation import Faults, Generation
from llmload.server.prefix_cache import PrefixCache
from llmload.server.protocol import HttpProtocol, Request
from llmload.server.ratelimit import RateLimiter
from llmload.server.tokens import TextSource, is_structured, prompt_words
from llmload.server.truthlog import TruthLog

COMPLETION_PATHS = {"/v1/chat/completions": True, "/v1/completions": False}


class BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None, status: int = 400,
                 code: str | None = None):
        super().__init__(message)
        self.param, self.status, self.code = param, status, code


class App:
    def __init__(self, cfg: ServerConfig, loop: asyncio.AbstractEventLoop, clock=time.perf_counter):
        self.cfg = cfg
        self.loop = loop
        self.clock = clock
        self.engine = Engine(cfg)
        self.cache = PrefixCache(cfg.cache_block_tokens, cfg.cache_capacity_tokens)
        self.limiter = RateLimiter(cfg.rpm, cfg.tpm, clock(), cfg.rate_burst_s)
        self.text = TextSource(cfg.seed)
        self.rng = random.Random(cfg.seed)
        self.truth = TruthLog(cfg.truth_log)
        self._ids = itertools.count(1)
        self.requests_total = 0

    def protocol(self) -> HttpProtocol:
        return HttpProtocol(self, self.cfg.max_body_bytes, self.clock)

    # entry point from the protocol
    def handle(self, req: Request) -> None:
        try:
            self._route(req)
        except BadRequest as exc:
            self.reply_error(req, exc.status, str(exc), "invalid_request_error", exc.code, exc.param)
        except Exception as exc:  # never a traceback to the client; keep serving
            self.reply_error(req, 500, f"Internal error: {type(exc).__name__}", "server_error")

    def _route(self, req: Request) -> None:
        if req.path == "/health":
            return self.reply_json(req, 200, {"status": "ok", "active": self.engine.active,
                                              "queued": len(self.engine.queue)})
        if req.path in ("/v1/models", "/models"):
            self._check_method(req, "GET")
            self._check_auth(req)
            return self.reply_json(req, 200, {"object": "list", "data": [
                {"id": self.cfg.model, "object": "model", "created": 0, "owned_by": "llmload"}]})
        chat = COMPLETION_PATHS.get(req.path)
        if chat is None:
            raise BadRequest(f"Unknown request URL: {req.method} {req.path}.", status=404,
                             code="unknown_url")
        self._check_method(req, "POST")
        self._check_auth(req)
        self._completion(req, chat, self._parse(req, chat))

    def _check_method(self, req: Request, method: str) -> None:
        if req.method != method:
            raise BadRequest(f"Method {req.method} not allowed on {req.path}; use {method}.",
                             status=405, code="method_not_allowed")

    def _check_auth(self, req: Request) -> None:
        if self.cfg.api_key is None:
            return
        if req.headers.get("authorization", "") != f"Bearer {self.cfg.api_key}":
            raise BadRequest("Incorrect API key provided. Pass the key with "
                             "'Authorization: Bearer <key>'.", status=401, code="invalid_api_key")

    def _parse(self, req: Request, chat: bool) -> dict:
        try:
            body = json.loads(req.body)
        except (ValueError, UnicodeDecodeError):
            raise BadRequest("We could not parse the JSON body of your request.") from None
        if not isinstance(body, dict):
            raise BadRequest("The request body must be a JSON object.")
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise BadRequest("You must provide a model parameter.", "model")
        if self.cfg.strict_model and body["model"] != self.cfg.model:
            raise BadRequest(f"The model `{body['model']}` does not exist.", "model", 404,
                             "model_not_found")
        if chat:
            messages = body.get("messages")
            if not isinstance(messages, list) or not messages or not all(
                    isinstance(m, dict) for m in messages):
                raise BadRequest("'messages' must be a non-empty array of message objects.", "messages")
        else:
            prompt = body.get("prompt")
            if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
                body["prompt"] = prompt = prompt[0]
            if not isinstance(prompt, str):
                raise BadRequest("'prompt' must be a string.", "prompt")
        if body.get("n", 1) != 1:
            raise BadRequest("Only n=1 is supported.", "n")
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise BadRequest("'max_tokens' must be a positive integer.", "max_tokens")
        if not isinstance(body.get("stream", False), bool):
            raise BadRequest("'stream' must be a boolean.", "stream")
        return body

    def _completion(self, req: Request, chat: bool, body: dict) -> None:
        self.requests_total += 1
        words = prompt_words(body["messages"] if chat else body["prompt"])
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        output_tokens = limit if limit is not None else self.cfg.default_output_tokens
        faults = Faults.draw(self.cfg, self.rng)
        request_id = req.headers.get("x-request-id") or f"srv-{next(self._ids)}"
        truth = {"request_id": request_id, "endpoint": req.path, "stream": int(bool(body.get("stream"))),
                 "arrival_s": req.arrival_s, "arrival_unix": time.time(),
                 "prompt_tokens": len(words), "fault": faults.name}
        if faults.http_status:
            truth["status"] = faults.http_status
            self.truth.write(truth)
            message = "The server had an error while processing your request." \
                if faults.http_status == 500 else "The engine is currently overloaded, please try again later."
            return self.reply_error(req, faults.http_status, message, "server_error")
        if self.limiter.enabled:
            decision = self.limiter.take(len(words) + output_tokens, self.clock())
            if not decision.allowed:
                truth["status"] = 429
                self.truth.write(truth)
                return self.reply_error(
                    req, 429, f"Rate limit reached for {decision.limit} per minute. "
                    f"Please try again in {decision.retry_after_s:.3f}s.", decision.limit,
                    "rate_limit_exceeded", headers=_retry_headers(decision.retry_after_s))
        generation = Generation(self, req, chat, body, words, output_tokens, faults, request_id, truth,
                                structured=is_structured(body, words))
        if self.cfg.gateway_ms > 0:
            self.loop.call_later(self.cfg.gateway_ms / 1000.0, generation.admit)
        else:
            generation.admit()

    # replies
    def reply_json(self, req: Request, status: int, payload: dict) -> None:
        req.conn.send(wire.http_response(status, json.dumps(payload).encode(), keep_alive=req.keep_alive))
        req.conn.finish(req.keep_alive)

    def reply_error(self, req: Request, status: int, message: str, err_type: str,
                    code: str | None = None, param: str | None = None,
                    headers: dict[str, str] | None = None) -> None:
        body = wire.error_body(status, message, err_type, code, param)
        req.conn.send(wire.http_response(status, body, headers, keep_alive=req.keep_alive))
        req.conn.finish(req.keep_alive)

    def close(self) -> None:
        self.truth.close()


def _retry_headers(retry_after_s: float) -> dict[str, str]:
    if retry_after_s <= 0:
        return {}
    return {"retry-after": str(max(1, int(-(-retry_after_s // 1)))),
            "retry-after-ms": str(int(retry_after_s * 1000))}
