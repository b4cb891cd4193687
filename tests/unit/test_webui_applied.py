"""The load really applied, live (llmload/rules/applied.py): the rule the report uses, the live Tier judged at
the users applied, and the LLM tab's Target cell worded from given figures. No browser, no sockets."""

from __future__ import annotations

import math

import pandas as pd

from llmload.rules.applied import applied_text, under_applied
from llmload.rules.slo import profile_or_default
from llmload.rules.tier import Tier as RuleTier
from llmload.rules.verdicts import judge
from llmload.sink.live import LiveBook
from llmload.sink.timeline import Tier, TierRecord
from llmload.sink.window import StatsSnapshot
from llmload.webui.rows import figures_row, target_text, tier_figures
from llmload.webui.verdicts import LiveView, tier_row
from tests.unit.test_sink_live import row as sample


def test_the_rule_takes_numbers_and_series_alike():
    assert under_applied(5.7, 8, 10) and not under_applied(7.2, 8, 10) and not under_applied(7.19, 8, 0)
    assert not under_applied(math.nan, 8, 10)
    frame = under_applied(pd.Series([5.7, 7.2, math.nan]), pd.Series([8, 8, 8]), pd.Series([3, 3, 3]))
    assert list(frame) == [True, False, False]
    assert applied_text(5.6875) == "5.7 applied" and applied_text(2.0) == "2 applied"


def asked(**kw) -> Tier:
    return Tier(tier=3, start_s=0.0, warmup_s=0.0, **kw)


def test_the_target_cell_says_the_users_applied():
    assert target_text(asked(target_users=8), 5.7) == "8 users (5.7 applied)"
    assert target_text(asked(target_users=8)) == "8 users"
    assert target_text(asked(target_users=6, refined=True), 4.2) == "6 users (refined, 4.2 applied)"
    assert target_text(asked(target_rps=2.5), 1.0) == "2.5 req/s"  # open loop: its rate


def _book_and_record(end_s: float | None = 12.0) -> tuple[LiveBook, TierRecord]:
    book = LiveBook()
    record = TierRecord(Tier(tier=2, start_s=0.0, warmup_s=2.0, target_users=8), end_s=end_s)
    for i in range(40):
        book.note(sample(2.0 + i * 0.25), 2, "measure")
    return book, record


def test_a_live_tier_below_its_target_is_judged_at_the_users_applied():
    book, record = _book_and_record()
    asked = []

    def applied(start_s: float, end_s: float) -> dict:
        asked.append((start_s, end_s))
        return {"users_mean": 5.69, "users_min": 4}

    (tier,) = book.tiers([record], now_s=20.0, applied=applied)
    assert asked == [(2.0, 12.0)]  # the measure window: tiers.csv's
    assert tier.under_applied and tier.load == 5.7 and tier.target == 8 and tier.applied_users == 5.69
    (full,) = book.tiers([record], now_s=20.0, applied=lambda s, e: {"users_mean": 7.5})
    assert not full.under_applied and full.load == 8 and full.applied_users == 7.5
    (unknown,) = book.tiers([record], now_s=20.0, applied=lambda s, e: {"users_mean": None})
    assert not unknown.under_applied and unknown.load == 8


def test_the_tab_row_says_it_while_the_tier_runs_and_after():
    for end_s in (None, 12.0):
        record = TierRecord(Tier(tier=2, start_s=0.0, warmup_s=2.0, target_users=8), at_start=StatsSnapshot(),
                            at_warm=StatsSnapshot(), warm_s=2.0, end_s=end_s,
                            at_end=StatsSnapshot() if end_s else None)
        fig = tier_figures(record, StatsSnapshot(), now_s=10.0)
        slo = profile_or_default("chat")
        judged = RuleTier(tier=2, load=5.7, load_target=8.0, under_applied=True, applied_users=5.69, sent=40, ok=40)
        row = tier_row(figures_row(fig), fig, LiveView(slo, judge([judged], "users", slo)))
        assert row["target"] == "8 users (5.7 applied)" and row["applied_users"] == 5.69 and row["under_applied"]
        full = RuleTier(tier=2, load=8.0, applied_users=7.5, sent=40, ok=40)
        row = tier_row(figures_row(fig), fig, LiveView(slo, judge([full], "users", slo)))
        assert row["target"] == "8 users" and row["applied_users"] == 7.5 and "under_applied" not in row
