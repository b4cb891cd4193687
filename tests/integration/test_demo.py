"""`llmload demo` (`make demo`, the README's first command) end to end on its own command path, with short tiers:
the embedded server, the step load, the refinement and the confirmation flags it passes, the report, the last line
naming the report. (Its full size, ~3.5 min, is `make demo` itself.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmload import demo
from llmload.cli.main import main

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def test_the_demo_runs_its_load_and_writes_its_report(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(demo, "ROOT", tmp_path)  # reports/ under tmp_path, the checkout's scenario all the same
    monkeypatch.setattr(demo, "TIERS", "1,4")
    monkeypatch.setattr(demo, "TIER_SECONDS", 6)
    monkeypatch.setattr(demo, "WARMUP_SECONDS", 1)
    monkeypatch.setattr(demo, "REFINE_TIERS", 0)
    monkeypatch.setattr(demo, "CONFIRM_SECONDS", 6)
    monkeypatch.setattr(demo, "CONFIRM_STEPS", 0)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    assert main(["demo"]) == 0
    out = capfd.readouterr().out
    runs = sorted((tmp_path / "reports").glob("demo-*"))
    assert len(runs) == 1
    run_dir = runs[0]
    assert out.startswith("llmload demo: embedded server with 4 slots, step load over 2 tiers (1,4 users) of 6 s")
    assert out.strip().splitlines()[-1] == f"llmload demo done. Open {run_dir / 'report.html'}"
    assert (run_dir / "report.html").exists() and (run_dir / "report.md").exists()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["shape"]["tiers"] == [1, 4] and info["slo_profile"] == "chat"
    assert info["options"]["embedded_server_args"] == "--preset demo --slots 4"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["plan"]["source"] in ("confirmed", "lowered by confirmation", "not confirmed")
    assert [t["load"] for t in summary["tiers"]][:2] == [1, 4]
    answer = [line for line in out.splitlines() if line.startswith("Plan:")]
    assert len(answer) == 1 and answer[0] == f"Plan: {summary['plan']['sentence']}"
