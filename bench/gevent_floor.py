"""The CPU floor of a gevent reader: N greenlets, each one keep-alive connection, POST, `recv_into` until the
chunked body's end (`0\\r\\n\\r\\n`), again, until `--seconds` passed; no HTTP parsing, no JSON, no timing.

Issue #12 sets llmload's CPU goal against it ("no more than a bare gevent raw-socket reader costs on its
own"). It is not a load generator (it measures nothing): run it beside the embedded exact server and read
its process CPU over the server's chunk rate, as for llmload:

    python -m llmload.server --preset exact --prefill-base-ms 200 --decode-ms-per-token 10 \\
        --default-output-tokens 100 --port 8400 &
    python bench/gevent_floor.py --port 8400 --streams 256 --seconds 22   # prints reads and CPU seconds

On 2026-12-01 (2 shared cores, a test suite running beside it, alternating with llmload under the same
conditions) it cost 15.0-18.9 µs per chunk at 256 streams, llmload 34.2-38.3 µs.
"""

from __future__ import annotations

import gevent.monkey

gevent.monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import time  # noqa: E402

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True, help="embedded server port on 127.0.0.1")
    parser.add_argument("--streams", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=22.0, help="then it stops by itself")
    parser.add_argument("--max-tokens", type=int, default=100)
    args = parser.parse_args(argv)
    reads = [0]
    deadline = time.perf_counter() + args.seconds
    request = request_bytes(args.max_tokens)
    gevent.joinall([gevent.spawn(stream_until, args.port, request, deadline, reads) for _ in range(args.streams)])
    print(f"reads {reads[0]}, CPU {time.process_time():.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
