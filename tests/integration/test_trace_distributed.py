"""A trace replayed by a master and two worker processes (`locust --headless --processes 2`) against the
embedded server: the merged samples.csv holds every record exactly once per tier, each worker sent exactly
its share (records by index modulo 2, a session's records on the worker of its first record), so a session
was sent by one worker.

Real processes, not tests/helpers.py `in_process_cluster`: the open-loop target lives in one object per
process (openloop/user.py CONTROL), so two workers in one process would share a single share.
"""

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from llmload.workload.trace import worker_records
from tests.helpers import processes_port_args, read_csv

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration
SESSION_OF = {1: "a", 4: "a", 9: "a", 14: "a", 2: "b", 7: "b", 12: "b", 19: "b", 5: "c", 6: "c", 23: "c", 28: "c"}


def write_trace(path: Path) -> list[dict]:
    """30 records over 0.87 s, every output length distinct (a sample's max_tokens names its record); three
    sessions of four records each, at odd and even indices, so the index-modulo split would cut each."""
    records = []
    for i in range(30):
        record = {"timestamp_s": round(0.03 * i, 3), "input_tokens": 16, "output_tokens": 2 + i}
        if i in SESSION_OF:
            record["session_id"] = SESSION_OF[i]
        records.append(record)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return records


def test_two_workers_send_each_record_once_and_a_session_from_one_worker(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact", truth_log=False)
    records = write_trace(tmp_path / "trace.jsonl")
    run_dir = tmp_path / "run"
    load = subprocess.run(
        [sys.executable, "-m", "locust", "-f", "scenarios/trace_replay.py", "--headless", "--processes", "2",
         *processes_port_args(),
         "--host", server.url, "--trace", str(tmp_path / "trace.jsonl"), "--trace-speeds", "1,2",
         "--trace-drain-s", "0.3", "--run-dir", str(run_dir), "--only-summary"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert load.returncode == 0, load.stderr[-2000:]
    by_output = {r["output_tokens"]: i for i, r in enumerate(records)}
    samples = read_csv(run_dir / "samples.csv")
    assert {r["tier"] for r in samples} == {"1", "2"}
    for tier in ("1", "2"):
        rows = [r for r in samples if r["tier"] == tier]
        sent = sorted(by_output[int(r["max_tokens"])] for r in rows)
        assert sent == list(range(len(records))), (tier, sent)  # each record once: none twice, none missing
        by_worker = defaultdict(set)
        for row in rows:
            by_worker[row["worker"]].add(by_output[int(row["max_tokens"])])
        assert len(by_worker) == 2, by_worker.keys()
        sessions = [r.get("session_id", "") for r in records]
        shares = [set(worker_records(len(records), sessions, k, 2)) for k in range(2)]
        assert sorted(by_worker.values(), key=min) == sorted(shares, key=min), by_worker  # the share rule
        for session in set(SESSION_OF.values()):
            members = {i for i, s in enumerate(sessions) if s == session}
            assert sum(bool(members & got) for got in by_worker.values()) == 1, session
