"""Runs that cannot work stop at once with one line (exit code 2, no traceback); waits end at the stop.

Headless `locust` subprocesses for what only the real command shows (exit code, tracebacks
printed by gevent, two runner stops racing at a 401), Locust's LocalRunner for the rest.
"""

import subprocess
import sys
from pathlib import Path

import pytest
from locust import constant

from llmload.users import ChatUser
from tests.helpers import JSON_BODY, canned_server, read_csv, run_locally

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


class Chat(ChatUser):
    scenario = "guard"
    prompt_tokens = 8


class PacedChat(ChatUser):
    scenario = "paced"
    prompt_tokens = 8
    wait_time = constant(0.05)


def locust_headless(tmp_path, *args: str, timeout_s: float = 60) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "scenarios" / "step_load.py"), "--headless",
           "--run-dir", str(tmp_path / "run"), "--warmup-seconds", "0", *args]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout_s)


def run_local(user_class, url, run_dir, args, users=4, seconds=1.5):
    """LocalRunner run; returns the environment and how long runner.quit() took (s)."""
    env = run_locally(user_class, url, run_dir, args, users=users, seconds=seconds)
    return env, env.quit_s


def stop_lines(caplog, text):
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_bad_host_one_line_exit_2_no_traceback(tmp_path):
    proc = locust_headless(tmp_path, "--host", "foo", "--tiers", "2", "--tier-seconds", "5")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert out.count("--host must be an http(s) URL") == 1 and "Traceback" not in out, out


def test_llmload_run_against_an_unreachable_host_ends_within_seconds_on_its_cause(tmp_path):
    import os
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "llmload", "run", "--host", f"http://127.0.0.1:{port}/v1",
                           "--tiers", "1,2", "--tier-seconds", "10"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    took_s = time.monotonic() - t0
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 2, lines[-10:]
    assert lines[-1] == (f"llmload run: stopped: cannot connect to 127.0.0.1:{port}: connection refused; check "
                         "--host (no report)"), lines[-5:]
    assert took_s < 15.0, took_s  # 5 refused connects in ~1.5 s, then Locust's own shutdown
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("transport", ["fast", "openai"])
def test_401_stops_cleanly_under_a_shape(tmp_path, transport):
    """Our stop and the shape's end used to race: 'Tried to stop User in an unexpected state' tracebacks."""
    proc = locust_headless(tmp_path, "--embedded-server-args", "--preset exact --api-key sk-R", "--api-key",
                           "sk-W", "--transport", transport, "--tiers", "8", "--tier-seconds", "10")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert out.count("the API key was refused") == 1 and "Traceback" not in out, out


@pytest.mark.parametrize("transport", ["fast", "openai"])
def test_unreachable_host_backs_off_then_stops(tmp_path, caplog, transport):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env, _ = run_local(Chat, f"http://127.0.0.1:{port}", tmp_path / "run", ["--transport", transport],
                       users=4, seconds=3.0)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    # 4 users: 4 failures at once, then a pause of 0.1 s each: the 5th failure stops the run (the other users'
    # attempts in flight then end too)
    assert 5 <= len(rows) <= 8 and {r["error"] for r in rows} == {"connect"}
    assert stop_lines(caplog, "check --host") == [
        f"cannot connect to 127.0.0.1:{port}: connection refused; check --host"]
    assert env.process_exit_code == 2 and env.runner.state == "stopped"


@pytest.mark.parametrize("transport", ["fast", "openai"])
def test_non_streaming_endpoint_stops_the_run(tmp_path, caplog, transport):
    server = canned_server("application/json", JSON_BODY)
    try:
        env, _ = run_local(Chat, f"http://127.0.0.1:{server.server_port}", tmp_path / "run",
                           ["--transport", transport], users=2, seconds=1.0)
    finally:
        server.stop()
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert 5 <= len(rows) <= 7 and {r["error"] for r in rows} == {"protocol"}
    assert {r["error_detail"] for r in rows} == {"not an SSE response (content-type: application/json)"}
    assert len(stop_lines(caplog, "does not stream")) == 1 and env.process_exit_code == 2


def test_retry_after_capped_by_the_request_budget(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact", "--rpm", "1", truth_log=False)  # Retry-After up to 60 s
    run_local(PacedChat, server.url, tmp_path / "run", ["--max-tokens", "2", "--retries", "3",
                                                        "--request-timeout-s", "0.6"], users=1, seconds=1.5)
    rows = {r["request_id"]: r for r in read_csv(tmp_path / "run" / "samples.csv")}
    retries = [r for r in rows.values() if r["retry_of"]]
    assert retries
    for r in retries:
        previous = rows[r["retry_of"]]
        assert float(previous["retry_after_s"]) > 10
        assert float(r["ts_start_s"]) - float(previous["ts_start_s"]) < 0.6 + 0.3


def test_retry_wait_ends_at_the_stop(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact", "--rpm", "1", truth_log=False)
    _, quit_s = run_local(PacedChat, server.url, tmp_path / "run", ["--max-tokens", "2", "--retries", "3"],
                          users=1, seconds=1.0)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert [r["error"] for r in rows][:2] == ["", "rate_limited"]
    assert quit_s < 1.0  # the user waiting out Retry-After is stopped at once, not after --stop-timeout (5 s)
