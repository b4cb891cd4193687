"""A trace replay's capacity is said as the speed-up of the trace the SLO holds at and breaks at."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.layout import answer_items
from llmload.analysis.verdicts import trace_speed
from llmload.rules import capacity
from llmload.rules.slo import PROFILES
from llmload.rules.tier import Tier

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
    # 5 req/s met the SLO on 29 successes only (too few to bound its p95): no speed is shown to hold it
    assert ("As a replay of the trace (5 req/s offered at its own speed): no speed was shown to hold the SLO (too "
            "few samples); it breaks at 8x.") in line, line


def test_a_shown_capacity_is_said_as_the_speed_it_holds_and_the_one_it_breaks_at():
    met = Tier(tier=1, load=5.0, sent=300, ok=300, ttft_p95_ms=40.0, ttft_p95_upper_ms=45.0)
    missed = Tier(tier=2, load=40.0, sent=300, ok=300, ttft_p95_ms=900.0, ttft_p95_upper_ms=990.0)
    cap = capacity.capacity_under_slo([met, missed], PROFILES["chat"], unit="req/s")
    assert trace_speed.clause(cap, {"trace": {"rate_per_s_at_1x": 5.0}}) == \
        " As a replay of the trace (5 req/s offered at its own speed): the SLO holds at 1x and breaks at 8x."
