"""The generator's outage watch: server_gone after the server answered, one line each way, a bounded stop."""

from llmload.client.errors import ConnectError, HTTP5xx, Timeout
from llmload.client.request import StreamResult
from llmload.run.failures.guard import RunGuard, counts_as_failure_streak, failed_to_connect
from llmload.run.failures.outage import OutageWatch

URL = "http://10.0.0.1:8000/v1"


def result(exc=None, status=0) -> StreamResult:
    return StreamResult("r", "chat", "fast", 0.0, status=status, exception=exc)


def refused() -> StreamResult:
    return result(ConnectError("10.0.0.1:8000", "connection refused"))


def seen(watch: OutageWatch, res: StreamResult, now_s: float) -> tuple[str, str]:
    watch.mark(res)
    return watch.observe(res, now_s, 1_767_225_600.0 + now_s)


def test_refused_before_any_answer_stays_a_connect_failure():
    watch = OutageWatch(URL, 30.0)
    res = refused()
    assert seen(watch, res, 0.0) == ("", "") and res.error == "connect"


def test_gone_then_back_one_line_each_and_kinds():
    watch = OutageWatch(URL, 30.0)
    for i in range(3):
        assert seen(watch, result(status=200), i) == ("", "")
    gone = refused()
    line, fatal = seen(watch, gone, 5.0)
    assert gone.error == "server_gone" and fatal == ""
    assert line.startswith(f"llmload: the server at {URL} stopped answering at ")
    assert "(connection refused) after 3 successful answers" in line and "30 s" in line
    assert failed_to_connect(gone) and not counts_as_failure_streak(gone)  # the connect backoff still applies
    assert str(gone.exception).startswith("server gone: cannot connect to 10.0.0.1:8000")
    assert [seen(watch, refused(), 6.0 + i) for i in range(3)] == [("", "")] * 3
    back, fatal = seen(watch, result(status=200), 12.5)
    assert fatal == "" and "answers again at" in back and "after 7.5 s away (4 attempts refused since" in back
    assert seen(watch, result(status=200), 13.0) == ("", "")
    assert seen(watch, refused(), 14.0)[0].startswith("llmload: the server")  # a second outage: a new line


def test_connect_timeout_and_http_errors_are_not_server_gone():
    watch = OutageWatch(URL, 30.0)
    seen(watch, result(status=200), 0.0)
    late = result(Timeout("connect", 10.0))
    assert seen(watch, late, 1.0) == ("", "") and late.error == "timeout"
    err = result(HTTP5xx(502), status=502)
    assert seen(watch, err, 2.0) == ("", "") and err.error == "http_5xx"


def test_stops_once_after_the_timeout_and_never_with_zero():
    watch, guard = OutageWatch(URL, 2.0), RunGuard()
    seen(watch, result(status=200), 0.0)
    seen(watch, refused(), 1.0)
    assert seen(watch, refused(), 2.9) == ("", "")
    _line, fatal = seen(watch, refused(), 3.0)
    assert "did not come back within 2 s (3 attempts refused); the run is stopped" in fatal
    res = refused()
    watch.mark(res)
    assert watch.watch(res, 4.0, guard) and guard.halted.startswith("llmload: the server")
    assert watch.watch(res, 5.0, guard) is None  # halted: once
    patient = OutageWatch(URL, 0.0)
    seen(patient, result(status=200), 0.0)
    assert "goes on until it answers" in seen(patient, refused(), 1.0)[0]
    assert seen(patient, refused(), 1000.0) == ("", "")
