"""The live refusal book (llmload/sink/refusals.py): the model-free ceiling from rows as they land, and what a quota
let through before it refused (the quota-window basis of rules/plan.py)."""

import math

import pytest

from llmload.rules import ceiling as ceiling_mod
from llmload.sink.refusals import RefusalBook


def ok(ts: float) -> dict:
    return {"ts_start_s": ts, "ttft_ms": 40.0, "status": 200, "error": ""}


def refused(ts: float, hint_s: float | None = 60.0) -> dict:
    return {"ts_start_s": ts, "status": 429, "error": "HTTP 429", "retry_after_s": hint_s}


def test_a_quota_spent_before_the_end_counts_what_it_let_through_before_and_nothing_after() -> None:
    book = RefusalBook()
    for i in range(30):  # tier 1: 30 successes from t=100 to t=129.5
        book.note(ok(100.0 + i), 1)
    for i in range(40):  # tier 2 refuses everything from t=130
        book.note(refused(130.0 + i * 0.5), 2)
    c = book.ceiling(end_s=160.0)
    assert c is not None
    assert (c.accepted, c.before, c.tier) == (0, 30, 2)
    assert c.before_s == pytest.approx(30.0)
    assert c.longest_hint_s == 60.0
    assert ceiling_mod.window_rate(c) == pytest.approx(30 / 60)  # the hint's window, longer than the 30 s it took


def test_successes_after_the_first_refusal_make_it_a_ceiling_and_no_window_is_proposed() -> None:
    book = RefusalBook()
    for i in range(10):
        book.note(ok(float(i)), 1)
    book.note(refused(10.0), 2)
    book.note(refused(10.5), 2)
    for i in range(5):  # still some getting through: the ceiling measures it
        book.note(ok(11.0 + i), 2)
    c = book.ceiling(end_s=20.0)
    assert c is not None
    assert (c.accepted, c.before) == (5, 10)
    assert c.rps == pytest.approx(5 / 10.0)
    assert math.isnan(ceiling_mod.window_rate(c))


def test_a_refusal_in_a_tier_that_refused_at_most_one_percent_starts_no_ceiling() -> None:
    book = RefusalBook()
    for i in range(200):
        book.note(ok(i * 0.1), 1)
    book.note(refused(5.0), 1)  # 1 of 201: within the reject limit
    assert book.ceiling(end_s=30.0) is None
