"""The floor: a bare asyncio raw-socket streaming client, to compare a load generator against.

How it works: one process, the standard asyncio event loop (`--uvloop` for uvloop's), `--streams` concurrent
streams started over the first second (as Locust's `-r C` spawns C users in one second). Each
stream holds one keep-alive HTTP/1.1 connection and sends POST /v1/chat/completions
(`stream: true`, `max_tokens`, an `X-Request-Id` so the server's truth log names the request)
back to back until `--seconds` have passed, then closes; requests in flight at the end are cut
and not written.

Timing: `t0` is `time.perf_counter()` just before the request is written (before the connection
is opened, for a stream's first request: connection set-up counts, as in llmload); every socket read
(`asyncio.Protocol.data_received`) is stamped with `perf_counter()` on arrival. The first
token is the first read in which a non-empty `"content":"…"` delta appears (a minimal byte
search; the server's first chunk is role-only with empty content); the answer ends at
`data: [DONE]`, and the next request waits for the chunked body's end (`0\\r\\n\\r\\n`). There
is no JSON decoding, no HTTP library and no per-chunk work beyond that search, so the
remaining error is the event loop, the kernel's loopback and Python itself.

Loop lag: a task sleeps 10 ms in a loop and records how late it woke; a sample's
`loop_lag_ms` is the larger of the last full second's max and the current second's (the
definition llmload's health monitor uses); `--lags-out` also writes every sleep's lateness.

    python -m bench.reference_client --port 8400 --streams 64 --seconds 25 --out ref.csv

Writes a CSV: request_id, t0 (perf_counter s), ttft_ms, e2e_ms, chunks (text chunks
received), loop_lag_ms, error ('' or what went wrong).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import time
from pathlib import Path

COLUMNS = ("request_id", "t0", "ttft_ms", "e2e_ms", "chunks", "loop_lag_ms", "error")
PROMPT = " ".join(f"word{i % 97}" for i in range(128))
"""about 128 prompt tokens, like llmload's default synthetic prompt"""
CONTENT = b'"content":"'
DONE = b"data: [DONE]"
BODY_END = b"\r\n0\r\n\r\n"
TAIL_BYTES = 16
"""bytes of the previous read kept, so a marker split across two reads is still found"""


class LagMonitor:
    """Event-loop lag: 10 ms sleeps, lateness max per 1 s window."""

    def __init__(self, interval_s: float = 0.010, report_s: float = 1.0) -> None:
        self.interval_s, self.report_s = interval_s, report_s
        self.last_max_ms = 0.0
        self.window_max_ms = 0.0
        self.samples: list[tuple[float, float]] = []
        """every sleep: (perf_counter s when it woke, lateness ms)"""

    @property
    def loop_lag_ms(self) -> float:
        return max(self.last_max_ms, self.window_max_ms)

    async def run(self, deadline: float) -> None:
        clock, interval = time.perf_counter, self.interval_s
        window_start = clock()
        while clock() < deadline:
            before = clock()
            await asyncio.sleep(interval)
            now = clock()
            late_ms = (now - before - interval) * 1000.0
            self.samples.append((now, late_ms))
            self.window_max_ms = max(self.window_max_ms, late_ms)
            if now - window_start >= self.report_s:
                self.last_max_ms, self.window_max_ms = self.window_max_ms, 0.0
                window_start = now


class StreamProtocol(asyncio.Protocol):
    """One keep-alive connection; one request at a time; stamps every read."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.done: asyncio.Future | None = None
        self.lost = False

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport

    def send(self, request: bytes, t0: float | None = None) -> asyncio.Future:
        """Write one request (t0: when it started, before a new connection was opened; default now);
        the future resolves to (t0, first_token_s, done_s, chunks, error)."""
        self.done = asyncio.get_running_loop().create_future()
        self.head_checked = False
        self.first_s: float | None = None
        self.done_s: float | None = None
        self.chunks = 0
        self.buf = b""
        self.t0 = time.perf_counter() if t0 is None else t0
        assert self.transport is not None
        self.transport.write(request)
        return self.done

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if self.done is None or self.done.done():
            return
        seen = len(self.buf)
        text = self.buf + data
        if not self.head_checked:
            if len(text) < 12:
                self.buf = text
                return
            self.head_checked, seen = True, 0
            if not text.startswith(b"HTTP/1.1 200"):
                self._finish(f"status {text[9:12].decode(errors='replace')}")
                return
        if self.done_s is None:
            self._count(text, seen, now)
        if self.done_s is not None and BODY_END in text:
            self._finish("")
            return
        self.buf = text[-TAIL_BYTES:]

    def _count(self, text: bytes, seen: int, now: float) -> None:
        """Text chunks (non-empty content deltas) whose first byte is in this read (`text[seen:]`);
        the read holding the first one is the first token."""
        at = text.find(CONTENT, max(0, seen - len(CONTENT)))
        while at >= 0:
            first = at + len(CONTENT)
            if seen <= first < len(text) and text[first] != 0x22:  # 0x22: '"', an empty delta
                self.chunks += 1
                if self.first_s is None:
                    self.first_s = now
            at = text.find(CONTENT, first)
        if DONE in text:
            self.done_s = now

    def _finish(self, error: str) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_result((self.t0, self.first_s, self.done_s, self.chunks, error))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._finish("connection closed")


def build_request(port: int, body: bytes, request_id: str) -> bytes:
    return (b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n"
            b"accept: text/event-stream\r\nx-request-id: %s\r\ncontent-length: %d\r\n\r\n%s"
            % (port, request_id.encode(), len(body), body))


async def one_stream(port: int, index: int, start_delay_s: float, deadline: float, body: bytes,
                     lag: LagMonitor, rows: list[dict]) -> None:
    await asyncio.sleep(start_delay_s)
    loop = asyncio.get_running_loop()
    proto: StreamProtocol | None = None
    n = 0
    while time.perf_counter() < deadline:
        t0 = None
        if proto is None or proto.lost:
            t0 = time.perf_counter()  # a new connection's set-up counts in the TTFT, as in HTTP clients
            _, proto = await loop.create_connection(StreamProtocol, "127.0.0.1", port)
        n += 1
        request_id = f"ref-{index}-{n}"
        waiter = proto.send(build_request(port, body, request_id), t0)
        try:
            t0, first_s, done_s, chunks, error = await asyncio.wait_for(waiter, deadline - time.perf_counter())
        except TimeoutError:
            break  # cut by the end of the run: not written, as Locust drops its in-flight requests
        rows.append({"request_id": request_id, "t0": f"{t0:.6f}",
                     "ttft_ms": "" if first_s is None else f"{(first_s - t0) * 1000:.3f}",
                     "e2e_ms": "" if done_s is None else f"{(done_s - t0) * 1000:.3f}",
                     "chunks": chunks, "loop_lag_ms": f"{lag.loop_lag_ms:.3f}", "error": error})
        if error:
            assert proto.transport is not None
            proto.transport.close()
            proto = None
            await asyncio.sleep(0.1)
    if proto is not None and proto.transport is not None:
        proto.transport.close()


async def drive(port: int, streams: int, seconds: float, max_tokens: int,
                lags: list[tuple[float, float]] | None = None) -> list[dict]:
    body = json.dumps({"model": "llmload-sim", "stream": True, "max_tokens": max_tokens,
                       "messages": [{"role": "user", "content": PROMPT}]}).encode()
    deadline = time.perf_counter() + seconds
    lag = LagMonitor()
    rows: list[dict] = []
    monitor = asyncio.create_task(lag.run(deadline))
    await asyncio.gather(*(one_stream(port, i, i / streams, deadline, body, lag, rows) for i in range(streams)))
    await monitor
    if lags is not None:
        lags += lag.samples
    return rows


def run(port: int, streams: int, seconds: float, out: Path, max_tokens: int = 100, use_uvloop: bool = False,
        lags_out: Path | None = None) -> int:
    """Run the client (the standard asyncio loop, or uvloop's), write its samples CSV (and with `lags_out`
    every sleep's lateness: ts_s, lag_ms); returns the rows written."""
    lags: list[tuple[float, float]] = []
    if use_uvloop:
        import uvloop

        rows = uvloop.run(drive(port, streams, seconds, max_tokens, lags))
    else:
        rows = asyncio.run(drive(port, streams, seconds, max_tokens, lags))
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    if lags_out is not None:
        write_lags(lags_out, lags)
    return len(rows)


def write_lags(path: Path | str, lags: list[tuple[float, float]]) -> None:
    """Every 10 ms sleep of a loop-lag monitor: ts_s (perf_counter, the truth log's clock), lag_ms."""
    with open(path, "w", newline="") as f:
        f.write("ts_s,lag_ms\n")
        f.writelines(f"{ts:.6f},{lag:.3f}\n" for ts, lag in lags)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--port", type=int, required=True, help="embedded server port on 127.0.0.1")
    parser.add_argument("--streams", type=int, default=16, help="concurrent streams")
    parser.add_argument("--seconds", type=float, default=25.0, help="run length; then it stops by itself")
    parser.add_argument("--max-tokens", type=int, default=100, help="max_tokens of every request")
    parser.add_argument("--out", type=Path, required=True, help="samples CSV to write")
    parser.add_argument("--uvloop", action="store_true", help="uvloop's event loop instead of the standard one")
    parser.add_argument("--lags-out", type=Path, help="also write every 10 ms sleep's lateness here (CSV)")
    args = parser.parse_args(argv)
    run(args.port, args.streams, args.seconds, args.out, args.max_tokens, args.uvloop, args.lags_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
