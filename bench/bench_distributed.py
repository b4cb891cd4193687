"""Benchmark: how many shipped sample rows per second one master core can take.

In a distributed run every worker ships its samples.csv rows to the master (`llmload_rows`, once a
second); the master decodes the message and writes each row (tier stamp + CSV line) in its one
event loop, beside Locust's own work. This measures the master's CPU per row on the real code path:
a batch of realistic rows (every samples.csv column filled) goes through Locust's message
encoding (`locust.rpc.protocol.Message`, msgpack: the worker's side, timed separately), then the
master's decoding and `RowSink._receive` into a real samples.csv in a temp folder, with a tier
timeline of 10 tiers. Batches of 200 rows (a worker sending 200 requests/s); CPU time
(`time.process_time`), best of 5 rounds of 50,000 rows.

Result: results_dir/distributed.json with rows/s per master core (decode + write), the worker's
encode cost per row, and the rows/s at which the master would spend half a core on rows (the
crossover docs/distributed.md quotes: beyond it, ship per-tier histograms instead of rows).
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BATCH = 200
ROWS = 50_000
ROUNDS = 5


def sample_row(i: int) -> dict:
    from llmload.contract import SAMPLE_COLUMNS

    row = {c: 12.345 for c in SAMPLE_COLUMNS}
    row.update(ts_start_s=1_800_000_000.0 + i * 0.005, request_id=f"a1b2c3-w3-{i % 64}-{i}", worker="w3",
               user=f"w3-{i % 64}", scenario="chat", endpoint="chat", transport="fast", tier="", phase="",
               status=200, error="", error_detail="", tokens_source="usage", model_requested="m",
               model_returned="m", retry_of="", retry_after_source="", finish_reason="length")
    return row


def _environment(run_dir: Path):
    from locust.env import Environment
    from locust.event import Events

    from llmload.run.sink import RowSink
    from llmload.run.timeline import Tier, timeline_for

    env = Environment(events=Events())
    env.create_local_runner()
    for tier in range(10):
        timeline_for(env).begin_tier(Tier(tier=tier + 1, start_s=1_800_000_000.0 + tier * 30, warmup_s=5.0))
    sink = RowSink(env)
    sink.open(run_dir)
    return env, sink


def one_round(run_dir: Path) -> tuple[float, float]:
    """(encode CPU s, decode + write CPU s) for ROWS rows."""
    from locust.rpc.protocol import Message

    env, sink = _environment(run_dir)
    batches = [[sample_row(b * BATCH + i) for i in range(BATCH)] for b in range(ROWS // BATCH)]
    started = time.process_time()
    wire = [Message("llmload_rows", {"samples": rows, "health": []}, "w3-node").serialize() for rows in batches]
    encode_s = time.process_time() - started
    started = time.process_time()
    for payload in wire:
        sink._receive(env, Message.unserialize(payload))
    sink.flush()
    receive_s = time.process_time() - started
    sink.close_files()
    return encode_s, receive_s


def main(results_dir: Path) -> None:
    sys.path.insert(0, str(ROOT))
    results_dir.mkdir(parents=True, exist_ok=True)
    encode, receive = [], []
    for n in range(ROUNDS):
        with tempfile.TemporaryDirectory() as tmp:
            e, r = one_round(Path(tmp) / f"run{n}")
        encode.append(e)
        receive.append(r)
    rows_per_s = ROWS / min(receive)
    result = {
        "rows_per_s_per_master_core": round(rows_per_s),
        "master_us_per_row": round(min(receive) / ROWS * 1e6, 2),
        "worker_encode_us_per_row": round(min(encode) / ROWS * 1e6, 2),
        "half_core_rows_per_s": round(rows_per_s / 2),
        "batch_rows": BATCH, "rows_per_round": ROWS, "rounds": ROUNDS,
        "python": platform.python_version(), "machine": platform.machine(),
        "note": "CPU time on the project machine (2 shared cores); the master's event loop also runs "
                "Locust's stats and the shape, so keep rows under half a core",
    }
    (results_dir / "distributed.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(ROOT / "bench" / "results")
