"""The process's stream reactor: every read stamped when it happened and consumed at once, the user
woken only when its stream is over, a failure handed to the user, a pass bounded so the loop's timers
run between passes. Real sockets (a gevent socketpair), the real hub."""

from __future__ import annotations

import time

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


def _writer(sock, parts, gap_s) -> list[float]:
    """Send each part after `gap_s`; when each send began (perf_counter)."""
    sent = []
    for part in parts:
        gevent.sleep(gap_s)
        sent.append(time.perf_counter())
        sock.sendall(part)
    return sent


class Consumer:
    """Keeps every (read time, data) it is given; the stream is over at `[DONE]` (or `raises` it)."""

    def __init__(self, raises: Exception | None = None) -> None:
        self.reads: list[tuple[float, bytes]] = []
        self.raises = raises

    def __call__(self, t: float, data: bytes) -> bool:
        self.reads.append((t, data))
        if self.raises is not None and b"bad" in data:
            raise self.raises
        return b"[DONE]" in data


def test_reads_are_stamped_and_consumed_as_they_arrive_and_the_user_wakes_once(pair):
    ours, peer = pair
    parts = [b'data: {"x":1}\n\n', b'data: {"x":2}\n\n', b'data: {"x":3}\n\n', b"data: [DONE]\n\n"]
    writer = gevent.spawn(_writer, peer, parts, 0.05)
    consumer = Consumer()
    stream = reactor.READER.add(ghc_compat.raw_socket(ours), consumer)
    try:
        reactor.READER.wait(stream)
        woken = time.perf_counter()  # the kernel stamps' clock
    finally:
        reactor.READER.remove(stream)
    sent = writer.get()
    assert b"".join(d for _, d in consumer.reads) == b"".join(parts)  # every byte, in order
    assert len(consumer.reads) == 4  # one read per write: each stamped on its own
    times = [t for t, _ in consumer.reads]
    # each read is stamped after its part was sent and before the next one was: when it arrived, not at the
    # user's wake-up (the last read's time) however slow the machine
    assert all(s <= t for s, t in zip(sent, times, strict=True)), (sent, times)
    assert all(t < next_s for t, next_s in zip(times, sent[1:])), (sent, times)
    assert woken >= times[-1] and stream.over and stream.error is None  # woken by the [DONE] read
    assert stream.fd not in reactor.READER.streams


def test_a_stream_that_is_not_over_does_not_wake_its_user(pair):
    ours, peer = pair
    consumer = Consumer()
    stream = reactor.READER.add(ghc_compat.raw_socket(ours), consumer)
    peer.sendall(b'data: {"x":1}\n\n')
    try:
        with gevent.Timeout(0.2, False):
            reactor.READER.wait(stream)
            pytest.fail("woken while the stream goes on")
        assert len(consumer.reads) == 1  # read, stamped and consumed all the same
    finally:
        reactor.READER.remove(stream)


def test_end_of_file_ends_the_stream_and_unregisters(pair):
    ours, peer = pair
    consumer = Consumer()
    stream = reactor.READER.add(ghc_compat.raw_socket(ours), consumer)
    peer.sendall(b'data: {"x":1}\n\n')
    peer.shutdown(gevent.socket.SHUT_WR)
    with gevent.Timeout(2):
        reactor.READER.wait(stream)
    assert consumer.reads[-1][1] == b""  # the consumer saw the end of file (its parser must)
    assert stream.over and stream.fd not in reactor.READER.streams  # an empty read would repeat forever
    reactor.READER.remove(stream)  # harmless twice


def test_what_the_consumer_raises_is_handed_to_the_user_and_the_reader_goes_on(pair):
    ours, peer = pair
    other_ours, other_peer = gevent.socket.socketpair()
    try:
        failing = reactor.READER.add(ghc_compat.raw_socket(ours), Consumer(raises=ValueError("malformed")))
        fine_consumer = Consumer()
        fine = reactor.READER.add(ghc_compat.raw_socket(other_ours), fine_consumer)
        peer.sendall(b"data: bad\n\n")
        with gevent.Timeout(2):
            reactor.READER.wait(failing)
        assert isinstance(failing.error, ValueError) and failing.over
        other_peer.sendall(b"data: [DONE]\n\n")  # the reader still serves the others
        with gevent.Timeout(2):
            reactor.READER.wait(fine)
        assert fine.error is None and len(fine_consumer.reads) == 1
    finally:
        other_ours.close()
        other_peer.close()


def test_a_pass_reads_a_bounded_number_of_sockets():
    """More ready sockets than PASS_READS: one pass reads PASS_READS of them and goes back to the loop
    (its timers and other greenlets run); the next pass reads the next ones."""
    own = reactor.Reactor()
    pairs = [gevent.socket.socketpair() for _ in range(reactor.PASS_READS * 3)]
    consumers = [Consumer() for _ in pairs]
    try:
        for (a, b), consumer in zip(pairs, consumers):
            own.add(ghc_compat.raw_socket(a), consumer)
            b.sendall(b"data: [DONE]\n\n")
        own._read_ready()
        assert sum(1 for c in consumers if c.reads) == reactor.PASS_READS
        own._read_ready()
        assert sum(1 for c in consumers if c.reads) == 2 * reactor.PASS_READS
    finally:
        for stream in list(own.streams.values()):
            own.remove(stream)
        for a, b in pairs:
            a.close()
            b.close()


def test_the_reader_ends_when_its_last_stream_leaves(pair):
    """A reader waiting on no stream would keep the hub's loop alive (and a lone script from ending)."""
    ours, _peer = pair
    stream = reactor.READER.add(ghc_compat.raw_socket(ours), Consumer())
    gevent.sleep(0.01)
    assert reactor.READER._greenlet is not None
    reactor.READER.remove(stream)
    gevent.sleep(0.01)
    assert reactor.READER._greenlet is None and not reactor.READER._running
