"""Benchmark: how many shipped sample rows per second one master core can take.

In a distributed run every worker ships its samples.csv rows to the master (`llmload_rows`, once a
second); the master decodes the message and writes each row (tier stamp + CSV line) in its one
event loop, beside Locust's own work. This measures the master's CPU per row on the real code path:
a batch of realistic rows (every samples.csv column filled) goes through Locust's message
encoding (`locust.rpc.protocol.Message`, msgpack: the worker's side, timed separately), then the
master's decoding and `RowSink._receive` into a real samples.csv in a temp folder, with a tier
timeline of 10 tiers. Batches of 200 rows (a worker sending 200 requests/s); CPU time
(`time.process_time`), best of 5 rounds of 50,000 rows.

Histograms (`--ship histograms`): a worker sums its attempts into per-tier histograms and ships their
counts once a second, so the master's cost is per shipment, not per request. Measured the same way:
a worker's second at HIST_RPS requests/s (TTFT, e2e, TPOT, mean ITL, out tok/s and HIST_TOKENS - 1
inter-token gaps per request, lognormal spreads like a loaded server's) recorded into a
`HistogramBook` (the worker's CPU per request), its shipment through Locust's message encoding, then
the master's decoding, `RowSink._receive` (merge) and the second's flush of histograms.csv and
attempts.csv; best of ROUNDS rounds of HIST_SHIPMENTS shipments from different workers.

Result: results_dir/distributed.json with rows/s per master core (decode + write), the worker's
encode cost per row, the rows/s at which the master would spend half a core on rows (the
crossover docs/distributed.md quotes: beyond it, ship per-tier histograms instead of rows), and the
master's CPU per histogram shipment with the worker shipments per second half a core takes.
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
HIST_RPS = 2000
HIST_TOKENS = 128
HIST_SHIPMENTS = 20


def sample_row(i: int) -> dict:
    from llmload.contract import SAMPLE_COLUMNS

    row = {c: 12.345 for c in SAMPLE_COLUMNS}
    row.update(ts_start_s=1_800_000_000.0 + i * 0.005, request_id=f"a1b2c3-w3-{i % 64}-{i}", worker="w3",
               user=f"w3-{i % 64}", scenario="chat", endpoint="chat", transport="fast", tier="", phase="",
               status=200, error="", error_detail="", tokens_source="usage", model_requested="m",
               model_returned="m", retry_of="", retry_after_source="", finish_reason="length")
    return row


def _environment(run_dir: Path, ship: str = "rows"):
    from locust.env import Environment
    from locust.event import Events

    from llmload.sink.rows import RowSink
    from llmload.sink.timeline import Tier, Timeline

    env = Environment(events=Events())
    env.create_local_runner()
    timeline = Timeline()
    for tier in range(10):
        timeline.begin_tier(Tier(tier=tier + 1, start_s=1_800_000_000.0 + tier * 30, warmup_s=5.0))
    sink = RowSink(env, timeline)
    sink.open(run_dir, ship)
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


def worker_second(seed: int) -> tuple[dict, float]:
    """One worker's second of HIST_RPS requests as its histogram shipment; (payload, worker CPU s)."""
    import numpy as np

    from llmload.sink.histograms import HistogramBook

    rng = np.random.default_rng(seed)
    ttft = rng.lognormal(np.log(300.0), 0.5, HIST_RPS)
    tpot = rng.lognormal(np.log(25.0), 0.2, HIST_RPS)
    gaps = [sorted(rng.lognormal(np.log(t), 0.3, HIST_TOKENS - 1).tolist()) for t in tpot[:50]]
    rows = [{"status": 200, "error": "", "ttft_ms": round(float(a), 3), "e2e_ms": round(float(a + b * 127), 3),
             "tpot_ms": round(float(b), 3), "itl_mean_ms": round(float(b), 3), "out_tps": round(1000.0 / b, 3),
             "output_tokens": HIST_TOKENS, "input_tokens": 512, "retry_of": "", "retry_after_s": "",
             "schedule_lag_ms": ""} for a, b in zip(ttft, tpot)]
    book = HistogramBook(full=True)
    started = time.process_time()
    for i, row in enumerate(rows):
        book.record(row, gaps[i % len(gaps)], 3, "measure")
    return book.take(), time.process_time() - started


def hist_round(run_dir: Path) -> tuple[float, float, int]:
    """(worker CPU s per request, master CPU s per shipment, bucket pairs per shipment)."""
    from locust.rpc.protocol import Message

    env, sink = _environment(run_dir, ship="histograms")
    shipments, worker_s = [], 0.0
    for n in range(HIST_SHIPMENTS):
        payload, spent_s = worker_second(n)
        worker_s += spent_s
        shipments.append(Message("llmload_rows", {"samples": [], "health": [], "hist": payload}, f"w{n}").serialize())
    pairs = sum(len(h[3]) for h in worker_second(0)[0]["hists"])
    started = time.process_time()
    for wire in shipments:
        sink._receive(env, Message.unserialize(wire))
        sink.flush()  # the master writes what the second added (here: one flush per shipment, the worst case)
    master_s = time.process_time() - started
    sink.close_files()
    return worker_s / (HIST_SHIPMENTS * HIST_RPS), master_s / HIST_SHIPMENTS, pairs


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
    hist = []
    for n in range(ROUNDS):
        with tempfile.TemporaryDirectory() as tmp:
            hist.append(hist_round(Path(tmp) / f"hist{n}"))
    worker_req_s, shipment_s, pairs = min(h[0] for h in hist), min(h[1] for h in hist), hist[0][2]
    result = {
        "rows_per_s_per_master_core": round(rows_per_s),
        "master_us_per_row": round(min(receive) / ROWS * 1e6, 2),
        "worker_encode_us_per_row": round(min(encode) / ROWS * 1e6, 2),
        "half_core_rows_per_s": round(rows_per_s / 2),
        "batch_rows": BATCH, "rows_per_round": ROWS, "rounds": ROUNDS,
        "histograms": {
            "master_ms_per_shipment": round(shipment_s * 1e3, 3),
            "half_core_shipments_per_s": round(0.5 / shipment_s),
            "bucket_pairs_per_shipment": pairs, "requests_per_shipment": HIST_RPS,
            "worker_us_per_request": round(worker_req_s * 1e6, 2),
            "tokens_per_request": HIST_TOKENS,
        },
        "python": platform.python_version(), "machine": platform.machine(),
        "note": "CPU time on the project machine (2 shared cores); the master's event loop also runs "
                "Locust's stats and the shape, so keep rows under half a core",
    }
    (results_dir / "distributed.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(ROOT / "bench" / "results")
