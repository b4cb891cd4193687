"""Percentile confidence intervals: bootstrap and order-statistic paths."""

from __future__ import annotations

import math

import numpy as np

from llmload.analysis.tables.stats import percentile, quantile_ci


def test_bootstrap_ci_is_deterministic_and_brackets_the_estimate():
    values = np.random.default_rng(1).lognormal(3.0, 0.5, 800)
    lo, hi = quantile_ci(values, 0.99)
    assert (lo, hi) == quantile_ci(values, 0.99)
    assert lo <= percentile(values, 0.99) <= hi
    assert lo < hi


def test_ci_covers_the_true_p99_in_most_trials():
    true_p99 = math.exp(3.0 + 0.5 * 2.326348)  # lognormal(3, 0.5) 99th percentile
    rng = np.random.default_rng(7)
    covered = sum(lo <= true_p99 <= hi for lo, hi in
                  (quantile_ci(rng.lognormal(3.0, 0.5, 1500), 0.99, seed=i, n_boot=200) for i in range(40)))
    assert covered >= 32  # nominal 95 %; bootstrap of an extreme quantile under-covers a little


def test_order_statistic_path_for_large_samples_brackets_truth_and_narrows():
    rng = np.random.default_rng(2)
    big = rng.normal(100, 10, 50_000)
    lo, hi = quantile_ci(big, 0.99)
    true_p99 = 100 + 10 * 2.326348
    assert lo <= true_p99 <= hi
    small_lo, small_hi = quantile_ci(big[:1000], 0.99)
    assert hi - lo < small_hi - small_lo


def test_degenerate_inputs():
    assert all(math.isnan(v) for v in quantile_ci(np.array([5.0]), 0.99))
    assert math.isnan(percentile(np.array([np.nan]), 0.5))
    lo, hi = quantile_ci(np.array([1.0, np.nan, 2.0, 3.0]), 0.5)
    assert 1.0 <= lo <= hi <= 3.0
