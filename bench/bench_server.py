"""How many concurrent streams the embedded server serves on one core without drifting.

Method: the server runs pinned to one core in exact-timing mode (TTFT 50 ms, 20 ms per
token = 50 tokens/s, 100 tokens per stream); an asyncio client pinned to the other core
holds N keep-alive streams open back to back for `HOLD_S` seconds (started over
`RAMP_S`, as a spawn rate does; phase-locked starts make every chunk due at one instant). From the server's
truth log: first-byte lateness (written minus due, i.e. the server's own timing error
on TTFT) and end-of-stream drift (last byte written minus the time the configured
TTFT + 99 x ITL would give). The figure of merit is the largest N whose first-byte
lateness p99 stays within 2 ms.

Run: `make bench` (all) or `.venv/bin/python -m bench server`.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

from llmload.server.launch import EmbeddedServer

STREAMS = (100, 250, 500, 750, 1000)
HOLD_S = 8.0
WARMUP_S = 2.0
RAMP_S = 1.0
TTFT_MS, ITL_MS, TOKENS = 50.0, 20.0, 100
LATENESS_P99_TARGET_MS = 2.0


async def _one_stream_loop(port: int, deadline: float, body: bytes, start_delay_s: float) -> int:
    await asyncio.sleep(start_delay_s)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
               b"content-length: %d\r\n\r\n%s" % (len(body), body))
    done = 0
    try:
        while time.monotonic() < deadline:
            writer.write(request)
            tail = b""
            while True:
                data = await reader.read(65536)
                if not data:
                    return done
                tail = (tail + data)[-5:]
                if tail == b"0\r\n\r\n":
                    break
            done += 1
    finally:
        writer.close()
    return done


async def _drive(port: int, streams: int, hold_s: float) -> int:
    body = json.dumps({"model": "m", "stream": True, "max_tokens": TOKENS,
                       "messages": [{"role": "user", "content": "benchmark the server"}]}).encode()
    deadline = time.monotonic() + hold_s
    # streams start spread over RAMP_S (as a load generator's spawn rate does), not all at one instant
    counts = await asyncio.gather(*(_one_stream_loop(port, deadline, body, RAMP_S * i / streams)
                                    for i in range(streams)))
    return sum(counts)


def _run_client(port: int, streams: int) -> int:
    try:
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(_drive(port, streams, HOLD_S))
    finally:
        loop.close()


def measure(streams: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        truth = Path(tmp) / "truth.csv"
        args = ["--preset", "exact", "--prefill-base-ms", str(TTFT_MS), "--decode-ms-per-token", str(ITL_MS),
                "--truth-log", str(truth)]
        with EmbeddedServer(args) as server:
            cores = sorted(os.sched_getaffinity(0))
            if len(cores) >= 2:
                os.sched_setaffinity(server.proc.pid, {cores[0]})
                os.sched_setaffinity(0, set(cores[1:]))
            proc = psutil.Process(server.proc.pid)
            cpu0 = proc.cpu_times()
            started = time.monotonic()
            completed = _run_client(server.port, streams)
            wall_s = time.monotonic() - started
            cpu1 = proc.cpu_times()
            os.sched_setaffinity(0, set(cores))
        with open(truth) as f:
            rows = [r for r in csv.DictReader(f) if r["status"] == "200" and r["first_byte_s"]]
    t_first = min(float(r["arrival_s"]) for r in rows)
    measured = [r for r in rows if float(r["arrival_s"]) > t_first + WARMUP_S]
    lateness_ms = np.array([(float(r["first_byte_s"]) - float(r["first_byte_due_s"])) * 1000 for r in measured])
    drift_ms = np.array([(float(r["last_byte_s"]) - float(r["first_byte_due_s"])) * 1000 - (TOKENS - 1) * ITL_MS
                         for r in measured if r["last_byte_s"]])
    return {
        "streams": streams, "completed_streams": completed, "wall_s": round(wall_s, 2),
        "server_cpu_percent_of_one_core": round(
            100 * ((cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)) / wall_s, 1),
        "chunks_per_s_ideal": round(streams * 1000 / ITL_MS),
        "first_byte_lateness_ms": _pcts(lateness_ms),
        "end_drift_ms": _pcts(drift_ms),
        "meets_target": bool(len(lateness_ms) and np.percentile(lateness_ms, 99) <= LATENESS_P99_TARGET_MS),
    }


def _pcts(values: np.ndarray) -> dict:
    if not len(values):
        return {}
    return {"n": len(values), "p50": round(float(np.percentile(values, 50)), 3),
            "p99": round(float(np.percentile(values, 99)), 3), "max": round(float(values.max()), 3)}


def main(results_dir: Path) -> None:
    results = []
    for streams in STREAMS:
        result = measure(streams)
        results.append(result)
        late, drift = result["first_byte_lateness_ms"], result["end_drift_ms"]
        print(f"  {streams:5d} streams: first-byte lateness p50 {late.get('p50')} p99 {late.get('p99')} ms, "
              f"end drift p99 {drift.get('p99')} ms, server CPU {result['server_cpu_percent_of_one_core']} %",
              flush=True)
    best = max((r["streams"] for r in results if r["meets_target"]), default=0)
    summary = {"benchmark": "embedded server capacity on one core", "ttft_ms": TTFT_MS, "itl_ms": ITL_MS,
               "tokens_per_stream": TOKENS, "lateness_p99_target_ms": LATENESS_P99_TARGET_MS,
               "max_streams_meeting_target": best, "cpu_count": os.cpu_count(), "results": results,
               "when": time.strftime("%Y-%m-%d %H:%M:%S")}
    (results_dir / "server.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"  largest stream count within {LATENESS_P99_TARGET_MS} ms p99 first-byte lateness: {best}")
