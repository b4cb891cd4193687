"""No hammering, clear reasons, against the embedded server on loopback (each run a few seconds):
impossible numbers start nothing, a wrong --model stops early quoting the server, failures and
429s make a user pause (--failure-backoff, --on-429), and a Retry-After above --max-retry-wait-s
is a `retry_after_too_long` failure instead of a sleep."""

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from locust import constant

from llmload.users import ChatUser
from tests.helpers import read_csv, run_locally

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


class Chat(ChatUser):
    scenario = "hammer"
    prompt_tokens = 8


class PacedChat(ChatUser):
    scenario = "paced"
    prompt_tokens = 8
    wait_time = constant(0.05)


def errors(run_dir):
    return Counter(r["error"] for r in read_csv(run_dir / "samples.csv"))


@pytest.mark.parametrize(("flag", "line"), [
    (["--max-tokens", "0"], "llmload: --max-tokens must be >= 1, got 0"),
    (["--prompt-tokens", "-3"], "llmload: --prompt-tokens must be >= 1, got -3"),
    (["--request-timeout-s", "0"], "llmload: --request-timeout-s must be > 0, got 0.0"),
    (["--host", "http://127.0.0.1:80000"], "llmload: --host must be an http(s) URL like http://127.0.0.1:8000 (the "
                                           "port must be 1-65535), got 'http://127.0.0.1:80000'"),
    (["--host", "127.0.0.1:8000"], "llmload: --host must be an http(s) URL like http://127.0.0.1:8000, got "
                                   "'127.0.0.1:8000'"),
])
def test_impossible_number_starts_nothing(tmp_path, flag, line):
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "scenarios" / "step_load.py"), "--headless",
           "--run-dir", str(tmp_path / "run"),
           "--no-confirm", "--tiers", "1", "--tier-seconds", "20", "--warmup-seconds", "0", *flag]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert out.count(f"{flag[0]} must be") == 1 and out.rstrip().endswith(line) and "Traceback" not in out, out
    assert "embedded server" not in out and not (tmp_path / "run").exists() and not (tmp_path / "reports").exists()


def test_wrong_model_stops_early_quoting_the_server(tmp_path, caplog, embedded_server):
    server = embedded_server("--preset", "exact", "--strict-model", truth_log=False)
    # 4 users: 5 attempts each, with failure-backoff pauses of ~0.1 and ~0.2 s before the last two
    env = run_locally(Chat, server.url, tmp_path / "run", ["--model", "gpt-nope", "--max-tokens", "2"],
                      users=4, seconds=3.0)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    assert {r["status"] for r in rows} == {"404"} and 20 <= len(rows) <= 24, len(rows)
    lines = [r.getMessage() for r in caplog.records if "requests all failed" in r.getMessage()]
    assert lines == [f"the first 20 requests all failed with HTTP 404 from {server.url}/v1: "
                     "'The model `gpt-nope` does not exist.'; check --model and the request options"]
    assert env.process_exit_code == 2 and env.runner.state == "stopped"
    assert {r["error_detail"] for r in rows} == {"The model `gpt-nope` does not exist."}
    end = json.loads((tmp_path / "run" / "run.json").read_text())["end"]
    assert end == {"reason": f"fatal: {lines[0]}", "planned": False, "detail": ""}


@pytest.mark.parametrize(("backoff", "lowest", "highest"), [("on", 6, 20), ("off", 60, 100000)])
def test_consecutive_failures_back_off(tmp_path, embedded_server, backoff, lowest, highest):
    server = embedded_server("--preset", "exact", "--fault-500-prob", "1", truth_log=False)
    run_locally(Chat, server.url, tmp_path / "run", ["--max-tokens", "2", "--failure-backoff", backoff],
                users=2, seconds=2.0)
    # on: per user 3 at once, then pauses of 0.1, 0.2, 0.4, 0.8 s (x U(0.5, 1.5)) -> 3 to 9 requests in 2 s
    kinds = errors(tmp_path / "run")
    assert set(kinds) == {"http_5xx"} and lowest <= kinds["http_5xx"] <= highest, kinds


@pytest.mark.parametrize(("mode", "most_429s"), [("wait", 2), ("ignore", 10000)])
def test_with_no_retries_a_429_still_waits_retry_after(tmp_path, embedded_server, mode, most_429s):
    server = embedded_server("--preset", "exact", "--rpm", "6", truth_log=False)  # Retry-After ~10 s
    run_locally(PacedChat, server.url, tmp_path / "run", ["--max-tokens", "2", "--on-429", mode],
                users=2, seconds=1.5)
    limited = errors(tmp_path / "run")["rate_limited"]
    assert 1 <= limited <= most_429s if mode == "wait" else limited > 10, limited


def test_retry_after_above_the_cap_is_a_failure_not_a_sleep(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact", "--rpm", "1", truth_log=False)  # Retry-After up to 60 s
    run_locally(PacedChat, server.url, tmp_path / "run", ["--max-tokens", "2", "--retries", "2",
                                                           "--max-retry-wait-s", "5"], users=1, seconds=2.5)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    too_long = [r for r in rows if r["error"] == "retry_after_too_long"]
    assert [r["error"] for r in rows][:2] == ["", "retry_after_too_long"]
    # not slept through: backoff 0.5 s * 2^k * U(0.5, 1.5) between them -> at least 3 in 2.5 s, none retried
    assert len(too_long) >= 3 and all(r["status"] == "429" and float(r["retry_after_s"]) > 5 for r in too_long)
    assert not any(r["retry_of"] for r in rows)
