"""Distributed runs on the `distributed` fixture: a lost worker, the load really applied, worker
clocks, and the cause of each worker's lag; older runs keep the CPU-p95 diagnosis."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile, profile_source
from llmload.analysis.read.run import load_run
from llmload.analysis.report import summary
from llmload.analysis.report.answer import answer_items
from llmload.analysis.tables import workers

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402


def _analysis(name: str):
    run = load_run(FIXTURE_DIR / "runs" / name)
    return analyze(run, choose_profile(run, None), source=profile_source(run, None))


def test_lost_worker_is_named_with_its_time_and_tier():
    a = _analysis("distributed")
    assert workers.lost(a.run) == [{"worker": "w1", "last_seen_unix": 1767225644.0, "tier": 5, "load": 16.0,
                                    "rejoined": 0, "reported": None, "shipped": None}]
    items = dict(answer_items(a))
    assert "Worker w1 was lost (last seen 2026-01-01 00:00:44 UTC, during tier 5 (16 users))" in items["Workers lost:"]


def test_under_applied_tier_is_judged_at_the_users_really_applied():
    a = _analysis("distributed")
    top = a.table.set_index("tier").loc[5]
    # tiers.csv: 16 users for 2 s of the 8 s measure window, then 8: mean 10; every user sent in the window,
    # so active users alone (16) would have credited the full target
    assert top["active_users"] == 16 and top["users_mean"] == 10.0 and top["users_min"] == 8
    assert bool(top["under_applied"]) and top["load"] == 10.0 and top["load_target"] == 16.0
    assert a.capacity.load == 10.0 and a.saturation.sentence.startswith("At the highest load (10 users, tier 5)")
    note = next(w for w in a.warnings if w.startswith("Tier 5: the load applied fell below its target"))
    assert "10.0 users on average (at least 8) of 16 asked" in note
    assert summary.summary(a)["tiers"][4]["load"] == 10.0


def test_tiers_without_recorded_users_keep_the_active_user_rule():
    a = _analysis("parked")
    assert a.table["users_mean"].isna().all()
    assert list(a.table["applied_users"]) == list(a.table["active_users"])


def test_clock_offsets_listed_only_beyond_50_ms():
    a = _analysis("distributed")
    line = next(w for w in a.warnings if w.startswith("Worker clocks differ"))
    assert "w0 +0 ms (rtt 0.9 ms); w1 +210 ms (rtt 1.1 ms), corrected" in line
    near = {"worker_nodes": [{"worker": "w0", "clock_offset_ms": 49.0}, {"worker": "w1", "clock_offset_ms": -3.0}]}
    assert workers.clock_sentence(type("R", (), {"info": near})()) == ""


@pytest.mark.parametrize(("tier", "worker", "cause", "advice"), [
    (2, "w0", "busy", "worker w0's own code held its loop (it used 280 ms of CPU during its worst 300 ms"),
    (3, "w1", "starved", "worker w1 was starved (it used 3 ms of CPU during its worst 250 ms wake-up): the "
                         "machine was busy with other work (machine CPU 98%): other processes held the CPUs"),
    (4, "w0", "blocked", "worker w0's loop was blocked (it used 2 ms of CPU during its worst 400 ms wake-up on a "
                         "machine that was not busy: machine CPU 9%)"),
])
def test_each_lag_cause_names_the_worker_and_its_advice(tier, worker, cause, advice):
    a = _analysis("distributed")
    row = a.table.set_index("tier").loc[tier]
    assert (row["lag_worker"], row["lag_cause"]) == (worker, cause) and bool(row["overloaded"])
    warning = next(w for w in a.warnings if w.startswith(f"Tier {tier} "))
    assert advice in warning
    assert f"tier {tier} ({row['load']:g} users; worker {worker} {cause})" in dict(answer_items(a))[
        "Generator overloaded:"]


def test_cause_decision_table():
    assert workers.cause(300, 280, 10) == "busy"
    assert workers.cause(300, 10, 95) == "starved"
    assert workers.cause(300, 10, 20) == "blocked"
    assert workers.cause(300, 100, 95) == "unclear"  # between the shares: neither
    assert workers.cause(300, float("nan"), 95) == "unclear"


def test_older_health_csv_keeps_the_cpu_diagnosis():
    a = _analysis("noknee")
    assert (a.table["lag_cause"] == "").all()
    assert any("generator itself was busy" in w for w in a.warnings)
    assert "Workers lost:" not in dict(answer_items(a))


def test_distributed_report_has_no_nan():
    md = make_fixtures.report_md("distributed")
    assert "Workers lost:" in md and " nan" not in md.lower() and "nan%" not in md.lower()
