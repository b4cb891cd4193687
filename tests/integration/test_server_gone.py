"""A server that dies mid-run is named as such, live and in the report, never blamed on the load.

The embedded server is SIGKILLed by its PID (a process these tests started) while a real load runs
against it: a headless `locust` step run whose server never comes back stops in one line (exit code 2)
and its report names the outage and leaves the killed tier out of the verdicts; a LocalRunner run whose
server is started again on the same port logs both the outage and the return, and goes on.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from llmload.server.launch import EmbeddedServer
from tests.helpers import read_csv

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
SERVER = ["--preset", "exact", "--prefill-base-ms", "20", "--decode-ms-per-token", "2", "--seed", "1"]


def kill(server: EmbeddedServer) -> None:
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(timeout=10)


def test_killed_server_stops_the_run_and_the_report_excludes_the_outage(tmp_path):
    server = EmbeddedServer(SERVER).start()
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "scenarios" / "step_load.py"), "--headless",
           "--host", server.url, "--run-dir", str(run_dir), "--warmup-seconds", "0.5", "--no-confirm", "--tiers", "2,4",
           "--tier-seconds", "7", "--max-tokens", "16", "--server-gone-timeout-s", "2", "--no-refine"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 40
        while not any("tier 1 done" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # into the 4-user tier: the stop comes 2-4 s later, before its end
        kill(server)
        rc = proc.wait(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.stop()
    reader.join(timeout=5)
    out = "".join(lines)
    assert rc == 2, out
    assert out.count("stopped answering at") == 1 and "(connection refused) after" in out, out
    assert out.count("did not come back within 2 s") == 1 and "Traceback" not in out, out
    rows = read_csv(run_dir / "samples.csv")
    errors = [r["error"] for r in rows]
    assert errors.count("server_gone") >= 4 and "connect" not in errors
    first_gone = min(float(r["ts_start_s"]) for r in rows if r["error"] == "server_gone")
    assert all(r["error"] in ("", "stream_broken") for r in rows if float(r["ts_start_s"]) < first_gone - 0.5)

    report = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "analysis", "report", str(run_dir), "--out", str(report)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    text = (report / "report.md").read_text()
    assert "The server was unreachable from " in text and "did not come back" in text, text
    assert "left out of the knees, the capacity and the saturation verdict" in text, text
    assert "below 4 users" not in text and "other errors (5xx, broken streams, protocol)" not in text, text


def test_server_back_on_the_same_port_the_run_goes_on(tmp_path, caplog):
    import gevent

    from tests.helpers import run_locally
    from tests.integration.test_users_fatal_stops import Chat

    server = EmbeddedServer(SERVER).start()
    again = EmbeddedServer(SERVER, port=server.port)

    def outage() -> None:
        kill(server)
        gevent.sleep(1.5)
        again.start()

    gevent.spawn_later(1.5, outage)
    try:
        env = run_locally(Chat, server.url, tmp_path / "run", ["--max-tokens", "8", "--server-gone-timeout-s", "20"],
                          users=3, seconds=5.0)
    finally:
        again.stop()
        server.stop()
    messages = [r.getMessage() for r in caplog.records]
    gone = [m for m in messages if "stopped answering at" in m]
    back = [m for m in messages if "answers again at" in m]
    assert len(gone) == 1 and len(back) == 1, messages
    assert f"the server at {server.url}/v1 stopped answering" in gone[0] and "(connection refused)" in gone[0]
    away_s = float(back[0].split("after ", 1)[1].split(" s away")[0])
    assert 1.0 < away_s < 6.0, back[0]
    assert env.process_exit_code in (None, 0)
    rows = read_csv(tmp_path / "run" / "samples.csv")
    last_gone = max(float(r["ts_start_s"]) for r in rows if r["error"] == "server_gone")
    assert any(r["error"] == "" and float(r["ts_start_s"]) > last_gone for r in rows)
    assert "connect" not in {r["error"] for r in rows}
