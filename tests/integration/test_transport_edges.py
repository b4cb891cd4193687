"""Both transports at the edges: a stream cut short by the total cap, a non-SSE 200, TLS, a refused connect.

A canned loopback server (gevent StreamServer, plain or TLS with a throw-away self-signed
certificate) stands in for endpoints the embedded server does not imitate.
"""

import csv
import socket
import ssl
import subprocess

import locust  # noqa: F401  (gevent monkey-patching, as in a real run)
import pytest

from llmload.client.fast import FastTransport
from llmload.client.request import StreamRequest, Timeouts
from llmload.client.sdk import OpenAITransport
from tests.helpers import JSON_BODY, canned_server

pytestmark = pytest.mark.integration

TRANSPORTS = {"fast": FastTransport, "openai": OpenAITransport}
SSE_BODY = (b'data: {"model":"m","choices":[{"delta":{"content":"hi"}}]}\n\n'
            b'data: {"model":"m","choices":[{"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
def request(i: int, max_tokens: int = 16) -> StreamRequest:
    return StreamRequest(endpoint="chat", model="llmload-sim", prompt="tell me a story", max_tokens=max_tokens,
                         request_id=f"edge-{i}")


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_total_timeout_keeps_the_tokens_received(embedded_server, transport):
    """Regression: the fast transport reported 1 token and e2e ~ TTFT for a stream cut by the total cap."""
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "20", "--decode-ms-per-token", "20")
    client = TRANSPORTS[transport](server.base_url, timeouts=Timeouts(request_timeout_s=0.5))
    r = client.stream(request(0, max_tokens=64))
    client.close()
    server.__exit__(None, None, None)
    with open(server.truth_path, newline="") as f:
        truth = {row["request_id"]: row for row in csv.DictReader(f)}[r.request_id]
    assert r.error == "timeout" and 450 <= r.elapsed_ms < 1000
    # ~(500 - 20) / 20 = 24 tokens arrived before the cap, each timed at its read
    assert 12 <= r.output_tokens_client <= 26 and r.tokens_source == "chunks"
    assert 15 <= r.timing.itl_mean_ms <= 40 and r.timing.itl_max_ms < 200
    assert 300 <= r.timing.e2e_ms <= r.elapsed_ms
    # the first byte is stamped just before its write: read after it (a kernel stamp may stray 1 ms by its clock
    # conversion, client/kstamp.py), late only by scheduling noise (bounded generously)
    first_s, written_s = r.t0_perf_s + r.timing.ttft_ms / 1000, float(truth["first_byte_s"])
    assert written_s - 0.001 <= first_s < written_s + 0.5, (first_s, truth)


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_cut_stream_keeps_the_tokens_received(embedded_server, transport):
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "5", "--decode-ms-per-token", "2",
                             "--fault-cut-prob", "1", truth_log=False)
    client = TRANSPORTS[transport](server.base_url)
    r = client.stream(request(0, max_tokens=16))
    client.close()
    assert r.error == "stream_broken"
    assert r.output_tokens_client >= 7 and r.timing.itl_mean_ms is not None  # the server cuts half-way
    assert r.timing.e2e_ms > r.timing.ttft_ms


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("content_type", ["application/json", "text/html; charset=utf-8"])
def test_non_sse_200_is_a_protocol_error(transport, content_type):
    server = canned_server(content_type, JSON_BODY if "json" in content_type else b"<html>hello</html>")
    try:
        client = TRANSPORTS[transport](f"http://127.0.0.1:{server.server_port}/v1")
        results = [client.stream(request(i)) for i in range(2)]
        client.close()
    finally:
        server.stop()
    for r in results:
        assert r.error == "protocol" and r.status == 200
        assert str(r.exception) == f"not an SSE response (content-type: {content_type})"


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem")],
                   check=True, capture_output=True)
    return {"keyfile": str(d / "key.pem"), "certfile": str(d / "cert.pem")}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_tls_certificate_verified_unless_insecure(transport, self_signed):
    server = canned_server("text/event-stream", SSE_BODY, **self_signed)
    url = f"https://127.0.0.1:{server.server_port}/v1"
    try:
        strict = TRANSPORTS[transport](url + "/", api_key="sk-test")
        refused = strict.stream(request(0))
        strict.close()
        lax = TRANSPORTS[transport](url, api_key="sk-test", insecure=True)
        accepted = lax.stream(request(1))
        lax.close()
    finally:
        server.stop()
    assert refused.error == "connect" and "certificate verify failed" in str(refused.exception)
    assert accepted.ok and accepted.text == "hi", accepted.exception


def test_fast_tls_checks_chain_and_host_name_by_default():
    """The chain alone is not enough: a valid certificate for another name must be refused too."""
    strict = FastTransport("https://api.example.com/v1")._new_client()._connection_pool.ssl_context
    lax = FastTransport("https://api.example.com/v1", insecure=True)._new_client()._connection_pool.ssl_context
    assert strict.check_hostname and strict.verify_mode == ssl.CERT_REQUIRED
    assert not lax.check_hostname and lax.verify_mode == ssl.CERT_NONE


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_refused_connect_names_host_and_reason(transport):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    client = TRANSPORTS[transport](f"http://127.0.0.1:{port}/v1")
    r = client.stream(request(0))
    client.close()
    assert r.error == "connect"
    assert str(r.exception) == f"cannot connect to 127.0.0.1:{port}: connection refused"
