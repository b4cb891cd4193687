"""Figures by load are drawn in load order, whatever order the tiers ran in (refinement appends tiers after the
planned ones), with the tiers --refine added ringed and the capacity the answer names marked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report import summary
from llmload.analysis.report.figures import figures

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
BY_LOAD = ("knee", "throughput", "queue_fit", "inflight", "latency_throughput")


def refined_run(tmp_path: Path) -> Path:
    """knee16 (1, 2, 4, 8, 16, 32 users) with its last tier made a refined 12-user tier: run order 1, 2, 4, 8, 16,
    12 (a refined tier between two planned ones, run last)."""
    run_dir = Path(shutil.copytree(FIXTURES / "knee16", tmp_path / "refined"))
    tiers = pd.read_csv(run_dir / "tiers.csv", keep_default_na=False)
    tiers["refined"] = [0, 0, 0, 0, 0, 1]
    tiers.loc[tiers.index[-1], "target_users"] = 12
    tiers.to_csv(run_dir / "tiers.csv", index=False)
    info = json.loads((run_dir / "run.json").read_text())
    info["shape"].update(tiers=[1, 2, 4, 8, 16], kind="step")  # as llmload's shapes write it (shaping/state.py)
    (run_dir / "run.json").write_text(json.dumps(info))
    return run_dir


def test_every_line_by_load_goes_forward_and_the_capacity_is_the_answers(tmp_path):
    run = load_run(refined_run(tmp_path))
    a = analyze(run, choose_profile(run, None))
    assert list(run.tiers["tier"]) == [1, 2, 3, 4, 5, 6] and list(a.table["load"])[-2:] == [16, 12]  # run order
    drawn = {name: fig for name, _caption, fig in figures(a)}
    assert set(BY_LOAD) <= set(drawn)
    for name in BY_LOAD:
        for ax in drawn[name].axes:
            for line in ax.get_lines():
                xs = np.asarray(line.get_xdata(), dtype=float)
                if name == "latency_throughput" or len(set(xs)) < 2:  # axvline/axhline: one x or one y
                    continue
                assert np.all(np.diff(xs) >= 0), f"{name}: {line.get_label()} goes back: {xs}"
    knee = drawn["knee"].axes[0]
    p95 = next(line for line in knee.get_lines() if line.get_label() == "TTFT p95")
    assert list(p95.get_xdata()) == [1, 2, 4, 8, 12, 16]
    rings = [c for c in knee.collections if c.get_label() == "tier added by --refine"]
    assert len(rings) == 1 and [float(x) for x, _y in rings[0].get_offsets()] == [12.0]
    capacity = [line for line in knee.get_lines() if line.get_label().startswith("capacity under the SLO")]
    cap = summary.summary(a)["capacity"]
    chosen = next(c for c in cap if c["chosen"])
    assert len(capacity) == 1 and capacity[0].get_xdata()[0] == chosen["load"] == a.capacity.load


def test_the_errors_figure_is_in_load_order_too(tmp_path):
    from llmload.analysis.report.figures import error_rates

    run = load_run(refined_run(tmp_path))
    a = analyze(run, choose_profile(run, None))
    assert list(error_rates(a).index) == sorted(error_rates(a).index)
