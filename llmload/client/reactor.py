"""One reader for the body reads of every stream in the process: stamp each read, decode it, wake its user at the end.

Why: a gevent greenlet that waits for its own socket pays, for every chunk, a watcher start
and stop, two greenlet switches and the socket wrapper's Python frames (~20 µs per chunk
here). At 256 streams of 100 tokens/s that alone is half a core, and a saturated loop
delays every timestamp it takes. The reactor reads all the streams of the process from one
greenlet instead:

    wait until the reactor's epoll fd is readable (one gevent wake-up for all the streams)
    for up to PASS_READS ready sockets: data, t = stream.recv(raw); over = stream.consume(t, data)
    wake the stream's user once its stream is over (or a read or its decoding failed)

Every read keeps its own time: when its last byte arrived, from the kernel's packet stamp
(client/kstamp.py), else taken right after its read. A TLS stream's read is `tlssock.recv`: one raw
read, decrypted at once, all its plaintext at that read's time (nothing stays inside the SSL object,
so the raw socket's readiness is the stream's; a read that completed no record is skipped).
`consume` (client/body_lines.py) feeds the read to the stream's HTTP parser and decodes its
complete SSE lines at once, at that read's time: the decoding is spread over the stream's life.
(Decoding all of a stream's reads when it ended cost ~0.7 ms per stream in one go; streams that
started together end together, and 30 of them held the loop for 20-30 ms: loop lag p99 24-31 ms
at 256 streams.) A pass reads at most
`PASS_READS` sockets, then lets the loop run its timers and other greenlets before the next:
the ready sockets left wait one loop turn (epoll is level-triggered; the kernel's ready list
is served in turn).

A user registers its socket once its first token is in (before it, every read is
parsed by the user itself: the first-token cap must be cancelled on time) and waits; it is
woken when `consume` says the stream is over, when it raised (a parse error, a malformed
chunk: kept in `Stream.error` for the user to raise) or when a read failed. An end of file
ends the stream too (an empty read would repeat forever). A cap that stops the user's wait
early removes the stream: the reads consumed until then are decoded, at their read times.
Chunked and until-close bodies are read this way, over TCP or TLS; a body sized by Content-Length
(no SSE server sends one) is not registered: it keeps the per-stream read. A TLS error mid-stream
is the stream's failed read (`ssl.SSLError` is an OSError), never the reactor's.

The epoll set is Linux's (`select.epoll`, taken from before gevent's monkey-patching); on a
system without it the transport keeps the per-stream read (`available()` is False).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gevent
from gevent import get_hub, monkey
from gevent.hub import Waiter
from greenlet import GreenletExit, getcurrent

from llmload.client import kstamp

_epoll: Any = monkey.get_original("select", "epoll") if monkey.is_module_patched("select") else None
if _epoll is None:
    import select

    _epoll = getattr(select, "epoll", None)
_EPOLLIN = 0x001
READ_BYTES = 65536
"""bytes per read: a whole backlog in one read when the reactor fell behind"""
PASS_READS = 8
"""sockets read per pass before the loop runs its timers and other greenlets"""


def available() -> bool:
    return _epoll is not None


Recv = Callable[[Any, int], tuple[bytes, float]]
"""(socket, size) -> (data, arrival time): kstamp.recv for TCP, tlssock.recv for TLS"""
tcp_recv: Recv = kstamp.recv


class Stream:
    """One registered stream: its socket, how it is read, what consumes its reads, the user waiting for its end."""

    __slots__ = ("consume", "error", "fd", "over", "raw", "recv", "waiter")

    def __init__(self, raw: Any, consume: Callable[[float, bytes], bool], recv: Recv = tcp_recv) -> None:
        self.raw = raw
        self.recv = recv
        """reads `raw`: BlockingIOError when nothing is there"""
        self.fd: int = raw.fileno()
        self.consume = consume
        """(read time, bytes read) -> is the stream over; called by the reactor for every read"""
        self.error: BaseException | None = None
        """what ended the stream early: a failed read, or what `consume` raised"""
        self.over = False
        self.waiter: Waiter | None = None


class Reactor:
    """The process's stream reader (`READER`); lives in the hub's thread, like every greenlet."""

    def __init__(self) -> None:
        self.streams: dict[int, Stream] = {}
        self._poll: Any = None
        self._running = False
        self._greenlet: Any = None

    def add(self, raw: Any, consume: Callable[[float, bytes], bool], recv: Recv = tcp_recv) -> Stream:
        """Start reading `raw` (the non-blocking socket under a gevent socket, or a tlssock.TLSSocket with
        `tlssock.recv`): `consume(t, data)` gets every read, in order, and says when the stream is over (an
        empty `data`: the peer closed)."""
        if self._poll is None:
            self._poll = _epoll()
        stream = Stream(raw, consume, recv)
        try:
            self._poll.register(stream.fd, _EPOLLIN)
        except FileExistsError:  # a descriptor number reused while an old registration lingered
            self._poll.modify(stream.fd, _EPOLLIN)
        self.streams[stream.fd] = stream
        if not self._running:
            self._running = True
            get_hub().loop.run_callback(self._spawn)
        return stream

    def remove(self, stream: Stream) -> None:
        if self.streams.pop(stream.fd, None) is stream:
            try:
                self._poll.unregister(stream.fd)
            except OSError:  # already closed: the kernel dropped it from the set
                pass
            reader = self._greenlet
            if not self.streams and reader is not None and reader is not getcurrent():
                reader.kill(block=False)  # its watcher would keep the hub's loop alive for nothing

    def wait(self, stream: Stream) -> None:
        """Block the calling greenlet until `stream` is over (at once if it already is)."""
        if stream.over:
            return
        stream.waiter = waiter = Waiter()
        try:
            waiter.get()
        finally:
            stream.waiter = None

    def _spawn(self) -> None:
        self._greenlet = gevent.spawn(self._run)

    def _run(self) -> None:
        hub = get_hub()
        watcher = hub.loop.io(self._poll.fileno(), 1)
        try:
            while self.streams:
                hub.wait(watcher)
                self._read_ready()
        except GreenletExit:  # the last stream left (remove)
            pass
        finally:
            watcher.close()
            self._running = False
            self._greenlet = None
            if self.streams:  # added while the loop was ending
                self._running = True
                hub.loop.run_callback(self._spawn)

    def _read_ready(self) -> None:
        streams = self.streams
        for fd, _events in self._poll.poll(0, PASS_READS):
            stream = streams.get(fd)
            if stream is None:
                continue
            try:
                data, t = stream.recv(stream.raw, READ_BYTES)
            except BlockingIOError:
                continue
            except OSError as exc:
                stream.error = exc
                self._end(stream)
                continue
            try:
                over = stream.consume(t, data) or not data
            except Exception as exc:  # a parse error, a malformed chunk: the user raises it
                stream.error, over = exc, True
            if over:
                self._end(stream)

    def _end(self, stream: Stream) -> None:
        """The stream is over: stop reading it (an end of file would repeat forever), wake its user."""
        stream.over = True
        self.remove(stream)
        if stream.waiter is not None:
            get_hub().loop.run_callback(stream.waiter.switch, None)

READER = Reactor()
"""the process's one reactor (users of every transport instance share it)"""
