"""The `openai` transport's twin for Anthropic Messages: the official `anthropic` SDK, read the same way.

How it works: exactly as client/sdk.py (one shared client per `USERS_PER_CLIENT` users, `max_retries=0`,
an httpx2 pool without caps whose connects are traced, t0 just before `create()`), with
`anthropic.Anthropic` instead of `openai.OpenAI`: an attempt calls
`messages.with_streaming_response.create(stream=True, ...)` and stamps the raw SSE lines as they arrive,
before the JSON decode (client/events_messages.py). The SDK sends the key as `x-api-key` and the
`anthropic-version` header itself; its base URL is the host without the trailing `/v1` (it adds
`/v1/messages`). Its status errors (429 `rate_limit_error`, 529 `overloaded_error`) map to the same failure
kinds and retry hints (client/errors.py) as the fast transport's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlparse

import anthropic
import httpx2

from llmload.client.request import StreamRequest, Timeouts
from llmload.client.sdk import USERS_PER_CLIENT, ConnectTracer, OpenAITransport, traced_http_client

_clients: dict[tuple, tuple[anthropic.Anthropic, ConnectTracer]] = {}


def anthropic_base_url(base_url: str) -> str:
    """The SDK's base URL: the run's base URL without its trailing `/v1` (the SDK's paths start with /v1)."""
    base = base_url.rstrip("/")
    return base[:-3] if base.endswith("/v1") else base


def shared_anthropic_client(base_url: str, api_key: str, timeouts: Timeouts, shard: int, clock: Callable[[], float],
                            insecure: bool, headers: dict[str, str] | None,
                            query: str, ca_bundle: str = "") -> tuple[anthropic.Anthropic, ConnectTracer]:
    """The Anthropic client of pool shard `shard` for these knobs (each built once per process)."""
    key = (base_url, api_key, timeouts, shard, insecure, tuple(sorted((headers or {}).items())), query, ca_bundle)
    if key not in _clients:
        tracer = ConnectTracer(clock)
        http_client = traced_http_client(base_url, tracer, timeouts, insecure, ca_bundle)
        client = anthropic.Anthropic(base_url=anthropic_base_url(base_url), api_key=api_key or "no-key",
                                     max_retries=0, http_client=http_client,
                                     default_headers=dict(headers or {}) or None,
                                     default_query=dict(parse_qsl(query)) or None)
        client.platform_headers()  # filled before users start (a blocking `uname -p` otherwise: client/sdk.py)
        _clients[key] = (client, tracer)
    return _clients[key]


class AnthropicTransport(OpenAITransport):
    name = "openai"
    """the run's `--transport openai` (the official SDK of the API under test)"""
    status_error = anthropic.APIStatusError
    timeout_errors = (anthropic.APITimeoutError, httpx2.TimeoutException)
    connection_errors = (anthropic.APIConnectionError, httpx2.TransportError)

    def __init__(self, base_url: str, api_key: str = "", timeouts: Timeouts | None = None,
                 clock: Callable[[], float] = time.perf_counter, user_index: int = 0,
                 insecure: bool = False, headers: dict[str, str] | None = None, query: str = "",
                 ca_bundle: str = "") -> None:
        self.timeouts = timeouts or Timeouts()
        self.clock = clock
        url = urlparse(base_url)
        self.host = f"{url.hostname}:{url.port or (443 if url.scheme == 'https' else 80)}"
        self.client: Any
        self.client, self.tracer = shared_anthropic_client(base_url, api_key, self.timeouts,
                                                           user_index // USERS_PER_CLIENT, clock, insecure, headers,
                                                           query, ca_bundle)
        self.auth_omitted = {}
        self.started = False

    def warm(self, endpoint: str) -> None:
        self.client.messages.with_streaming_response  # noqa: B018  (imported on first use: untimed here)

    def _create(self, req: StreamRequest, kwargs: dict, headers: dict, body: dict):
        return self.client.messages.with_streaming_response.create(**kwargs, extra_headers=headers,
                                                                   extra_body=body or None)
