"""One reader for the body reads of every stream in the process: stamp each read, wake its user at the end.

Why: a gevent greenlet that waits for its own socket pays, for every chunk, a watcher start
and stop, two greenlet switches and the socket wrapper's Python frames (~20 µs per chunk
here). At 256 streams of 100 tokens/s that alone is half a core, and a saturated loop
delays every timestamp it takes. The reactor reads all the streams of the process from one
greenlet instead:

    wait until the reactor's epoll fd is readable (one gevent wake-up for all the streams)
    for every ready socket: data, t = kstamp.recv(raw); reads.append((t, data))
    wake the stream's user only if this read may end its stream

Every read keeps its own time: when its last byte arrived, from the kernel's packet stamp
(client/kstamp.py), else taken right after its read. A user registers its plain-TCP socket once
its first token is in (before it, every read is parsed at once by the user: the first-token
cap must be cancelled on time), waits, and on wake-up decodes the reads in order. A read
"may end the stream" when it is empty (the peer closed), holds `[DONE]` or an error event,
or ends like the last chunk of a chunked body (`0\\r\\n\\r\\n`); the user checks precisely and
waits again on a false alarm, until its stream is over; then it removes the stream (an end of
file removes it at once: an empty read would repeat forever). Chunked and until-close bodies
are read this way; a body sized by Content-Length (no SSE server sends one) and TLS streams
are not registered (bytes can sit decrypted inside the SSL object without making the socket
readable): they keep the per-stream read.

The epoll set is Linux's (`select.epoll`, taken from before gevent's monkey-patching); on a
system without it the transport keeps the per-stream read (`available()` is False).
"""

from __future__ import annotations

import time
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
_CHUNKED_END = b"0\r\n\r\n"


def available() -> bool:
    return _epoll is not None


def may_end(data: bytes) -> bool:
    """Can this read end an SSE stream? (False surely not; True: decode now and check.)"""
    return not data or data.endswith(_CHUNKED_END) or b"[DONE]" in data or b'"error"' in data


class Stream:
    """One registered stream: its raw socket, its stamped reads, and the user waiting for them."""

    __slots__ = ("error", "fd", "raw", "reads", "waiter", "woken")

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.fd: int = raw.fileno()
        self.reads: list[tuple[float, bytes]] = []
        """(read time, bytes read) not yet taken by the user"""
        self.error: OSError | None = None
        self.waiter: Waiter | None = None
        self.woken = False


class Reactor:
    """The process's stream reader (`READER`); lives in the hub's thread, like every greenlet."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.streams: dict[int, Stream] = {}
        self._poll: Any = None
        self._running = False
        self._greenlet: Any = None

    def add(self, raw: Any) -> Stream:
        """Start reading `raw` (the non-blocking socket under a gevent socket) for its user."""
        if self._poll is None:
            self._poll = _epoll()
        stream = Stream(raw)
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
        """Block the calling greenlet until a read of `stream` may end it (or at once if one came)."""
        if stream.woken:
            stream.woken = False
            return
        stream.waiter = waiter = Waiter()
        try:
            waiter.get()
        finally:
            stream.waiter = None
            stream.woken = False

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
        clock, streams, run_callback = self.clock, self.streams, get_hub().loop.run_callback
        for fd, _events in self._poll.poll(0):
            stream = streams.get(fd)
            if stream is None:
                continue
            try:
                data, t = kstamp.recv(stream.raw, READ_BYTES)
            except BlockingIOError:
                continue
            except OSError as exc:
                stream.error, data, t = exc, b"", clock()
            stream.reads.append((t, data))
            if not data:
                self.remove(stream)  # closed: an empty read would repeat forever
            elif not may_end(data):
                continue
            if not stream.woken:
                stream.woken = True
                if stream.waiter is not None:
                    run_callback(stream.waiter.switch, None)

READER = Reactor()
"""the process's one reactor (users of every transport instance share it)"""
