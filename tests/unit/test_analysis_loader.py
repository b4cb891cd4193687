"""Loading run folders: alignment to tiers.csv, partial runs, tolerance, bad folders."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from llmload.analysis.read.run import RunError, load_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"


def copy_fixture(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name))


def test_measure_window_comes_from_tiers_csv_not_the_phase_column(tmp_path):
    run_dir = copy_fixture(tmp_path, "knee16")
    samples = pd.read_csv(run_dir / "samples.csv", keep_default_na=False)
    expected = load_run(run_dir).samples["measured"].copy()
    samples["phase"] = "measure"  # a writer that got the phase wrong
    samples.to_csv(run_dir / "samples.csv", index=False)
    run = load_run(run_dir)
    assert (run.samples["measured"] == expected).all()
    assert (~expected).sum() > 0
    assert any("phase column disagrees" in note for note in run.notes)
    tiers = run.tiers.set_index("tier")
    measured = run.samples[run.samples["measured"]]
    start = measured["tier"].map(tiers["measure_start_s"])
    assert (measured["ts_start_s"] >= start).all()


def test_partial_run_says_what_is_missing(tmp_path):
    run = load_run(copy_fixture(tmp_path, "partial"))
    notes = " ".join(run.notes)
    assert "no end_s" in notes and "ended_unix" in notes and "health.csv missing" in notes
    last = run.tiers.iloc[-1]
    assert not last["complete"]
    done = run.samples["ts_start_s"] + run.samples["e2e_ms"].fillna(0) / 1000  # the last completion, not send
    assert last["end_s"] == pytest.approx(done.max(), abs=1e-3)
    assert last["end_s"] > run.samples["ts_start_s"].max() + 0.1


def cut_file(tmp_path: Path, keep: int = 0) -> tuple[Path, pd.DataFrame]:
    """A copy of knee16 whose samples.csv ends in half a row (a killed writer)."""
    run_dir = copy_fixture(tmp_path, "knee16")
    text = (run_dir / "samples.csv").read_text()
    lines = text.rstrip("\n").split("\n")
    last = lines[-1]
    cut = last[: last.index(",", len(last) // 3)]  # cut mid-row, after the ttft column
    (run_dir / "samples.csv").write_text("\n".join(lines[:-1] + [cut]))
    return run_dir, pd.read_csv(FIXTURES / "knee16" / "samples.csv", keep_default_na=False)


def test_a_half_written_last_row_is_dropped_not_counted_as_a_success(tmp_path):
    run_dir, whole = cut_file(tmp_path)
    run = load_run(run_dir)
    assert len(run.samples) == len(whole) - 1
    assert run.samples["request_id"].iloc[-1] == whole["request_id"].iloc[-2]
    assert any("partial row" in n and "dropped" in n for n in run.notes)
    assert int(run.samples["ok"].sum()) == int((whole["error"] == "").sum()) - 1


def test_a_malformed_middle_row_is_named_and_the_rest_read(tmp_path):
    run_dir = copy_fixture(tmp_path, "knee16")
    lines = (run_dir / "samples.csv").read_text().split("\n")
    lines[100] = lines[100][:40]
    lines[200] = lines[200] + ",extra"
    (run_dir / "samples.csv").write_text("\n".join(lines))
    run = load_run(run_dir)
    total = len(lines) - 2  # header, trailing newline
    assert len(run.samples) == total - 2
    note = next(n for n in run.notes if "malformed" in n)
    assert "2 malformed row(s) (line 101, 201" in note and f"other {total - 2} rows were read" in note


def test_many_malformed_rows_are_an_error_that_says_so(tmp_path):
    run_dir = copy_fixture(tmp_path, "knee16")
    lines = (run_dir / "samples.csv").read_text().split("\n")
    bad = len(lines) // 50
    for i in range(1, bad + 1):
        lines[i * 10] = "1,2,3"
    (run_dir / "samples.csv").write_text("\n".join(lines))
    with pytest.raises(RunError) as err:
        load_run(run_dir)
    assert f"{bad} of {len(lines) - 2} rows are malformed" in str(err.value) and "more than 1%" in str(err.value)


def test_extra_columns_ignored_and_optional_columns_may_be_missing(tmp_path):
    run_dir = copy_fixture(tmp_path, "noknee")
    samples = pd.read_csv(run_dir / "samples.csv", keep_default_na=False)
    samples = samples[["ts_start_s", "error", "ttft_ms", "e2e_ms", "status", "output_tokens"]]
    samples["something_new"] = "x"
    samples.to_csv(run_dir / "samples.csv", index=False)
    for name in ("health.csv", "run.json"):
        (run_dir / name).unlink()
    run = load_run(run_dir)
    assert run.samples["measured"].sum() > 0
    assert "something_new" not in run.samples
    assert any("run.json missing" in note for note in run.notes)


def test_without_tiers_csv_tiers_come_from_the_samples(tmp_path):
    run_dir = copy_fixture(tmp_path, "shed429")
    (run_dir / "tiers.csv").unlink()
    run = load_run(run_dir)
    assert list(run.tiers["load"]) == [1, 2, 4, 8, 16]
    assert any("tiers.csv missing" in note for note in run.notes)


@pytest.mark.parametrize("case", ["no_dir", "empty_dir", "foreign_csv", "header_only", "garbage", "bad_json",
                                  "text_in_numbers"])
def test_bad_folders_raise_one_line_run_error(tmp_path, case):
    run_dir = tmp_path / "run"
    if case != "no_dir":
        run_dir.mkdir()
    if case == "foreign_csv":
        (run_dir / "samples.csv").write_text("name,age\nbob,3\n")
    elif case == "header_only":
        (run_dir / "samples.csv").write_text("ts_start_s,error,ttft_ms,e2e_ms\n")
    elif case == "garbage":
        (run_dir / "samples.csv").write_bytes(b"\x00\xff\xfe binary \x00\n\x01")
    elif case == "bad_json":
        shutil.copy(FIXTURES / "noknee" / "samples.csv", run_dir / "samples.csv")
        (run_dir / "run.json").write_text("{not json")
    elif case == "text_in_numbers":
        (run_dir / "samples.csv").write_text("ts_start_s,error,ttft_ms,e2e_ms\nyesterday,,12,20\n")
    with pytest.raises(RunError) as err:
        load_run(run_dir)
    message = str(err.value)
    assert "\n" not in message and str(run_dir) in message


def test_run_json_is_read(tmp_path):
    run = load_run(copy_fixture(tmp_path, "knee16"))
    assert run.name == "knee16" and run.load_unit == "users"
    assert run.info["options"]["api_key"] == "***"
    assert run.history is not None and run.history["users"].max() == 32
    assert json.loads((FIXTURES / "knee16" / "run.json").read_text())["slo_profile"] == "ide"
