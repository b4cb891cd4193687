"""Output tokens counted where they arrived, and tiers too short for their requests (llmload.rules.delivery,
llmload/analysis/tables/delivery.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.answer import answer_items
from llmload.analysis.tables import delivery
from llmload.rules import delivery as rule
from llmload.rules.limits import HOLD_REQUESTS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def frame(first_s, last_s, tokens, ok=None) -> pd.DataFrame:
    """Rows sent at 0 whose first token came at first_s and last at last_s."""
    n = len(tokens)
    return pd.DataFrame({"ts_start_s": np.zeros(n), "ttft_ms": np.asarray(first_s) * 1000.0,
                         "e2e_ms": np.asarray(last_s) * 1000.0, "output_tokens": tokens,
                         "ok": np.ones(n, bool) if ok is None else ok})


def test_the_arrays_deliver_what_the_rule_book_shares_out():
    """The report's vectorised sums equal the rule book's share per request (which the live book sums), for
    decodes inside, across and outside the windows, one-instant answers and windows touching their ends."""
    rng = np.random.default_rng(7)
    first = rng.uniform(0, 100, 400)
    last = first + np.where(rng.random(400) < 0.2, 0.0, rng.uniform(0.1, 60, 400))
    last[:5] = first[:5]  # one-instant answers on window edges too
    first[:5] = last[:5] = (10.0, 20.0, 30.0, 45.5, 99.0)
    tokens = rng.integers(1, 500, 400).astype(float)
    starts = np.array([0.0, 10.0, 20.0, 30.0, 45.5, 80.0, 150.0])
    ends = np.array([10.0, 20.0, 30.0, 45.5, 80.0, 150.0, 160.0])
    got = delivery.delivered(frame(first, last, tokens), starts, ends)
    want = [sum(t * rule.share_in(f, s, a, b) for f, s, t in zip(first, last, tokens)) for a, b in zip(starts, ends)]
    assert got == pytest.approx(want, rel=1e-9, abs=1e-6)
    assert got.sum() == pytest.approx(tokens.sum())  # the windows tile 0..160: every token lands once


def test_a_request_across_two_tiers_splits_its_tokens_by_time():
    rows = frame([5.0, 1.0], [45.0, 1.0], [400.0, 7.0], ok=np.array([True, False]))  # a failure delivers none
    assert list(delivery.delivered(rows, np.array([0.0, 30.0]), np.array([30.0, 60.0]))) == \
        pytest.approx([250.0, 150.0])
    assert rule.share_in(5.0, 45.0, 30.0, 60.0) == pytest.approx(0.375)
    assert rule.share_in(3.0, 3.0, 3.0, 4.0) == 1.0 and rule.share_in(4.0, 4.0, 3.0, 4.0) == 0.0


def test_too_short_and_the_length_to_hold():
    assert rule.too_short(28.0, 28.5) and not rule.too_short(28.0, 28.0) and not rule.too_short(28.0, 15.0)
    assert not rule.too_short(28.0, float("nan"))
    assert rule.hold_s(2.0, 84.2) == np.ceil(2.0 + HOLD_REQUESTS * 84.2)


def true_delivered(samples: pd.DataFrame, start_s: float, end_s: float) -> float:
    """The simulation's own token times: the first at TTFT, then one every TPOT (its per-token decode step)."""
    ok = samples[(samples["error"].fillna("") == "") & samples["ttft_ms"].notna()]
    total = 0
    for row in ok.itertuples():
        times = row.ts_start_s + (row.ttft_ms + row.tpot_ms * np.arange(int(row.output_tokens))) / 1000.0
        total += int(((times >= start_s) & (times < end_s)).sum())
    return float(total)


def test_long_requests_count_their_tokens_where_they_arrived():
    """Requests of 40-84 s in 30 s tiers: each tier's out tok/s is within 3 % of what the simulated engine
    delivered in its window (it was 2-4x too low when tokens were counted at their request's send and divided by
    the longest request); the tiers are flagged too short for their requests, with the length to hold."""
    run = load_run(FIXTURES / "longreq")
    a = analyze(run, choose_profile(run, None))
    samples = pd.read_csv(FIXTURES / "longreq" / "samples.csv")
    table = a.table.set_index("tier")
    for tier, window in run.tiers.set_index("tier").iterrows():
        truth = true_delivered(samples, window["measure_start_s"], window["end_s"]) / window["measure_s"]
        assert table.loc[tier, "out_tok_s"] == pytest.approx(truth, rel=0.03), tier
    assert table["out_tok_s"].is_monotonic_increasing and table.loc[3, "out_tok_s"] > 80
    assert list(table["short_for_requests"]) == [False, True, True]  # tier 1 measured no request
    assert not table.loc[table["sent"] > 0, "judged"].any() and a.compute.status == "none"
    left_out = "no tier can be judged: the 2 tiers with requests were all left out of the verdicts"
    assert a.compute.sentence == a.onset.sentence == f"unknown: {left_out}." and a.capacity.limited_by == left_out
    line = dict(answer_items(a))["Tiers too short:"]
    assert line.startswith("tiers 2, 3 held requests streaming for up to 83 s in 28 s measure windows: left out of "
                           "the verdicts")
    assert table.loc[3, "hold_s"] == np.ceil(2.0 + HOLD_REQUESTS * table["decode_max_ms"].max() / 1000.0)
    warning = next(w for w in a.warnings if w.startswith("Tiers too short for their requests"))
    assert "tier 3 (16 users): decodes of up to 83 s in a 28 s measure window" in warning
    assert warning.endswith(f"Hold each tier at least {table.loc[3, 'hold_s']:.0f} s (its warm-up and 2 x the "
                            "longest decode, 83 s).")


def test_tiers_long_enough_are_not_flagged():
    """Nor a tier whose requests are long only because they waited: its TTFT is its own figure (overload's
    32-user tier waits, the killed run's last tier measured 1 s)."""
    for name in ("knee16", "vllmmetrics", "overload", "openloop", "killed"):
        run = load_run(FIXTURES / name)
        table = analyze(run, choose_profile(run, None)).table
        assert not table["short_for_requests"].any() and table["hold_s"].isna().all(), name


def test_a_tier_is_too_short_for_long_decodes_not_for_long_waits(tmp_path):
    """Requests of 6 s in a 4 s window: flagged when they streamed for 5.9 s, not when they waited 5.9 s for the
    first token (an overloaded tier's wait is its own figure: its SLO breach stays judged)."""
    from test_analysis_audit import T0, ok_row, write_folder

    tiers = [{"tier": 1, "start_s": T0, "end_s": T0 + 5.0, "target_users": 8, "warmup_s": 1.0}]
    for ttft, flagged in ((100.0, True), (5900.0, False)):
        rows = [ok_row(T0 + 1.0 + 0.1 * i, 1, ttft=ttft, e2e=6000.0) for i in range(20)]
        run = load_run(write_folder(tmp_path / f"t{ttft:.0f}", rows, tiers))
        table = analyze(run, choose_profile(run, None)).table
        assert list(table["short_for_requests"]) == [flagged], ttft
        assert table["decode_max_ms"].iloc[0] == pytest.approx(6000.0 - ttft)
