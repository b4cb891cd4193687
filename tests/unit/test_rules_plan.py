"""The plan's rule book: sample bounds of a percentile, the model-free ceiling, the plan's basis, the confirmation
windows' verdicts and the bisection that lowers a rate (no sockets: rule-book Tiers built by hand)."""

from __future__ import annotations

import math
import random

import pytest

from llmload.rules import bounds, capacity, ceiling, confirm, knees, plan, refine
from llmload.rules.slo import PROFILES
from llmload.rules.tier import Tier
from llmload.rules.verdicts import judge

CHAT = PROFILES["chat"]


def binomial_cdf(k: int, n: int, q: float) -> float:
    return sum(math.comb(n, i) * q ** i * (1 - q) ** (n - i) for i in range(k + 1))


@pytest.mark.parametrize("n", [59, 60, 87, 100, 156, 400, 1000])
def test_the_upper_rank_is_the_smallest_whose_binomial_coverage_reaches_95_percent(n):
    k = bounds.upper_rank(n, 0.95)
    assert k is not None
    assert binomial_cdf(k - 1, n, 0.95) >= 0.95 > binomial_cdf(k - 2, n, 0.95)


def test_too_few_samples_have_no_upper_bound_and_the_normal_tail_joins_the_exact_one():
    assert bounds.min_samples(0.95) == 59 and bounds.min_samples(0.99) == 299
    assert bounds.upper_rank(58, 0.95) is None and bounds.upper_rank(59, 0.95) == 59
    assert bounds.upper_bound_of(list(range(58)), 0.95) == math.inf
    assert math.isnan(bounds.upper_bound_of([], 0.95))
    exact, approx = bounds.upper_rank(bounds.EXACT_N, 0.95), bounds.upper_rank(bounds.EXACT_N + 1, 0.95)
    assert exact is not None and approx is not None and abs(approx - exact) <= 3


def test_the_upper_bound_covers_the_true_p95_in_about_95_percent_of_samples():
    """Exponential latencies of known p95: the order-statistic bound lies above it in >= 93 % of 400 draws of 80."""
    rng, true_p95 = random.Random(7), -math.log(0.05) * 100.0
    covered = sum(bounds.upper_bound_of([rng.expovariate(0.01) for _ in range(80)], 0.95) >= true_p95
                  for _ in range(400))
    assert covered >= 0.93 * 400


def test_a_claim_is_met_only_when_its_bound_is_within_the_limit():
    assert bounds.shown(450.0, 480.0, 500.0) == "met"
    assert bounds.shown(450.0, 530.0, 500.0) == "unshown"
    assert bounds.shown(450.0, math.inf, 500.0) == "unshown"
    assert bounds.shown(520.0, 600.0, 500.0) == "missed"
    assert bounds.shown(450.0, math.nan, 500.0) == "met"  # no bound computed: judged on the point estimate


def tier(n: int, load: float, p95: float, upper: float = math.nan, ok_rps: float | None = None, **kw) -> Tier:
    ok = kw.pop("ok", 100)
    return Tier(tier=n, load=load, sent=kw.pop("sent", ok), ok=ok, ttft_p95_ms=p95, ttft_p95_upper_ms=upper,
                rate_window_s=kw.pop("rate_window_s", 20.0), ok_rps=load * 2.0 if ok_rps is None else ok_rps,
                out_tok_s=kw.pop("out_tok_s", load * 64.0), **kw)


def test_a_tier_within_the_limit_on_its_point_estimate_only_is_not_the_capacity():
    tiers = [tier(1, 1, 50, 60), tier(2, 2, 60, 70), tier(3, 4, 450, 530), tier(4, 8, 900, 990)]
    cap = capacity.capacity_under_slo(tiers, CHAT)
    assert (cap.status, cap.load, cap.high) == ("within", 2, 8)
    assert [t.load for t in cap.unshown] == [4] and not cap.measured
    assert "met it on the point estimate only" in cap.why_not
    assert "its 95 % bound 530 ms > 500 ms" in capacity.unshown(tiers[2], CHAT)


def test_a_shown_tier_shows_the_lower_ones_and_none_shown_is_its_own_status():
    few = [tier(1, 1, 50, math.inf, ok=40), tier(2, 2, 60, 70), tier(3, 4, 900, 990)]
    assert capacity.capacity_under_slo(few, CHAT).load == 2  # 1 user is below a shown 2 users
    alone = [tier(1, 1, 50, math.inf, ok=40), tier(2, 2, 900, 990)]
    cap = capacity.capacity_under_slo(alone, CHAT)
    assert cap.status == "unshown" and cap.missed is not None and cap.missed.load == 2
    assert "40 successes cannot bound it, want >= 59" in capacity.unshown(alone[0], CHAT)


def test_refinement_measures_an_unshown_load_again_once():
    tiers = [tier(1, 4, 300, 320), tier(2, 5, 450, 530), tier(3, 6, 900, 990)]
    v = judge(tiers, "users", CHAT)
    step = refine.next_step(v, "users", [4, 5, 6])
    assert step is not None and (step.load, step.kind) == (5, "samples")
    assert refine.next_step(v, "users", [4, 5, 6], again=[5]) is None


def refusing(n: int, load: float, ok_rps: float) -> Tier:
    ok = round(ok_rps * 20.0)
    return tier(n, load, 60, 70, ok_rps=ok_rps, sent=ok + 100, ok=ok, n_429=100, n_shed=100)


def test_the_ceiling_caps_every_rate_and_a_burst_above_it_is_never_compute_saturation():
    """A per-minute quota: 1 user got 6.6 req/s from a new window, the tiers after it got 2 req/s in all."""
    lid = ceiling.measured(100.0, 160.0, 120, 2, longest_hint_s=42.0)
    assert lid is not None and lid.rps == pytest.approx(2.0) and not lid.short
    tiers = [tier(1, 1, 60, 70, ok_rps=6.6, ok=132), refusing(2, 2, 2.0), refusing(3, 4, 2.0)]
    v = judge(tiers, "users", CHAT, ceiling=lid)
    assert not v.compute.reached and "a rate limiter caps throughput" in v.compute.sentence
    assert v.limiter is not None and "a quota's initial burst" in v.limiter.evidence  # told by the burst alone
    alone = judge(tiers, "users", CHAT)  # without the ceiling: no rate limiter recognised, 6.6 req/s a plateau
    assert alone.limiter is None and alone.compute.reached
    assert v.capacity.ok_rps == pytest.approx(2.0) and v.capacity.burst
    assert v.basis is not None and v.basis.kind == "ceiling" and v.basis.planned() == pytest.approx(1.4)
    assert knees.compute_saturation(tiers[:1] + [tier(2, 2, 60, 70, ok_rps=6.5, ok=130)], "users", ceiling=lid) \
        .sentence.startswith("not measured: 1 user (tier 1) got 6.6 req/s, but once the server refused it accepted "
                             "only 2.00 req/s")
    assert not ceiling.above(2.1, 20.0, lid)  # within its noise
    assert ceiling.measured(100.0, 130.0, 60, 2, 42.0).short


def test_a_quota_whose_window_outlasts_the_tiers_proposes_its_first_window_and_nothing_without_a_hint():
    """A 60-a-minute quota: 1 user got 59 through in its first 26 s, then every request was refused to the end of
    the tiers (60 s). The ceiling is 0 and says nothing of the rate; the 59 over the 60 s its hint names do."""
    lid = ceiling.measured(26.0, 60.0, 0, 2, longest_hint_s=60.0, before=59, before_s=26.0)
    assert lid is not None and lid.rps == 0.0
    assert ceiling.window_rate(lid) == pytest.approx(59 / 60)
    short_hint = ceiling.measured(26.0, 60.0, 0, 2, longest_hint_s=5.0, before=59, before_s=26.0)
    assert ceiling.window_rate(short_hint) == pytest.approx(59 / 26)  # at least the time it took
    assert math.isnan(ceiling.window_rate(ceiling.measured(26.0, 60.0, 0, 2, math.nan, 59, 26.0)))  # no hint
    assert math.isnan(ceiling.window_rate(ceiling.measured(26.0, 60.0, 3, 2, 60.0, 59, 26.0)))  # some got through
    tiers = [tier(1, 1, 60, 70, ok_rps=2.27, ok=59), refusing(2, 2, 0.0), refusing(3, 4, 0.0)]
    v = judge(tiers, "users", CHAT, ceiling=lid)
    assert v.basis is not None and v.basis.kind == "quota window" and not v.basis.lower_bound
    assert v.basis.rps == pytest.approx(59 / 60) and v.basis.planned() == pytest.approx(0.7 * 59 / 60)
    assert "the 59 requests it let through before its first refusal, over the 60 s" in v.basis.text
    held = confirm.outcome(v.basis.planned(), [verdict(v.basis.planned(), "held")])
    text = plan.sentence(v.basis, held, v.capacity, v.limiter)
    assert text.startswith("0.69 req/s per replica") and "replicas behind it share it" in text
    unhinted = judge(tiers, "users", CHAT, ceiling=ceiling.measured(26.0, 60.0, 0, 2, math.nan, 59, 26.0))
    assert unhinted.basis is None or unhinted.basis.kind != "quota window"


def test_the_basis_is_the_capacity_or_nothing():
    v = judge([tier(1, 1, 60, 70), tier(2, 2, 80, 90), tier(3, 4, 900, 990)], "users", CHAT)
    assert v.basis is not None and (v.basis.kind, v.basis.rps) == ("capacity", 4.0)
    assert v.basis.planned() == pytest.approx(2.8)
    below = judge([tier(1, 1, 900, 990), tier(2, 2, 950, 990)], "users", CHAT)
    assert below.basis is None
    proof = confirm.outcome(math.nan, [])
    assert plan.sentence(below.basis, proof, below.capacity, None).startswith(
        "none: the chat SLO is not met at any tested load")


def window(rate: float, seconds: float = 60.0, ok: int | None = None, p95: float = 300.0, upper: float = 340.0,
           **kw) -> Tier:
    sent = kw.pop("sent", round(rate * seconds))
    return Tier(tier=9, load=rate, sent=sent, ok=sent if ok is None else ok, ttft_p95_ms=p95, ttft_p95_upper_ms=upper,
                rate_window_s=seconds, **kw)


def test_a_window_holds_only_with_its_bound_within_the_limit_few_refusals_and_the_rate_accepted():
    held = confirm.judge_window(window(5.5), 5.5, 60.0, CHAT)
    assert held.held and held.figures == "5.50 req/s for 60 s, 330 requests, p95 TTFT 300 ms (95 % bound 340 ms), " \
                                         "0 x 429"
    unshown = confirm.judge_window(window(5.5, upper=530.0), 5.5, 60.0, CHAT)
    assert unshown.status == "unshown" and "not shown" in unshown.what
    slow = confirm.judge_window(window(5.5, p95=2300.0, upper=2600.0), 5.5, 60.0, CHAT)
    assert slow.status == "broken" and "p95 TTFT 2300 ms > 500 ms" in slow.what
    refused = confirm.judge_window(window(2.0, sent=120, ok=100, n_429=20, n_shed=20), 2.0, 60.0, CHAT)
    assert refused.status == "broken" and "429 rate 16.7% > 1.0%" in refused.what
    dropped = confirm.judge_window(window(10.0, dropped=60), 10.0, 60.0, CHAT)
    assert dropped.status == "broken" and "dropped at the in-flight cap" in dropped.what
    behind = confirm.judge_window(window(10.0, sent=400), 10.0, 60.0, CHAT)
    assert behind.status == "broken" and "the generator fell behind" in behind.what
    assert confirm.judge_window(window(5.5), 5.5, 30.0, CHAT, complete=False).status == "cut"


def verdict(rate: float, status: str) -> confirm.Window:
    return confirm.Window(1, rate, status, "" if status == "held" else "broke", "")


def test_a_rate_that_does_not_hold_is_lowered_by_bisection_within_the_steps():
    assert confirm.next_rate([verdict(5.5, "held")], 3) is None
    assert confirm.next_rate([verdict(5.5, "broken")], 3) == 2.75
    assert confirm.next_rate([verdict(5.5, "broken"), verdict(2.75, "held")], 2) == pytest.approx(3.89)
    assert confirm.next_rate([verdict(5.5, "broken"), verdict(2.75, "held")], 0) is None
    assert confirm.next_rate([verdict(5.5, "unshown")], 3) == 5.5  # once more, longer
    assert confirm.next_rate([verdict(5.5, "unshown"), verdict(5.5, "unshown")], 2) == 2.75
    assert confirm.next_rate([verdict(4.0, "broken"), verdict(3.9, "held")], 2) is None  # within 5 %
    assert confirm.next_rate([verdict(5.5, "cut")], 3) is None


def test_the_plan_is_the_highest_rate_that_held_and_says_how_it_was_proved():
    first = confirm.outcome(5.5, [verdict(5.5, "held")])
    assert (first.source, first.rps, first.confirmed) == ("confirmed", 5.5, True)
    lowered = confirm.outcome(5.5, [verdict(5.5, "broken"), verdict(2.75, "held"), verdict(3.89, "broken")])
    assert (lowered.source, lowered.rps) == ("lowered by confirmation", 2.75)
    assert lowered.above is not None and lowered.above.rate == 3.89
    none = confirm.outcome(5.5, [verdict(5.5, "broken"), verdict(2.75, "broken")])
    assert (none.source, none.confirmed) == ("not confirmed", False) and math.isnan(none.rps)
    assert confirm.outcome(math.nan, []).confirmed is None


def test_a_window_lasts_long_enough_for_its_hint_and_its_samples_within_the_maximum():
    assert confirm.window_seconds(5.5, math.nan, None, 300.0) == 60.0
    assert confirm.window_seconds(5.5, 58.0, None, 300.0) == 116.0
    assert confirm.window_seconds(0.5, math.nan, None, 300.0) == pytest.approx(147.5)  # 1.25 x 59 successes
    assert confirm.window_seconds(0.1, math.nan, None, 300.0) == 300.0
    assert confirm.window_seconds(5.5, math.nan, 20.0, 300.0) == 20.0


def test_the_plan_sentence_names_the_rate_and_its_proof():
    v = judge([tier(1, 1, 60, 70), tier(2, 2, 80, 90), tier(3, 4, 900, 990)], "users", CHAT)
    held = confirm.judge_window(window(2.8), 2.8, 60.0, CHAT)
    text = plan.sentence(v.basis, confirm.outcome(2.8, [held]), v.capacity, v.limiter)
    assert text == ("2.80 req/s per replica under the chat SLO, 30% below its SLO capacity (2 users, 4.0 req/s). "
                    "Confirmed: 2.80 req/s for 60 s, 168 requests, p95 TTFT 300 ms (95 % bound 340 ms), 0 x 429.")
    broke = confirm.judge_window(window(2.8, p95=900.0, upper=990.0), 2.8, 60.0, CHAT)
    lower = confirm.judge_window(window(1.4), 1.4, 60.0, CHAT)
    text = plan.sentence(v.basis, confirm.outcome(2.8, [broke, lower]), v.capacity, v.limiter)
    assert text.startswith("1.40 req/s per replica under the chat SLO, lowered by confirmation: the planned 2.80 "
                           "req/s") and "(p95 TTFT 900 ms > 500 ms)" in text
    skipped = plan.sentence(v.basis, confirm.outcome(math.nan, []), v.capacity, v.limiter, "--no-confirm")
    assert skipped.endswith("not confirmed: --no-confirm.")
