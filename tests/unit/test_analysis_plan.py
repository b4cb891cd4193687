"""The plan of a recorded run against a plain per-minute quota (tests/fixtures/recorded/quota-fixed-window, 2026-12-04:
the embedded server with `--rpm 120 --rate-window-s 60 --quota-headers none --retry-after-header retry-after`, no
slots, no queue; `llmload run scenarios/step_load.py --tiers 1,2,4,8 --tier-seconds 18 --max-tokens 20`). The truth:
120 requests a minute in fixed windows, 2 req/s sustained; one user sends ~6.5 req/s. The run confirmed 1.56 req/s
for 116 s. The analysis must plan at most what the quota sustains, never call the first tier's burst compute
saturation, keep the confirmation window's rows out of every tier, and say a cut window is unconfirmed."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report import plan_gate
from llmload.analysis.report.layout import answer_items
from llmload.analysis.report.summary import summary
from llmload.analysis.tables.totals import run_totals
from llmload.analysis.verdicts import gate
from llmload.rules.slo import STOCK

QUOTA = Path(__file__).resolve().parents[1] / "fixtures" / "recorded" / "quota-fixed-window"


def analysed(path: Path = QUOTA):
    run = load_run(path)
    return analyze(run, choose_profile(run, None))


def test_the_plan_is_below_what_the_quota_sustains_and_was_confirmed():
    a = analysed()
    assert a.proof is not None and a.proof.source == "confirmed" and a.per_replica is not None
    assert a.per_replica.rps == pytest.approx(1.56) and a.per_replica.rps <= 2.1
    assert a.ceiling is not None and a.ceiling.rps == pytest.approx(2.23, abs=0.01) and a.ceiling.short
    plan = dict(answer_items(a))["Plan:"]
    assert answer_items(a)[0][0] == "Plan:"
    assert plan.startswith("1.56 req/s per replica under the chat SLO, 30% below the 2.23 req/s it accepted once it "
                           "refused (120 requests in the 54 s from its first refusal, in tier 2, to the end of the "
                           "tiers; an upper bound: shorter than its longest retry hint, 58 s)")
    assert "Confirmed: 1.56 req/s for 116 s, 194 requests, p95 TTFT 60 ms (95 % bound 61 ms), 0 x 429." in plan


def test_the_first_tiers_burst_is_no_compute_saturation_and_the_limit_a_rate_limiters():
    a = analysed()
    assert a.compute.status == "none" and a.compute.sentence.startswith("not measured: a rate limiter caps")
    assert a.limiter is not None and "a quota's initial burst" in a.limiter.evidence
    assert a.limiter.sustained_rps == pytest.approx(2.23, abs=0.01)
    assert a.saturation.kind == "rate limited"
    text = " ".join(dict(answer_items(a)).values())
    assert "plateau of 6.5" not in text and "6.5 req/s per replica" not in text


def test_the_confirmation_windows_rows_are_in_no_tier_and_counted_apart():
    a = analysed()
    assert list(a.table["tier"]) == [1, 2, 3, 4]  # the window (tier 5) is not a load tier
    window = a.run.confirm
    assert window is not None and list(window["tier"]) == [5] and float(window["target_rps"].iloc[0]) == 1.56
    rows = a.run.samples
    inside = rows[rows["confirm"]]
    assert len(inside) > 200 and (inside["tier"] == -1).all() and not inside["measured"].any()
    totals = run_totals(a.run)  # the window's warm-up met the spent quota: its 429s, counted where they were sent
    assert totals.by_kind.loc["rate_limited", "in confirmation"] == 81
    assert totals.by_kind.loc["rate_limited", "after the last tier"] == 0


def test_summary_json_carries_the_plan():
    data = json.loads(json.dumps(summary(analysed())))
    plan = data["plan"]
    assert (plan["source"], plan["confirmed"], plan["rps"]) == ("confirmed", True, 1.56)
    assert plan["confirm_requests"] == 194 and plan["p95_ttft_upper_ms"] >= plan["p95_ttft_ms"]
    assert plan["ceiling"]["first_refusing_tier"] == 2 and plan["ceiling"]["shorter_than_hint"] is True
    assert [w["status"] for w in plan["windows"]] == ["held"] and plan["basis"]["kind"] == "ceiling"


def test_the_gate_reads_the_plan_from_the_rule_book():
    run = load_run(QUOTA)
    passed = plan_gate.plan_check(run, STOCK["chat"], 1.5)
    assert passed.status == gate.PASS and passed.verdicts[0].value == pytest.approx(1.56)
    failed = plan_gate.plan_check(run, STOCK["chat"], 2.0)
    assert failed.status == gate.FAIL and failed.headline.endswith("(required: at least 2 req/s per replica): FAIL")


def cut_copy(tmp_path: Path) -> Path:
    """The run as if stopped 20 s into its confirmation window's measure."""
    copy = Path(shutil.copytree(QUOTA, tmp_path / "cut"))
    rows = list(csv.DictReader(open(copy / "tiers.csv")))
    window = rows[-1]
    end = float(window["start_s"]) + float(window["warmup_s"]) + 20.0
    window["end_s"] = f"{end:.6f}"
    with open(copy / "tiers.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    samples = list(csv.DictReader(open(copy / "samples.csv")))
    with open(copy / "samples.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(samples[0]))
        writer.writeheader()
        writer.writerows(r for r in samples if float(r["ts_start_s"]) < end)
    return copy


def test_a_window_cut_short_is_never_judged_and_the_plan_is_unconfirmed(tmp_path):
    a = analysed(cut_copy(tmp_path))
    assert a.proof is not None and a.proof.source == "not confirmed" and a.per_replica is None
    assert [w.status for w in a.proof.windows] == ["cut"]
    assert dict(answer_items(a))["Plan:"].startswith("none confirmed: the run was cut while it confirmed 1.56 req/s")
    assert plan_gate.plan_check(load_run(tmp_path / "cut"), STOCK["chat"], 1.0).status == gate.FAIL
