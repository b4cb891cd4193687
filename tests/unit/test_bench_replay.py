"""The replay bench's pure parts: the generated trace, the percentile, a rate's row and its table (no load)."""

import pytest

from bench.bench_replay import make_trace, percentile, summarize, to_markdown


def test_constant_trace_is_evenly_spaced_and_poisson_has_the_mean_rate():
    even = make_trace(200, 2.0, "constant")
    assert len(even) == 400 and even[1]["timestamp_s"] == 0.005 and even[-1]["timestamp_s"] == pytest.approx(1.995)
    assert {(r["input_tokens"], r["output_tokens"]) for r in even} == {(16, 8)}
    poisson = make_trace(500, 10.0, "poisson")
    assert len(poisson) == pytest.approx(5000, rel=0.05) and poisson[0]["timestamp_s"] == 0
    stamps = [r["timestamp_s"] for r in poisson]
    assert stamps == sorted(stamps) and stamps[-1] < 10 and len(set(stamps)) > 4900
    assert make_trace(500, 10.0, "poisson") == poisson  # seeded
    with pytest.raises(ValueError):
        make_trace(0, 1.0, "constant")


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99 and percentile([3.0], 99) == 3
    assert percentile([], 50) is None


def test_a_rate_row_counts_sent_dropped_and_received():
    samples = [{"tier": "1", "schedule_lag_ms": str(v), "error": ""} for v in (1, 2, 3)]
    samples.append({"tier": "1", "schedule_lag_ms": "40", "error": "timeout"})
    truth = [{"request_id": f"r{i}"} for i in range(4)] + [{"request_id": "x-calibrate"}]
    log = "INFO open loop tier 1: sent 4, late (> 10 ms) 1, dropped 1, max launch lag 40.0 ms"
    row = summarize(50.0, 5, samples, truth, log)
    assert (row["records_sent"], row["records_failed"], row["records_dropped"], row["server_received"]) == (4, 1, 1, 4)
    assert row["late_over_10ms"] == 1 and row["schedule_lag_p50_ms"] == 2 and row["schedule_lag_p99_ms"] == 40
    assert not row["all_sent_once"]
    whole = summarize(50.0, 4, samples, truth, "")
    assert whole["all_sent_once"] and whole["records_dropped"] is None
    table = to_markdown([row, whole]).splitlines()
    assert len(table) == 4 and table[2].startswith("| 50 | 5 | 4 | 1 | 1 | 4 | 1 | 2 | 40 | 40 | no |")
    assert table[3].endswith("| - | 4 | - | 2 | 40 | 40 | yes |")
