"""The unpinned generator bench: its reference client really measures, and its table computes ratios.

The reference client runs in a subprocess (as the bench runs it; this pytest process may be
gevent-patched by other tests) against the embedded server in the bench's own settings.
"""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.generator.common import read_truth, truth_ttft_ms
from bench.generator.table import RATIO_CLIENT, to_markdown, with_ratios
from bench.generator.unpinned import SERVER_ARGS, llmload_command, llmload_samples, read_lags, tpot_errors_ms
from llmload.server.launch import EmbeddedServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_reference_client_requests_are_in_the_truth_log_with_the_servers_ttft(tmp_path):
    truth_path, out, lags_path = tmp_path / "truth.csv", tmp_path / "reference.csv", tmp_path / "lags.csv"
    with EmbeddedServer([*SERVER_ARGS, "--truth-log", str(truth_path)]) as server:
        subprocess.run([sys.executable, "-m", "bench.reference_client", "--port", str(server.port),
                        "--streams", "4", "--seconds", "3", "--out", str(out), "--lags-out", str(lags_path)],
                       cwd=ROOT, timeout=30, check=True)
    truth = read_truth(truth_path)
    _assert_sleeps_cover(read_lags(tmp_path), truth, seconds=3)
    with open(out, newline="") as f:
        samples = list(csv.DictReader(f))
    assert len(samples) >= 4  # 4 streams, 1.2 s per answer, 3 s
    for sample in samples:
        assert sample["error"] == ""
        row = truth[sample["request_id"]]
        assert int(sample["chunks"]) == row["output_tokens"] == 100
        error_ms = float(sample["ttft_ms"]) - truth_ttft_ms(row)
        # lower bound below 0: the server stamps first_byte_s just after its send returns, so a
        # server preempted right there (a shared machine) stamps after the client's read
        assert -10 < error_ms < 50, (sample, row)
        assert float(sample["e2e_ms"]) > float(sample["ttft_ms"]) >= 200


def _assert_sleeps_cover(sleeps: list[tuple[float, float]], truth: dict, seconds: float) -> None:
    """Every 10 ms sleep of the run, dated on the truth log's clock (perf_counter), lateness >= 0."""
    assert len(sleeps) >= seconds * 100 * 0.5  # 10 ms sleeps (generous: a loaded machine)
    arrivals = [row["arrival_s"] for row in truth.values()]
    assert min(ts for ts, _ in sleeps) < min(arrivals) + 1.0 and max(ts for ts, _ in sleeps) > max(arrivals)
    assert all(lag >= -0.5 for _, lag in sleeps)


@pytest.mark.integration
def test_llmload_as_the_bench_runs_it_keeps_every_sleep_of_its_health_monitor(tmp_path):
    """lag_locustfile.py: the default user, plus the health monitor's sleeps written when Locust quits."""
    truth_path = tmp_path / "truth.csv"
    with EmbeddedServer([*SERVER_ARGS, "--truth-log", str(truth_path)]) as server:
        argv = llmload_command(server.url, 4, 4, tmp_path)
        subprocess.run(argv, cwd=ROOT, timeout=60, check=True, capture_output=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    truth = read_truth(truth_path)
    assert len(truth) >= 4  # the default user ran
    _assert_sleeps_cover(read_lags(tmp_path), truth, seconds=4)
    matched = [(s, truth[s["request_id"]]) for s in llmload_samples(tmp_path) if s["ok"] and s["request_id"] in truth]
    errors = tpot_errors_ms(matched)
    assert len(errors) >= 4 and all(abs(e) < 2.0 for e in errors)  # kernel-dated reads: the server's own pace


def test_table_puts_llmload_over_reference_ratios_after_each_stream_count():
    rows = [
        {"streams": 16, "client": "reference", "ttft_err_p50_ms": 0.5, "ttft_err_p99_ms": 2.0,
         "cpu_us_per_chunk": 10.0, "loop_lag_p99_ms": 0.0},
        {"streams": 16, "client": "llmload", "ttft_err_p50_ms": 1.0, "ttft_err_p99_ms": 3.0,
         "cpu_us_per_chunk": 25.0, "loop_lag_p99_ms": 4.0},
        {"streams": 16, "client": "aiperf", "skipped": "not installed"},
        {"streams": 64, "client": "reference", "cpu_us_per_chunk": 10.0},
        {"streams": 64, "client": "llmload", "skipped": "no samples"},
    ]
    table = with_ratios(rows)
    assert [r["client"] for r in table] == ["reference", "llmload", "aiperf", RATIO_CLIENT, "reference", "llmload"]
    ratio = table[3]
    assert ratio["streams"] == 16
    assert ratio["ttft_err_p50_ms"] == 2.0 and ratio["ttft_err_p99_ms"] == 1.5 and ratio["cpu_us_per_chunk"] == 2.5
    assert ratio["loop_lag_p99_ms"] is None  # reference 0: no ratio
    assert ratio["warm_ttft_err_p99_ms"] is None  # missing on both sides
    text = to_markdown(table)
    assert "| **2.5x** |" in text and "skipped: not installed" in text and "nan" not in text


@pytest.mark.integration
@pytest.mark.parametrize("reader", ["gevent", "reactor", "decode"])
def test_the_gevent_floor_reads_answers_back_to_back_and_stops_by_itself(tmp_path, reader):
    truth_path = tmp_path / "truth.csv"
    with EmbeddedServer([*SERVER_ARGS[:2], "--prefill-base-ms", "5", "--decode-ms-per-token", "1",
                         "--default-output-tokens", "10", "--truth-log", str(truth_path)]) as server:
        done = subprocess.run([sys.executable, "bench/gevent_floor.py", "--port", str(server.port), "--streams", "2",
                               "--seconds", "1", "--max-tokens", "10", "--reader", reader], cwd=ROOT, timeout=30,
                              check=True, capture_output=True, text=True)
    reads = int(done.stdout.split()[1].rstrip(","))
    answered = read_truth(truth_path)
    assert len(answered) >= 2  # at least one whole answer per stream
    if reader == "decode":  # the count is the text chunks decoded: every answer's 10 (the last may be cut)
        assert 10 * (len(answered) - 2) <= reads <= 10 * len(answered)
    else:
        assert reads >= 10 * 2  # one read per chunk, or fewer when chunks merged


@pytest.mark.integration
def test_the_cpu_ladder_runs_its_rungs_and_writes_its_table(tmp_path):
    from bench.generator.ladder import run_ladder

    # three rungs (the floor's readers run in the test above): the reactor decoding, llmload by Locust, over https
    rungs = ("decode", "llmload", "https")
    result = run_ladder(tmp_path, streams=2, seconds=4, rounds=1, warm_s=1.5, cool_s=0.3, rungs=rungs)
    assert [run["rung"] for run in result["runs"]] == list(rungs)
    for run in result["runs"]:  # every rung ran to its end and was measured
        assert run["returncode"] == 0 and run["chunks"] > 0 and run["cpu_us_per_chunk"] > 0, run
    assert [row["runs"] for row in result["table"]] == [0, 0, 1, 1, 1]
    text = (tmp_path / "generator_ladder_decode_llmload_https.md").read_text()
    assert "| llmload | 1 |" in text and "| gevent | 0 | - |" in text and "nan" not in text
    assert "https / plain (the `https` rung over `llmload` of the same round, median): " in text
    assert (tmp_path / "generator_ladder_decode_llmload_https.json").exists()
