"""Stats windows (sink/window.py), tiers.csv writer, progress line (the stop rule: test_rules_verdicts.py)."""

import csv

import pytest
from locust.stats import RequestStats

from llmload.shaping.progress import Progress, format_line
from llmload.shaping.tiers_csv import TiersCsv
from llmload.sink.timeline import Tier
from llmload.sink.window import StatsSnapshot, diff, percentile_ms, snapshot


class RateLimited(Exception):
    pass


def test_percentile_from_histogram():
    assert percentile_ms({}, 0.99) is None
    counts = {10: 98, 50: 1, 400: 1}
    assert percentile_ms(counts, 0.5) == 10
    assert percentile_ms(counts, 0.99) == 50
    assert percentile_ms(counts, 1.0) == 400
    assert percentile_ms({7: 1}, 0.99) == 7


def test_snapshot_and_diff_separate_llm_ttft_429_and_drops():
    stats = RequestStats()
    before = snapshot(stats)
    for ms in (100, 120, 900):
        stats.log_request("TTFT", "chat", ms, 50)
        stats.log_request("ITL", "chat", 20, 10)
        stats.log_request("LLM", "chat", ms * 3, 40)
    stats.log_request("LLM", "chat", 5, 0)
    stats.log_error("LLM", "chat", RateLimited(2.0))
    stats.log_request("SCHED", "dropped (max-inflight)", 0, 0)
    stats.log_error("SCHED", "dropped (max-inflight)", "cap")
    w = diff(before, snapshot(stats))
    assert (w.requests, w.failures, w.rate_limited, w.output_tokens, w.dropped) == (4, 1, 1, 120, 1)
    assert w.ttft_count == 3 and w.ttft_p99_ms == 900
    assert w.error_rate == pytest.approx(0.25)


def test_diff_after_locust_reset_uses_the_new_totals():
    old = StatsSnapshot(ttft_counts={100: 50}, requests=50)
    new = StatsSnapshot(ttft_counts={200: 3}, requests=3, failures=1)
    w = diff(old, new)
    assert (w.requests, w.failures, w.ttft_p99_ms) == (3, 1, 200)


def read_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_tiers_csv_is_complete_after_every_change(tmp_path):
    w = TiersCsv(tmp_path / "run" / "tiers.csv")
    w.begin(Tier(1, 1000.0, 2.0, target_users=1))
    rows = read_rows(w.path)
    assert rows == [{"tier": "1", "start_s": "1000.000000", "end_s": "", "target_users": "1", "target_rps": "",
                     "warmup_s": "2.000", "dropped": "", "users_min": "", "users_mean": "", "users_max": "",
                     "workers_min": "", "workers_max": "", "refined": "0",
                     "confirm": "0"}]
    w.end(1010.0)
    w.begin(Tier(2, 1010.0, 2.0, target_rps=4.0))
    rows = read_rows(w.path)
    assert [r["end_s"] for r in rows] == ["1010.000000", ""]  # a killed run: last end_s empty
    w.end(1020.5, dropped=3)
    w.end(1030.0)  # no-op once ended
    rows = read_rows(w.path)
    assert rows[-1]["end_s"] == "1020.500000" and rows[-1]["dropped"] == "3" and rows[-1]["target_rps"] == "4"
    assert [p.name for p in w.path.parent.iterdir()] == ["tiers.csv"]


def test_progress_line_has_what_a_person_follows():
    line = format_line(Progress(3, 5, 4, None, 12.4, 252, 412.3, 1850.2, 3, 0))
    assert line == ("tier 3/5 users=4 | tier left 12s, run left 4m12s | p99 TTFT 412 ms | 1850 tok/s | 429s 3")
    line = format_line(Progress(1, 2, None, 2.5, 1, 1, None, None, 0, 7, phase="warmup"))
    assert "rate=2.5/s (warm-up)" in line and "p99 TTFT -" in line and "dropped 7" in line
