"""Cold start: what a user's first request needs besides its connection is prepared before it is timed.

The first resolution of a host in a process starts gevent's resolver thread (~15 ms), which the
first requests of a run used to pay inside their `connect_ms` and TTFT. `prepare()` (called by
every user on start) resolves the host once; new connections reuse the addresses."""

from __future__ import annotations

import itertools

import gevent.socket
import locust  # noqa: F401  (gevent monkey-patching, as in a real run)
import pytest

from llmload.client import resolve
from llmload.client.fast import FastTransport
from llmload.client.request import StreamRequest
from llmload.client.sdk import OpenAITransport

pytestmark = pytest.mark.integration


@pytest.fixture
def no_lookups(monkeypatch):
    """After this, any name lookup fails: what still works was resolved before."""
    resolve._cache.clear()
    yield lambda: monkeypatch.setattr(gevent.socket, "getaddrinfo", _refuse)
    resolve._cache.clear()


def _refuse(*_args, **_kw):
    raise OSError("name lookup during a timed request")


def _request(n: int) -> StreamRequest:
    return StreamRequest(endpoint="chat", model="m", prompt="hi", max_tokens=4, request_id=f"cold-{n}")


def test_fast_first_request_needs_no_lookup_after_prepare(embedded_server, no_lookups):
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "5", "--decode-ms-per-token", "1")
    url = server.base_url.replace("127.0.0.1", "localhost")  # a name, not an address
    transport = FastTransport(url)
    transport.prepare()
    no_lookups()
    first = transport.stream(_request(1))
    assert first.exception is None and first.conn_reused is False and first.output_tokens == 4
    transport.close()  # the next request opens a new connection: it too needs no lookup
    transport = FastTransport(url)
    second = transport.stream(_request(2))
    assert second.exception is None and second.conn_reused is False


def test_without_prepare_the_lookup_happens_in_the_request(embedded_server, no_lookups):
    """The control: the same request without prepare() does resolve inside the timed request."""
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "5", "--decode-ms-per-token", "1")
    no_lookups()
    result = FastTransport(server.base_url.replace("127.0.0.1", "localhost")).stream(_request(3))
    assert result.exception is not None and "name lookup" in str(result.exception)


def test_a_failed_lookup_is_not_cached_and_is_reported_by_the_connect(no_lookups):
    no_lookups()
    assert resolve.prepare("localhost", 9) is False
    assert ("localhost", 9) not in resolve._cache


def test_openai_prepare_resolves_once(monkeypatch):
    calls = []
    real = gevent.socket.getaddrinfo
    monkeypatch.setattr(gevent.socket, "getaddrinfo", lambda *a, **k: calls.append(a[:2]) or real(*a, **k))
    resolve._cache.clear()
    OpenAITransport("http://localhost:9/v1").prepare()
    assert calls == [("localhost", 9)]
    resolve._cache.clear()


def test_an_address_literal_needs_no_lookup(no_lookups):
    no_lookups()
    assert resolve.prepare("127.0.0.1", 80) and resolve.prepare("::1", 80)


def test_users_starting_together_share_one_lookup(monkeypatch):
    """16 users starting at once used to start 16 lookups (and the resolver's threads) in parallel."""
    calls = []
    real = gevent.socket.getaddrinfo

    def slow(*args, **kw):
        calls.append(args[:2])
        gevent.sleep(0.05)
        return real(*args, **kw)

    monkeypatch.setattr(gevent.socket, "getaddrinfo", slow)
    resolve._cache.clear()
    results = [gevent.spawn(resolve.addresses, "localhost", 8080) for _ in range(16)]
    gevent.joinall(results, raise_error=True)
    assert calls == [("localhost", 8080)]
    assert all(r.value == results[0].value for r in results)
    resolve._cache.clear()


def _first_requests_together(url: str, users: int, transport_class=FastTransport) -> list:
    """`users` users starting in the same loop turn (as `-r N` spawns them), each sending one request."""
    results: list = []

    def user(i: int) -> None:
        transport = transport_class(url)
        transport.prepare()
        results.append(transport.stream(_request(100 + i)))

    gevent.joinall([gevent.spawn(user, i) for i in range(users)], raise_error=True)
    return results


def test_users_starting_together_open_their_connections_one_after_another(embedded_server):
    """Each opener takes t0 only once the previous one was resumed from its connect: no connect
    time includes other users' start-up (without the gate, user 1 of 32 read ~8 ms for ~0.1 ms)."""
    server = embedded_server("--preset", "exact", "--prefill-base-ms", "20", "--decode-ms-per-token", "1")
    results = sorted(_first_requests_together(server.base_url, 32), key=lambda r: r.t0_perf_s)
    assert all(r.exception is None and r.conn_reused is False for r in results)
    for before, after in itertools.pairwise(results):
        connected_s = before.t0_perf_s + before.connect_ms / 1000.0
        assert after.t0_perf_s >= connected_s, "a user took t0 while the previous opener's connect was pending"


def test_a_kept_connection_does_not_wait_for_the_gate(embedded_server, monkeypatch):
    from llmload.client import startgate

    server = embedded_server("--preset", "exact", "--prefill-base-ms", "5", "--decode-ms-per-token", "1")
    turns = []
    real = startgate.take_turn
    monkeypatch.setattr(startgate, "take_turn", lambda: turns.append(1) or real())
    transport = FastTransport(server.base_url)
    results = [transport.stream(_request(200 + n)) for n in range(3)]
    assert [r.conn_reused for r in results] == [False, True, True]
    assert turns == [1]


def test_the_gate_gives_up_waiting_on_a_loop_that_never_idles():
    """A saturated loop: the wait ends after max_wait_s (the request goes out, untimed wait)."""
    import time

    from llmload.client import startgate

    stop = []

    def busy() -> None:  # a greenlet that is always runnable: the loop is never idle
        while not stop:
            gevent.sleep(0)

    spinner = gevent.spawn(busy)
    gevent.sleep(0)
    started = time.perf_counter()
    startgate.take_turn(max_wait_s=0.05)
    waited_s = time.perf_counter() - started
    stop.append(1)
    spinner.join()
    assert 0.04 <= waited_s < 2.0
