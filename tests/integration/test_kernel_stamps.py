"""Reads dated by the kernel: a first token that arrived while the event loop was blocked keeps its
arrival time (the fast transport on plain TCP; client/kstamp.py). The embedded server's truth log
says when it wrote the token."""

from __future__ import annotations

import csv
import socket

import gevent
import locust  # noqa: F401  (gevent monkey-patching, as in a real run)
import pytest
from gevent import monkey

from llmload.client import kstamp
from llmload.client.fast import FastTransport
from llmload.client.request import StreamRequest


def _kernel_stamps_here() -> bool:
    with socket.socket() as probe:
        return kstamp.enable(probe)


pytestmark = [pytest.mark.integration, pytest.mark.skipif(not _kernel_stamps_here(), reason="no SO_TIMESTAMPNS here")]

_real_sleep = monkey.get_original("time", "sleep")


def _block_loop(after_s: float, for_s: float) -> None:
    gevent.sleep(after_s)
    _real_sleep(for_s)  # the real sleep: nothing else runs in this process meanwhile


def _truth_ttft_ms(path, request_id: str) -> float:
    for _ in range(40):  # the truth log is flushed at least every second
        rows = [r for r in csv.DictReader(open(path)) if r["request_id"] == request_id]
        if rows:
            return (float(rows[0]["first_byte_s"]) - float(rows[0]["arrival_s"])) * 1000.0
        gevent.sleep(0.1)
    raise AssertionError(f"{request_id} is not in the truth log")


def test_first_token_keeps_its_arrival_time_through_a_blocked_loop(embedded_server):
    # first token due 100 ms after arrival, the second 400 ms later: only the first arrives during the block
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "100", "--decode-ms-per-token", "400")
    transport = FastTransport(server.base_url)
    assert transport.kernel_times
    transport.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=2, request_id="warm"))
    for n in range(2):
        blocker = gevent.spawn(_block_loop, 0.03, 0.25)  # blocked from +30 ms to +280 ms
        rid = f"blocked-{n}"
        result = transport.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=2, request_id=rid))
        blocker.join()
        assert result.exception is None and result.output_tokens == 2
        error_ms = result.timing.ttft_ms - _truth_ttft_ms(server.truth_path, rid)
        # read after the block (+280 ms): a stamp taken at the read would be ~180 ms late
        assert -5.0 < error_ms < 30.0, error_ms
        assert 300.0 < result.timing.itl_max_ms < 500.0  # the real 400 ms gap, not 400 - 180


def test_a_read_without_a_stamp_is_dated_when_it_returns():
    """No stamp (a UNIX socket here; also a stamp from a stepped real-time clock): the read's own time."""
    import socket as stdlib_socket
    import time

    a, b = stdlib_socket.socketpair(stdlib_socket.AF_UNIX)
    a.setblocking(False)
    b.sendall(b"x")
    before = time.perf_counter()
    data, t = kstamp.recv(a, 10)
    assert data == b"x" and before <= t <= time.perf_counter()
    a.close()
    b.close()
