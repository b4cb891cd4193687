"""Every assumption llmload makes about Locust's and geventhttpclient's internals (run/locust_compat.py,
client/ghc_compat.py) still holds in the installed versions. When one fails after an upgrade, fix the
shim, not the test."""

from __future__ import annotations

import _socket
import inspect
import types
from importlib import metadata
from types import SimpleNamespace

import gevent
import locust.main
import locust.stats
import pytest
from locust import User, task
from locust.env import Environment
from locust.event import Events
from locust.user.task import LOCUST_STATE_RUNNING, LOCUST_STATE_STOPPING, LOCUST_STATE_WAITING

from llmload.client import ghc_compat
from llmload.run import locust_compat
from llmload.run.once import first_time


def test_installed_locust_is_in_the_supported_range():
    major, minor = (int(x) for x in metadata.version("locust").split(".")[:2])
    low, high = locust_compat.SUPPORTED
    assert low <= (major, minor) < high


def test_precise_buckets_are_what_locust_stores():
    saved = locust.stats.bucket_response_time
    try:
        locust_compat.use_precise_buckets()
        stats = locust.stats.RequestStats()
        for ms in (147, 3432, 147):
            stats.log_request("TTFT", "chat", ms, 0)
        entry = stats.get("chat", "TTFT")
        assert entry.response_times == {147: 2, 3432: 1}  # Locust's own rounding keeps 150 and 3400
        assert entry.get_response_time_percentile(0.5) == 147
    finally:
        locust.stats.bucket_response_time = saved


def test_the_console_tables_total_counts_each_request_once():
    saved = locust.stats.get_stats_summary, locust.stats.get_percentile_stats_summary
    try:
        locust_compat.honest_console_totals()
        locust_compat.honest_console_totals()  # twice: wrapped once
        stats = locust.stats.RequestStats()
        for ms in (1000, 2000, 3000):  # three requests: each an LLM row (e2e), a TTFT row and ITL rows
            stats.log_request("LLM", "chat", ms, 10)
            stats.log_request("TTFT", "chat", 50, 0)
            for _ in range(4):
                stats.log_request("ITL", "chat", 20, 0)
        stats.log_error("LLM", "chat", "HTTP 429")
        stats.log_request("LLM", "chat", 5, 0)  # a failed fourth request
        assert stats.total.num_requests == 19  # Locust's own total: 4 + 3 + 12
        last = locust.stats.get_stats_summary(stats, current=False)[-1]
        assert last.split()[:5] == ["Aggregated", "LLM", "(e2e)", "4", "1(25.00%)"], last
        assert int(last.split("|")[1].split()[0]) == (1000 + 2000 + 3000 + 5) // 4  # mean e2e, no TTFT or ITL
        percentiles = locust.stats.get_percentile_stats_summary(stats)[-1]
        assert percentiles.startswith(" ") and "Aggregated LLM (e2e)" in percentiles
        assert percentiles.split()[-1] == "4"  # its request count
        plain = locust.stats.RequestStats()  # a locustfile without llmload's metrics: Locust's own line
        plain.log_request("GET", "/", 10, 0)
        assert locust.stats.get_stats_summary(plain, current=False)[-1] == plain.total.to_string(current=False)
    finally:
        locust.stats.get_stats_summary, locust.stats.get_percentile_stats_summary = saved


def test_the_csv_writer_greenlet_is_found_and_killed():
    # Locust spawns the bound method of its StatsCSVFileWriter and keeps no reference to the greenlet
    assert "gevent.spawn(stats_csv_writer.stats_writer)" in inspect.getsource(locust.main)
    bound = types.MethodType(locust.stats.StatsCSVFileWriter.stats_writer, SimpleNamespace())
    greenlet = gevent.spawn(bound)
    locust_compat.kill_csv_writer_greenlet()
    assert greenlet.dead


class _Idle(User):
    @task
    def nothing(self):
        pass


def test_user_states_and_pause():
    assert "_state" in User.run.__code__.co_names  # Locust keeps the user's state in `_state`
    env = Environment(user_classes=[_Idle], events=Events())
    user = _Idle(env)
    user._state = LOCUST_STATE_RUNNING  # what User.run() sets
    seen = []
    gevent.spawn_later(0.01, lambda: seen.append(user._state))
    assert locust_compat.pause_user(user, 0.03) is True
    assert seen == [LOCUST_STATE_WAITING] and user._state == LOCUST_STATE_RUNNING
    user._state = LOCUST_STATE_STOPPING
    assert locust_compat.user_is_stopping(user) and locust_compat.pause_user(user, 0.0) is False


def test_replaced_tasks_are_the_ones_locust_runs():
    def other(self):
        pass

    class Tasks(User):
        @task
        def first(self):
            pass

    locust_compat.replace_tasks(Tasks, [other])
    assert Tasks.tasks == [other]


def test_runner_internals_used_by_the_shims():
    env = Environment(user_classes=[_Idle], events=Events())
    master = env.create_master_runner("127.0.0.1", 0)
    try:
        assert locust_compat.connected_workers(master) == []
        master.register_message("llmload_probe", lambda *a, **k: None)
        assert locust_compat.has_message_handler(master, "llmload_probe")
        assert locust_compat.shape_greenlet(master) is None
    finally:
        master.quit()


def test_form_replacement_is_what_flask_serves():
    import flask

    app = flask.Flask(__name__)
    with app.test_request_context("/swarm", method="POST", data={"api_key": ""}):
        locust_compat.replace_form(flask.request, [("api_key", "sk-x")])
        assert flask.request.form["api_key"] == "sk-x"


def test_geventhttpclient_private_names_exist():
    from geventhttpclient import HTTPClient
    from geventhttpclient.response import HTTPSocketPoolResponse

    assert metadata.version("geventhttpclient") == ghc_compat.CHECKED_VERSION
    client = HTTPClient("127.0.0.1", port=9, concurrency=1)  # never connects: the pool is lazy
    original = client._connection_pool._create_socket
    wrapped = []
    ghc_compat.wrap_socket_factory(client, lambda create: wrapped.append(create) or create)
    assert wrapped == [original]
    pool = client._connection_pool
    for name in ("_resolve", "_is_socket_alive", "_create_tcp_socket"):  # replaced by the fast transport
        assert callable(getattr(pool, name)), name
    pool_source = inspect.getsource(type(pool))
    assert "self._resolve()" in pool_source and "self._is_socket_alive(sock)" in pool_source
    assert "self._create_tcp_socket(" in pool_source
    ssl_pool = HTTPClient("127.0.0.1", port=9, ssl=True, concurrency=1)._connection_pool
    assert "sock = self._connect_socket(sock, sock_info[-1])" in inspect.getsource(type(ssl_pool).__mro__[1])
    assert callable(ssl_pool._connect_socket)  # replaced for https (client/tlssock.py's handshake)
    assert ghc_compat.has_kept_connection(client) is False  # the start gate reads the pool's queue
    pool._socket_queue.put(object())
    assert ghc_compat.has_kept_connection(client) is True
    source = inspect.getsource(inspect.getmodule(HTTPSocketPoolResponse))
    assert "self._sock" in source and "self._body_buffer" in source
    sock = gevent.socket.socket()
    try:
        wait, event = ghc_compat.readable_waiter(sock)
        assert callable(wait) and event is not None
        raw = ghc_compat.raw_socket(sock)  # gevent's own private name: the reactor reads it directly
        assert isinstance(raw, _socket.socket) and type(raw).recv is _socket.socket.recv  # the C read
        assert raw.fileno() == sock.fileno()
        assert raw.gettimeout() == 0.0  # non-blocking: a read never blocks the reactor
    finally:
        sock.close()


def test_install_marks_live_on_the_events_object_not_its_id():
    installed = 0
    for _ in range(200):  # ids of freed objects are reused: an id registry skipped most of these
        if first_time(Events(), "probe"):
            installed += 1
    assert installed == 200
    events = Events()
    assert first_time(events, "probe") and not first_time(events, "probe") and first_time(events, "other")


def test_runner_stop_still_walks_the_stack_and_the_warm_up_maps_every_module():
    """locust_compat.warm_stop_path exists for Runner.stop's inspect.stack(): its cold walk maps every
    loaded module to its file (~50 ms with the hub blocked); after the warm-up there is none left to map."""
    import sys

    from locust.runners import Runner

    from llmload.run import locust_compat

    assert "inspect.stack()" in inspect.getsource(Runner.stop)
    locust_compat.warm_stop_path()
    with_files = {name for name, module in sys.modules.copy().items()
                  if inspect.ismodule(module) and getattr(module, "__file__", None)}
    assert with_files <= set(inspect._filesbymodname)  # what getmodule would otherwise walk at stop


def test_the_c_parsers_feed_does_what_the_responses_feed_does():
    """The reactor feeds each read to the C parser directly (ghc_compat.parser_feed), which appends the
    body to the buffer directly (direct_body): the same body, the same end of message, the same error
    when the connection closes mid-message."""
    from geventhttpclient.response import HTTPParseError, HTTPResponse

    wire = [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n", b"6\r\ndata: ", b"\r\n4\r\nx\n\n\n\r\n",
            b"0\r\n\r\n"]
    ours, theirs = HTTPResponse(method="POST"), HTTPResponse(method="POST")
    ghc_compat.direct_body(ours)  # and the body pieces appended by the buffer's own extend
    feed = ghc_compat.parser_feed(ours)
    for part in wire:
        feed(part)
        theirs.feed(part)
        assert ghc_compat.body_buffer(ours) == ghc_compat.body_buffer(theirs)
        assert ours.message_complete == theirs.message_complete
    assert ours.message_complete and bytes(ghc_compat.body_buffer(ours)) == b"data: x\n\n\n"
    cut = HTTPResponse(method="POST")
    ghc_compat.parser_feed(cut)(wire[0] + wire[1])
    with pytest.raises(HTTPParseError):
        ghc_compat.parser_feed(cut)(b"")  # the peer closed inside a chunk


def test_locusts_host_option_is_a_plain_store_action_that_can_be_joined():
    from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments

    parser = get_empty_argument_parser()
    setup_parser_arguments(parser)
    (host,) = [a for a in parser._actions if "--host" in a.option_strings]
    assert type(host).__name__ == "_StoreAction" and host.dest == "host" and host.default is None
    locust_compat.join_repeated_hosts(parser)
    assert parser.parse_args(["--host", "http://a:1", "--host", "http://b:2"]).host == "http://a:1,http://b:2"
    assert parser.parse_args(["--host", "http://a:1"]).host == "http://a:1" and parser.parse_args([]).host is None
