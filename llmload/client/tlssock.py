"""TLS over the kernel-stamped TCP socket: every decrypted record dated by the raw read that completed it.

Why: an `ssl.SSLSocket` reads and decrypts inside OpenSSL, so no kernel receive stamp reaches Python, and
bytes decrypted ahead sit in the SSL object where epoll cannot see them. Here the TLS state machine is an
`ssl.SSLObject` between two `ssl.MemoryBIO`s and every ciphertext byte comes from `kstamp.recv` on the raw
socket (client/kstamp.py), so a read's plaintext gets the kernel's arrival time of the last packet of that
raw read, and a raw readable event always means "there may be plaintext":

    data, t = kstamp.recv(raw, n)                 # ciphertext, stamped by the kernel
    incoming.write(data)                          # (a raw end of file: write_eof)
    plaintext = sslobj.read() until SSLWantReadError   # nothing is left inside the SSL object
    -> (plaintext, t); a read that completed no record gives no plaintext (its bytes wait in the BIO)

`TLSSocket` is what the fast transport's connection pool hands geventhttpclient: `sendall`, `recv`,
`close`, `fileno`, `settimeout` (the TCP socket's) like a gevent socket (waits are gevent's, on the
raw socket, honouring its timeout), with `read_time_s` like `kstamp.StampedSocket`. Plaintext a caller
did not take yet stays in `TLSSocket` with its time (`pending()`, `take_plain()`): it never waits in
OpenSSL. `recv_line` (until the first token) feeds OpenSSL one TLS record at a time: it peeks at the
raw bytes waiting, follows the record headers (5 bytes: type, version, length) and reads only up to the
end of the first complete record, so a backlog of records is not dated by the last one's arrival (the
framing of every byte read is followed for that: `_track`). The reactor (client/reactor.py) reads a
registered TLS stream with `recv(tls, size)`: one raw read, all its plaintext at its time;
BlockingIOError when it completed no record; a raw read that is exactly one record (the usual chunk)
costs one BIO write and one SSL read. A close_notify or a raw end of file ends the stream as an empty
read; any other TLS error is an `ssl.SSLError` (an OSError): the stream's failure.

The handshake runs in `connect()`'s place in the pool (`handshake`): inside the connect the transport
times, so it is reported as connect time, the way TCP's connect is; a reconnect resumes the last connection's
session (client/tlsresume.py).
"""

from __future__ import annotations

import socket
import ssl
import time
from typing import Any

from llmload.client import ghc_compat, kstamp

READ_BYTES = 65536
"""ciphertext bytes per raw read outside `recv_line` (several records at once when they wait)"""
_HEADER = 5
"""bytes of a TLS record header: type, version (2), length (2)"""
_WantRead, _ZeroReturn, _RaggedEOF = ssl.SSLWantReadError, ssl.SSLZeroReturnError, ssl.SSLEOFError
_perf_counter, _kstamp_recv, _PEEK = time.perf_counter, kstamp.recv, socket.MSG_PEEK


def ssl_read(sslobj: ssl.SSLObject) -> Any:
    """`sslobj.read` minus its Python frame: the C object's own `read(len)` (ssl.SSLObject keeps it as `_sslobj`,
    checked against CPython 3.11-3.13; the public method when that name is gone). Same results, same exceptions."""
    inner = getattr(sslobj, "_sslobj", None)
    return inner.read if inner is not None else sslobj.read


class TLSSocket:
    """A client TLS connection over a connected gevent socket whose raw reads carry kernel times (module docstring)."""

    __slots__ = ("_eof", "_head", "_in", "_left", "_out", "_partial", "_plain", "_plain_time_s", "_read", "_ssl", "raw",
                 "read_time_s", "sock")
    sslobj = property(lambda self: self._ssl, doc="the TLS state machine (its session: client/tlsresume.py)")

    def __init__(self, sock: Any, context: ssl.SSLContext, server_hostname: str | None) -> None:
        self.sock = sock
        """the connected gevent socket (a kstamp.StampedSocket in the fast transport)"""
        self.raw = ghc_compat.raw_socket(sock)
        """the non-blocking kernel socket under it: every ciphertext byte is read from it"""
        self._in, self._out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._in, self._out, server_side=False, server_hostname=server_hostname or None)
        self._read = ssl_read(self._ssl)
        """the SSL object's read, without ssl.SSLObject.read's Python frame"""
        self._plain = b""
        """plaintext decrypted but not taken yet, all from one raw read"""
        self._plain_time_s = 0.0
        """when the raw read that completed `_plain`'s records arrived (perf_counter)"""
        self.read_time_s = 0.0
        """when the last plaintext `recv` returned arrived (perf_counter), as StampedSocket's"""
        self._left = 0
        """ciphertext bytes of the current record not read yet"""
        self._head = b""
        """the part of the next record's header read so far (shorter than 5 bytes)"""
        self._partial = 0
        """ciphertext bytes of the current, incomplete record read so far (header included)"""
        self._eof = False
        """the peer closed (close_notify or a raw end of file): every read from now on is empty"""

    def handshake(self) -> None:
        """The TLS handshake, waiting cooperatively on the raw socket (its timeout: the connect cap)."""
        while True:
            try:
                self._ssl.do_handshake()
                break
            except _WantRead:
                self._flush()
                data = self._raw_read(READ_BYTES, one_record=False)[0]
                if not data:
                    self._in.write_eof()
                else:
                    self._in.write(data)
                    self._track(data)
        self._flush()

    # ---- reading
    def recv(self, size: int, flags: int = 0) -> bytes:
        """Up to `size` plaintext bytes, all from one raw read; `read_time_s` is when it arrived."""
        return self._take(size, one_record=False)

    def recv_line(self, size: int) -> bytes:
        """Up to and including the first line end of the plaintext of one TLS record (at most `size` bytes)."""
        return self._take(size, one_record=True)

    def _take(self, size: int, one_record: bool) -> bytes:
        while not self._plain:
            if self._eof:
                self.read_time_s = _perf_counter()
                return b""
            self._fill(one_record)
        plain = self._plain
        end = min(size, plain.find(b"\n") + 1 or len(plain)) if one_record else size
        self._plain, self.read_time_s = plain[end:], self._plain_time_s
        return plain[:end]

    def pending(self) -> int:
        """Plaintext bytes readable without a raw read."""
        return len(self._plain)

    def take_plain(self) -> tuple[bytes, float]:
        """The plaintext not taken yet and when it arrived ((b'', 0.0) when none); before the reactor takes over."""
        data, t = self._plain, self._plain_time_s
        self._plain = b""
        return data, t

    def _fill(self, one_record: bool) -> None:
        """One raw read (to the end of the first complete record when `one_record`) and its plaintext."""
        data, t = self._raw_read(READ_BYTES, one_record)
        plain = self._decrypt(data)
        if plain:
            self._plain, self._plain_time_s = plain, t

    def _raw_read(self, size: int, one_record: bool) -> tuple[bytes, float]:
        raw = self.raw
        while True:
            try:
                if one_record:
                    waiting = raw.recv(size, _PEEK)
                    size = self._record_end(waiting) or len(waiting) or size
                return _kstamp_recv(raw, size)
            except BlockingIOError:
                if self.sock.timeout == 0.0:
                    raise
                wait, event = ghc_compat.readable_waiter(self.sock)
                wait(event)

    def _record_end(self, waiting: bytes) -> int:
        """Where the first record that completes in `waiting` ends (0: none does)."""
        if self._left:
            return self._left if self._left <= len(waiting) else 0
        need = _HEADER - len(self._head)
        if len(waiting) < need:
            return 0
        header = self._head + waiting[:need]
        end = need + (header[3] << 8 | header[4])
        return end if end <= len(waiting) else 0

    def _track(self, data: bytes) -> int:
        """Follow the record framing through the ciphertext `data` (`_left`, `_head`, `_partial`): how many
        records it completed."""
        n, done = len(data), 0
        if self._head:  # a header split across raw reads: complete it
            need = _HEADER - len(self._head)
            header = self._head + data[:need]
            if len(header) < _HEADER:
                self._head, self._partial = header, self._partial + n
                return 0
            self._head, pos = b"", need + (header[3] << 8 | header[4])
        else:
            pos = self._left
        if pos:  # inside a record: does it end in `data`?
            if pos > n:
                self._left, self._partial = pos - n, self._partial + n
                return 0
            done = 1
        while pos + _HEADER <= n:
            end = pos + _HEADER + (data[pos + 3] << 8 | data[pos + 4])
            if end > n:
                self._left, self._partial = end - n, n - pos
                return done
            done, pos = done + 1, end
        self._left, self._head, self._partial = 0, data[pos:], n - pos
        return done

    def _decrypt(self, data: bytes) -> bytes:
        """Feed one raw read to OpenSSL and take out all the plaintext it completes (empty: none yet, or the end):
        one `read` per record it completed (the usual chunk costs no SSLWantReadError), then, should complete records
        still wait in the BIO (one without plaintext, a ticket: OpenSSL read on), reads until told to wait."""
        if data:
            self._in.write(data)
            records = self._track(data)
        else:
            self._in.write_eof()
            records = 1
        read, pieces = self._read, []
        try:
            for _ in range(records):
                piece = read(READ_BYTES)
                if not piece:
                    self._eof = True
                    break
                pieces.append(piece)
            while self._in.pending > self._partial and not self._eof:
                piece = read(READ_BYTES)
                if not piece:
                    self._eof = True
                pieces.append(piece)
        except _WantRead:
            pass
        except (_ZeroReturn, _RaggedEOF):
            self._eof = True
        if self._out.pending:  # a post-handshake message to answer (a TLS 1.3 key update)
            self._flush()
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    # ---- writing, the rest of a socket
    def sendall(self, data: bytes, flags: int = 0) -> None:
        self._ssl.write(data)
        self._flush()

    def send(self, data: bytes, flags: int = 0) -> int:
        self.sendall(data)
        return len(data)

    def _flush(self) -> None:
        out = self._out.read()
        if out:
            self.sock.sendall(out)

    def close(self) -> None:
        """Say close_notify if it can go out at once (never waits), then close the socket."""
        try:
            self._ssl.unwrap()
        except (ssl.SSLError, ValueError):
            pass
        try:
            out = self._out.read()
            if out and self.raw.fileno() >= 0:
                self.raw.send(out)
        except OSError:
            pass
        self.sock.close()

    def fileno(self) -> int:
        return self.sock.fileno()

    def getpeercert(self, binary_form: bool = False) -> Any:
        return self._ssl.getpeercert(binary_form)

    def version(self) -> str | None:
        return self._ssl.version()

    def __getattr__(self, name: str) -> Any:  # settimeout, gettimeout, setsockopt, getpeername: the TCP socket's
        return getattr(self.sock, name)


STAMPED = (kstamp.StampedSocket, TLSSocket)
"""the fast transport's sockets whose reads carry the kernel's arrival time (`read_time_s`)"""


def stamped_socket(family: int, kind: int, protocol: int) -> kstamp.StampedSocket:
    """The pool's TCP sockets (under TLS too): packets stamped by the kernel, reads noting when they arrived."""
    sock = kstamp.StampedSocket(family, kind, protocol)
    kstamp.enable(sock)
    return sock


def recv(tls: TLSSocket, size: int) -> tuple[bytes, float]:
    """The reactor's read of a TLS stream (kstamp.recv's twin): one raw read of up to `size` ciphertext bytes ->
    (all the plaintext it completed, its arrival time); b'' at the end; BlockingIOError when it completed no record."""
    if tls._eof:
        return b"", _perf_counter()
    data, t = _kstamp_recv(tls.raw, size)
    n = len(data)
    if n > _HEADER and not tls._left and not tls._head and n == _HEADER + (data[3] << 8 | data[4]):
        tls._in.write(data)  # the usual chunk: exactly one whole record (the framing stays at a boundary)
        try:
            plain = tls._read(READ_BYTES)
        except _WantRead:  # a record without plaintext (a session ticket, a key update: answered)
            if tls._out.pending:
                tls._flush()
            raise BlockingIOError from None
        except (_ZeroReturn, _RaggedEOF):
            plain = b""
        if plain:
            return plain, t
        tls._eof = True  # close_notify
        return b"", t
    plain = tls._decrypt(data)
    if plain or tls._eof:
        return plain, t
    raise BlockingIOError
