"""RunGuard: which attempts stop a run, and the connect backoff (pure, injected clock)."""

from llmload.client.errors import ConnectError, HTTP4xx, Timeout, not_sse_error
from llmload.client.request import StreamResult
from llmload.run.failures import guard
from llmload.run.failures.guard import RunGuard, next_connect_backoff_s


def attempt(status=200, exc=None):
    return StreamResult(request_id="r", endpoint="chat", transport="fast", ts_start_s=0.0, status=status,
                        exception=exc)


def refused():
    return attempt(0, ConnectError("h:1", "connection refused"))


def test_401_before_any_success_stops_once():
    g = RunGuard(base_url="http://h/v1")
    assert "API key was refused" in g.observe(attempt(401, HTTP4xx(401)), 0.0)
    assert g.observe(attempt(401, HTTP4xx(401)), 0.0) is None  # one line only


def test_401_after_a_success_does_not_stop():
    g = RunGuard()
    g.observe(attempt(), 0.0)
    assert g.observe(attempt(401, HTTP4xx(401)), 1.0) is None and not g.halted


def test_connect_failures_stop_by_count_or_time():
    g = RunGuard()
    reasons = [g.observe(refused(), 0.01 * i) for i in range(guard.CONNECT_FAILURES)]
    assert reasons[:-1] == [None] * (guard.CONNECT_FAILURES - 1)
    assert reasons[-1] == "cannot connect to h:1: connection refused; check --host"
    g = RunGuard(base_url="http://h:1/v1")
    assert g.observe(attempt(0, Timeout("connect", 10.0)), 0.0) is None
    assert g.observe(attempt(0, Timeout("connect", 10.0)), guard.CONNECT_WINDOW_S) == (
        "cannot connect to http://h:1/v1: connect timeout after 10 s; check --host")


def test_connect_failures_after_the_server_answered_do_not_stop():
    g = RunGuard()
    g.observe(attempt(503), 0.0)  # any HTTP status: the host is reachable (a restart, not a bad --host)
    assert all(g.observe(refused(), 100.0 + i) is None for i in range(50))


def test_non_sse_answers_stop_only_before_an_event_stream():
    g = RunGuard(base_url="http://h/v1")
    reasons = [g.observe(attempt(200, not_sse_error("application/json")), 0.0) for _ in range(guard.NOT_SSE_LIMIT)]
    assert reasons[-1].startswith("http://h/v1 does not stream: HTTP 200 answers are not an SSE response "
                                  "(content-type: application/json)")
    g = RunGuard()
    g.observe(attempt(), 0.0)
    assert all(g.observe(attempt(200, not_sse_error("text/html")), 0.0) is None for _ in range(20))


def test_connect_backoff_doubles_to_a_cap():
    delays, d = [], 0.0
    for _ in range(7):
        d = next_connect_backoff_s(d)
        delays.append(d)
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
