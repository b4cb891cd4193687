"""The live book (sink/live.py): the report's histogram percentiles, every attempt counted once whatever
`--ship` says, and a tier's figures from its measure window."""

from __future__ import annotations

import numpy as np
import pytest

from llmload.analysis.read.histograms import percentile as report_percentile
from llmload.contract import hist_bucket, hist_upper, hist_value
from llmload.sink.histograms import HistogramBook
from llmload.sink.live import LiveBook, percentile, quantile
from llmload.sink.timeline import Tier, TierRecord


def row(ts, ttft=100.0, error="", status=200, e2e=900.0):
    return {"ts_start_s": ts, "status": status, "error": error, "ttft_ms": "" if error else ttft, "e2e_ms": e2e,
            "tpot_ms": "" if error else 8.0, "output_tokens": "" if error else 100, "loop_lag_ms": 1.0}


@pytest.mark.parametrize("q", [0.0, 0.5, 0.95, 0.99, 1.0])
def test_a_percentile_of_bucket_counts_is_the_reports(q):
    rng = np.random.default_rng(7)
    values = rng.lognormal(np.log(120), 0.5, 997)
    counts: dict[int, int] = {}
    for v in values:
        counts[hist_bucket(float(v))] = counts.get(hist_bucket(float(v)), 0) + 1
    buckets = sorted(counts)
    mine = percentile(counts, q)
    theirs = report_percentile(np.array([hist_value(hist_upper(b)) for b in buckets]),
                               np.array([counts[b] for b in buckets]), q)
    assert mine == pytest.approx(theirs, rel=1e-12)
    assert mine == pytest.approx(float(np.quantile(values, q)), rel=0.02)


def test_quantile_of_raw_values_is_numpys():
    values = [5.0, 1.0, 3.0, 10.0]
    assert quantile(values, 0.95) == pytest.approx(float(np.quantile(values, 0.95)))
    assert quantile([], 0.5) != quantile([], 0.5)  # NaN


def test_every_attempt_is_counted_once_whatever_ship_says():
    rows = [{**row(10.0 + i), "tier": 1, "phase": "measure"} for i in range(5)]
    by_rows = LiveBook()
    by_rows.note_received(rows, {"hists": [], "attempts": []}, full=False)  # --ship rows: a gaps-only book
    shipped = HistogramBook(full=True)
    for r in rows:
        shipped.record(r, [], 1, "measure")
    by_hists = LiveBook()
    by_hists.note_received(rows, shipped.take(), full=True)  # --ship both: the worker counted them already
    for book in (by_rows, by_hists):
        assert sum(n[0] for n in book.book.attempts.values()) == 5
        assert len(book.decodes[0]) == 5  # the rows' decodes: output tokens by delivery, as the report counts


def test_a_tier_from_its_measure_window():
    book = LiveBook()
    tier = Tier(tier=2, start_s=0.0, warmup_s=2.0, target_users=4)
    record = TierRecord(tier, end_s=12.0)
    for i in range(40):
        book.note(row(2.0 + i * 0.25), 2, "measure")
    for i in range(10):
        book.note(row(2.5 + i, error="rate_limited", status=429), 2, "measure")
    book.note(row(0.5), 2, "warmup")
    t = book.tier(record, now_s=99.0, dropped=0, waiting=None)
    assert (t.tier, t.load, t.sent, t.ok, t.n_429, t.n_shed) == (2, 4.0, 50, 40, 10, 10)
    # 40 x 100 tokens, each request's spread over 0.8 s of decode: the last three deliver 18.75, 50 and 81.25 of
    # theirs after the window's end (12 s), the warm-up one (decode 0.6-1.4 s) all before its start
    assert t.rate_window_s == 10.0 and t.ok_rps == 4.0 and t.out_tok_s == pytest.approx(385.0)
    assert t.decode_max_ms == 800.0  # e2e 900 - TTFT 100 ms
    book.rows_kept = False  # --ship histograms: the report has no rows, so tokens count by their attempt's send
    assert book.tier(record, now_s=99.0, dropped=0, waiting=None).out_tok_s == 400.0
    assert t.ttft_p95_ms == pytest.approx(100.0, rel=0.01) and t.rate_429 == 0.2
    assert book.trusted(t, record.end_s)
    running = book.tier(TierRecord(tier), now_s=7.0, dropped=0, waiting=None)  # still measuring: up to now
    assert running.rate_window_s == 5.0
