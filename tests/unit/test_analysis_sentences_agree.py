"""No verdict word contradicts the table beside it (issue 42 item 4).

Every fixture run's report (report.md's text, figures aside), under the SLO it is judged on and under the strict
`voice` one, is read sentence by sentence, and each verdict word is checked against the report's own tier table
(`Analysis.table`, what the "Per tier" section prints):
- "N users meets it / meet the X SLO": a tier at that load within every bound of the profile (its p95 and the
  95 % bound of it, its error and 429 rates); with a figure, the tier with that figure;
- "misses it (p95 TTFT 314 ms > 300 ms at tier 6)" (or error, 429, drop rate): that tier's figure, beyond that limit;
- "N users: p95 TTFT 43 ms within 500 ms, but not shown": that tier's p95, within the limit;
- "The queueing model agrees: it predicts p95 TTFT 86-121 ms at 16 users ... (limit 300 ms)": at each load the
  predicted band lies on the side of the limit the measurement is on; "disagrees ... expects N users to miss it":
  N users measured within the limit.
The table itself is the rule book's input (tests of the rules check its verdicts on known answers); here the
sentences are held to it.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from llmload.analysis.analyze import Analysis, analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.document import to_markdown
from llmload.analysis.report.layout import blocks

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402

NUMBER = r"[\d,]+(?:\.\d+)?"
LOAD = rf"(?P<load>{NUMBER}) (?:users?|req/s)(?: offered| asked)?(?: \(\d+ applied\))?"
MEETS = re.compile(rf"{LOAD} meets? (?:it|the \S+ SLO)(?: \(p95 (?:TTFT|e2e latency) (?P<p95>{NUMBER}) ms)?")
MISSES = re.compile(rf"miss(?:es)? it \((?P<what>p95 TTFT|p95 e2e latency|error rate|429 rate|drop rate) "
                    rf"(?P<value>{NUMBER}) ?(?:ms|%) > (?P<limit>{NUMBER}) ?(?:ms|%) at tier (?P<tier>\d+)")
NOT_SHOWN = re.compile(rf"{LOAD}: p95 (?:TTFT|e2e latency) (?P<p95>{NUMBER}) ms within (?P<limit>{NUMBER}) ms, "
                       r"but not shown")
AGREES = re.compile(rf"The queueing model agrees: it predicts p95 TTFT (?P<bands>.*?) \(limit (?P<limit>{NUMBER}) ms\)")
BAND = re.compile(rf"(?P<lo>{NUMBER})(?:-(?P<hi>{NUMBER}))? ms at {LOAD}")
DISAGREES = re.compile(rf"The queueing model disagrees: it predicts p95 TTFT .*? so expects {LOAD} to miss it")
COLUMN = {"p95 TTFT": "ttft_p95_ms", "p95 e2e latency": "e2e_p95_ms", "error rate": "error_rate",
          "429 rate": "rate_429", "drop rate": "drop_rate"}
CASES = [(name, slo) for name in sorted(make_fixtures.FIXTURES) for slo in (None, "voice")]
_cache: dict = {}


def number(text: str) -> float:
    return float(text.replace(",", ""))


def report(name: str, slo: str | None) -> tuple[Analysis, str]:
    if (name, slo) not in _cache:
        run = load_run(FIXTURE_DIR / "runs" / name)
        a = analyze(run, choose_profile(run, slo))
        _cache[(name, slo)] = (a, " ".join(to_markdown(blocks(a, [])).split()))
    return _cache[(name, slo)]


def rows_at(a: Analysis, load: float) -> pd.DataFrame:
    rows = a.table[(a.table["load"] - load).abs() < 1e-6]
    assert not rows.empty, f"a sentence names {load:g}, a load the tier table does not have"
    return rows


def p95_column(a: Analysis) -> tuple[str, float | None]:
    if a.no_first_token:
        return "e2e_p95_ms", a.profile.e2e_p95_ms
    return "ttft_p95_ms", a.profile.ttft_p95_ms


def within(a: Analysis, row: pd.Series) -> bool:
    column, limit = p95_column(a)
    upper = row.get(column.replace("_p95_ms", "_p95_upper_ms"))
    latency_ok = limit is None or (row[column] <= limit and (upper is None or math.isnan(upper) or upper <= limit))
    return bool(latency_ok and row["error_rate"] <= a.profile.max_error_rate
                and row["rate_429"] <= a.profile.max_429_rate)


@pytest.mark.parametrize(("name", "slo"), CASES, ids=[f"{n}-{s or 'own'}" for n, s in CASES])
def test_no_verdict_word_contradicts_the_tier_table(name, slo):
    a, text = report(name, slo)
    column, _limit = p95_column(a)
    wrong = []
    for m in MEETS.finditer(text):
        rows = rows_at(a, number(m["load"]))
        if m["p95"] is not None:
            rows = rows[(rows[column] - number(m["p95"])).abs() <= 0.5 + 1e-9]
        if not any(within(a, row) for _, row in rows.iterrows()):
            wrong.append(m.group(0))
    for m in MISSES.finditer(text):
        row = a.table[a.table["tier"] == int(m["tier"])].iloc[0]
        measured = row[COLUMN[m["what"]]] * (100 if m["what"].endswith("rate") else 1)
        if not (measured > number(m["limit"]) and abs(measured - number(m["value"])) <= 0.5 + 1e-9):
            wrong.append(f"{m.group(0)} (the table: {measured:g})")
    for m in NOT_SHOWN.finditer(text):
        rows = rows_at(a, number(m["load"]))
        if not any(abs(r[column] - number(m["p95"])) <= 0.5 and r[column] <= number(m["limit"])
                   for _, r in rows.iterrows()):
            wrong.append(m.group(0))
    for m in AGREES.finditer(text):
        limit = number(m["limit"])
        for band in BAND.finditer(m["bands"]):
            lo, hi = number(band["lo"]), number(band["hi"] or band["lo"])
            measured = rows_at(a, number(band["load"]))[column].iloc[-1]
            if not ((measured <= limit and hi <= limit) or (measured > limit and lo > limit)):
                wrong.append(f"{m.group(0)} (measured {measured:.0f} ms at {band['load']})")
    for m in DISAGREES.finditer(text):
        if not any(within(a, row) for _, row in rows_at(a, number(m["load"])).iterrows()):
            wrong.append(m.group(0))
    assert not wrong, f"{name} ({slo or 'its own SLO'}): sentences the tier table contradicts: {wrong}"


def test_the_sentences_checked_are_there():
    """Each kind of sentence occurs in the fixtures' reports, so none of the checks above reads nothing."""
    texts = [report(name, slo)[1] for name, slo in CASES]
    for pattern in (MEETS, MISSES, NOT_SHOWN, AGREES, BAND, DISAGREES):
        assert any(pattern.search(t) for t in texts), pattern.pattern
