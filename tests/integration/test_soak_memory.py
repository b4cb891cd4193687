"""Load held: a 60 s soak against the embedded server keeps the generator's memory flat (`make soak` runs
the 10-minute version; docs/benchmarks.md states the bound and the growth measured)."""

from __future__ import annotations

import pytest

from bench.soak import soak

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GROWTH_BOUND_MB = 10.0
"""RSS growth allowed after the warm-up over ~40 s (~1,500 requests): a leak of ~7 KB per request fails"""


def test_generator_memory_is_flat_over_a_soak(tmp_path):
    result = soak(60.0, tmp_path / "soak")
    assert result["locust_exit_code"] == 0, result["locust_stderr_tail"]
    assert result["report_exit_code"] == 0
    assert result["requests"] > 500
    assert result["rss_growth_mb"] is not None and result["rss_growth_mb"] < GROWTH_BOUND_MB, result["rss_growth_mb"]
    assert result["report_peak_rss_mb"] < 1000
