"""Partial runs tell the truth: run.json's `end` says how a real `locust --headless` run ended,
and an interrupted run exits non-zero unless its stop was planned (-t, the shape finished).
Each run is a few seconds against the embedded server (the `exact` preset, short answers)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from locust import constant

from llmload.users import ChatUser
from tests.helpers import run_locally

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
SERVER = ["--embedded-server-args", "--preset exact", "--max-tokens", "4", "--only-summary"]


def locust(run_dir: Path, *args: str, scenario: str = "scenarios/step_load.py") -> subprocess.Popen:
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / scenario), "--headless", "--run-dir", str(run_dir),
           *SERVER, *args]
    # SIGINT at its default in the child, as `locust` typed in a shell has it: a test suite started as a
    # background job (`cmd &`) inherits SIGINT ignored, and the child would then ignore the test's SIGINT
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def finish(proc: subprocess.Popen, timeout_s: float = 60) -> str:
    try:
        _, err = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return err


def end_of(run_dir: Path) -> dict | None:
    return json.loads((run_dir / "run.json").read_text())["end"]


def wait_for_rows(run_dir: Path, rows: int = 5, timeout_s: float = 30) -> None:
    samples = run_dir / "samples.csv"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if samples.exists() and samples.read_bytes().count(b"\n") > rows:
            return
        time.sleep(0.2)
    pytest.fail(f"no {rows} sample rows in {timeout_s} s")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_run_says_so_and_exits_non_zero(tmp_path, sig, code):
    run_dir = tmp_path / "run"
    proc = locust(run_dir, "--no-confirm", "--tiers", "1,2", "--tier-seconds", "30", "--warmup-seconds", "0")
    wait_for_rows(run_dir)
    proc.send_signal(sig)
    err = finish(proc)
    assert proc.returncode == code, err[-2000:]
    assert end_of(run_dir) == {"reason": sig.name, "planned": False, "detail": ""}
    assert "Traceback" not in err, err[-2000:]


def test_finished_shape_is_a_planned_end_with_exit_code_0(tmp_path):
    run_dir = tmp_path / "run"
    proc = locust(run_dir, "--no-confirm", "--tiers", "1", "--tier-seconds", "2", "--warmup-seconds", "0")
    err = finish(proc)
    assert proc.returncode == 0, err[-2000:]
    assert end_of(run_dir) == {"reason": "shape finished", "planned": True, "detail": "last tier done"}


def test_run_time_without_a_shape_is_a_planned_end(tmp_path):
    run_dir = tmp_path / "run"
    proc = locust(run_dir, "-u", "1", "-r", "1", "-t", "2s", scenario="locustfile.py")
    err = finish(proc)
    assert proc.returncode == 0, err[-2000:]
    assert end_of(run_dir) == {"reason": "-t", "planned": True, "detail": "--run-time 2 s"}


def test_fatal_stop_is_recorded_with_its_line(tmp_path):
    run_dir = tmp_path / "run"
    proc = locust(run_dir, "-u", "1", "-r", "1", "-t", "20s", "--embedded-server-args",
                  "--preset exact --api-key sk-Right", "--api-key", "sk-Wrong", scenario="locustfile.py")
    err = finish(proc)
    assert proc.returncode == 2, err[-2000:]
    end = end_of(run_dir)
    assert end["reason"].startswith("fatal: HTTP 401 from http://127.0.0.1:") and not end["planned"], end
    assert "sk-Wrong" not in (run_dir / "run.json").read_text()


def test_killed_run_leaves_end_empty(tmp_path):
    run_dir = tmp_path / "run"
    proc = locust(run_dir, "-u", "1", "-r", "1", "-t", "30s", scenario="locustfile.py")
    wait_for_rows(run_dir)
    proc.kill()
    finish(proc)
    assert end_of(run_dir) is None


class Chat(ChatUser):
    scenario = "ui"
    prompt_tokens = 8
    wait_time = constant(0.05)


def test_web_ui_stop_is_recorded_when_the_run_stops(tmp_path, embedded_server):
    """A runner without --headless (as the web UI runs it): the end is written at the stop, not at quit."""
    server = embedded_server("--preset", "exact", truth_log=False)
    run_dir = tmp_path / "run"
    env = run_locally(Chat, server.url, run_dir, ["--max-tokens", "2"], users=1, seconds=1.0)
    assert end_of(run_dir) == {"reason": "stopped from the web UI", "planned": False, "detail": ""}
    assert env.process_exit_code is None
