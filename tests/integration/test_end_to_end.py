"""From a real headless step load on the embedded server to the capacity report and its confirmed plan.

The server has S slots and a FIFO queue, so the queueing onset the analysis reports must be S, and the plan
the run confirmed (15 s windows) must lie below the S slots' throughput.
This is the whole product chain: scenario -> embedded server -> Locust runner -> samples,
tiers -> analysis (in its own process, as a user runs it).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def run(cmd, timeout_s):
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("slots, tiers, slo", [(2, "1,2,4", "voice"), (4, "1,2,4,8", "")])
def test_step_load_report_finds_the_knee_at_the_slot_count(tmp_path, slots, tiers, slo):
    run_dir = tmp_path / "run"
    load = run([sys.executable, "-m", "locust", "-f", "scenarios/step_load.py", "--headless",
                "--embedded-server-args", f"--preset demo --slots {slots}", "--tiers", tiers,
                "--tier-seconds", "7", "--warmup-seconds", "2", "--spawn-rate", "50", "--max-tokens", "8",
                "--prompt-tokens", "32", "--run-dir", str(run_dir), "--csv", str(run_dir / "locust"),
                "--only-summary", "--slo-profile", slo, "--confirm-seconds", "15"], timeout_s=240)
    assert load.returncode == 0, load.stderr[-2000:]
    for name in ("samples.csv", "tiers.csv", "run.json", "health.csv", "locust_stats.csv"):
        assert (run_dir / name).exists(), name

    knee = run([sys.executable, "-m", "analysis", "knee", str(run_dir)], timeout_s=120)
    assert knee.returncode == 0, knee.stderr
    report = run([sys.executable, "-m", "analysis", "report", str(run_dir)], timeout_s=120)
    assert report.returncode == 0, report.stderr
    assert (run_dir / "report.html").stat().st_size > 10_000
    answer = report.stdout
    assert f"Queueing onset: at {slots} users" in knee.stdout, knee.stdout
    assert "queues" in answer  # the embedded server queues; it does not shed
    info = json.loads((run_dir / "run.json").read_text())
    assert info["host"].startswith("http://127.0.0.1:")
    assert info["slo_profile"] == slo
    assert f"under the {slo or 'chat'} SLO" in answer  # the run's use case judges it
    summary = json.loads((run_dir / "summary.json").read_text())
    plan, top = summary["plan"], max(t["ok_rps"] for t in summary["tiers"])
    assert plan["source"] in ("confirmed", "lowered by confirmation"), plan
    assert 0 < plan["rps"] < top and answer.splitlines()[-2].startswith(
        f"Plan: {plan['rps']:.2f} req/s per replica"), answer  # the sentence to act on, above the report's path
