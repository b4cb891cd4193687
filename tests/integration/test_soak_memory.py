"""Load held: a 30 s soak against the embedded server keeps the generator's memory flat (`make soak` runs
the 10-minute version; docs/benchmarks.md states the bound and the growth measured).

The bound is per request, so the run can be short: the generator's RSS (with the embedded server's)
is flat from ~3 s after its start, so growth is measured from WARMUP_S to the end and divided by the
requests sent in that span; a leak of LEAK_BOUND_BYTES per request or more fails, the same bound the
60 s version had (10 MB over ~1,500 requests)."""

from __future__ import annotations

import csv

import pytest

from bench.soak import soak

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SOAK_S = 30.0
WARMUP_S = 5.0
"""start-up: imports, the first connections, Locust's first stats entries"""
LEAK_BOUND_BYTES = 7_000
"""RSS growth allowed per request after the warm-up (~25 s, ~900 requests here: ~6 MB)"""


def test_generator_memory_is_flat_over_a_soak(tmp_path):
    result = soak(SOAK_S, tmp_path / "soak")
    assert result["locust_exit_code"] == 0, result["locust_stderr_tail"]
    assert result["report_exit_code"] == 0
    steady = [(t, mb) for t, mb in result["locust_rss_mb"] if WARMUP_S <= t <= SOAK_S and mb > 0]
    span_s = steady[-1][0] - steady[0][0]
    with open(tmp_path / "soak" / "samples.csv", newline="") as f:
        starts = [float(r["ts_start_s"]) for r in csv.DictReader(f)]
    in_span = sum(1 for ts in starts if ts >= max(starts) - span_s)  # the run's last span_s: the RSS window
    assert span_s >= 20 and in_span > 500, (span_s, in_span)
    growth_bytes = (steady[-1][1] - steady[0][1]) * 1e6
    assert growth_bytes / in_span < LEAK_BOUND_BYTES, (growth_bytes, in_span)
    assert result["report_peak_rss_mb"] < 1000
