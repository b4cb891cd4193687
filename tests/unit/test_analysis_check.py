"""`python -m analysis check`: the SLO gate on fixture runs: lines, exit codes, JUnit, TOML objectives."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from llmload.rules import slo

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402


def check(*argv: str) -> tuple[int, str]:
    return make_fixtures.run_cli(["check", *argv])


def test_pass_at_a_load_that_meets_the_objective():
    code, out = check("runs/knee16", "--slo", "chat", "--at-load", "16")
    assert code == 0
    assert out.splitlines()[0] == "SLO chat at tier 5 (16 users): PASS"
    assert out.splitlines()[1].split() == ["PASS", "TTFT", "p95", "73.4", "ms", "<=", "500", "ms", "tier", "5",
                                           "(16", "users)"]


def test_without_a_load_a_step_run_is_judged_where_the_slo_holds():
    code, out = check("runs/knee16", "--slo", "voice")  # the report: voice capacity 16 users, 32 miss it
    assert code == 0
    assert out.splitlines()[0] == "SLO voice holds up to 16 users (tier 5); 32 users (tier 6) misses it: PASS"
    criteria = [line for line in out.splitlines()[1:] if not line.startswith("objective ")]
    assert len(criteria) == 4 and all(line.startswith("PASS ") and "tier 5 (16 users)" in line for line in criteria)
    code, out = check("runs/shed429", "--slo", "chat")
    assert code == 0
    assert out.splitlines()[0] == "SLO chat holds up to 4 users (tier 3); 8 users (tier 4) misses it: PASS"


def test_a_run_that_misses_the_slo_at_its_lowest_load_fails(tmp_path):
    file = tmp_path / "slo.toml"
    file.write_text("[profiles.tight]\nttft = { p = 95, max_ms = 10 }\nmax_error_rate = 0.01\n")
    code, out = check("runs/knee16", "--slo", "tight", "--slo-file", str(file))
    assert code == 1
    assert out.splitlines()[0] == "SLO tight: not met at the lowest load, 1 user (tier 1): FAIL"
    failed = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert len(failed) == 1 and "TTFT p95" in failed[0] and "tier 1 (1 user)" in failed[0]


def test_fail_on_ttft():
    code, out = check("runs/knee16", "--slo", "voice", "--at-load", "32")
    assert code == 1
    assert out.splitlines()[0] == "SLO voice at tier 6 (32 users): FAIL"
    failed = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert len(failed) == 1 and "TTFT p95" in failed[0] and "<= 250 ms" in failed[0]


def test_fail_on_429_rate_and_capacity_below_the_requirement():
    code, out = check("runs/shed429", "--slo", "chat", "--capacity-at-least", "8")
    assert code == 1
    assert out.splitlines()[0] == "SLO chat capacity: 4 users (required: at least 8 users): FAIL"
    failed = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert len(failed) == 1 and "429 rate" in failed[0] and "17.78%" in failed[0] and "tier 4 (8 users)" in failed[0]
    assert check("runs/shed429", "--slo", "chat", "--capacity-at-least", "4")[0] == 0


def test_too_few_samples_cannot_judge(tmp_path):
    file = tmp_path / "slo.toml"
    file.write_text("[profiles.tail]\nttft = { p = 99, max_ms = 500 }\nmax_error_rate = 0.01\n")
    code, out = check("runs/parked", "--slo", "tail", "--slo-file", str(file), "--at-load", "1")
    assert code == 2
    assert "CANNOT JUDGE  TTFT p99" in out and "[39 successes, need 100]" in out
    assert "PASS          error rate" in out  # what can be judged still is


def test_no_tier_at_that_load_and_a_bad_folder_exit_2(tmp_path):
    code, out = check("runs/knee16", "--at-load", "3")
    assert code == 2 and "no tier at 3 users (tested: 1, 2, 4, 8, 16, 32 users)" in out
    assert check(str(tmp_path))[0] == 2


def test_junit_file_parses_with_one_case_per_criterion(tmp_path):
    junit = tmp_path / "slo.xml"
    code, _ = check("runs/knee16", "--slo", "voice", "--at-load", "32", "--junit", str(junit))
    suite = ET.parse(junit).getroot()
    assert code == 1 and suite.tag == "testsuite" and suite.get("name") == "llmload SLO voice"
    cases = suite.findall("testcase")
    assert len(cases) == len(slo.STOCK["voice"].criteria) == int(suite.get("tests"))
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["TTFT p95 at tier 6"] and suite.get("failures") == "1"


def test_toml_objective_with_goodput_and_out_tps(tmp_path):
    file = tmp_path / "slo.toml"
    file.write_text('[profiles.strict]\nttft = { p = 99, max_ms = 100 }\nout_tps = { p = 5, min = 200 }\n'
                    'max_error_rate = 0.0\nmin_goodput_rps = 60\n')
    obj = slo.objective("strict", str(file))
    assert [c.metric for c in obj.criteria] == ["ttft", "out_tps", "error_rate", "goodput_rps"]
    code, out = check("runs/knee16", "--slo", "strict", "--slo-file", str(file), "--at-load", "16")
    lines = {line[14:42].strip(): line for line in out.splitlines()[1:5]}
    assert lines["TTFT p99"].startswith("PASS") and lines["out tok/s per request p5"].startswith("PASS")
    assert lines["goodput"].startswith("PASS")
    code8, out8 = check("runs/knee16", "--slo", "strict", "--slo-file", str(file), "--at-load", "8")
    assert code == 0 and code8 == 1 and "FAIL          goodput" in out8  # 35 req/s at 8 users < 60


@pytest.mark.parametrize("text", ["[profiles.x]\nttft = 5\n", "[profiles.x]\nspeed = 3\n", "nope = [",
                                  "[other]\n", "[profiles.x]\nttft = { p = 100, max_ms = 5 }\n"])
def test_bad_slo_files_say_what_to_fix(tmp_path, text):
    file = tmp_path / "slo.toml"
    file.write_text(text)
    with pytest.raises(slo.SloFileError) as err:
        slo.objective("x", str(file))
    assert str(file) in str(err.value)
