"""Reads dated by the kernel: a first token that arrived while the event loop was blocked keeps its
arrival time (the fast transport on plain TCP; client/kstamp.py). The embedded server's truth log
says when it wrote the token."""

from __future__ import annotations

import csv
import socket
import time

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


CLOCK_JITTER_S = 0.001
"""a kernel stamp is moved from the real-time clock to perf_counter's by an offset read at the read"""


def _block_loop(after_s: float, for_s: float) -> tuple[float, float]:
    """Block this process's loop from `after_s` on for `for_s`: (start, end) of the block, perf_counter."""
    gevent.sleep(after_s)
    started = time.perf_counter()
    _real_sleep(for_s)  # the real sleep: nothing else runs in this process meanwhile
    return started, time.perf_counter()


def _truth_row(path, request_id: str) -> dict[str, str]:
    for _ in range(40):  # the truth log is flushed at least every second
        rows = [r for r in csv.DictReader(open(path)) if r["request_id"] == request_id]
        if rows:
            return rows[0]
        gevent.sleep(0.1)
    raise AssertionError(f"{request_id} is not in the truth log")


def test_first_token_keeps_its_arrival_time_through_a_blocked_loop(embedded_server):
    # first token due 100 ms after arrival, the second 400 ms later: only the first arrives during the block
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "100", "--decode-ms-per-token", "400")
    transport = FastTransport(server.base_url)
    assert transport.kernel_times
    transport.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=2, request_id="warm"))
    judged = 0
    for n in range(5):  # two whose first token the server wrote during the block (a late server misses it)
        blocker = gevent.spawn(_block_loop, 0.03, 0.25)  # blocked from +30 ms to +280 ms
        rid = f"blocked-{n}"
        result = transport.stream(StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=2, request_id=rid))
        block_start_s, block_end_s = blocker.get()
        assert result.exception is None and result.output_tokens == 2 and result.t0_perf_s is not None
        truth = _truth_row(server.truth_path, rid)
        written_s = float(truth["first_byte_s"])
        if not block_start_s < written_s < block_end_s - 0.01:
            continue
        judged += 1
        # dated by its arrival: after the server wrote it, before the blocked loop could read it (a stamp taken
        # at the read would be at or after the block's end, ~180 ms late); the clock started before the send
        ttft_ms, itl_max_ms = result.timing.ttft_ms, result.timing.itl_max_ms
        assert ttft_ms is not None and itl_max_ms is not None
        first_s = result.t0_perf_s + ttft_ms / 1000
        assert written_s - CLOCK_JITTER_S <= first_s < block_end_s, (written_s, first_s, block_end_s)
        assert result.t0_perf_s <= float(truth["arrival_s"])
        # the real gap to the second token (due 400 ms after the first was due), not 400 - 180
        first_late_ms = (written_s - float(truth["first_byte_due_s"])) * 1000
        served_ms = (float(truth["last_byte_s"]) - written_s) * 1000
        assert 400.0 - first_late_ms - 1.0 <= itl_max_ms <= served_ms + 2.0, (itl_max_ms, first_late_ms, served_ms)
        if judged == 2:
            break
    assert judged == 2


def test_a_read_without_a_stamp_is_dated_when_it_returns():
    """No stamp (a UNIX socket here; also a stamp from a stepped real-time clock): the read's own time."""
    import socket as stdlib_socket

    a, b = stdlib_socket.socketpair(stdlib_socket.AF_UNIX)
    a.setblocking(False)
    b.sendall(b"x")
    before = time.perf_counter()
    data, t = kstamp.recv(a, 10)
    assert data == b"x" and before <= t <= time.perf_counter()
    a.close()
    b.close()
