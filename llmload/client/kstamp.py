"""Read times from the kernel: when the bytes of a read arrived, not when the loop got to them.

Why: a timestamp taken after `recv` returns is late by however long the data waited in the
socket buffer for this greenlet's turn: the event loop's lag (other users decoding their
streams, a garbage collection, another process on the core). With `SO_TIMESTAMPNS` set on a
socket, Linux stamps every arriving packet (software receive time, CLOCK_REALTIME) and
`recvmsg` returns the stamp of the last packet the read consumed. That is the moment the
read's last byte became readable, whatever the loop was doing then.

`enable(sock)` turns it on (Linux; returns False elsewhere or when refused), `recv(raw, n)`
reads up to n bytes of a non-blocking socket and returns `(data, t)`, t on the
`time.perf_counter` clock (CLOCK_MONOTONIC: the kernel's real time minus the real-to-monotonic
offset read at that instant). A stamp that cannot be right (missing, in the future, or older
than `MAX_AGE_S`: the real-time clock was stepped meanwhile) gives way to the time of the read
itself. TLS connections are read this way too: client/tlssock.py takes the ciphertext from
`recv` and decrypts it in memory, so each record gets the stamp of the raw read that completed it.

`StampedSocket` is the gevent socket the fast transport's connection pool creates (under TLS too): every
`recv` (geventhttpclient's own header reads included) leaves its arrival time in
`read_time_s`, so the lines that came in with the headers get the time they arrived.

A read that takes several packets gets the stamp of the last one: when the loop fell behind
and ten tokens waited, one read would date the first token at the tenth's arrival. So until
the first token, `recv_line` reads one line at a time (it peeks, then reads up to the first
line end): its stamp is the arrival of the packet that completed that line.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from typing import Any

import gevent.socket

SO_TIMESTAMPNS = 35
"""Linux's SO_TIMESTAMPNS(_OLD) on x86, ARM and most architectures (Python does not export it)"""
_TIMESPEC = struct.Struct("@ll")
"""struct timespec of SO_TIMESTAMPNS_OLD: native longs (seconds, nanoseconds)"""
_ANC_BYTES = socket.CMSG_SPACE(_TIMESPEC.size) if sys.platform == "linux" else 0
_unpack = _TIMESPEC.unpack_from
_perf_counter, _real_time, _SOL_SOCKET = time.perf_counter, time.time, socket.SOL_SOCKET
MAX_AGE_S = 5.0
"""a stamp older than this at the read is not believed (a stepped real-time clock)"""


def enable(sock: Any) -> bool:
    """Ask the kernel to stamp the packets `sock` receives; False when it cannot."""
    if sys.platform != "linux":
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def recv(raw: Any, size: int) -> tuple[bytes, float]:
    """Read up to `size` bytes from the non-blocking `raw` socket: (data, arrival time on perf_counter).

    Raises BlockingIOError when nothing is there, like `recv`. (It runs for every chunk: the
    module's names are bound once, and only the one option this module turns on is looked for.)
    """
    data, ancillary, _flags, _address = raw.recvmsg(size, _ANC_BYTES)
    now = _perf_counter()
    if ancillary:
        level, kind, payload = ancillary[0]
        if kind == SO_TIMESTAMPNS and level == _SOL_SOCKET and len(payload) >= _TIMESPEC.size:
            seconds, nanoseconds = _unpack(payload)
            age_s = _real_time() - seconds - nanoseconds * 1e-9
            if 0.0 <= age_s <= MAX_AGE_S:
                return data, now - age_s
    return data, now


class StampedSocket(gevent.socket.socket):
    """A gevent socket whose reads note when their last byte arrived (`read_time_s`, perf_counter)."""

    __slots__ = ("read_time_s",)

    def recv(self, size: int, flags: int = 0) -> bytes:
        if flags:
            self.read_time_s = time.perf_counter()
            return super().recv(size, flags)
        while True:
            try:
                data, self.read_time_s = recv(self._sock, size)
                return data
            except BlockingIOError:
                if self.timeout == 0.0:
                    raise
                self._wait(self._read_event)

    def recv_line(self, size: int) -> bytes:
        """Read up to and including the first line end waiting (at most `size` bytes), stamped."""
        while True:
            try:
                waiting = self._sock.recv(size, socket.MSG_PEEK)
                break
            except BlockingIOError:
                if self.timeout == 0.0:
                    raise
                self._wait(self._read_event)
        if not waiting:  # the peer closed
            self.read_time_s = time.perf_counter()
            return waiting
        end = waiting.find(b"\n") + 1
        data, self.read_time_s = recv(self._sock, end or len(waiting))
        return data

