"""The end of a distributed run: in-flight requests finish on the workers and their rows reach
the master before it closes samples.csv (the drain), run.json counts the workers (`--processes -1`: one
per core, the way the docs say to run a big load), late rows are appended, and Locust's --csv writer never
runs on closed files."""

import json
import os
import subprocess
import sys
from pathlib import Path

import gevent
import pytest
from locust.env import Environment
from locust.event import Events

from llmload.contract import SAMPLE_COLUMNS
from llmload.run import locust_compat
from llmload.sink.rows import RowSink
from tests.helpers import processes_port_args, read_csv

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def test_processes_run_one_per_core_keeps_in_flight_rows_and_counts_workers(tmp_path, embedded_server):
    # 40 tokens at 20 ms: every user has a request in flight when the last tier ends
    server = embedded_server("--preset", "exact", "--decode-ms-per-token", "20")
    run_dir = tmp_path / "run"
    load = subprocess.run(
        [sys.executable, "-m", "locust", "-f", "scenarios/step_load.py", "--headless", "--processes", "-1",
         *processes_port_args(),
         "--host", server.url, "--no-confirm", "--tiers", "4", "--tier-seconds", "3", "--warmup-seconds", "1",
         "--max-tokens", "40", "--prompt-tokens", "16", "--run-dir", str(run_dir),
         "--csv", str(run_dir / "locust")],
        cwd=ROOT, capture_output=True, text=True, timeout=90,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert load.returncode == 0, load.stderr[-2000:]
    assert "Traceback" not in load.stderr and "CRITICAL" not in load.stderr, load.stderr[-2000:]
    server.stop()  # the truth log is complete once the server closed it
    samples = read_csv(run_dir / "samples.csv")
    assert {r["request_id"] for r in samples} == {r["request_id"] for r in read_csv(server.truth_path)}
    (tier,) = read_csv(run_dir / "tiers.csv")
    end_s = float(tier["end_s"])
    in_flight = [r for r in samples if float(r["ts_start_s"]) + float(r["e2e_ms"]) / 1000 > end_s]
    assert len(in_flight) >= 4  # the requests running at the end are there
    for r in samples:  # nothing sent after the last tier counts in it
        assert (r["phase"] == "after") == (float(r["ts_start_s"]) >= end_s)
    llm = [r for r in read_csv(run_dir / "locust_stats.csv") if r["Type"] == "LLM"]
    assert int(llm[0]["Request Count"]) == len(samples)
    assert json.loads((run_dir / "run.json").read_text())["workers"] == os.cpu_count()


def test_rows_after_close_are_appended_not_dropped(tmp_path, caplog):
    env = Environment(events=Events())
    env.create_local_runner()
    sink = RowSink(env)
    sink.open(tmp_path)
    sink.add_sample({"ts_start_s": 1.0, "request_id": "a"})
    sink.close_files()
    with caplog.at_level("WARNING"):
        sink.add_sample({"ts_start_s": 2.0, "request_id": "late"})
    rows = read_csv(tmp_path / "samples.csv")
    assert [r["request_id"] for r in rows] == ["a", "late"] and list(rows[0]) == list(SAMPLE_COLUMNS)
    assert sink.late_rows == 1 and "1 samples rows arrived after samples.csv was closed" in caplog.text


def test_quit_listener_stops_locusts_csv_writer_before_its_files_close(tmp_path, monkeypatch):
    from locust import stats

    monkeypatch.setattr(stats, "CSV_STATS_INTERVAL_SEC", 0.05)
    env = Environment(events=Events())
    env.create_local_runner()
    writer = stats.StatsCSVFileWriter(env, stats.PERCENTILES_TO_REPORT, str(tmp_path / "locust"), False)
    greenlet = gevent.spawn(writer.stats_writer)
    gevent.sleep(0.1)
    locust_compat.kill_csv_writer_greenlet(exit_code=0)  # what the `quit` event calls
    writer.close_files()  # Locust's shutdown(), right after `quit`
    gevent.sleep(0.2)
    assert greenlet.dead and greenlet.exception is None
