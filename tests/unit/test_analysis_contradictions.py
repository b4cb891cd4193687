"""The fixture set read side by side for contradictions between the report's parts.

Every failed attempt a tier table counts has a kind in "Failures by kind"; the rule book's figures of a tier
(`Tier.failed`, `error_rate`) are the table's; the run totals count in measured windows what the tier tables
count; summary.json says what the tables say; and the live book (the web UI's verdicts) counts the same rows
the same way; the agent sessions the report counts are the samples' sessions. Each fixture with failures or
empty answers is read as recorded (in the others every count compared is 0), and the empty-answer fixture also
with its empty answers counted as errors (--empty-answer-is-error).
"""

from __future__ import annotations

import csv
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import Run, counting_empty_as_error, load_run
from llmload.analysis.report.summary import summary
from llmload.analysis.tables import tiers, totals
from llmload.analysis.tables.judged import tiers_of
from llmload.rules.outcomes import empty_text
from llmload.sink.live import LiveBook
from llmload.sink.timeline import Tier as TimelineTier
from llmload.sink.timeline import TierRecord

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402


def _with_outcomes(name: str) -> bool:
    """A fixture with an attempt that was not a plain answer with text (a failure or an empty answer): in the
    others every count compared here is 0 (--ship histograms runs keep attempts.csv: always read)."""
    samples = FIXTURE_DIR / "runs" / name / "samples.csv"
    if not samples.exists():
        return True
    with samples.open(newline="") as f:
        return any(row["error"] for row in csv.DictReader(f))


CASES = [(name, False) for name in sorted(make_fixtures.FIXTURES) if _with_outcomes(name)] + [("emptyanswers", True)]
_cache: dict = {}


@dataclass(frozen=True)
class Parts:
    """The parts of one fixture's report that count attempts (the tier table, failures by kind, run totals)."""

    run: Run
    table: pd.DataFrame
    kinds: pd.DataFrame
    totals: totals.Totals


def run_of(name: str, empty_is_error: bool) -> Run:
    run = load_run(FIXTURE_DIR / "runs" / name)
    return counting_empty_as_error(run) if empty_is_error else run


def parts(name: str, empty_is_error: bool) -> Parts:
    if (name, empty_is_error) not in _cache:
        run = run_of(name, empty_is_error)
        _cache[name, empty_is_error] = Parts(run, tiers.tier_table(run), tiers.error_kinds(run), totals.run_totals(run))
    return _cache[name, empty_is_error]


@pytest.mark.parametrize(("name", "empty_is_error"), CASES)
def test_every_failure_has_a_kind_and_the_rule_book_counts_the_table(name, empty_is_error):
    a = parts(name, empty_is_error)
    table = a.table.set_index("tier")
    kinds = a.kinds.reindex(table.index, fill_value=0).sum(axis=1)
    assert kinds.to_dict() == table["failed"].to_dict()  # no failure without a kind ("other err" with none)
    for t in tiers_of(a.table):
        row = table.loc[t.tier]
        assert (t.failed, t.n_empty) == (row["failed"], row["n_empty"])
        assert math.isclose(t.error_rate, row["error_rate"]) and math.isclose(t.other_fail_rate, row["other_fail_rate"])
    if a.run.per_request:
        assert int(a.totals.by_kind["measured"].sum()) == int(a.kinds.to_numpy().sum())
        assert a.totals.empty[1] == (0 if a.run.empty_is_error else int(table["n_empty"].sum()))


@pytest.mark.parametrize(("name", "empty_is_error"), CASES)
def test_the_live_book_counts_what_the_report_counts(name, empty_is_error):
    a = parts(name, empty_is_error)
    run = a.run
    if not run.per_request or run.load_unit != "users":
        pytest.skip("the live book is fed rows here (a closed-loop run with samples.csv)")
    book = LiveBook()
    for row in run.samples[run.samples["tier"] >= 0].to_dict("records"):
        book.note({**row, "error": str(row["error"]), "status": int(row["status"])}, int(row["tier"]),
                  "measure" if row["measured"] else "warmup")
    records = [TierRecord(TimelineTier(tier=int(t.tier), start_s=t.start_s, warmup_s=t.warmup_s, target_users=1),
                          end_s=t.end_s) for t in run.tiers.itertuples()]
    live = {t.tier: t for t in book.tiers(records, run.span_s[1], empty_is_error=run.empty_is_error)}
    for t in tiers_of(a.table):
        mine = live[t.tier]
        assert (mine.sent, mine.ok, mine.n_empty, mine.failed, mine.n_429, mine.n_shed, mine.n_timeout,
                mine.n_other_fail) == (t.sent, t.ok, t.n_empty, t.failed, t.n_429, t.n_shed, t.n_timeout,
                                       t.n_other_fail), t.tier
        assert math.isclose(mine.error_rate, t.error_rate)


def analysis(empty_is_error: bool):
    """The empty-answer fixture's whole analysis, as recorded or counting its empty answers as errors."""
    if empty_is_error not in _analyses:
        run = run_of("emptyanswers", empty_is_error)
        _analyses[empty_is_error] = analyze(run, choose_profile(run, None))
    return _analyses[empty_is_error]


_analyses: dict = {}


@pytest.mark.parametrize("empty_is_error", [False, True])
def test_summary_json_counts_what_the_tables_count(empty_is_error):
    a = analysis(empty_is_error)
    facts = summary(a)
    assert facts["run"]["empty_answer_is_error"] is empty_is_error
    assert {r["tier"]: (r["failed"], r["n_empty"], r["error_rate"]) for r in facts["tiers"]} == {
        int(r["tier"]): (int(r["failed"]), int(r["n_empty"]), float(r["error_rate"])) for _, r in a.table.iterrows()}


def test_empty_answers_are_named_the_same_everywhere():
    answered, strict = analysis(False), analysis(True)
    top = answered.table.iloc[-1]
    assert answered.saturation.kind == "not saturated" and answered.capacity.status == "beyond"
    assert (answered.table["error_rate"] == 0).all() and "empty_answer" not in answered.kinds.columns
    assert any(empty_text(int(answered.table["n_empty"].sum())) in w for w in answered.warnings)
    assert strict.saturation.kind == "fails" and empty_text(int(top["n_empty"])) in strict.saturation.sentence
    assert strict.capacity.status == "below" and strict.capacity.limited_by.startswith("error rate")
    assert list(strict.kinds.columns) == ["empty_answer"]
    assert not any("empty_answer" in w for w in strict.warnings)


def test_the_agent_section_counts_the_samples_sessions_and_turns():
    """The report's agent sentence and per-turn table say what samples.csv holds (every agent row, any phase)."""
    with (FIXTURE_DIR / "runs" / "agent" / "samples.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["session"]]
    view = analyze(run_of("agent", False), choose_profile(run_of("agent", False), None)).workload.agent
    roots = {r["session"] for r in rows if not r["parent_session"]}
    subs = {r["session"] for r in rows if r["parent_session"]}
    assert (view.sessions, view.sub_sessions) == (len(roots), len(subs)) and subs
    assert f"{len(roots)} agent sessions and {len(subs)} sub-agent sessions fanned out" in view.sentence
    answered = {(k, int(t)): 0 for k in ("session", "sub-agent") for t in (1, 2, 3)}
    for r in rows:
        if not r["error"]:
            answered["sub-agent" if r["parent_session"] else "session", int(r["turn"])] += 1
    assert {(r.kind, r.turn): r.requests for r in view.per_turn.itertuples()} == answered
    assert sum(answered.values()) == len(rows)
