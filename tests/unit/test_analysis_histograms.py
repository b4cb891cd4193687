"""Pooled ITL from histograms.csv (report, gate, summary) and runs recorded with --ship histograms: the same
analysis, tables and verdicts as from rows, within the histograms' precision."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read import hist_run
from llmload.analysis.read.run import load_run
from llmload.analysis.report import splits as report_splits
from llmload.analysis.report import summary
from llmload.analysis.report.document import to_markdown
from llmload.analysis.tables import tiers
from llmload.analysis.verdicts import gate as check
from llmload.contract import HIST_RELATIVE_ERROR
from llmload.rules import slo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURES))

import fixture_histograms  # noqa: E402
import make_fixtures  # noqa: E402

STREAM = """[profiles.stream]
itl = { p = 95, max_ms = 50 }
itl_gap = { p = 99, max_ms = 100 }
"""


def cli(*argv: str) -> tuple[int, str]:
    return make_fixtures.run_cli(list(argv))


@pytest.fixture(scope="module")
def hist_knee16(tmp_path_factory) -> Path:
    """knee16 as --ship histograms records it (no samples.csv), beside the rows it came from."""
    path = tmp_path_factory.mktemp("hist") / "knee16"
    shutil.copytree(FIXTURES / "runs" / "knee16", path)
    fixture_histograms.as_histograms(path)
    return path


def test_the_gate_fails_on_pooled_itl_p99_while_the_per_request_mean_passes(tmp_path):
    objectives = tmp_path / "slo.toml"
    objectives.write_text(STREAM)
    code, out = cli("check", "runs/itlstall", "--slo", "stream", "--slo-file", str(objectives))
    assert code == 1
    lines = {line.split("  ")[0].strip() + " " + line[14:44].strip() for line in out.splitlines()[1:3]}
    assert lines == {"PASS ITL (per-request mean) p95", "FAIL ITL (every gap) p99"}
    assert "396 ms" in out or "400 ms" in out or "397 ms" in out


def test_a_pooled_criterion_cannot_be_judged_without_histograms(tmp_path):
    objectives = tmp_path / "slo.toml"
    objectives.write_text(STREAM)
    code, out = cli("check", "runs/knee16", "--slo", "stream", "--slo-file", str(objectives))
    assert code == 2 and "CANNOT JUDGE  ITL (every gap) p99" in out and "no histograms.csv" in out


def test_pooled_itl_beside_the_per_request_means_in_table_and_summary():
    run = load_run(FIXTURES / "runs" / "itlstall")
    table = tiers.tier_table(run).set_index("tier")
    assert table.loc[2, "itl_mean_p95_ms"] < 50 and 390 <= table.loc[2, "itl_gap_p99_ms"] <= 410
    assert table.loc[2, "itl_gaps"] == int(run.samples.query("measured and ok and tier == 2")["output_tokens"].sum()
                                           - len(run.samples.query("measured and ok and tier == 2")))
    assert np.isnan(table.loc[1, "itl_gap_p999_ms"]) == (table.loc[1, "itl_gaps"] < 1000)


def test_the_report_shows_every_gap_beside_the_per_request_means_and_summary_json_carries_it():
    run = load_run(FIXTURES / "runs" / "itlstall")
    a = analyze(run, choose_profile(run, None))
    md = to_markdown(report_splits.decode_blocks(a))
    assert "ITL mean p50" in md and "ITL every gap p50" in md and "within 1% of the exact one" in md
    data = summary.summary(a)
    assert data["schema"] == "llmload.summary/5"
    assert data["source"] == {"kind": "samples", "relative_error": HIST_RELATIVE_ERROR, "cannot_show": []}
    assert 390 <= data["tiers"][1]["itl_gap_ms"]["p99"] <= 410 and data["tiers"][1]["itl_gap_ms"]["gaps"] > 0


def test_histograms_give_the_rows_counts_and_percentiles_within_the_stated_precision(hist_knee16):
    assert hist_run.is_histogram_run(hist_knee16)
    rows = tiers.tier_table(load_run(FIXTURES / "runs" / "knee16")).set_index("tier")
    hist = tiers.tier_table(load_run(hist_knee16)).set_index("tier")
    for col in ("sent", "ok", "failed", "n_429"):
        assert (hist[col] == rows[col]).all(), col
    for col in ("ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "tpot_p95_ms",
                "itl_mean_p95_ms"):
        assert (abs(hist[col] - rows[col]) <= HIST_RELATIVE_ERROR * rows[col] + 0.002).all(), col
    assert (abs(hist["ok_rps"] - rows["ok_rps"]) <= 1e-9 + 0.02 * rows["ok_rps"]).all()


def test_a_histogram_run_reports_its_knees_and_says_what_it_cannot_show(hist_knee16):
    h = analyze(run := load_run(hist_knee16), choose_profile(run, None))
    assert not run.per_request and h.onset.load == make_fixtures.KNOWN["knee16"]["onset"]
    assert h.compute.load == make_fixtures.KNOWN["knee16"]["compute"]
    code, out = cli("report", str(hist_knee16))
    assert code == 0 and "(from histograms)" in out
    report = (hist_knee16 / "report.md").read_text()
    assert "From histograms." in report and "within 1% of the exact one" in report and "nan" not in report
    for sentence in hist_run.CANNOT_SHOW:
        assert sentence[1:40] in report
    data = summary.summary(h)
    assert data["source"]["kind"] == "histograms" and data["source"]["cannot_show"] == list(hist_run.CANNOT_SHOW)
    assert data["tiers"][0]["ttft_ms"]["p99_ci_low"] is None and data["tiers"][0]["goodput_rps"] is None
    assert {c["status"] for c in data["capacity"]} <= {"within", "beyond", "below"}
    assert all(c["goodput_rps"] is None for c in data["capacity"])
    assert data["saturation"]["branch"] == "queues" and "Goodput needs per-request rows" in report
    code, out = cli("knee", str(hist_knee16))
    assert code == 0 and "Queueing onset: at 16 users (tier 5)" in out


def test_the_gate_judges_a_histogram_run_and_cannot_judge_goodput(hist_knee16, tmp_path):
    objectives = tmp_path / "slo.toml"
    objectives.write_text("[profiles.g]\nttft = { p = 95, max_ms = 5000 }\nmin_goodput_rps = 1\n")
    result = check.run_check(str(hist_knee16), slo.objective("g", str(objectives)), at_load=4)
    by = {v.criterion.metric: v for v in result.verdicts}
    assert by["ttft"].status == check.PASS and by["goodput_rps"].status == check.CANNOT
    assert "--ship rows" in by["goodput_rps"].why
    code, out = cli("plots", str(hist_knee16))  # every figure drawn from the tier table; none from rows
    names = {Path(line).stem for line in out.split()}
    assert code == 0 and {"knee", "throughput", "errors"} <= names and not names & {"ttft_cdf", "timeline"}
    code, _out = cli("watch", str(hist_knee16))  # needs per-request rows: one line on stderr
    assert code == 2


def test_a_plateau_where_the_server_starts_refusing_reads_the_same_from_histograms(tmp_path):
    """shed429 shipped as histograms: attempts.csv's counts give the tier's shed rate and codes, so compute
    saturation names where refusals began as it does from samples.csv."""
    path = tmp_path / "shed429"
    shutil.copytree(FIXTURES / "runs" / "shed429", path)
    from_rows = analyze(load_run(path), choose_profile(load_run(path), None)).compute.sentence
    fixture_histograms.as_histograms(path)
    from_hists = analyze(load_run(path), choose_profile(load_run(path), None)).compute.sentence
    assert "Refusals began only above it (from 8 users on; 17.8% there: 32 x 429)" in from_rows
    assert from_hists == from_rows


SAME_VERDICTS = ("batchslow", "cap429", "failing", "openloop", "overload", "shed503", "thrash", "timeouts")


@pytest.mark.parametrize("name", SAME_VERDICTS)
def test_histograms_give_the_verdicts_rows_give(tmp_path, name):
    """One pipeline: the same run shipped as histograms gets the same knees, saturation branch and capacity bracket
    (a capacity interpolated within 2 %: percentiles within 1 %)."""
    path = tmp_path / name
    shutil.copytree(FIXTURES / "runs" / name, path)
    rows = analyze(run := load_run(path), choose_profile(run, None))
    fixture_histograms.as_histograms(path)
    hists = analyze(run := load_run(path), choose_profile(run, None))
    assert not run.per_request
    for a in (rows, hists):
        assert a.capacity.status == rows.capacity.status
    assert (hists.compute.status, hists.compute.load) == (rows.compute.status, rows.compute.load)
    assert (hists.onset.status, hists.onset.load) == (rows.onset.status, rows.onset.load)
    assert (hists.saturation.kind, hists.saturation.rule) == (rows.saturation.kind, rows.saturation.rule)
    if rows.capacity.load == rows.capacity.load:
        assert hists.capacity.load == pytest.approx(rows.capacity.load, rel=0.02)


def test_a_tier_whose_users_may_have_parked_on_a_retry_hint_is_not_judged_from_histograms(tmp_path):
    """parked (2 slots, Retry-After 999999): at 4 users two users sleep through tier 3. Rows show who (the report
    says it sheds); histograms cannot, so tier 3 is left out with a warning instead of read as 'not saturated at
    4 users' with 'at least 4 users' of capacity."""
    path = tmp_path / "parked"
    shutil.copytree(FIXTURES / "runs" / "parked", path)
    fixture_histograms.as_histograms(path)
    a = analyze(run := load_run(path), choose_profile(run, None))
    assert list(a.table["parked_unknown"]) == [False, False, True] and list(a.table["judged"]) == [True, True, False]
    assert a.capacity.status == "beyond" and a.capacity.load == 2.0
    assert "4 users" not in a.saturation.sentence
    assert any(w.startswith("Tier 3 (4 users): 2 refused attempts of its warm-up carried a retry hint") and
               "left out of the knees" in w for w in a.warnings)
    rows = analyze(run := load_run(FIXTURES / "runs" / "parked"), choose_profile(run, None))
    assert not rows.table["parked_unknown"].any() and rows.saturation.kind == "sheds"


@pytest.mark.parametrize("empty_is_error", [False, True])
def test_empty_answers_shipped_as_histograms_count_as_from_rows(tmp_path, empty_is_error):
    """attempts.csv keeps `empty_answer` as its own kind: the same counts, error rates, kinds and totals as the
    rows, whether the run counts empty answers as errors (run.json) or not."""
    path = tmp_path / "emptyanswers"
    shutil.copytree(FIXTURES / "runs" / "emptyanswers", path)
    info = json.loads((path / "run.json").read_text())
    (path / "run.json").write_text(json.dumps({**info, "empty_answer_is_error": empty_is_error}))
    rows = analyze(run := load_run(path), choose_profile(run, None))
    fixture_histograms.as_histograms(path)
    hists = analyze(run := load_run(path), choose_profile(run, None))
    columns = ["sent", "ok", "n_empty", "failed", "error_rate", "other_fail_rate"]
    assert hists.table[columns].to_dict("list") == rows.table[columns].to_dict("list")
    assert hists.kinds.to_dict() == rows.kinds.to_dict() and hists.totals.empty[1] == rows.totals.empty[1]
    assert (hists.saturation.kind, hists.capacity.status) == (rows.saturation.kind, rows.capacity.status)
