"""A trace replay's capacity is said as the speed-up of the trace the SLO holds at and breaks at."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.layout import answer_items

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def capacity_line(run_dir: Path) -> str:
    run = load_run(run_dir)
    return dict(answer_items(analyze(run, choose_profile(run, "chat"))))["Capacity:"]


def test_a_trace_replay_names_the_speed_up_where_the_slo_breaks(tmp_path):
    """The openloop fixture's tiers (5 and 40 req/s) read as a trace of 5 req/s replayed at 1x and 8x."""
    run_dir = Path(shutil.copytree(FIXTURES / "openloop", tmp_path / "openloop"))
    plain = capacity_line(run_dir)
    assert "replay of the trace" not in plain  # an open-loop run that is no trace replay
    info = json.loads((run_dir / "run.json").read_text())
    info["shape"]["trace"] = {"rate_per_s_at_1x": 5.0, "speeds": [1, 8]}
    (run_dir / "run.json").write_text(json.dumps(info))
    line = capacity_line(run_dir)
    assert line.startswith(plain.split(" [profile")[0])  # the same capacity, with the speed-up after it
    assert "As a replay of the trace (5 req/s offered at its own speed): the SLO holds at 1x and breaks at 8x." \
        in line, line
