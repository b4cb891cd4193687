"""Answers with no first token (embeddings, rerank) are judged on e2e latency, and the report says so once.

The fixture `embeddings` (tests/fixtures/fixture_embeddings.py): 4 slots of 120 ms, tiers 2..16 users, no server
metrics; test_live_verdicts.py feeds the same run to the live path and checks it gets the same verdicts.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.cli import main
from llmload.analysis.read.run import load_run
from llmload.analysis.report.summary_schema import SCHEMA
from llmload.rules import capacity, capacity_text, latency, waiting
from llmload.rules.slo import PROFILES, default_profile, objective_for, profile_or_default, slo_text
from llmload.rules.tier import Tier
from llmload.run.watch.verdicts import slo_cell
from llmload.sink.histograms import succeeded
from tests.unit.test_analysis_summary import violations

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "embeddings"


@pytest.fixture(scope="module")
def report():
    run = load_run(RUN)
    return analyze(run, choose_profile(run, None))


def test_an_embeddings_run_is_judged_on_e2e_latency_under_its_own_profile(report):
    assert (report.profile.name, report.profile_source, report.no_first_token) == ("embeddings", "default", True)
    cap = report.capacity
    assert (cap.status, cap.load, cap.high, cap.measured) == ("within", 8.0, 16.0, False)
    assert [b.figure for b in capacity.broken(cap.missed, report.profile)] == ["e2e_p95_ms"]
    assert 8.0 < cap.interpolated < 16.0  # both tiers waited, and the bound broken is the latency one
    assert [c.profile.name for c in report.all_capacities] == ["embeddings", "rerank"]
    # no server metrics: the wait is the client's estimate, on mean e2e latency
    assert (report.onset.status, report.onset.load, report.compute.load) == ("within", 4.0, 4.0)
    assert "e2e latency growth" in report.onset.sentence and "TTFT" not in report.onset.sentence
    assert [c.metric for c in report.objective.per_request] == ["e2e"]


def test_its_report_names_e2e_latency_and_says_once_that_there_is_no_first_token(tmp_path):
    copy = tmp_path / "embeddings"
    shutil.copytree(RUN, copy)
    assert main(["report", str(copy)]) == 0
    md = (copy / "report.md").read_text()
    assert md.count("TTFT") == 1 and md.count("TPOT") == 1 and md.count("ITL") == 1, "said once, in the note"
    assert latency.NOT_STREAMED.capitalize() in md
    assert " load on the embeddings API against " in md.splitlines()[2]
    assert "output tokens/s" not in md, "no figure names a token rate the answers do not have"
    assert "tok/s" not in md and not re.search(r"\bnan\b", md, re.IGNORECASE)
    assert "under the embeddings SLO (p95 e2e latency <= 300 ms, errors <= 1%, 429s <= 1%): between 8 and 16" in md
    assert "16 users miss it (p95 e2e latency" in md
    assert "| SLO profile | p95 e2e limit |" in md and "Decode per request" not in md
    data = json.loads((copy / "summary.json").read_text())
    assert violations(data, SCHEMA) == []
    assert data["run"]["latency"] == "e2e" and "output_tokens" not in data
    chosen = next(c for c in data["capacity"] if c["chosen"])
    assert (chosen["profile"], chosen["e2e_p95_limit_ms"], chosen["ttft_p95_limit_ms"]) == ("embeddings", 300.0, None)
    assert [v["metric"] for v in data["gate"]["verdicts"]] == ["e2e", "error_rate", "rate_429"]


def tier(no: int, load: float, **figures) -> Tier:
    return Tier(tier=no, load=load, sent=100, ok=100, ok_rps=10.0 * load, rate_window_s=10.0, **figures)


def test_only_a_run_with_no_ttft_at_all_is_marked():
    e2e_only = [tier(1, 1, e2e_mean_ms=50.0, e2e_p95_ms=60.0), tier(2, 2, e2e_mean_ms=50.0, e2e_p95_ms=61.0)]
    assert all(t.no_first_token for t in latency.mark(e2e_only))
    mixed = [tier(1, 1, ttft_mean_ms=40.0, ttft_p95_ms=45.0, e2e_mean_ms=50.0), tier(2, 2, e2e_mean_ms=50.0)]
    assert not any(t.no_first_token for t in latency.mark(mixed))  # chat users beside embeddings: on TTFT
    assert not any(t.no_first_token for t in latency.mark([Tier(tier=1, load=1.0, sent=5)]))  # nothing answered


def test_the_wait_estimate_grows_from_mean_e2e_without_a_first_token():
    tiers = [tier(1, 4, e2e_mean_ms=120.0, e2e_p95_ms=130.0), tier(2, 8, e2e_mean_ms=250.0, e2e_p95_ms=270.0)]
    waited = waiting.estimate(tiers)
    assert waited[1].wait_ms == pytest.approx(130.0) and waited[1].waits and waited[1].wait_source == "client"


def test_a_streamed_profile_bounds_no_e2e_latency_and_the_sentences_say_so():
    judged = latency.mark([tier(1, 1, e2e_mean_ms=900.0, e2e_p95_ms=900.0)])
    assert capacity.broken(judged[0], PROFILES["chat"]) == []  # a TTFT bound has no first token to judge
    assert slo_text(PROFILES["chat"], e2e=True).startswith("no e2e latency bound (its TTFT bound needs a first")
    broke = capacity.broken(judged[0], PROFILES["embeddings"])
    assert [b.what for b in broke] == ["p95 e2e latency 900 ms > 300 ms"]
    cap = capacity.capacity_under_slo(judged, PROFILES["embeddings"])
    assert capacity_text.describe(cap, "users") == (
        "Capacity under the embeddings SLO (p95 e2e latency <= 300 ms, errors <= 1%, 429s <= 1%): below 1 user, the "
        "only load tested: p95 e2e latency 900 ms > 300 ms at tier 1.")
    streamed = tier(1, 1, ttft_p95_ms=200.0, ttft_mean_ms=190.0, e2e_p95_ms=900.0)
    assert [b.figure for b in capacity.broken(streamed, PROFILES["embeddings"])] == []  # no TTFT bound there
    assert [b.figure for b in capacity.broken(streamed, PROFILES["ide"])] == []  # 200 <= 300: unchanged
    chat = objective_for(PROFILES["chat"])  # a streamed API's objective is the stock one, TTFT first
    assert [(c.metric, c.percentile, c.limit) for c in chat.criteria] == [
        ("ttft", 95.0, 500.0), ("tpot", 95.0, 100.0), ("error_rate", None, 0.01), ("rate_429", None, 0.01)]


def test_the_live_parts_count_and_word_answers_with_no_first_token():
    row = {"error": "", "ttft_ms": "", "e2e_ms": "52.1", "endpoint": "embeddings"}
    assert succeeded(row) and succeeded({**row, "endpoint": "rerank"})
    assert not succeeded({**row, "endpoint": "chat"}) and not succeeded({**row, "error": "timeout"})
    judged = latency.mark([tier(1, 1, e2e_mean_ms=50.0, e2e_p95_ms=61.0)])[0]
    assert slo_cell(judged, PROFILES["embeddings"]) == ("pass", "pass p95 e2e 61 <= 300 ms")
    assert slo_cell(judged, PROFILES["chat"]) == ("pass", "pass (no e2e latency bound)")
    assert [default_profile(api) for api in ("embeddings", "rerank", "chat", "")] == [
        "embeddings", "rerank", "chat", "chat"]
    assert profile_or_default("", "rerank").e2e_p95_ms == 300.0
    assert profile_or_default("voice", "rerank").name == "voice"


def test_the_tiers_and_knee_commands_name_e2e_latency(capsys):
    assert main(["tiers", str(RUN)]) == 0 and main(["knee", str(RUN)]) == 0
    out = capsys.readouterr().out
    assert "TTFT" not in out and "TPOT" not in out and "Headers:" not in out
    assert "Latency (ms, successful requests; not streamed: no first token)" in out
    assert "mean e2e latency growth beyond the lowest tier's" in out  # the knee rule, worded for such answers


def test_watch_takes_e2e_latency_and_the_profiles_bound(capsys):
    assert main(["watch", str(RUN), "--window-s", "10", "--fail-on-breach"]) == 1  # 16 users: p99 e2e > 300 ms
    assert capsys.readouterr().out.startswith("SLA watch: p99 E2E per 10 s window against 300 ms (embeddings profile)")



def test_the_throughput_figure_draws_no_token_axis_without_output_tokens(report):
    from matplotlib.figure import Figure

    from llmload.analysis.report import plots

    for tokens, axes in ((0.0, 1), (50.0, 2)):
        fig = Figure()
        plots.plot_throughput(fig.add_subplot(), report.table.assign(out_tok_s=tokens))
        assert len(fig.axes) == axes
