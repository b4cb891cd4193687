"""Capacity under SLO (a bracket of measured tiers), replica plans and the queueing fit."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from llmload.analysis.tables.judged import tiers_of
from llmload.analysis.verdicts.queueing import QueueFit, _mmc_wait_s
from llmload.rules import capacity
from llmload.rules.replicas import plan_replicas
from llmload.rules.slo import PROFILES, profile_from


def table(p95, err=None, r429=None, loads=(1, 2, 4, 8)) -> pd.DataFrame:
    """Tiers of 500 attempts; `err` and `r429`: the shares of them that failed otherwise / with a 429."""
    n = len(p95)
    n_429 = [round(500 * r) for r in (r429 if r429 is not None else [0.0] * n)]
    other = [round(500 * e) for e in (err if err is not None else [0.0] * n)]
    return pd.DataFrame({
        "tier": np.arange(1, n + 1), "load": list(loads)[:n], "sent": 500, "ttft_p95_ms": p95, "n_429": n_429,
        "ok": [500 - a - b for a, b in zip(n_429, other)],
        "ok_rps": [10.0 * v for v in list(loads)[:n]], "out_tok_s": [400.0 * v for v in list(loads)[:n]],
    })


def capacity_under_slo(frame: pd.DataFrame, profile):
    return capacity.capacity_under_slo(tiers_of(frame), profile)


def test_the_capacity_is_the_last_tier_that_met_the_slo_and_a_smooth_bracket_is_interpolated_beside_it():
    cap = capacity_under_slo(table([100, 200, 400, 800]), PROFILES["chat"])  # 500 crossed 1/4 of the way 4->8
    assert cap.status == "within" and not cap.measured
    assert (cap.load, cap.high, cap.ok_rps) == (4, 8, pytest.approx(40.0))
    assert cap.interpolated == pytest.approx(5.0) and cap.why_not == ""  # neither tier waited: p95 is smooth
    assert "p95 TTFT 800 ms > 500 ms at tier 4" in cap.limited_by


def test_a_bracket_across_the_queueing_onset_is_not_interpolated():
    """A line drawn across the queueing onset: p95 51 ms at 4 users, 1,975 ms at 8; a line between says 7.5 users, the
    server's capacity is 4 (requests wait from 5 on)."""
    tiers = tiers_of(table([30, 35, 51, 1975]))
    tiers[3] = dataclasses.replace(tiers[3], waits=True)
    cap = capacity.capacity_under_slo(tiers, PROFILES["chat"])
    assert (cap.load, cap.high, cap.measured) == (4, 8, False)
    assert math.isnan(cap.interpolated) and cap.why_not == "waiting starts in this interval"
    assert capacity.narrowing_loads(cap, "users") == [4, 5, 6, 7]


def test_a_bracket_one_user_wide_is_measured_and_a_rate_bracket_within_five_percent():
    cap = capacity_under_slo(table([51, 1975], loads=(4, 5)), PROFILES["chat"])
    assert cap.measured and cap.load == 4 and cap.high == 5 and math.isnan(cap.interpolated)
    rates = tiers_of(table([51, 1975], loads=(4.0, 4.2)))
    assert capacity.capacity_under_slo(rates, PROFILES["chat"], unit="req/s").measured
    rates = tiers_of(table([51, 1975], loads=(4.0, 4.4)))
    assert not capacity.capacity_under_slo(rates, PROFILES["chat"], unit="req/s").measured


def test_a_tier_with_no_success_breaks_the_slo_without_a_nan_in_the_capacity():
    """LiteLLM's rpm limit (realtest): tier 2 refused every request, so its p95 TTFT and output tok/s do not
    exist; the capacity is tier 1's figures, never 'nan output tok/s'."""
    t = table([100.0, float("nan"), 120.0], r429=[0.0, 1.0, 0.8])
    t["ok"] = [500, 0, 100]
    t.loc[1, ["ok_rps", "out_tok_s"]] = [0.0, float("nan")]
    cap = capacity_under_slo(t, PROFILES["chat"])
    assert cap.status == "within" and "at tier 2 no request succeeded" in cap.limited_by
    assert (cap.load, cap.ok_rps, cap.out_tok_s) == (1.0, 10.0, 400.0)
    t.loc[1, "ttft_p95_ms"] = 900.0  # a p95 that exists, but a tier that served nothing is never interpolated to
    cap = capacity_under_slo(t, PROFILES["chat"])
    assert (cap.load, cap.out_tok_s, cap.measured) == (1.0, 400.0, True) and math.isnan(cap.interpolated)
    t.loc[1, "load"] = 3  # a wider bracket: what lies between 1 and a tier that served nothing is unknown
    cap = capacity_under_slo(t, PROFILES["chat"])
    assert (cap.load, cap.measured) == (1.0, False) and math.isnan(cap.interpolated)
    assert cap.why_not.startswith("no request succeeded at 3")


def test_first_broken_bound_wins_and_429_counts():
    cap = capacity_under_slo(table([100, 200, 300, 450], r429=[0, 0, 0.03, 0.5]), PROFILES["chat"])
    assert cap.load == 2 and cap.high == 4 and "429 rate" in cap.limited_by
    assert math.isnan(cap.interpolated) and cap.why_not == "the server starts refusing or failing in this interval"


def test_below_and_beyond_the_tested_range():
    assert capacity_under_slo(table([300, 400, 500, 600]), PROFILES["voice"]).status == "below"
    beyond = capacity_under_slo(table([100, 110, 120, 130]), PROFILES["chat"])
    assert beyond.status == "beyond" and beyond.load == 8
    assert capacity_under_slo(table([9e9] * 4), PROFILES["batch"]).status == "beyond"


def test_thresholds_are_overridable():
    profile = profile_from("chat", ttft_p95_ms=150, max_error_rate=0.05)
    assert (profile.ttft_p95_ms, profile.max_error_rate, profile.max_429_rate) == (150, 0.05, 0.01)
    cap = capacity_under_slo(table([100, 200, 400, 800]), profile)
    assert (cap.load, cap.high, cap.measured) == (1, 2, True) and math.isnan(cap.interpolated)
    with pytest.raises(ValueError):
        profile_from("nope")


def test_replica_plan_keeps_headroom():
    cap = capacity_under_slo(table([100, 200, 400, 800]), PROFILES["chat"])  # the measured 4 users, 40 req/s
    plan = plan_replicas(cap, 320, "rps", "users", headroom=0.2)  # usable 32 req/s per replica
    assert plan.per_replica == pytest.approx(32.0) and plan.replicas == 10
    assert plan_replicas(cap, 321, "rps", "users", headroom=0.2).replicas == 11
    assert plan_replicas(cap, 100, "users", "users", headroom=0.5).replicas == 50
    with pytest.raises(ValueError):
        plan_replicas(cap, 10, "users", "req/s")
    below = capacity_under_slo(table([900] * 4), PROFILES["chat"])
    assert plan_replicas(below, 10, "rps", "users").replicas is None


def test_closed_loop_model_is_min_of_users_and_slots():
    fit = QueueFit(slots=4, x_max_rps=40.0, service_s=0.1, cycle_s=0.1, ttft0_ms=30.0, load_unit="users")
    pred = fit.predict(np.array([1, 4, 8]))
    assert list(pred["ok_rps"]) == pytest.approx([10, 40, 40])
    assert list(pred["ttft_mean_ms"]) == pytest.approx([30, 30, 130])  # 8/40 - 0.1 s = 100 ms wait


def test_mmc_wait_matches_mm1_and_blows_up_at_saturation():
    assert _mmc_wait_s(5.0, 1, 0.1) == pytest.approx(0.5 / (10 - 5))  # rho/(mu - lambda)
    assert math.isinf(_mmc_wait_s(50.0, 4, 0.1))
    assert _mmc_wait_s(20.0, 4, 0.1) < _mmc_wait_s(20.0, 3, 0.1)
