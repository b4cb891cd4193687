"""The rule book's one call (`llmload.rules.verdicts.judge`) and `--stop-at-knee`'s rule on its verdicts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.tables.judged import tiers_of
from llmload.rules import slo
from llmload.rules.stop import stop_reason
from llmload.rules.tier import Tier
from llmload.rules.verdicts import judge

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))

import make_fixtures  # noqa: E402


@pytest.mark.parametrize("name", sorted(make_fixtures.VERDICTS))
def test_judge_on_the_tier_table_gives_the_fixtures_known_answers(name):
    """The rule book's one call on the tier table alone (no limiter, ceiling or tested-tier count: what the live
    verdicts have) against the hand-written answers of each fixture (make_fixtures.VERDICTS), not against the
    report, which calls the same judge."""
    run = load_run(FIXTURES / "runs" / name)
    a = analyze(run, choose_profile(run, None))
    kept = set(a.table.loc[a.table["judged"], "tier"])
    v = judge(tiers_of(a.table), run.load_unit, a.profile, lambda t: t.tier in kept)
    known = make_fixtures.VERDICTS[name]
    assert v.compute.load == known["compute"], v.compute.sentence
    assert (v.onset.load if v.onset.status == "within" else None) == known["onset"], v.onset.sentence
    assert v.saturation.kind == known["saturation"], v.saturation.sentence


def tiers(ok_rps, ttft_mean_ms, n_429=None) -> list[Tier]:
    loads = [1, 2, 4, 8, 16, 32][:len(ok_rps)]
    refused = n_429 or [0] * len(ok_rps)
    return [Tier(tier=i + 1, load=float(load), sent=1000, ok=1000 - refused[i], ok_rps=float(ok_rps[i]),
                 n_429=refused[i], n_shed=refused[i], ttft_mean_ms=float(ttft_mean_ms[i]), tpot_mean_ms=1.5,
                 e2e_mean_ms=float(ttft_mean_ms[i]) + 150.0, rate_window_s=10.0, ttft_p95_ms=ttft_mean_ms[i] * 1.2)
            for i, load in enumerate(loads)]


CHAT = slo.PROFILES["chat"]


def test_the_run_goes_on_until_the_plateau_is_seen_and_the_top_tier_waits():
    run = tiers([10, 20, 40, 80, 81, 80], [50, 50, 51, 52, 160, 420])
    for upto in (1, 2, 3, 4):  # throughput still grows: no knee
        assert stop_reason(run[upto - 1], judge(run[:upto], "users", CHAT), 0.05) is None
    at16 = judge(run[:5], "users", CHAT)  # 16 adds nothing over 8 and its requests wait
    assert at16.compute.reached and at16.saturation.kind == "queues"
    reason = stop_reason(run[4], at16, 0.05)
    assert reason is not None and reason.startswith("tier 5: knee passed: compute saturation at 8 users (tier 4)")


def test_waiting_while_throughput_still_grows_does_not_stop_the_run():
    run = tiers([3.6, 5.1, 5.3, 6.6, 8.0], [30, 40, 60, 600, 1500])  # vLLM with 4 slots: queued, still creeping up
    v = judge(run, "users", CHAT)
    assert v.onset.reached and not v.compute.reached and stop_reason(run[-1], v, 0.05) is None


def test_a_tier_that_fails_more_than_the_bound_stops_the_run_with_its_counts():
    run = tiers([10, 20, 21], [50, 50, 50], n_429=[0, 0, 300])
    reason = stop_reason(run[-1], judge(run, "users", CHAT), 0.05)
    assert reason == "tier 3: 30.0% of requests failed > 5.0% (300 of 1000, 300 were 429)"
