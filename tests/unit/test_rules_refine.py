"""`--refine`'s rule (llmload.rules.refine): on a server whose truth is known, the tiers it adds measure the
capacity bracket and the queueing onset to one user (5 % of the rate) within the planned bound."""

from __future__ import annotations

import math

import pytest

from llmload.rules import refine, slo
from llmload.rules.tier import Tier
from llmload.rules.verdicts import judge

CHAT, VOICE = slo.PROFILES["chat"], slo.PROFILES["voice"]


def closed_loop_tier(number: int, users: float, slots: int, service_s: float, ttft0_ms: float = 40.0) -> Tier:
    """What a `slots`-slot FIFO server does at `users` closed-loop users: throughput min(users, slots)/service,
    each request waits service x (users/slots - 1) on average, p95 about twice the mean wait."""
    x = min(users, slots) / service_s
    wait_ms = max(0.0, users / x - service_s) * 1000.0
    return Tier(tier=number, load=float(users), sent=int(x * 30), ok=int(x * 30), ok_rps=x, rps=x,
                out_tok_s=x * 32, rate_window_s=30.0, ttft_mean_ms=ttft0_ms + wait_ms,
                ttft_p95_ms=ttft0_ms * 1.2 + 2.0 * wait_ms, tpot_mean_ms=15.0, e2e_mean_ms=service_s * 1000 + wait_ms,
                srv_waiting_mean=max(0.0, users - slots))


def refined(loads, make, unit: str, profile, most: int = refine.DEFAULT_MAX_TIERS):
    """Run the planned loads, then the rule's tiers, as the shape does; the verdicts and the loads added."""
    tiers = [make(i + 1, load) for i, load in enumerate(loads)]
    added = []
    while len(added) < most:
        step = refine.next_step(judge(tiers, unit, profile), unit, [t.load for t in tiers])
        if step is None:
            break
        added.append(step)
        tiers.append(make(len(tiers) + 1, step.load))
    return judge(tiers, unit, profile), added


def true_capacity(make, profile, upto: int = 64) -> int:
    return max(n for n in range(1, upto) if make(0, n).ttft_p95_ms <= profile.ttft_p95_ms)


@pytest.mark.parametrize("slots, service_s, profile", [(4, 0.5, CHAT), (6, 0.5, CHAT), (4, 0.4, VOICE),
                                                        (6, 0.3, VOICE), (16, 0.24, CHAT)])
def test_doubling_tiers_refine_to_the_true_capacity_and_onset(slots, service_s, profile):
    def make(number, users):
        return closed_loop_tier(number, users, slots, service_s)

    v, added = refined([1, 2, 4, 8, 16, 32], make, "users", profile)  # the default bound: 4 tiers
    cap = v.capacity
    assert cap.measured and cap.met.load == true_capacity(make, profile) and cap.high == cap.met.load + 1
    assert len(added) <= refine.DEFAULT_MAX_TIERS and added[0].kind == "capacity"
    v, added = refined([1, 2, 4, 8, 16, 32], make, "users", profile, most=10)  # room for the onset too
    assert v.onset.load == slots and v.onset.next_load == slots + 1  # the onset is the slot count, measured
    assert v.capacity.met.load == cap.met.load and refine.next_step(v, "users", [t.load for t in v.tiers]) is None


def test_the_capacity_bracket_comes_first_and_an_interval_is_halved():
    def make(number, users):
        return closed_loop_tier(number, users, 4, 0.5)

    v = judge([make(i + 1, n) for i, n in enumerate([1, 2, 4, 8])], "users", CHAT)
    step = refine.next_step(v, "users", [1, 2, 4, 8])
    assert (step.load, step.kind, step.why) == (6, "capacity", "capacity between 4 and 8 users")
    assert refine.middle(16, 32, "users") == 24 and refine.middle(4, 6, "users") == 5
    assert refine.next_step(v, "users", [1, 2, 4, 6, 8]).load == 5  # 6 was sent (left out): the nearest untested


def test_the_bound_on_added_tiers_leaves_a_bracket_that_the_report_calls_wide():
    def make(number, users):
        return closed_loop_tier(number, users, 16, 0.24)

    v, added = refined([1, 2, 4, 8, 16, 32, 64], make, "users", CHAT, most=1)
    assert len(added) == 1 and not v.capacity.measured


def open_loop_tier(number: int, rate: float, capacity_rps: float) -> Tier:
    """Arrivals past the server's capacity pile up: p95 blows up, arrivals are dropped at the in-flight cap."""
    over = rate > capacity_rps
    served = min(rate, capacity_rps)
    return Tier(tier=number, load=rate, sent=int(rate * 30), ok=int(served * 30), ok_rps=served, rps=rate,
                out_tok_s=served * 32, rate_window_s=30.0, ttft_mean_ms=900.0 if over else 40.0,
                ttft_p95_ms=2500.0 if over else 60.0, tpot_mean_ms=15.0, e2e_mean_ms=500.0,
                srv_waiting_mean=20.0 if over else 0.0)


def test_rate_tiers_refine_geometrically_to_five_percent():
    def make(number, rate):
        return open_loop_tier(number, rate, 11.0)

    v, added = refined([2, 4, 8, 16], make, "req/s", CHAT, most=8)
    cap = v.capacity
    assert cap.measured and cap.met.load <= 11.0 < cap.high and cap.high - cap.met.load <= 0.05 * cap.met.load
    assert added[0].load == pytest.approx(math.sqrt(8 * 16), rel=0.01)  # halved in log space
    assert len(added) <= 5


def test_below_the_lowest_tier_halves_and_hold_takes_the_capacity():
    def make(number, users):
        return closed_loop_tier(number, users, 1, 1.0)  # one slot, 1 s per request: 2 users already miss voice

    v = judge([make(1, 4), make(2, 8)], "users", VOICE)
    assert v.capacity.status == "below"
    assert refine.next_step(v, "users", [4, 8]).load == 2
    v, _added = refined([4, 8], make, "users", VOICE)
    assert v.capacity.status == "within" and v.capacity.met.load == 1 and v.capacity.measured
    assert refine.hold_step(v, "users").load == 1
    nothing = judge([make(1, 2), make(2, 4)], "users", slo.profile_from("chat", ttft_p95_ms=1.0))
    assert refine.next_step(nothing, "users", [1, 2, 4]) is None and refine.hold_step(nothing, "users") is None


def test_a_load_tested_twice_is_judged_by_its_longer_tier():
    short = closed_loop_tier(3, 5, 4, 0.5)
    hold = Tier(**{**short.__dict__, "tier": 4, "sent": short.sent * 10, "ttft_p95_ms": 700.0})
    tiers = [closed_loop_tier(1, 2, 4, 0.5), closed_loop_tier(2, 4, 4, 0.5), short, hold]
    v = judge(tiers, "users", CHAT)
    assert [t.tier for t in v.judged] == [1, 2, 4]  # the hold tier at 5 users replaces the short one
    assert (v.capacity.met.load, v.capacity.high) == (4, 5)
    assert len(judge(tiers, "users", CHAT, climbing=False).judged) == 4  # a soak's windows all count
