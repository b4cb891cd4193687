"""Mergeable log-bucketed histograms: the stated precision against numpy, merge = union, the files."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from llmload.analysis.read import histograms as ah
from llmload.contract import (
    HIST_FLOOR,
    HIST_RELATIVE_ERROR,
    HIST_TOP_BUCKET,
    HIST_UPPERS,
    HISTOGRAM_COLUMNS,
    hist_bucket,
    hist_upper,
    hist_value,
)
from llmload.sink.histograms import HistogramBook, add_sorted, delta_rows


def known_gaps(seed: int = 11, n: int = 20_000) -> np.ndarray:
    """Inter-token-like gaps: a decode step with jitter, chunks read together (0 ms), rare stalls."""
    rng = np.random.default_rng(seed)
    gaps = rng.lognormal(np.log(12.0), 0.25, n)
    gaps[rng.random(n) < 0.1] = 0.0
    gaps[rng.random(n) < 0.003] = rng.uniform(300, 2500, int(n * 0.003) or 1)[0]
    return np.sort(gaps)


def test_every_bucket_stands_for_its_values_within_the_stated_precision():
    values = np.concatenate([np.geomspace(HIST_FLOOR, 1e7, 50_001), [HIST_FLOOR, 1.0, 12.5]])
    for value in values:
        bucket = hist_bucket(float(value))
        assert bucket >= 1 and hist_upper(bucket - 1) <= value * (1 + 1e-12)
        assert value < hist_upper(bucket) * (1 + 1e-12)
        assert abs(hist_value(hist_upper(bucket)) - value) <= HIST_RELATIVE_ERROR * value * (1 + 1e-9)
    assert hist_bucket(0.0) == hist_bucket(HIST_FLOOR / 2) == hist_bucket(float("nan")) == 0
    assert hist_value(hist_upper(0)) == 0.0


def test_bounds_belong_to_the_bucket_above_and_huge_values_to_the_top_one():
    for bucket in range(1, HIST_TOP_BUCKET - 1, 7):
        assert hist_bucket(HIST_UPPERS[bucket]) == bucket + 1
        assert hist_bucket(HIST_UPPERS[bucket] * (1 - 1e-12)) == bucket
    assert hist_bucket(1e300) == hist_bucket(float("inf")) == HIST_TOP_BUCKET
    counts: dict[int, int] = {}
    add_sorted(counts, [0.0, HIST_FLOOR, *HIST_UPPERS[1:60:3], 1e300, float("inf")])
    assert sum(counts.values()) == 24
    assert counts[HIST_TOP_BUCKET] == 2 and counts[0] == 1


@pytest.mark.parametrize("q", [0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0])
def test_percentiles_match_numpy_within_the_stated_precision(q):
    gaps = known_gaps()
    counts: dict[int, int] = {}
    add_sorted(counts, gaps.tolist())
    buckets = sorted(counts)
    values = np.array([hist_value(hist_upper(b)) for b in buckets])
    got = ah.percentile(values, np.array([counts[b] for b in buckets]), q)
    exact = float(np.quantile(gaps, q))
    assert abs(got - exact) <= HIST_RELATIVE_ERROR * exact + HIST_FLOOR


def test_sorted_counting_equals_one_value_at_a_time():
    gaps = [*known_gaps(seed=3, n=5000).tolist(), *HIST_UPPERS[100:400:2]]
    gaps.sort()
    fast: dict[int, int] = {}
    add_sorted(fast, gaps)
    slow: dict[int, int] = {}
    for g in gaps:
        slow[hist_bucket(g)] = slow.get(hist_bucket(g), 0) + 1
    assert fast == slow


def row(**figures) -> dict:
    base = {"ts_start_s": 1.0, "status": 200, "error": "", "ttft_ms": 50.0, "e2e_ms": 400.0, "tpot_ms": 10.0,
            "itl_mean_ms": 10.0, "out_tps": 100.0, "output_tokens": 36, "input_tokens": 20, "retry_of": "",
            "retry_after_s": "", "schedule_lag_ms": ""}
    return {**base, **figures}


def test_merging_books_is_the_union_of_what_they_recorded():
    gaps = known_gaps(seed=5, n=4000).tolist()
    whole, left, right = HistogramBook(full=True), HistogramBook(full=True), HistogramBook(full=True)
    records = [(row(ttft_ms=40.0 + i), gaps[i * 40:(i + 1) * 40]) for i in range(100)]
    records.append((row(status=429, error="rate_limited", ttft_ms="", e2e_ms="", retry_after_s=1.0), []))
    for i, (r, g) in enumerate(records):
        whole.record(r, g, 2, "measure")
        (left if i % 3 else right).record(r, g, 2, "measure")
    merged = HistogramBook(full=True)
    merged.merge(left.take())
    merged.merge(right.take())
    assert merged.hists == whole.hists and merged.attempts == whole.attempts
    assert whole.attempts[(2, "measure", 429, "rate_limited")] == [1, 0, 0, 1, 0, 0]
    assert whole.attempts[(2, "measure", 200, "")][:2] == [100, 100]
    assert sum(whole.hists[(2, "measure", "itl_gap_ms")].values()) == 4000


def test_without_full_only_the_gaps_of_successes_are_kept():
    book = HistogramBook()
    book.record(row(), [10.0, 10.0, 11.0], 1, "measure")
    book.record(row(error="timeout"), [10.0, 12.0], 1, "measure")
    assert list(book.hists) == [(1, "measure", "itl_gap_ms")] and not book.attempts
    assert sum(book.hists[(1, "measure", "itl_gap_ms")].values()) == 3


def test_open_loop_latency_counts_from_the_intended_send():
    book = HistogramBook(full=True)
    book.record(row(ttft_ms=50.0, schedule_lag_ms=100.0), [], 1, "measure")
    (bucket,) = book.hists[(1, "measure", "ttft_ms")]
    assert abs(hist_value(hist_upper(bucket)) - 150.0) <= 1.5


def test_delta_rows_summed_by_the_analysis_give_the_histogram(tmp_path):
    gaps = known_gaps(seed=9, n=3000).tolist()
    path = tmp_path / "histograms.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, HISTOGRAM_COLUMNS)
        writer.writeheader()
        for part in (gaps[:1000], gaps[1000:]):  # two flushes: delta rows of the same buckets
            book = HistogramBook()
            book.record(row(), part, 3, "measure")
            book.record(row(), [999.0], 3, "warmup")
            writer.writerows(delta_rows(book.take())[0])
    hists = ah.read(tmp_path)
    assert hists is not None and hists.count(3, "itl_gap_ms") == 3000
    exact = float(np.quantile(gaps, 0.99))
    assert abs(hists.percentile(3, "itl_gap_ms", 0.99) - exact) <= HIST_RELATIVE_ERROR * exact + HIST_FLOOR
