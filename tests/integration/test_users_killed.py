"""A `locust --headless` run killed with SIGKILL leaves a readable samples.csv."""

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llmload.contract import SAMPLE_COLUMNS
from llmload.server.launch import EmbeddedServer

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def data_rows(path: Path) -> int:
    if not path.exists():
        return 0
    return max(0, path.read_bytes().count(b"\n") - 1)


def test_sigkilled_run_keeps_its_samples(tmp_path):
    run_dir = tmp_path / "run"
    samples = run_dir / "samples.csv"
    with EmbeddedServer(["--preset", "exact"]) as server:
        cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--headless", "-u", "4",
               "-r", "4", "-t", "60s", "--host", server.url, "--run-dir", str(run_dir), "--max-tokens", "4",
               "--loglevel", "WARNING"]
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 20
            while data_rows(samples) < 20 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    with open(samples, newline="") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == SAMPLE_COLUMNS
    assert len(rows) - 1 >= 20
    for row in rows[1:]:
        assert len(row) == len(SAMPLE_COLUMNS)
        float(row[0])
        assert row[SAMPLE_COLUMNS.index("status")] == "200"
