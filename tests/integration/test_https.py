"""https against the embedded server (`--tls-cert/--tls-key`), self-signed certificate: as precise as plain http.

Real headless Locust runs (`locust -f locustfile.py --headless`) trusting the certificate by `--ca-bundle` and by
`SSL_CERT_FILE` (the second on the pure-Python decoder), one without either that must stop with one line, and
in-process checks of `--insecure`, the SDK transport and a first token read after a blocked loop. The server's
truth log says what really happened.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import gevent
import locust  # noqa: F401  (gevent monkey-patching, as in a real run)
import pytest
from gevent import monkey

from llmload.client.fast import FastTransport
from llmload.client.request import StreamRequest
from llmload.client.sdk import OpenAITransport
from tests.helpers import read_csv, self_signed_cert

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXACT = ("--preset", "exact", "--prefill-base-ms", "60", "--decode-ms-per-token", "10")
_real_sleep = monkey.get_original("time", "sleep")


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return self_signed_cert(tmp_path_factory.mktemp("https"))


@pytest.fixture
def https_server(embedded_server, cert):
    return embedded_server(*EXACT, "--tls-cert", str(cert[0]), "--tls-key", str(cert[1]))


def headless(server, run_dir: Path, *args: str, env: dict | None = None, users: int = 8, seconds: int = 3):
    cmd = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless", "-u", str(users), "-r", str(users),
           "-t", f"{seconds}s", "--host", server.base_url, "--max-tokens", "20", "--run-dir", str(run_dir),
           "--only-summary", *args]
    environ = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    environ |= {"PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60, env=environ)


def truth_of(server) -> dict[str, dict[str, str]]:
    with open(server.truth_path, newline="") as f:
        return {row["request_id"]: row for row in csv.DictReader(f)}


def check_against_truth(server, run_dir: Path) -> None:
    rows = [r for r in read_csv(run_dir / "samples.csv") if not r["error"]]
    truth = {rid: t for rid, t in truth_of(server).items() if t["finish_reason"]}  # completed answers
    assert rows and len(rows) == len(truth), (len(rows), len(truth))  # every completed answer is one sample
    errors, beyond_lag = [], []
    for r in rows:
        true = truth[r["request_id"]]
        errors.append(float(r["ttft_ms"]) - (float(true["first_byte_s"]) - float(true["arrival_s"])) * 1000)
        # what a loaded machine adds: the generator's loop lag beside the sample, the server's lateness on it
        server_late_ms = (float(true["first_byte_s"]) - float(true["first_byte_due_s"])) * 1000
        beyond_lag.append(errors[-1] - float(r["loop_lag_ms"]) - server_late_ms)
    errors.sort()
    beyond_lag.sort()
    assert errors[len(errors) // 2] > -1.0, errors  # loopback: the send time
    assert beyond_lag[len(beyond_lag) // 2] <= 2.0, beyond_lag
    # each token dated by its own record's arrival: the client's first-to-last token span (mean gap x gaps) lies
    # within the server's writes of them (first byte stamped before its write, last byte after the last write;
    # a kernel stamp may stray by the clock conversion), and it is no mere read's worth: the server never writes
    # a token before it is due (one 10 ms step each), so the span is at least what the schedule left after a late
    # first token (half of it here: the server's own delay in sending is not recorded). A loaded server sends late
    # tokens back to back, so the median gap is not one step: that precision is bench/generator/'s llmload-https
    for r in rows:
        true = truth[r["request_id"]]
        assert r["tokens_source"], r
        written_s, due_s = float(true["first_byte_s"]), float(true["first_byte_due_s"])
        steps = int(true["output_tokens"]) - 1
        span_ms = float(r["itl_mean_ms"]) * steps
        late_ms = (written_s - due_s) * 1000
        truth_span_ms = (float(true["last_byte_s"]) - written_s) * 1000
        assert 0.5 * (steps * 10.0 - late_ms) <= span_ms <= truth_span_ms + 2 * CLOCK_JITTER_S * 1000, \
            (span_ms, late_ms, truth_span_ms, r["itl_p50_ms"])
    assert {r["conn_reused"] for r in rows} == {"0", "1"}  # the handshake was paid once per user


def test_headless_run_over_https_trusting_the_ca_bundle(https_server, cert, tmp_path):
    done = headless(https_server, tmp_path / "run", "--ca-bundle", str(cert[0]))
    https_server.__exit__(None, None, None)  # flushes the truth log
    assert done.returncode == 0, done.stderr[-2000:]
    check_against_truth(https_server, tmp_path / "run")


def test_headless_run_trusting_ssl_cert_file_on_the_pure_decoder(https_server, cert, tmp_path):
    done = headless(https_server, tmp_path / "run", env={"SSL_CERT_FILE": str(cert[0]), "LLMLOAD_PURE_DECODER": "1"},
                    users=4, seconds=2)
    https_server.__exit__(None, None, None)
    assert done.returncode == 0, done.stderr[-2000:]
    check_against_truth(https_server, tmp_path / "run")


def test_an_untrusted_certificate_stops_the_run_with_one_line(https_server, tmp_path):
    done = headless(https_server, tmp_path / "run", users=16, seconds=8)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if "/ERROR/llmload:" in line]  # the run's stop line
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert lines[0].endswith(f"cannot connect to 127.0.0.1:{https_server.port}: certificate verify failed: "
                             "self-signed certificate (pass --ca-bundle PATH or set SSL_CERT_FILE to trust it, "
                             "or --insecure)"), lines[0]


def test_insecure_and_the_sdk_transport(https_server, cert, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    lax = FastTransport(https_server.base_url, insecure=True)
    sdk = OpenAITransport(https_server.base_url, api_key="sk-test", ca_bundle=str(cert[0]))
    results = [t.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=8, request_id=f"t-{i}"))
               for i, t in enumerate((lax, sdk))]
    lax.close()
    assert all(r.ok and r.output_tokens_client == 8 for r in results), [r.exception for r in results]


def test_a_stream_cut_over_tls_keeps_the_tokens_received(embedded_server, cert):
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "5", "--decode-ms-per-token", "2",
                             "--fault-cut-prob", "1", "--tls-cert", str(cert[0]), "--tls-key", str(cert[1]),
                             truth_log=False)
    transport = FastTransport(server.base_url, ca_bundle=str(cert[0]))
    results = [transport.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=16,
                                              request_id=f"cut-{i}")) for i in range(2)]
    transport.close()
    for r in results:  # the server closes the connection half-way (close_notify, then the TCP close)
        assert r.error == "stream_broken" and r.output_tokens_client >= 7 and r.timing.itl_mean_ms is not None


def test_a_reconnect_resumes_the_last_tls_session(embedded_server, cert):
    """A server that closes each connection after its answer (`--keepalive-requests 1`, as nginx's
    keepalive_requests) costs a full handshake once: each reconnect resumes the last session (a TLS 1.3 ticket)
    and still answers in full. --new-connection-per-request (`Connection: close`) resumes nothing: each request is
    a new client's."""
    server = embedded_server(*EXACT, "--keepalive-requests", "1", "--tls-cert", str(cert[0]), "--tls-key",
                             str(cert[1]), truth_log=False)

    def three(**kwargs):
        transport = FastTransport(server.base_url, ca_bundle=str(cert[0]), **kwargs)
        results = [transport.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=4,
                                                  request_id=f"resume-{i}")) for i in range(3)]
        transport.close()
        assert all(r.ok and r.output_tokens_client == 4 and r.conn_reused == 0 for r in results), results
        return transport.tickets.full, transport.tickets.resumed

    assert three() == (1, 2)
    assert three(headers={"Connection": "close"}) == (3, 0)


CLOCK_JITTER_S = 0.001
"""a kernel stamp is moved from the real-time clock to perf_counter's by an offset read at the read"""


def _block_loop(after_s: float, for_s: float) -> tuple[float, float]:
    """Block this process's loop from `after_s` on for `for_s`: (start, end) of the block, perf_counter."""
    gevent.sleep(after_s)
    started = time.perf_counter()
    _real_sleep(for_s)  # nothing else runs in this process meanwhile
    return started, time.perf_counter()


def test_a_first_token_read_after_a_blocked_loop_keeps_its_arrival_time(embedded_server, cert):
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "100", "--decode-ms-per-token", "400",
                             "--tls-cert", str(cert[0]), "--tls-key", str(cert[1]))
    transport = FastTransport(server.base_url, ca_bundle=str(cert[0]))
    transport.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=2, request_id="warm"))
    tries = []
    for n in range(3):  # a late server may write its first token after the block: then that try proves nothing
        blocker = gevent.spawn(_block_loop, 0.03, 0.25)  # blocked from +30 to +280 ms; the first token is due at +100
        result = transport.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=2,
                                                request_id=f"late-{n}"))
        tries.append((result, blocker.get()))
    transport.close()
    server.__exit__(None, None, None)
    truths = truth_of(server)
    judged = 0
    for result, (block_start_s, block_end_s) in tries:
        truth = truths[result.request_id]
        written_s = float(truth["first_byte_s"])
        assert result.ok and result.t0_perf_s is not None and result.t0_perf_s <= float(truth["arrival_s"])
        if not block_start_s < written_s < block_end_s - 0.01:
            continue
        judged += 1
        # dated by the arrival of the record that carried it: after the server wrote it, before the blocked loop
        # could read it (a stamp taken at the read would be at or after the block's end, ~180 ms late)
        ttft_ms, itl_max_ms = result.timing.ttft_ms, result.timing.itl_max_ms
        assert ttft_ms is not None and itl_max_ms is not None
        first_s = result.t0_perf_s + ttft_ms / 1000
        assert written_s - CLOCK_JITTER_S <= first_s < block_end_s, (written_s, first_s, block_end_s)
        first_late_ms = (written_s - float(truth["first_byte_due_s"])) * 1000
        served_ms = (float(truth["last_byte_s"]) - written_s) * 1000
        assert 400.0 - first_late_ms - 1.0 <= itl_max_ms <= served_ms + 2.0, (itl_max_ms, first_late_ms, served_ms)
    assert judged >= 1
