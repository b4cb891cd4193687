"""A disk that fills mid-run, for real: a 100 KiB tmpfs as the run folder (when this machine lets the test
mount one), and a per-file size limit (RLIMIT_FSIZE, which every Linux process can set on itself). The first
failed write stops the load in one line, every attempt is either a samples.csv row or counted as unwritten
(against the embedded server's truth log, kept elsewhere), run.json says why the run ended, no .tmp file is
left behind, and the report says which share of the attempts it lacks."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import needs_privilege, read_csv

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def small_tmpfs(path: Path) -> bool:
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=100k", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


def run(tmp_path: Path, run_dir: Path, fsize: int | None) -> subprocess.CompletedProcess:
    truth = tmp_path / "truth.csv"
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "scenarios" / "step_load.py"), "--headless",
           "--host", "embedded", "--embedded-server-args", f"--preset exact --truth-log {truth}",
           "--run-dir", str(run_dir), "--no-confirm", "--tiers", "4", "--tier-seconds", "20", "--warmup-seconds", "1",
           "--max-tokens", "4"]

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90, preexec_fn=limit)


@pytest.mark.parametrize("how", ["tmpfs", "file-size-limit"])
def test_a_full_disk_stops_the_load_and_counts_every_row_it_cost(tmp_path, how):
    if how == "tmpfs":
        mount = tmp_path / "small"
        if not small_tmpfs(mount):
            needs_privilege("cannot mount a tmpfs here (needs root); the file-size-limit case covers the same path")
        run_dir, fsize, words = mount / "run", None, "disk full: writing samples.csv"
    else:
        run_dir, fsize, words = tmp_path / "run", 40_000, "cannot write (File too large): writing samples.csv"
    try:
        proc = run(tmp_path, run_dir, fsize)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, out[-3000:]
        assert out.count(words) == 1 and "the load is stopped" in out and "Traceback" not in out, out[-3000:]
        info = json.loads((run_dir / "run.json").read_text())
        assert words in info["end"]["reason"] and info["end"]["planned"] is False
        lost = info.get("unwritten_rows", {}).get("samples", 0)
        rows = read_csv(run_dir / "samples.csv")
        served = read_csv(tmp_path / "truth.csv")
        assert len(rows) + lost == len(served) and len(rows) > 50, (len(rows), lost, len(served))
        assert {r["request_id"] for r in rows} <= {r["request_id"] for r in served}
        assert f"rows that could not be written: {lost} samples" in out or lost == 0
        assert not [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".llmload")]
        report = subprocess.run([sys.executable, "-m", "analysis", "report", str(run_dir), "--out",
                                 str(tmp_path / "report")], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert report.returncode == 0, report.stderr
        assert "Stopped early: the run stopped (fatal: llmload: " + words in report.stdout
        if lost:
            assert f"{lost} of the {len(rows) + lost} attempts the generator made" in report.stdout
    finally:
        if how == "tmpfs":
            subprocess.run(["umount", str(tmp_path / "small")], capture_output=True)
