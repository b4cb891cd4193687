"""The queueing model against the measured p95 TTFT (llmload.analysis.verdicts.model_check)."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.verdicts import model_check
from llmload.analysis.verdicts.queueing import QueueFit
from llmload.rules.slo import PROFILES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))


def run_of(name):
    run = load_run(FIXTURES / "runs" / name)
    return analyze(run, choose_profile(run, None))


def test_a_fifo_server_agrees_with_its_model_tier_by_tier():
    a = run_of("knee16")  # 16 slots, a FIFO queue
    check = a.model_check
    assert check is not None and check.disagreeing == [] and len(check.bands) == 6
    assert "predicts every tier's p95 TTFT within its confidence interval" in check.sentence
    top = check.bands.iloc[-1]  # 32 users on 16.3 slots: half the requests wait a service time
    assert not top["disagrees"] and top["model_lo"] - check.tolerance_ms <= top["ci_hi"] <= top["model_hi"]
    assert check.capacity_clause.startswith("The queueing model agrees: it predicts p95 TTFT")
    assert dict(answer(a))["Model check:"] == check.sentence


def answer(a):
    from llmload.analysis.report.answer import answer_items

    return answer_items(a)


def test_a_tier_outside_the_band_by_more_than_a_quarter_service_time_is_named():
    a = run_of("knee16")
    judged = a.table[a.table["judged"]].copy()
    at8 = judged["load"] == 8
    judged.loc[at8, ["ttft_p95_ms", "ttft_p95_ci_lo_ms", "ttft_p95_ci_hi_ms"]] = [400.0, 390.0, 410.0]
    check = model_check.check(a.fit, judged, a.capacity, "users")
    assert check.disagreeing == [int(judged.loc[at8, "tier"].iloc[0])]
    assert check.sentence.startswith("measurement and model (16.3 slots, 237 ms of service) disagree at 8 users "
                                     "(tier 4) p95 TTFT 400 ms [95% CI 390-410] against the model's 68 ms")
    judged.loc[at8, ["ttft_p95_ms", "ttft_p95_ci_lo_ms", "ttft_p95_ci_hi_ms"]] = [120.0, 110.0, 125.0]
    assert model_check.check(a.fit, judged, a.capacity, "users").disagreeing == []  # within 59 ms: noise


def test_the_capacity_line_says_when_the_model_expects_the_other_verdict():
    a = run_of("knee16")
    fast = dataclasses.replace(a.fit, x_max_rps=a.fit.x_max_rps * 4)  # a model with no wait at 32 users
    check = model_check.check(fast, a.table[a.table["judged"]], a.capacity, "users")
    assert check.capacity_clause.startswith("The queueing model disagrees: it predicts p95 TTFT")
    assert "so expects 32 users to meet it; the measured tiers stand" in check.capacity_clause


def test_a_band_across_the_limit_at_a_tier_that_met_it_cannot_tell_and_never_agrees():
    a = run_of("overload")  # 16 users met the chat SLO at 347 ms; the model's band there spans 500 ms
    clause = a.model_check.capacity_clause
    assert clause.startswith("The queueing model cannot tell: it predicts p95 TTFT 261-710 ms at 16 users")
    assert "a band across the limit (500 ms) at 16 users; the measured tiers stand." in clause
    assert "agrees" not in clause
    from llmload.analysis.report.summary import queueing_model

    assert queueing_model(a)["capacity_agrees"] is None


def test_a_tier_that_missed_by_refusing_is_not_the_models_to_judge():
    a = run_of("shed429")  # 8 users miss the SLO by their 429s
    assert "at 8 users" not in a.model_check.capacity_clause and "at 4 users" in a.model_check.capacity_clause


def test_tiers_that_shed_load_are_not_compared_with_the_queue():
    a = run_of("shed429")  # 8 and 16 users: 18 % and 39 % refused with 429s, p95 TTFT stays ~36 ms
    bands = a.model_check.bands.set_index("tier")
    assert bands.loc[[4, 5], "sheds"].all() and bands.loc[[4, 5], "model_lo"].isna().all()
    assert not bands.loc[[1, 2, 3], "sheds"].any() and bands.loc[[1, 2, 3], "model_lo"].notna().all()
    assert a.model_check.disagreeing == []
    assert "2 tier(s) that refused load not compared" in a.model_check.sentence


def test_open_loop_band_is_mdc_to_mmc_and_nothing_past_the_plateau():
    fit = QueueFit(slots=4, x_max_rps=40.0, service_s=0.1, cycle_s=0.1, ttft0_ms=30.0, load_unit="req/s")
    assert model_check.p95_wait_band_s(fit, 5.0) == (0.0, 0.0)  # 12 % busy: hardly anyone waits
    lo, hi = model_check.p95_wait_band_s(fit, 36.0)  # 90 % busy
    assert hi == pytest.approx(math.log(model_check._erlang_c(36.0, 4, 0.1) / 0.05) / (40 - 36)) and lo == hi / 2
    assert all(math.isnan(v) for v in model_check.p95_wait_band_s(fit, 40.0))
    closed = dataclasses.replace(fit, load_unit="users")
    assert model_check.p95_wait_band_s(closed, 8) == pytest.approx((0.1, 0.1 * math.log(20)))


def test_no_fit_no_check():
    a = run_of("openloop")  # the in-flight cap bounded the load: no model
    assert a.fit is None and a.model_check is None
    assert "Model check:" not in dict(answer(a))
    assert PROFILES["chat"].ttft_p95_ms == 500
