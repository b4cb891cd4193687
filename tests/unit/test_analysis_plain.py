"""Runs without a load shape (no tiers.csv, every row tier 0): each row's phase is honoured, a later ramp is its
own tier, a warm-up that never ended is said plainly, and the window ends when the run stopped sending."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pandas as pd

from llmload.analysis import text
from llmload.analysis.analyze import analyze
from llmload.analysis.read import ramps
from llmload.analysis.read.run import load_run
from llmload.analysis.report.answer import answer_items
from llmload.analysis.synthetic import write_run
from llmload.analysis.tables.tiers import tier_table
from llmload.rules.slo import PROFILES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))
import fixture_faults as ff  # noqa: E402
import make_fixtures  # noqa: E402

CHAT = PROFILES["chat"]


def copy_fixture(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(FIXTURES / "runs" / name, tmp_path / name))


def shaped_twin(tmp_path: Path) -> Path:
    """plainramps as the step shape the simulation ran (tiers.csv, run.json's shape)."""
    server, run, _ = make_fixtures.FIXTURES["plainramps"]
    return write_run(tmp_path / "shaped", server, run)


def test_a_later_ramp_is_its_own_tier_and_no_warmup_row_is_measured(tmp_path):
    run = load_run(FIXTURES / "runs" / "plainramps")
    samples = run.samples
    assert run.plain and run.ramps == 2 and not run.warm_only
    assert list(run.tiers["load"]) == [8.0, 16.0] and run.tiers["complete"].all()
    # the measured rows are exactly the rows the generator stamped measure: the second ramp's warm-up is not
    assert (samples["measured"] == (samples["phase"] == "measure")).all()
    second = samples[samples["tier"] == 1]
    assert (second["phase"] == "warmup").sum() > 100 and not second.loc[second["phase"] == "warmup", "measured"].any()
    assert not any("tiers.csv" in n or "end_s" in n for n in run.notes)  # normal for a run without a shape
    # the same tiers, windows and counts as the step shape the simulation ran
    twin = load_run(shaped_twin(tmp_path))
    for col in ("start_s", "measure_start_s", "end_s"):
        assert (run.tiers[col] - twin.tiers[col]).abs().max() < 0.01, col
    counts = samples[samples["measured"]].groupby("tier").size().tolist()
    assert counts == twin.samples[twin.samples["measured"]].groupby("tier").size().tolist()


def test_workers_each_leave_the_warmup_and_their_users_add_up(tmp_path):
    server, sim, _ = make_fixtures.FIXTURES["plainramps"]
    path = write_run(tmp_path / "two", server, sim)
    ff.plain_run(path, workers=2)
    run = load_run(path)
    assert list(run.tiers["load"]) == [8.0, 16.0]  # 4 + 4 users, then 8 + 8
    frame = run.samples
    w1_first = frame.loc[(frame["worker"] == "w1") & (frame["phase"] == "measure"), "ts_start_s"].min()
    assert run.tiers["measure_start_s"].iloc[0] == w1_first  # when the last worker left its warm-up
    assert not frame.loc[frame["phase"] == "warmup", "measured"].any()


def test_a_warmup_that_never_ended_is_said_in_one_line_and_every_row_counts(tmp_path):
    path = copy_fixture(tmp_path, "plainramps")
    samples = pd.read_csv(path / "samples.csv", keep_default_na=False, dtype=str)
    samples["phase"] = "warmup"
    samples.to_csv(path / "samples.csv", index=False)
    run = load_run(path)
    assert run.warm_only and run.samples["measured"].all()
    a = analyze(run, CHAT)
    lead, sentence = answer_items(a)[1]  # after the plan
    assert lead == "Warm-up only:" and sentence == ramps.warm_only_sentence(run.info)
    assert sentence.startswith("the warm-up never ended before the run stopped (not every user had completed")
    assert "every figure in this report comes from warm-up rows" in sentence
    assert sentence[:1].upper() + sentence[1:] in a.warnings


def test_the_last_window_ends_when_the_run_stopped_sending(tmp_path):
    run = load_run(FIXTURES / "runs" / "plainramps")
    assert run.tiers["end_s"].iloc[-1] == run.info["started_unix"] + run.info["options"]["run_time"]
    # without a -t end: the first user to finish its last request (it would have sent again), not the last one
    path = copy_fixture(tmp_path, "plainramps")
    info = json.loads((path / "run.json").read_text())
    info["end"] = {"reason": "stopped from the web UI", "planned": False, "detail": ""}
    (path / "run.json").write_text(json.dumps(info))
    run = load_run(path)
    samples = run.samples
    done = samples["ts_start_s"] + samples["e2e_ms"] / 1000
    end_s = run.tiers["end_s"].iloc[-1]
    assert samples["ts_start_s"].max() < end_s < done.max()
    assert end_s == done.groupby(samples["user"]).max().min()


def test_ramps_of_one_run_split_histograms_no_further(tmp_path):
    path = copy_fixture(tmp_path, "plainramps")
    (path / "histograms.csv").write_text("tier,phase,metric,bucket_upper,count\n0,measure,itl_gap_ms,3.0,10\n")
    run = load_run(path)
    assert run.histograms is None
    assert any("cannot be split into its 2 ramps" in n for n in run.notes)


def test_one_load_level_is_worded_as_one(tmp_path):
    """`locust -u 8 -t ..`: 'held at 8 users', never 'tier by tier from 8 to 8', 'highest' or 'lowest' of one, or
    a warm-up of 3.96794 s (the whole report is golden: plainone_report.md)."""
    md = make_fixtures.report_md("plainone")
    assert "held at 8 users (no load shape)" in md and "none (held at 8 users)" in md
    for wrong in ("tier by tier", "from 8 to 8", "highest load", "lowest tier tested", "lowest tested load",
                  "1 tiers", "each tier measured", "tiers 0 have", "fitted slots-plus-queue", "in the tested range"):
        assert wrong not in md, wrong
    assert "At 8 users (tier 0, the only load tested) it queues" in md
    assert "measured after a 2.1 s warm-up (until every user had completed a request" in md
    assert re.search(r"\d\.\d{3,} s\b", md) is None


def test_seconds_read_sensibly():
    assert [text.seconds(v) for v in (3.96794, 2.0, 0.25, 12.345, float("nan"))] == [
        "4.0 s", "2 s", "0.2 s", "12 s", "-"]


def hist_copy(tmp_path: Path, phase: str | None = None) -> Path:
    """plainone as --ship histograms records it (no samples.csv, no tiers.csv); `phase` rewrites every row's."""
    import fixture_histograms

    path = copy_fixture(tmp_path, "plainone")
    if phase is not None:
        samples = pd.read_csv(path / "samples.csv", keep_default_na=False, dtype=str)
        samples["phase"] = phase
        samples.to_csv(path / "samples.csv", index=False)
    fixture_histograms.as_histograms(path)
    return path


def test_histograms_of_a_run_without_a_shape_estimate_its_measure_window(tmp_path):
    rows = analyze(load_run(FIXTURES / "runs" / "plainone"), CHAT).table.iloc[0]
    hist = tier_table(load_run(hist_copy(tmp_path))).iloc[0]
    assert hist["sent"] == rows["sent"] and hist["complete"]
    assert abs(hist["ok_rps"] / rows["ok_rps"] - 1) < 0.1  # not diluted by the warm-up (was 0.79 of it)


def test_histograms_of_a_run_going_on_end_at_their_last_write(tmp_path):
    path = hist_copy(tmp_path)
    info = json.loads((path / "run.json").read_text())
    info.update(ended_unix=None, end=None)
    (path / "run.json").write_text(json.dumps(info))
    written = info["started_unix"] + 9.0
    for name in ("histograms.csv", "attempts.csv"):
        os.utime(path / name, (written, written))
    run = load_run(path)
    assert run.tiers["end_s"].iloc[0] == written and any("no end yet" in n for n in run.notes)
    assert make_fixtures.run_cli(["report", str(path)])[0] == 0  # was: 'Invalid value NaN'


def test_histograms_of_a_warmup_that_never_ended_are_read_and_said(tmp_path):
    h = analyze(load_run(hist_copy(tmp_path, phase="warmup")), CHAT)
    assert h.run.warm_only and not h.run.per_request and h.table["sent"].iloc[0] > 0
    assert answer_items(h)[1] == ("Warm-up only:", ramps.warm_only_sentence(h.run.info))


def test_a_run_without_a_shape_stopped_from_the_web_ui_did_not_stop_early(tmp_path):
    path = copy_fixture(tmp_path, "plainramps")
    info = json.loads((path / "run.json").read_text())
    info["end"] = {"reason": "stopped from the web UI", "planned": False, "detail": ""}
    (path / "run.json").write_text(json.dumps(info))
    a = analyze(load_run(path), CHAT)
    assert not a.ending.stopped_early and not any(lead == "Stopped early:" for lead, _ in answer_items(a))
    info["end"] = {"reason": "fatal: 401 Unauthorized", "planned": False, "detail": ""}
    (path / "run.json").write_text(json.dumps(info))
    assert analyze(load_run(path), CHAT).ending.stopped_early


def test_one_load_level_judged_of_several_tested_is_not_the_only_load_tested(tmp_path):
    path = copy_fixture(tmp_path, "plainramps")
    health = pd.DataFrame({"ts_s": [1767225600.0 + s for s in range(20)], "worker": "local",
                           "loop_lag_ms_max": [140.0] * 10 + [1.0] * 10, "loop_lag_ms_p50": [60.0] * 10 + [0.2] * 10,
                           "cpu_percent": [98.0] * 10 + [20.0] * 10, "users": 8, "inflight": 8})
    health.to_csv(path / "health.csv", index=False)  # the generator overloaded during the first ramp
    a = analyze(load_run(path), CHAT)
    assert list(a.table["judged"]) == [False, True]
    texts = " ".join([a.saturation.sentence, a.compute.sentence, a.onset.sentence, a.capacity.limited_by])
    assert "only load tested" not in texts and "one load level judged (the others are left out)" in texts
