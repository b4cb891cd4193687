"""`python -m analysis` as a subprocess on fixture runs: files written, exit codes, one-line errors."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "runs"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analysis", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_report_writes_self_contained_html_md_and_plots(tmp_path):
    run_dir = Path(shutil.copytree(FIXTURES / "shed429", tmp_path / "shed429"))
    result = cli("report", str(run_dir), "--target-rps", "100", "--headroom", "0.25")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert f"report: {run_dir / 'report.html'}" in result.stdout
    assert "sheds load" in result.stdout  # the short answer; its long lines are in the report
    detail = (run_dir / "report.md").read_text()
    assert "**Compute saturation:** at 4 users" in detail and "**Queueing onset:** not reached" in detail
    plan = result.stdout.strip().splitlines()[-2]
    assert plan.startswith("Plan: ") and f"**Plan:** {plan.removeprefix('Plan: ')}" in detail  # the report's first
    assert re.search(r"Replica plan: for 100 req/s under the ide SLO: \d+ replicas of the tested deployment, each "
                     r"loaded to the planned \(unconfirmed\) [\d.]+ req/s\. The capacity may be higher", result.stdout)
    page = (run_dir / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 8
    assert not re.search(r"""(src|href)=['"]?(https?:|/|file:)""", page)
    md = (run_dir / "report.md").read_text()
    for name in re.findall(r"\]\(plots/(\w+)\.png\)", md):
        assert (run_dir / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
    assert "Provider acceptance checklist" in md and "with Retry-After" in md


def test_plots_command_writes_pngs(tmp_path):
    result = cli("plots", str(FIXTURES / "partial"), "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert len(list((tmp_path / "p").glob("*.png"))) == 8


@pytest.mark.parametrize("args", [
    ("report", "{tmp}/missing"),
    ("tiers", "{tmp}"),
    ("knee", "{root}/tests"),
    ("compare", "{fixtures}/knee16"),
    ("report", "{fixtures}/knee16", "--target-users", "-3"),
    ("watch", "{fixtures}/knee16", "--slo", "batch"),
])
def test_bad_input_is_one_line_on_stderr_with_exit_2(tmp_path, args):
    argv = [a.format(tmp=tmp_path, root=ROOT, fixtures=FIXTURES) for a in args]
    result = cli(*argv)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("analysis: error: ")


def test_watch_fail_on_breach_sets_exit_code():
    run = str(FIXTURES / "knee16")
    breached = cli("watch", run, "--window-s", "10", "--threshold-ms", "200", "--fail-on-breach")
    assert breached.returncode == 1 and "BREACH" in breached.stdout
    clean = cli("watch", run, "--window-s", "10", "--threshold-ms", "5000", "--fail-on-breach")
    assert clean.returncode == 0 and "No breach" in clean.stdout


def test_a_report_for_another_slo_goes_beside_the_runs_own(tmp_path):
    run_dir = Path(shutil.copytree(ROOT / "tests" / "fixtures" / "runs" / "knee16", tmp_path / "knee16"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    own = subprocess.run([sys.executable, "-m", "analysis", "report", str(run_dir)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert own.returncode == 0, own.stderr
    own_md = (run_dir / "report.md").read_text()
    voice = subprocess.run([sys.executable, "-m", "analysis", "report", str(run_dir), "--slo", "voice"], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=120)
    assert voice.returncode == 0, voice.stderr
    assert (run_dir / "report.md").read_text() == own_md  # the run's own (ide, from run.json) is untouched
    assert "under the voice SLO" in (run_dir / "report-voice.md").read_text()
    assert (run_dir / "summary-voice.json").exists() and list((run_dir / "plots-voice").glob("*.png"))
    assert "](plots-voice/" in (run_dir / "report-voice.md").read_text()
    assert voice.stdout.strip().splitlines()[-1] == f"report: {run_dir / 'report-voice.html'}"
    again = subprocess.run([sys.executable, "-m", "analysis", "report", str(run_dir), "--slo", "ide"], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=120)
    assert again.stdout.strip().splitlines()[-1] == f"report: {run_dir / 'report.html'}"  # its own SLO: report.md
