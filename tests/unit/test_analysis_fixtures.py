"""Committed fixture runs: known answers, determinism, and golden CLI text."""

from __future__ import annotations

import difflib
import filecmp
import sys
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402


@pytest.mark.parametrize("name", sorted(make_fixtures.KNOWN))
def test_fixture_known_answers(name):
    run = load_run(FIXTURE_DIR / "runs" / name)
    a = analyze(run, choose_profile(run, None))
    known = make_fixtures.KNOWN[name]
    assert (a.compute.load, a.onset.load) == (known["compute"], known["onset"])
    assert a.saturation.kind == known["saturation"]


def test_fixture_answers_in_detail():
    shed = analyze(r := load_run(FIXTURE_DIR / "runs" / "shed429"), choose_profile(r, None))
    top = shed.table.iloc[-1]
    assert top["n_429"] > 0 and top["retry_after_share"] == 1.0
    assert shed.profile.name == "ide" and shed.capacity.limited_by.startswith("429 rate")
    noknee = analyze(r := load_run(FIXTURE_DIR / "runs" / "noknee"), choose_profile(r, None))
    assert list(noknee.table["overloaded"]) == [False, False, False, False, True]
    assert any("generator itself was busy" in w and "add workers" in w for w in noknee.warnings)
    partial = analyze(r := load_run(FIXTURE_DIR / "runs" / "partial"), choose_profile(r, None))
    assert partial.table["model_mismatch"].sum() > 0
    assert partial.checklist[5][1].startswith("NO:")
    knee16 = analyze(r := load_run(FIXTURE_DIR / "runs" / "knee16"), choose_profile(r, None))
    assert 14 <= knee16.fit.slots <= 18
    assert knee16.checklist[2][1].startswith("Yes") and knee16.checklist[3][1].startswith("Yes")
    cap = knee16.capacity  # 73 ms at 16, 314 ms at 32, waiting between: the bracket, never a line across it
    assert (cap.load, cap.high, cap.measured, cap.why_not) == (16, 32, False, "waiting starts in this interval")


def test_committed_fixtures_match_the_generator(tmp_path):
    make_fixtures.write_fixtures(tmp_path)
    for name in make_fixtures.FIXTURES:
        committed = FIXTURE_DIR / "runs" / name
        files = sorted(p.name for p in committed.iterdir())
        assert files == sorted(p.name for p in (tmp_path / name).iterdir())
        _match, mismatch, errors = filecmp.cmpfiles(committed, tmp_path / name, files, shallow=False)
        assert not mismatch and not errors, f"{name}: regenerate with tests/fixtures/make_fixtures.py ({mismatch})"


def _assert_golden(file: str, actual: str) -> None:
    expected = (FIXTURE_DIR / "golden" / file).read_text()
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "golden", "now"))
        pytest.fail(f"{file} changed; if on purpose run `make_fixtures.py --golden` and review.\n{diff[:4000]}")


@pytest.mark.parametrize("file", sorted(make_fixtures.GOLDEN_COMMANDS))
def test_cli_text_matches_golden(file):
    code, output = make_fixtures.run_cli(make_fixtures.GOLDEN_COMMANDS[file])
    assert code == 0
    _assert_golden(file, output)


@pytest.mark.parametrize("name", make_fixtures.GOLDEN_REPORTS)
def test_report_md_matches_golden(name):
    _assert_golden(f"{name}_report.md", make_fixtures.report_md(name))
