"""The generator bench's scaling table: the (b) / (a) ratio row and its markdown (no load)."""

from bench.generator.scaling import scaling_ratio, to_markdown


def row(processes: int, chunks_per_s: float, p99: float) -> dict:
    return {"streams": 128 * processes, "processes": processes, "requests": 100 * processes,
            "req_per_s": 100.0 * processes, "chunks_per_s": chunks_per_s, "warm_ttft_err_p99_ms": p99,
            "samples_files": ["samples.csv"]}


def test_ratio_met_at_same_accuracy():
    ratio = scaling_ratio(row(1, 10_000.0, 1.2), row(2, 19_500.0, 2.8))
    assert ratio["chunks_ratio"] == 1.95 and ratio["req_ratio"] == 2.0
    assert ratio["ratio_met"] and ratio["same_accuracy"]
    table = to_markdown([row(1, 10_000.0, 1.2), row(2, 19_500.0, 2.8)], ratio)
    assert "**1.95x**" in table and "same accuracy (both <= 10 ms)" in table
    assert len(table.strip().splitlines()) == 5


def test_ratio_missed_or_less_accurate():
    ratio = scaling_ratio(row(1, 10_000.0, 1.0), row(2, 15_000.0, 12.0))
    assert ratio["chunks_ratio"] == 1.5 and not ratio["ratio_met"] and not ratio["same_accuracy"]
    assert "not met" in ratio["note"] and "not the same accuracy" in ratio["note"]
    assert scaling_ratio({}, row(2, 1.0, 1.0))["chunks_ratio"] is None


def test_the_machine_facts_carry_a_python_speed_calibration():
    """Runs on different days are comparable only through it: it must grow with the work it times."""
    from bench.generator.common import calibration_ms, machine_facts

    assert calibration_ms(lines=500, repeats=1) < calibration_ms(lines=100000, repeats=1)
    assert machine_facts()["calibration_ms_at_start"] > 0
