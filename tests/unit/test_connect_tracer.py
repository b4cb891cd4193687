"""The openai transport's connect tracer: for https, connecting lasts through the TLS handshake."""

from llmload.client.sdk import ConnectTracer


def clock_from(times):
    it = iter(times)
    return lambda: next(it)


def test_plain_http_connect_ends_at_tcp():
    tracer = ConnectTracer(clock_from([1.000, 1.004]))
    tracer.trace("r1", False, "connection.connect_tcp.started", {})
    tracer.trace("r1", False, "connection.connect_tcp.complete", {})
    opened, connect_ms, connecting = tracer.pop("r1")
    assert opened and abs(connect_ms - 4.0) < 1e-6 and not connecting


def test_https_is_still_connecting_until_the_handshake_completes():
    tracer = ConnectTracer(clock_from([1.000, 1.004, 1.020]))
    tracer.trace("r1", True, "connection.connect_tcp.started", {})
    tracer.trace("r1", True, "connection.connect_tcp.complete", {})
    assert "r1" in tracer.connecting  # a handshake timeout now counts as a connect failure
    tracer.trace("r1", True, "connection.start_tls.complete", {})
    opened, connect_ms, connecting = tracer.pop("r1")
    assert opened and abs(connect_ms - 20.0) < 1e-6 and not connecting


def test_https_handshake_that_never_completes_reports_connecting():
    tracer = ConnectTracer(clock_from([1.000, 1.004]))
    tracer.trace("r1", True, "connection.connect_tcp.started", {})
    tracer.trace("r1", True, "connection.connect_tcp.complete", {})
    assert tracer.pop("r1")[2] is True
