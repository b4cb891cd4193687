"""TLS over the kernel-stamped socket (client/tlssock.py) against a real TLS peer on 127.0.0.1.

The peer is the server side of an `ssl.SSLObject` on an accepted TCP socket, so a test decides how its
ciphertext is cut into TCP segments and when each goes out: a record split across segments, records
sent apart then read as a backlog, two lines in one record, a close_notify, a corrupted record.
"""

from __future__ import annotations

import itertools
import random
import socket
import ssl
import time

import gevent
import gevent.socket
import pytest

from llmload.client import cabundle, reactor, tlssock
from llmload.client.errors import connect_reason
from tests.helpers import self_signed_cert

CLOCK_JITTER_S = 0.001
"""a kernel stamp comes from the real-time clock, moved to perf_counter's by an offset read at the read
(client/kstamp.py): it may stray this far from the interval it was taken in"""


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return self_signed_cert(tmp_path_factory.mktemp("tlssock"))


class Peer:
    """The server side, over memory BIOs: `seal` turns each plaintext into the ciphertext of one record."""

    def __init__(self, conn, cert_pair) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*cert_pair)
        context.set_alpn_protocols(["h2", "http/1.1"])  # a front end serving HTTP/2 too, as most do
        self.conn = conn
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = context.wrap_bio(self.incoming, self.outgoing, server_side=True)

    def handshake(self) -> None:
        while True:
            try:
                self.obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.conn.sendall(self.outgoing.read())
                data = self.conn.recv(65536)
                if not data:
                    return  # the client gave up (a verification failure)
                self.incoming.write(data)
        self.conn.sendall(self.outgoing.read())

    def seal(self, *plaintexts: bytes) -> list[bytes]:
        out = []
        for plain in plaintexts:
            self.obj.write(plain)
            out.append(self.outgoing.read())
        return out

    def read_plain(self) -> bytes:
        while True:
            try:
                return self.obj.read(65536)
            except ssl.SSLWantReadError:
                self.incoming.write(self.conn.recv(65536))

    def send(self, data: bytes) -> tuple[float, float]:
        """Send raw bytes; when they went out: (before, after) the send, perf_counter (the kernel stamps' clock).
        On loopback the bytes arrive inside the send, so their stamp lies between the two, however busy the
        machine is."""
        before = time.perf_counter()
        self.conn.sendall(data)
        return before, time.perf_counter()


def during(t: float, sent: tuple[float, float]) -> bool:
    """Is the stamp `t` that of the bytes sent during `sent` (not of a later read)?"""
    return sent[0] - CLOCK_JITTER_S <= t <= sent[1] + CLOCK_JITTER_S


def connect(cert_pair, context: ssl.SSLContext, host_name: str = "127.0.0.1"):
    """(TLSSocket after its handshake, or the handshake's exception; the peer)."""
    listener = gevent.socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    peers: list[Peer] = []

    def serve() -> None:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each send its own segment
        peers.append(Peer(conn, cert_pair))
        peers[0].handshake()

    server = gevent.spawn(serve)
    sock = tlssock.stamped_socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    sock.settimeout(5)
    sock.connect(listener.getsockname())
    tls = tlssock.TLSSocket(sock, context, host_name)
    result: tlssock.TLSSocket | Exception = tls
    try:
        tls.handshake()
    except ssl.SSLError as exc:
        result = exc
        sock.close()
    server.join(timeout=5)
    listener.close()
    return result, peers[0]


@pytest.fixture
def pair(cert):
    tls, peer = connect(cert, cabundle.context(str(cert[0])))
    yield tls, peer
    tls.close()
    peer.conn.close()


def test_handshake_verified_by_the_ca_bundle_then_both_ways(pair):
    tls, peer = pair
    assert tls.version() in ("TLSv1.2", "TLSv1.3") and tls.getpeercert()["subjectAltName"]
    assert type(tls._read).__name__ == "builtin_function_or_method"  # ssl_read found the C object's read
    peer.send(peer.seal(b"hello\n")[0])
    assert tls.recv(100) == b"hello\n"
    tls.sendall(b"ping")
    assert peer.read_plain() == b"ping"


def test_alpn_settles_on_http_1_1_with_a_server_that_also_serves_h2(pair):
    tls, peer = pair
    assert peer.obj.selected_alpn_protocol() == "http/1.1"
    assert tls._ssl.selected_alpn_protocol() == "http/1.1"


def test_a_record_split_across_segments_is_dated_by_the_segment_that_completed_it(pair):
    tls, peer = pair
    record = peer.seal(b'data: {"x":1}\n\n')[0]
    peer.send(record[:9])
    gevent.sleep(0.05)
    with pytest.raises(BlockingIOError):  # the reactor's read: ciphertext in, no record complete yet
        tlssock.recv(tls, 65536)
    gevent.sleep(0.05)
    sent = peer.send(record[9:])
    gevent.sleep(0.2)  # the reader is late: the stamp still says when the record arrived
    plain, t = tlssock.recv(tls, 65536)
    assert plain == b'data: {"x":1}\n\n'
    assert during(t, sent) and time.perf_counter() - t > 0.15, (t, sent)


def test_a_backlog_of_records_is_read_one_record_at_a_time_until_the_first_token(pair):
    """`recv_line` stops at each record's end: a record's plaintext is dated by the raw read that completed it,
    never by a later record's (the kernel may still merge segments that waited together: their stamp is then
    the last one's, as for plain TCP)."""
    tls, peer = pair
    sent = []
    for record in peer.seal(b"one\n", b"two\n", b"three\n"):
        sent.append(peer.send(record))
        gevent.sleep(0.05)
    gevent.sleep(0.1)  # all three wait in the kernel when the reader comes
    read_s = time.perf_counter()
    lines = [(tls.recv_line(16384), tls.read_time_s) for _ in sent]
    assert [line for line, _ in lines] == [b"one\n", b"two\n", b"three\n"]  # one record per read
    stamps = [t for _, t in lines]
    assert all(later > earlier - 0.001 for earlier, later in itertools.pairwise(stamps))  # (clock conversion jitter)
    assert sent[0][0] - CLOCK_JITTER_S <= stamps[0] and stamps[-1] < read_s - 0.05
    assert during(stamps[-1], sent[-1]), (stamps, sent)
    for record in peer.seal(b"four\nfive\n", b"six\n"):
        peer.send(record)
    gevent.sleep(0.05)
    assert tls.recv(16384) == b"four\nfive\nsix\n"  # the reactor's way: whatever waits, at once


def test_records_cut_anywhere_come_out_when_they_complete_and_none_strands(pair):
    tls, peer = pair
    gevent.sleep(0.05)
    with pytest.raises(BlockingIOError):
        tlssock.recv(tls, 65536)  # the session tickets of TLS 1.3: records without plaintext
    plains = [b"data: %d\n\n" % i * (1 + i * 40) for i in range(6)]
    records = peer.seal(*plains)
    stream, ends = b"".join(records), list(itertools.accumulate(len(r) for r in records))
    cuts = sorted(random.Random(7).sample(range(1, len(stream)), 40))
    out, done = b"", 0
    for start, end in itertools.pairwise([0, *cuts, len(stream)]):
        out += tls._decrypt(stream[start:end])
        done = sum(1 for e in ends if e <= end)
        assert out == b"".join(plains[:done])  # a record's plaintext as soon as its last byte is in
    assert done == len(plains) and tls._partial == 0 and tls._in.pending == 0


def test_plaintext_not_taken_stays_with_its_time_and_is_handed_over(pair):
    tls, peer = pair
    sent = peer.send(peer.seal(b"first\nsecond\n")[0])
    assert tls.recv_line(16384) == b"first\n"
    assert tls.pending() == len(b"second\n")  # decrypted already: epoll cannot see it, the reactor is given it
    data, t = tls.take_plain()
    assert data == b"second\n" and during(t, sent) and tls.pending() == 0, (t, sent)


def test_the_reactor_reads_a_tls_stream_to_its_close_notify(pair):
    tls, peer = pair
    reads: list[tuple[float, bytes]] = []
    stream = reactor.READER.add(tls, lambda t, data: reads.append((t, data)) and False, tlssock.recv)
    sent = []
    for record in peer.seal(b"data: 1\n\n", b"data: 2\n\n"):
        sent.append(peer.send(record))
        gevent.sleep(0.03)
    try:
        peer.obj.unwrap()
    except ssl.SSLWantReadError:
        pass
    peer.send(peer.outgoing.read())  # close_notify, the TCP connection still open
    with gevent.Timeout(5):
        reactor.READER.wait(stream)
    assert stream.error is None and stream.over
    assert [data for _, data in reads] == [b"data: 1\n\n", b"data: 2\n\n", b""]  # the end: an empty read
    assert all(during(t, s) for (t, _), s in zip(reads, sent, strict=False)), (reads, sent)


def test_a_corrupted_record_fails_the_stream_not_the_reactor(pair):
    tls, peer = pair
    record = bytearray(peer.seal(b"data: 1\n\n")[0])
    record[-3] ^= 0xFF  # the authentication tag no longer matches
    stream = reactor.READER.add(tls, lambda t, data: False, tlssock.recv)
    peer.send(bytes(record))
    with gevent.Timeout(5):
        reactor.READER.wait(stream)
    assert isinstance(stream.error, ssl.SSLError) and stream.fd not in reactor.READER.streams


def test_a_raw_end_of_file_without_close_notify_is_the_end(pair):
    tls, peer = pair
    peer.send(peer.seal(b"last\n")[0])
    peer.conn.shutdown(socket.SHUT_WR)
    assert tls.recv(100) == b"last\n"
    assert tls.recv(100) == b""


def test_an_untrusted_certificate_fails_the_handshake_with_one_line_saying_what_to_do(cert, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    exc, _ = connect(cert, cabundle.context())
    assert isinstance(exc, ssl.SSLCertVerificationError)
    assert connect_reason(exc) == ("certificate verify failed: self-signed certificate (pass --ca-bundle PATH or "
                                   "set SSL_CERT_FILE to trust it, or --insecure)")
    exc, _ = connect(cert, cabundle.context(str(cert[0])), host_name="api.example.com")  # trusted, another name
    assert isinstance(exc, ssl.SSLCertVerificationError) and "api.example.com" in connect_reason(exc)
    tls, _ = connect(cert, cabundle.context(insecure=True), host_name="api.example.com")
    assert isinstance(tls, tlssock.TLSSocket)
    tls.close()


def test_ssl_cert_file_is_honoured_by_the_default_context(cert, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))
    tls, _ = connect(cert, cabundle.context())
    assert isinstance(tls, tlssock.TLSSocket), tls
    tls.close()


def test_a_bad_ca_bundle_is_one_line_saying_what_to_fix(tmp_path):
    with pytest.raises(cabundle.CABundleError, match=r"^--ca-bundle .*nope.pem: no such file or folder; give a PEM"):
        cabundle.check_path(str(tmp_path / "nope.pem"))
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(cabundle.CABundleError, match=r"junk.pem: not a PEM file of CA certificates \(.+\)$"):
        cabundle.check_path(str(junk))
