"""The process's stream reactor: every read stamped when it happened, the user woken only when a read
may end its stream, nothing read lost when the user stops waiting early. Real sockets (a gevent
socketpair), the real hub."""

from __future__ import annotations

import itertools

import gevent
import gevent.socket
import pytest

from llmload.client import ghc_compat, reactor

pytestmark = pytest.mark.skipif(not reactor.available(), reason="no epoll on this system: the reactor is off")


@pytest.fixture
def pair():
    a, b = gevent.socket.socketpair()
    yield a, b
    a.close()
    b.close()


def _writer(sock, parts, gap_s):
    for part in parts:
        gevent.sleep(gap_s)
        sock.sendall(part)


def test_reads_are_stamped_as_they_arrive_and_the_user_wakes_once(pair):
    ours, peer = pair
    waits = []
    parts = [b'data: {"x":1}\n\n', b'data: {"x":2}\n\n', b'data: {"x":3}\n\n', b"data: [DONE]\n\n"]
    writer = gevent.spawn(_writer, peer, parts, 0.05)
    stream = reactor.READER.add(ghc_compat.raw_socket(ours))
    try:
        reactor.READER.wait(stream)
        waits.append(reactor.READER.clock())
    finally:
        reactor.READER.remove(stream)
    writer.join()
    data = [d for _, d in stream.reads]
    assert b"".join(data) == b"".join(parts)  # every byte, in order
    assert len(stream.reads) == 4  # one read per write: each stamped on its own
    times = [t for t, _ in stream.reads]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(0.02 < g < 0.5 for g in gaps), gaps  # the writer's 50 ms, not the wake-up's time
    assert waits[0] >= times[-1]  # woken by the [DONE] read, not before


def test_a_quiet_stream_does_not_wake_its_user(pair):
    ours, peer = pair
    stream = reactor.READER.add(ghc_compat.raw_socket(ours))
    peer.sendall(b'data: {"x":1}\n\n')
    try:
        with gevent.Timeout(0.2, False):
            reactor.READER.wait(stream)
            pytest.fail("woken by a read that cannot end the stream")
        assert len(stream.reads) == 1  # read and stamped all the same
    finally:
        reactor.READER.remove(stream)


def test_end_of_file_wakes_and_unregisters(pair):
    ours, peer = pair
    stream = reactor.READER.add(ghc_compat.raw_socket(ours))
    peer.sendall(b'data: {"x":1}\n\n')
    peer.shutdown(gevent.socket.SHUT_WR)
    with gevent.Timeout(2):
        reactor.READER.wait(stream)
    assert stream.reads[-1][1] == b""
    assert stream.fd not in reactor.READER.streams  # an empty read would repeat forever
    reactor.READER.remove(stream)  # harmless twice


@pytest.mark.parametrize("data, ends", [
    (b"", True), (b"data: [DONE]\n\n", True), (b'data: {"error": {"message": "x"}}\n\n', True),
    (b'1a\r\ndata: {"x":1}\n\n\r\n0\r\n\r\n', True), (b'data: {"content":"\\"error\\""}\n\n', False),
    (b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n', False),
])
def test_may_end(data, ends):
    assert reactor.may_end(data) is ends


def test_the_reader_ends_when_its_last_stream_leaves(pair):
    """A reader waiting on no stream would keep the hub's loop alive (and a lone script from ending)."""
    ours, _peer = pair
    stream = reactor.READER.add(ghc_compat.raw_socket(ours))
    gevent.sleep(0.01)
    assert reactor.READER._greenlet is not None
    reactor.READER.remove(stream)
    gevent.sleep(0.01)
    assert reactor.READER._greenlet is None and not reactor.READER._running
