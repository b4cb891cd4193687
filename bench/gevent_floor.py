"""The CPU floor of a gevent reader: N greenlets, each one keep-alive connection, POST, `recv_into` until the
chunked body's end (`0\\r\\n\\r\\n`), again, until `--seconds` passed; no HTTP parsing, no JSON, no timing.

llmload's CPU goal is set against it ("no more than a bare gevent raw-socket reader costs on its own"). It
is not a load generator (it measures nothing): run it beside the embedded exact server and read its process
CPU over the server's chunk rate, as for llmload:

    python -m llmload.server --preset exact --prefill-base-ms 200 --decode-ms-per-token 10 \\
        --default-output-tokens 100 --port 8400 &
    python bench/gevent_floor.py --port 8400 --streams 256 --seconds 22   # prints reads and CPU seconds

`--reader` climbs from that floor towards llmload, one cost at a time (the CPU ladder,
bench/generator/ladder.py, runs every rung beside llmload itself):

- `gevent` (default): the bare reader above;
- `reactor`: the same requests, every read made by llmload's reactor (client/reactor.py: one epoll
  set for all streams, each read a `recvmsg` dated by the kernel), nothing decoded;
- `decode`: the reactor's reads also decoded as llmload decodes them: the HTTP parser, the SSE lines,
  orjson, the chunk fields and the timing points (client/body_lines.py, client/builder.py).
"""

from __future__ import annotations

import gevent.monkey

gevent.monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402

CHUNKED_END = b"0\r\n\r\n"


def request_bytes(max_tokens: int) -> bytes:
    body = json.dumps({"model": "m", "stream": True, "max_tokens": max_tokens,
                       "messages": [{"role": "user", "content": "hi " * 100}]}).encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def stream_until(port: int, request: bytes, deadline: float, reads: list[int]) -> None:
    """One connection, answers read back to back until `deadline`; counts the reads in `reads[0]`."""
    sock = socket.create_connection(("127.0.0.1", port))
    buf = bytearray(65536)
    view = memoryview(buf)
    try:
        while time.perf_counter() < deadline:
            sock.sendall(request)
            tail = b""
            while True:
                n = sock.recv_into(buf)
                if not n:
                    return
                reads[0] += 1
                tail = (tail + bytes(view[max(0, n - 16):n]))[-16:]
                if tail.endswith(CHUNKED_END):
                    break
    finally:
        sock.close()


def reactor_stream_until(port: int, request: bytes, deadline: float, reads: list[int], decode: bool) -> None:
    """As `stream_until`, every read made (and, with `decode`, decoded) by llmload's reactor."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository's llmload
    from geventhttpclient.response import HTTPResponse

    from llmload.client import ghc_compat, kstamp, reactor
    from llmload.client.body_lines import read_rest
    from llmload.client.builder import StreamBuilder
    from llmload.client.timing import StreamTiming

    sock = socket.create_connection(("127.0.0.1", port))
    kstamp.enable(sock)
    raw = ghc_compat.raw_socket(sock)
    try:
        while time.perf_counter() < deadline:
            sock.sendall(request)
            if decode:  # llmload's own path after the first token, from the first byte of the answer on
                resp = HTTPResponse(method="POST")
                ghc_compat.direct_body(resp)
                builder = StreamBuilder(StreamTiming())
                read_rest(resp, raw, builder.feed, [])
                reads[0] += len(builder.timing.text_times)  # here: the text chunks decoded
                if not resp.message_complete:
                    return  # the peer closed
                continue
            def consume(_t: float, data: bytes, tail: list[bytes] = [b""]) -> bool:  # noqa: B006  (one per request)
                reads[0] += 1
                tail[0] = (tail[0] + data[-16:])[-16:]
                return not data or tail[0].endswith(CHUNKED_END)

            stream = reactor.READER.add(raw, consume)
            try:
                reactor.READER.wait(stream)
            finally:
                reactor.READER.remove(stream)
    finally:
        sock.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--port", type=int, required=True, help="embedded server port on 127.0.0.1")
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=22.0, help="then it stops by itself")
    parser.add_argument("--max-tokens", type=int, default=100)
    parser.add_argument("--reader", choices=("gevent", "reactor", "decode"), default="gevent",
                        help="gevent: the bare reader; reactor: llmload's reactor reads; decode: and decodes")
    args = parser.parse_args(argv)
    reads = [0]
    deadline = time.perf_counter() + args.seconds
    request = request_bytes(args.max_tokens)
    if args.reader == "gevent":
        readers = [gevent.spawn(stream_until, args.port, request, deadline, reads) for _ in range(args.streams)]
    else:
        readers = [gevent.spawn(reactor_stream_until, args.port, request, deadline, reads, args.reader == "decode")
                   for _ in range(args.streams)]
    gevent.joinall(readers, raise_error=True)
    print(f"reads {reads[0]}, CPU {time.process_time():.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
