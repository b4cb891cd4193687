"""A rate limiter is told from a concurrency cap by its 429s, and every line of a report says the same of it
(fakeai with rpm 120 must not read as '2.8 effective parallel slots', 'more load got less through' and
'plan on 2.3 req/s per replica', above the 2.0 req/s its limiter sustains)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmload.analysis.analyze import Target, analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.answer import answer_items, capacity_table
from llmload.analysis.report.summary import summary
from llmload.rules import limiter
from llmload.rules.tier import Tier

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REFUSING = ("shed429", "shedhint", "shed503", "shedstream", "cap429", "parked", "noisyplateau", "ratelimit")
"""fixtures whose server refuses load: only `ratelimit` is a rate limiter"""


def run_of(name: str, target: Target | None = None, folder: str = "runs"):
    run = load_run(FIXTURES / folder / name)
    return analyze(run, choose_profile(run, None), target)


def test_the_token_bucket_is_a_rate_limiter_and_its_sustained_rate_is_the_late_tiers():
    a = run_of("ratelimit")
    lim = a.limiter
    assert lim is not None and lim.first.tier == 2 and [t.tier for t in lim.over] == [3, 4]
    assert round(lim.sustained_rps, 2) == 2.0 and round(lim.per_minute) == 120  # the bucket's 120 rpm refill
    assert "x-ratelimit-remaining-requests fell to 0" in lim.evidence
    assert "fewer than the 1.7 at 2 users" in lim.evidence  # the drained bucket: 0.6 in service at 4 users


@pytest.mark.parametrize("name", REFUSING)
def test_every_line_of_a_refusing_run_agrees_on_whether_it_is_a_rate_limiter(name):
    a = run_of(name)
    items = dict(answer_items(a))
    text = " ".join(items.values()) + " " + " ".join(dict(a.checklist).values())
    data = json.loads(json.dumps(summary(a)))
    if name != "ratelimit":
        assert a.limiter is None and data["rate_limiter"] is None and "rate limiter" not in text
        assert a.saturation.kind != "rate limited"
        return
    sustained = a.limiter.sustained_rps
    assert a.saturation.kind == data["saturation"]["branch"] == "rate limited"
    assert data["rate_limiter"]["sustained_rps"] == pytest.approx(sustained)
    assert items["Queueing model:"].startswith("not identifiable: a rate limiter") and a.fit is None  # no slots
    assert "more load got less through" not in text and "degrades" not in text
    assert "admission limit" not in text and "effective parallel slots" not in text
    assert items["Compute saturation:"].startswith("not measured: a rate limiter caps throughput: it sustains 2.0")
    assert "It sustains 2.0 req/s (120 requests a minute" in items["Saturation:"]
    # no rate named above what it sustained once it refused: the capacity's 3.3 req/s at 1 user is capped
    assert "at most 1.99 req/s sustained, what the server accepted once it refused" in items["Capacity:"]
    assert items["Plan:"].startswith("1.39 req/s per replica under the chat SLO, 30% below the 1.99 req/s it "
                                     "accepted once it refused")
    assert "replicas behind it share it: more of them add nothing" in items["Plan:"]
    assert items["Rate limit:"].startswith("A rate limiter, not a concurrency cap")
    assert all(row[3].endswith("(sustained)") for row in capacity_table(a).rows)
    assert a.planning_capacity is not None and a.planning_capacity.ok_rps <= sustained


def test_a_replica_plan_behind_a_rate_limiter_is_on_its_sustained_rate_and_says_a_quota_is_shared():
    a = run_of("ratelimit", Target(10.0, "rps"))
    assert a.plan is not None and a.plan.replicas == 8  # 10 / (1.99 x 0.7), never on the burst's 3.3
    plan = dict(answer_items(a))["Replica plan:"]
    assert "8 replicas of the tested deployment, each loaded to the planned (unconfirmed) 1.4 req/s" in plan
    assert "Behind one shared quota (one API key, one proxy) the whole deployment gets 1.99 req/s" in plan
    assert summary(a)["replicas"]["upper_bound"] is False


def test_a_window_that_outlasts_the_tiers_proposes_its_first_window_unconfirmed():
    """LiteLLM rpm 60 (recorded): nothing succeeded after the quota ran out, so no sustained rate was measured; what
    it let through before (59 in 26 s), over the 60 s its Retry-After named, is the rate to try (0.98 req/s, the
    quota's 1 req/s within its first window), planned 30 % below and, this run predating confirmation, unconfirmed."""
    a = run_of("litellm-rpm", Target(10.0, "rps"), "recorded")
    assert a.limiter is not None and not a.limiter.measured
    assert a.ceiling is not None and (a.ceiling.accepted, a.ceiling.before, a.ceiling.longest_hint_s) == (0, 59, 60.0)
    items = dict(answer_items(a))
    assert items["Plan:"].startswith("0.69 req/s per replica under the chat SLO, 30% below the 59 requests it let "
                                     "through before its first refusal, over the 60 s its retry hint names (0.98 "
                                     "req/s; nothing got through after it within the tiers); not confirmed: ")
    assert "replicas behind it share it" in items["Plan:"]
    assert items["Replica plan:"] == ("for 10 req/s under the chat SLO: 15 replicas of the tested deployment, each "
                                      "loaded to the planned (unconfirmed) 0.7 req/s. Behind one shared quota (one "
                                      "API key, one proxy) the whole deployment gets 0.98 req/s, whatever the count.")
    assert summary(a)["rate_limiter"]["sustained_rps"] is None
    assert summary(a)["plan"]["basis"]["kind"] == "quota window"


def tier(i: int, users: int, ok: int, refused: int, e2e_ms: float, **kw) -> Tier:
    return Tier(tier=i, load=float(users), sent=ok + refused, ok=ok, ok_rps=ok / 10.0, n_429=refused,
                n_shed=refused, e2e_mean_ms=e2e_ms, rate_window_s=10.0, **kw)


def test_a_concurrency_cap_keeps_its_requests_in_service_and_is_no_rate_limiter():
    """A cap of 4 (LiteLLM max_parallel_requests): 4 in service at every refusing tier, even as a busy CPU slows each
    request (its successes scale with 1 / service time, not with the clock)."""
    capped = [tier(1, 2, 100, 0, 200.0), tier(2, 4, 200, 0, 200.0), tier(3, 8, 150, 300, 270.0),
              tier(4, 16, 110, 900, 360.0)]
    assert limiter.recognise(capped, "users") is None
    # the same counts with a quota header that ran dry at the first refusal: the server says it is a quota
    quota = [*capped[:2], tier(3, 8, 150, 300, 270.0, remaining_requests_min=0.0, remaining_requests_max=40.0),
             capped[3]]
    lim = limiter.recognise(quota, "users")
    assert lim is not None and lim.evidence == "x-ratelimit-remaining-requests fell to 0 of 40"
    # a reset header as the retry hint names a quota too
    reset = [*capped[:2], tier(3, 8, 150, 300, 270.0, retry_after_sources="x-ratelimit-reset-requests"), capped[3]]
    assert limiter.recognise(reset, "users") is not None
    # quota left when the refusals began (shedhint): the cap's 429s, not the quota's
    left = [*capped[:2], tier(3, 8, 150, 300, 270.0, remaining_requests_min=15.0, remaining_requests_max=60.0),
            capped[3]]
    assert limiter.recognise(left, "users") is None


def test_tiers_inside_one_quota_window_sustain_the_ceiling_not_their_own_rate():
    """LiteLLM's rpm 60 behind 20 s tiers (realtest 2026-12-05): tier 3 got 44 in 15 s (2.9 req/s) inside one minute's
    window, but from the first refusal on 44 were accepted in 36 s (1.22 req/s): the limiter sustains the ceiling,
    and every sentence names that rate."""
    from llmload.rules import ceiling as ceiling_mod

    rows = [tier(1, 1, 33, 0, 450.0, retry_after_sources="llm_provider-retry-after"),
            tier(2, 2, 0, 1180, 5.0, retry_after_sources="llm_provider-retry-after", remaining_requests_min=0.0,
                 remaining_requests_max=60.0),
            Tier(tier=3, load=4.0, sent=822, ok=44, ok_rps=44 / 15.0, n_429=778, n_shed=778, e2e_mean_ms=450.0,
                 rate_window_s=15.0, retry_after_sources="llm_provider-retry-after")]
    ceiling = ceiling_mod.measured(100.0, 136.1, 44, 2, 60.0, 33, 20.0)
    lim = limiter.recognise(rows, "users", ceiling)
    assert lim is not None and lim.sustained_rps == ceiling.rps == pytest.approx(44 / 36.1)
    assert limiter.what(lim, "users").startswith(  # 36 s of a 60 s window (issue 44 item 4): an upper bound
        "it sustains at most 1.2 req/s (at most 73 requests a minute, from its first refusal, in tier 2, to the end "
        "of the tiers), over 36 s, shorter than its longest retry hint (60 s): a new quota window's burst may be in "
        "it, so its sustained rate may be lower"), limiter.what(lim, "users")
    assert lim.short and lim.upper_bound
    whole = limiter.recognise(rows, "users", ceiling_mod.measured(100.0, 160.0, 73, 2, 60.0, 33, 20.0))
    assert whole is not None and not whole.short and limiter.what(whole, "users").startswith(
        "it sustains 1.2 req/s (73 requests a minute, from its first refusal, in tier 2, to the end of the tiers) "
        "and refuses"), limiter.what(whole, "users")  # held a whole window: its rate, said plainly
    inside = limiter.recognise(rows, "users", ceiling_mod.measured(100.0, 115.0, 44, 2, 60.0, 33, 20.0))
    assert inside is not None and inside.over and inside.sustained_rps == pytest.approx(44 / 15.0)  # no gap: its own
