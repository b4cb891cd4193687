"""How a shape run ends, with real `locust --headless` processes against the embedded server:
-t caps it, SIGTERM ends it cleanly, a bad flag exits 2 before anything starts.

Every check compares with the server's truth log: requests in flight when the run stops must
finish (--stop-timeout) and reach samples.csv.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import read_csv

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
# exact preset, 20 ms per token: a 40-token answer streams ~0.8 s, so one is in flight at any stop
SERVER = ("--preset", "exact", "--decode-ms-per-token", "20")


def locust_cmd(server, run_dir, *flags):
    return [sys.executable, "-m", "locust", "-f", "scenarios/step_load.py", "--headless", "--host", server.url,
            "--run-dir", str(run_dir), "--max-tokens", "40", "--prompt-tokens", "16", "--only-summary", *flags]


def assert_samples_match_truth(run_dir, server):
    server.stop()  # the truth log is complete once the server closed it
    samples = read_csv(run_dir / "samples.csv")
    served = {r["request_id"] for r in read_csv(server.truth_path)}
    assert samples and {r["request_id"] for r in samples} == served
    return samples


def test_run_time_caps_a_shape_run(tmp_path, embedded_server):
    server = embedded_server(*SERVER)
    run_dir = tmp_path / "run"
    t0 = time.monotonic()
    load = subprocess.run(locust_cmd(server, run_dir, "--no-confirm", "--tiers", "2,4", "--tier-seconds", "60",
                                     "--warmup-seconds", "1", "-t", "3s"),
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=ENV)
    assert load.returncode == 0, load.stderr[-2000:]
    assert time.monotonic() - t0 < 20
    (tier,) = read_csv(run_dir / "tiers.csv")
    assert float(tier["end_s"]) - float(tier["start_s"]) == pytest.approx(3.0, abs=0.5)
    info = json.loads((run_dir / "run.json").read_text())
    assert info["shape"]["stopped"] == "-t/--run-time 3s reached" and info["ended_unix"]
    assert_samples_match_truth(run_dir, server)


def test_sigterm_ends_a_shape_run_cleanly(tmp_path, embedded_server):
    server = embedded_server(*SERVER)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen(locust_cmd(server, run_dir, "--no-confirm", "--tiers", "2", "--tier-seconds", "60",
                                       "--warmup-seconds", "1"),
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(read_csv(server.truth_path)) < 3:
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err[-2000:]  # interrupted, not planned: 128 + SIGTERM (run/lifecycle/ending.py)
    assert "got SIGTERM" in err and "Traceback" not in err
    (tier,) = read_csv(run_dir / "tiers.csv")
    assert tier["end_s"]
    info = json.loads((run_dir / "run.json").read_text())
    assert info["ended_unix"] and info["shape"]["stopped"] == "SIGTERM"
    assert info["end"]["reason"] == "SIGTERM" and info["end"]["planned"] is False
    samples = assert_samples_match_truth(run_dir, server)  # in-flight ones finished
    assert len(samples) >= 3


def test_bad_shape_flag_exits_2_with_one_line_before_anything_starts(tmp_path):
    run_dir = tmp_path / "run"
    load = subprocess.run([sys.executable, "-m", "locust", "-f", "scenarios/step_load.py", "--headless",
                           "--no-confirm", "--tiers", "4", "--tier-seconds", "10", "--warmup-seconds", "10",
                           "--run-dir", str(run_dir)],  # a warm-up the user gave (the default adapts: plans.py)
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=ENV)
    assert load.returncode == 2
    errors = [line for line in load.stderr.splitlines() if "ERROR" in line or "Traceback" in line]
    assert len(errors) == 1 and "--warmup-seconds must be >= 0 and < the tier length (10s)" in errors[0]
    assert "embedded server" not in load.stderr and not run_dir.exists()
