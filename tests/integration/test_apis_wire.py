"""The Responses API, Anthropic Messages and rerank against the embedded server, through both transports.

Each server is started once per module (a few requests each): the measured first token, first reasoning
token and last event are compared with the server's truth log, usage tokens and error kinds exactly, and the
retry hints and quota headers of a 429 (Anthropic's names on /v1/messages) are read.
"""

import csv
import time

import locust  # noqa: F401  (gevent monkey-patching, as in a real run)
import pytest

from llmload.client.request import StreamRequest
from llmload.run.options.settings import RunOptions
from llmload.run.transport import make_transport
from llmload.server.launch import EmbeddedServer

pytestmark = pytest.mark.integration

FAST_SERVER = ("--preset", "exact", "--prefill-base-ms", "5", "--decode-ms-per-token", "1", "--seed", "1")
KEY = "sk-test-wire-apis"
SERVERS = {
    "reasoning": ("--reasoning-tokens", "4", "--api-key", KEY),
    "error_event": ("--fault-error-event-prob", "1", "--api-key", KEY),
    "overloaded": ("--fault-503-prob", "1"),
    "rate_limited": ("--rpm", "600", "--rate-burst-s", "0.1"),  # a bucket of one request, refilled in 0.1 s
}
STREAMED = ("responses", "messages")
DECODE_S = 0.001  # FAST_SERVER's decode step
CLOCK_JITTER_S = 0.001
"""the fast transport's kernel stamps are moved from the real-time clock to perf_counter's by an offset read at
the read (client/kstamp.py): they may stray this far before the server's stamp of the write that carried them"""
LATE_S = 0.5
"""how late the client may see what the server wrote: scheduling noise only, bounded generously (a test must not
fail on a slow machine: the server's precision is measured by bench/bench_server.py, the client's against the
truth log by bench/generator/)"""
TRANSPORTS = ("fast", "openai")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("apis")
    started = {}
    for name, flags in SERVERS.items():
        server = EmbeddedServer([*FAST_SERVER, *flags, "--truth-log", str(tmp / f"{name}.csv")]).start()
        server.truth_path = tmp / f"{name}.csv"
        started[name] = server
    yield started
    for server in started.values():
        server.__exit__(None, None, None)


def transport(server, api: str, kind: str, key: str = KEY):
    return make_transport(RunOptions(base_url=server.base_url, api_key=key, transport=kind, endpoint=api))


def send(client, api: str, rid: str, max_tokens: int = 12):
    return client.stream(StreamRequest(endpoint=api, model="llmload-sim", prompt="tell me a story about a cat",
                                       max_tokens=max_tokens, request_id=rid, documents=3))


def truth(server) -> dict[str, dict]:
    server.__exit__(None, None, None)  # flushes the truth log (the fixture's exit is then a no-op)
    with open(server.truth_path, newline="") as f:
        return {r["request_id"]: r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def reasoning_runs(servers):
    """Three requests of each streamed API and rerank per transport on the reasoning server, and its truth."""
    server = servers["reasoning"]
    results = {}
    for api in (*STREAMED, "rerank"):
        for kind in TRANSPORTS:
            client = transport(server, api, kind)
            results[api, kind] = [send(client, api, f"{api}-{kind}-{i}") for i in range(3)]
            client.close()
    return results, truth(server)


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("api", STREAMED)
def test_first_token_reasoning_and_usage_match_the_truth(reasoning_runs, api, kind):
    results, rows = reasoning_runs
    for r in results[api, kind]:
        assert r.ok and r.status == 200, (r.exception, r.exception and r.exception.detail)
        row = rows[r.request_id]
        assert row["endpoint"] == f"/v1/{api}"
        # the server stamps each first byte just before its write: the client reads it after that stamp (up to
        # the clock conversion), late only by scheduling noise
        first_s = r.t0_perf_s + r.timing.ttft_ms / 1000
        reasoning_s = r.t0_perf_s + r.timing.reasoning_ttft_ms / 1000
        end_s = r.t0_perf_s + r.timing.e2e_ms / 1000
        written_s, reasoning_written_s = float(row["first_byte_s"]), float(row["first_reasoning_byte_s"])
        assert written_s - CLOCK_JITTER_S <= first_s < written_s + LATE_S, (first_s, row)
        assert reasoning_written_s - CLOCK_JITTER_S <= reasoning_s < reasoning_written_s + LATE_S, (reasoning_s, row)
        assert r.timing.reasoning_ttft_ms <= r.timing.ttft_ms + 0.01  # in one read (a busy machine): the same time
        # the last event follows the last token, which the server never writes before it is due (the first
        # token's due time + one decode step per further token); it is stamped just after its write
        last_due_s = float(row["first_byte_due_s"]) + (int(row["output_tokens"]) - 1) * DECODE_S
        assert last_due_s - CLOCK_JITTER_S <= end_s < float(row["last_byte_s"]) + LATE_S, (end_s, row)
        assert r.input_tokens == int(row["prompt_tokens"]) and r.output_tokens == int(row["output_tokens"]) == 12
        assert r.tokens_source == "usage" and r.finish_reason == "length" and r.model_returned == "llmload-sim"
        assert r.cached_tokens == int(row["cached_tokens"])
        assert r.reasoning_tokens == (int(row["reasoning_tokens"]) if api == "responses" else None)
    assert [r.conn_reused for r in results[api, kind]] == [False, True, True]


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_rerank_is_timed_like_embeddings(reasoning_runs, kind):
    results, rows = reasoning_runs
    for r in results["rerank", kind]:
        row = rows[r.request_id]
        assert r.ok and not r.streamed and r.timing.ttft_ms is None and not r.empty_answer
        assert row["endpoint"] == "/v1/rerank" and row["documents"] == "3" and r.documents == 3
        assert r.input_tokens == int(row["prompt_tokens"]) and r.output_tokens == 0 and r.max_tokens is None
        # the whole answer, stamped just before its write: read after that stamp, late only by scheduling noise
        end_s = r.t0_perf_s + r.timing.e2e_ms / 1000
        assert float(row["last_byte_s"]) - CLOCK_JITTER_S <= end_s < float(row["last_byte_s"]) + LATE_S, (end_s, row)


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize(("api", "code"), [("responses", "server_error"), ("messages", "overloaded_error")])
def test_in_stream_errors_are_stream_errors_with_their_code(servers, api, kind, code):
    client = transport(servers["error_event"], api, kind)
    r = send(client, api, f"err-{api}-{kind}")
    client.close()
    assert r.status == 200 and r.error == "stream_error" and r.exception.code == code
    assert "admission raced" in r.exception.detail


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize(("api", "status"), [("responses", 503), ("messages", 529), ("rerank", 503)])
def test_overload_status_per_api(servers, api, kind, status):
    client = transport(servers["overloaded"], api, kind)
    r = send(client, api, f"over-{api}-{kind}")
    client.close()
    assert r.status == status and r.error == "http_5xx"
    assert r.exception.detail == "The engine is currently overloaded, please try again later."


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("api", [*STREAMED, "rerank"])
def test_rate_limits_give_their_hints_and_quota(servers, api, kind):
    time.sleep(0.15)  # the previous test's requests emptied the bucket: it refills in 0.1 s
    client = transport(servers["rate_limited"], api, kind)
    first, second = (send(client, api, f"rl-{api}-{kind}-{i}") for i in range(2))
    client.close()
    assert first.ok and (first.timing.ttft_ms is not None) == (api != "rerank")
    assert second.status == 429 and second.error == "rate_limited"
    if api == "messages":  # Anthropic's dialect: whole seconds in retry-after, and the bucket's reset time
        assert second.retry_after_source == "retry-after" and second.retry_after_s == 1.0
    else:
        assert second.retry_after_source == "retry-after-ms" and 0 < second.retry_after_s <= 0.1
    assert second.ratelimit_remaining_requests == 0 and first.ratelimit_remaining_requests == 0


def test_messages_headers_and_auth(servers):
    """x-api-key carries the key (a wrong one is Anthropic's authentication_error); anthropic-version is sent."""
    bad = send(transport(servers["error_event"], "messages", "fast", key="sk-wrong"), "messages", "auth-1")
    assert bad.status == 401 and bad.error == "http_4xx" and "Incorrect API key" in bad.exception.detail
    from llmload.client.fast import FastTransport

    no_version = send(FastTransport(servers["error_event"].base_url, KEY, api_key_header="x-api-key"), "messages",
                      "auth-2")
    assert no_version.status == 400 and "anthropic-version" in no_version.exception.detail
