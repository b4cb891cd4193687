"""`python -m analysis check RUN --baseline OLD`: the regression gate on a fixture run, a slowed copy of it
(its samples' TTFT and e2e x 1.12) and its summary.json alone; exit codes, lines and JUnit."""

from __future__ import annotations

import csv
import json
import math
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile, profile_source
from llmload.analysis.read.run import load_run
from llmload.analysis.report import baseline, summary
from llmload.analysis.verdicts import regression
from llmload.rules import regression as rule

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402

SLOWER = 1.12


def check(*argv: str) -> tuple[int, str]:
    return make_fixtures.run_cli(["check", *argv])


def slowed_copy(source: Path, dest: Path, factor: float) -> Path:
    """A copy of a run whose every TTFT and e2e is `factor` times longer (the server got slower)."""
    shutil.copytree(source, dest)
    with (source / "samples.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for column in ("ttft_ms", "e2e_ms"):
            if row[column]:
                row[column] = f"{float(row[column]) * factor:.3f}"
    with (dest / "samples.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return dest


def as_summary(path: Path, records: tuple[str, str, list[dict]]) -> Path:
    """The part of a summary.json the gate reads (run id, load unit, tiers), written from a run's records."""
    name, unit, tiers = records
    path.write_text(json.dumps({"schema": summary.SCHEMA_ID, "run": {"id": name, "load_unit": unit}, "tiers": tiers}))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """knee16, its slowed copy and their tier records; knee16's summary.json alone (as `report` writes it), and the
    slowed copy's records as a summary (the gate's other inputs then cost no tabulation)."""
    tmp = tmp_path_factory.mktemp("baseline")
    knee16 = FIXTURE_DIR / "runs" / "knee16"
    run = load_run(knee16)
    a = analyze(run, choose_profile(run, None), source=profile_source(run, None))
    only = tmp / "summary_only"
    only.mkdir()
    (only / "summary.json").write_text(summary.dumps(a))
    slow = slowed_copy(knee16, tmp / "slow", SLOWER)
    return {"knee16": knee16, "slow": slow, "summary": only / "summary.json", "summary_dir": only,
            "slow_summary": as_summary(tmp / "slow.json", baseline.records(str(slow)))}


def test_a_run_against_itself_passes(runs):
    code, out = check(str(runs["knee16"]), "--baseline", str(runs["knee16"]))
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "knee16 against baseline knee16 (max regression 10%): PASS"
    assert not [line for line in lines if line.startswith("FAIL")]
    assert len(lines) == 1 + 6 * len(regression.METRICS)  # every tier x figure
    assert "TTFT p99" in out and "output tok/s" in out and "error rate" in out


def test_a_summary_json_alone_is_a_baseline_and_gives_the_same_figures(runs):
    from_rows = baseline.records(str(runs["knee16"]))
    for path in (runs["summary"], runs["summary_dir"]):
        name, unit, tiers = baseline.records(str(path))
        assert (name, unit) == from_rows[:2]
        for m in regression.METRICS:
            for old, new in zip(from_rows[2], tiers):
                a, b = regression.figure(old, m), regression.figure(new, m)
                assert a.count == b.count
                for x, y in ((a.value, b.value), (a.low, b.low), (a.high, b.high)):
                    assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y)
    assert check(str(runs["summary"]), "--baseline", str(runs["summary"]))[0] == 0


def test_a_slower_run_fails_where_it_is_beyond_the_noise_and_passes_within_it(runs, tmp_path):
    junit = tmp_path / "gate.xml"
    code, out = check(str(runs["slow"]), "--baseline", str(runs["summary"]), "--junit", str(junit))
    assert code == 1
    assert out.splitlines()[0].endswith("(max regression 10%): REGRESSION")
    result = regression.judge(baseline.records(str(runs["summary"])), baseline.records(str(runs["slow_summary"])),
                              0.10)
    worse = [line for line in result.lines if line.metric.key.startswith(("ttft", "e2e"))
             and line.status != rule.CANNOT]
    beyond = [line for line in worse if line.new.low > line.old.high]
    noisy = [line for line in worse if line.new.low <= line.old.high]
    assert beyond and noisy  # the slowed copy has both kinds
    assert all(rule.change(line.old.value, line.new.value) > 0.10 for line in worse)
    assert all(line.status == rule.FAIL for line in beyond)
    assert all(line.status == rule.PASS and "within the runs' confidence intervals" in line.why for line in noisy)
    assert all(line.status != rule.FAIL for line in result.lines if line.metric.key.startswith("itl"))
    failed = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert len(failed) == len(beyond) and all("beyond both runs' confidence intervals" in f for f in failed)
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and len(suite.findall("testcase")) == len(result.lines)
    assert int(suite.get("failures")) == len(beyond) == len(suite.findall("testcase/failure"))
    assert int(suite.get("skipped")) == sum(line.status == rule.CANNOT for line in result.lines)
    assert "->" in suite.find("testcase/failure").get("message")
    # the same slowdown under a larger threshold passes
    assert check(str(runs["slow_summary"]), "--baseline", str(runs["summary"]), "--max-regression", "15%")[0] == 0
    # and the old run against the slower one as its baseline is faster: no regression
    assert check(str(runs["summary"]), "--baseline", str(runs["slow_summary"]))[0] == 0


def test_a_summary_without_the_intervals_cannot_judge_those_figures(runs, tmp_path):
    doc = json.loads(runs["summary"].read_text())
    for tier in doc["tiers"]:  # as a /3 summary: TTFT p99's interval only
        tier["ttft_ms"] = {k: v for k, v in tier["ttft_ms"].items() if not k.startswith("p50_ci")}
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    code, out = check(str(runs["summary"]), "--baseline", str(old))
    assert code == 0
    assert all("no confidence interval in the baseline" in line for line in out.splitlines() if "TTFT p50" in line)


def test_no_common_tier_other_units_or_a_bad_baseline_exit_2(runs, tmp_path, capsys):
    doc = json.loads(runs["summary"].read_text())
    for tier in doc["tiers"]:
        tier["load_target"] *= 3
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    code, out = check(str(runs["summary"]), "--baseline", str(other))
    assert code == 2 and "no tier at a load both runs asked (this run: 1, 2, 4, 8, 16, 32; baseline: 3, 6" in out
    junit = tmp_path / "gate.xml"
    code, out = check("runs/openloop", "--baseline", str(runs["summary"]), "--junit", str(junit))
    assert code == 2 and "the baseline's load is in users, this run's in req/s" in out
    assert ET.parse(junit).getroot().find("testcase/error") is not None
    bad = tmp_path / "notes.txt"
    bad.write_text("not json")
    capsys.readouterr()
    assert check(str(runs["knee16"]), "--baseline", str(bad))[0] == 2
    assert "not a readable summary.json" in capsys.readouterr().err
    assert check(str(runs["knee16"]), "--baseline", str(tmp_path / "missing"))[0] == 2
    assert check(str(runs["knee16"]), "--baseline", str(runs["knee16"]), "--max-regression", "10")[0] == 2
    assert check(str(runs["knee16"]), "--baseline", str(runs["knee16"]), "--slo", "chat")[0] == 2


@pytest.mark.parametrize(("text", "value"), [("10%", 0.10), ("0.25", 0.25), (" 5% ", 0.05)])
def test_max_regression_reads_a_percentage_or_a_fraction(text, value):
    assert baseline.threshold(text) == pytest.approx(value)


def test_the_rule_needs_both_the_threshold_and_the_noise():
    old = rule.Figure(100.0, 90.0, 110.0, 500)
    assert rule.verdict(old, rule.Figure(130.0, 120.0, 140.0, 500), 0.10, True, 99)[0] == rule.FAIL
    assert rule.verdict(old, rule.Figure(130.0, 105.0, 160.0, 500), 0.10, True, 99)[0] == rule.PASS  # overlap
    assert rule.verdict(old, rule.Figure(108.0, 111.0, 112.0, 500), 0.10, True, 99)[0] == rule.PASS  # threshold
    assert rule.verdict(old, rule.Figure(70.0, 60.0, 80.0, 500), 0.10, False, None)[0] == rule.FAIL  # throughput
    assert rule.verdict(old, rule.Figure(130.0, 120.0, 140.0, 50), 0.10, True, 99)[0] == rule.CANNOT  # too few
    assert rule.verdict(old, rule.Figure(130.0, 120.0, 140.0, 500), 0.10, True, 99, left_out=True)[0] == rule.CANNOT
