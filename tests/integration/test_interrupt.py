"""Ctrl-C as a terminal sends it (SIGINT to the whole foreground process group) during `llmload run`: the users
stop first, the embedded server last, the report of what was measured is written and says the run was interrupted,
and the report's path is the last line; a second Ctrl-C stops at once and says how to make the report later."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def start(tmp_path: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "llmload", "run", str(REPO / "scenarios" / "step_load.py"), "--tiers", "1,2,4",
           "--tier-seconds", "12", "--warmup-seconds", "2", "--run-dir", "run", "--max-tokens", "24"]
    # a session of its own: the test signals its process group as a terminal would; SIGINT at its default (a
    # suite started as a background job inherits it ignored)
    return subprocess.Popen(cmd, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_tier(run_dir: Path, tier: int, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        tiers = run_dir / "tiers.csv"
        if tiers.exists() and tiers.read_text().count("\n") > tier:  # header + a row per tier begun
            return
        time.sleep(0.2)
    raise AssertionError(f"tier {tier} did not begin in {timeout_s} s")


def finish(proc: subprocess.Popen, timeout_s: float = 120.0) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return out


def test_ctrl_c_in_tier_2_writes_the_report_of_what_ran_and_counts_no_cut_stream_as_a_failure(tmp_path):
    proc = start(tmp_path)
    run_dir = tmp_path / "run"
    wait_for_tier(run_dir, 2)
    time.sleep(5.0)  # into tier 2's measure window, with streams in flight
    os.killpg(proc.pid, signal.SIGINT)
    out = finish(proc)
    assert proc.returncode == 130, out[-3000:]
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[-1] == "report: run/report.html", lines[-5:]
    assert (run_dir / "report.md").exists() and (run_dir / "summary.json").exists()
    stopped = next(line for line in lines if line.startswith("Stopped early:"))
    assert stopped.startswith("Stopped early: the run was interrupted (Ctrl-C, SIGINT) during tier 2 (2 users), ")
    assert "s into its measure window of 10 s; 1 planned tier(s) never ran (4 users)" in stopped
    with open(run_dir / "samples.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and not [r for r in rows if r["error"]], [r["error"] for r in rows if r["error"]][:5]
    assert "Traceback" not in out


def test_a_second_ctrl_c_stops_at_once_and_says_how_to_make_the_report(tmp_path):
    proc = start(tmp_path)
    run_dir = tmp_path / "run"
    wait_for_tier(run_dir, 2)
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    t0 = time.monotonic()
    out = finish(proc, timeout_s=60.0)
    assert time.monotonic() - t0 < 20.0, out[-3000:]  # not the 60 s --stop-timeout
    assert proc.returncode == 130, out[-3000:]
    lines = [line for line in out.splitlines() if line.strip()]
    # the second Ctrl-C lands during the run's stop (no report) or, on a busy machine where the users stopped at
    # once, during its report (the report is stopped): either way one line says how to make it later
    assert lines[-1] in ("llmload run: interrupted twice: no report; make it with: llmload report run",
                         "llmload run: report interrupted; make it with: llmload report run"), lines[-5:]
    assert (run_dir / "samples.csv").exists() and json.loads((run_dir / "run.json").read_text())["end"]["reason"] \
        == "SIGINT"
    assert "Traceback" not in out
