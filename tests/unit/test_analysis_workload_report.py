"""Workload sections of the report on the `prefill`, `workloads` and `agent` fixtures, and their absence on
older runs."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure

from llmload.analysis.analyze import analyze, choose_profile, profile_source
from llmload.analysis.read.run import load_run
from llmload.analysis.report import plots, summary
from llmload.analysis.report.answer import answer_items
from llmload.analysis.report.figures import build_figures

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402

SECTIONS = ("### TTFT vs input length (prefill)", "### Outputs shorter than asked",
            "### Repeated vs first-seen prompts (ms)", "### Per turn of a session (ms)",
            "### Per (input, output) cell (ms)", "### Reasoning: first reasoning token vs first answer token (ms)",
            "### Streamed vs not streamed (ms)")


def _analysis(name: str):
    run = load_run(FIXTURE_DIR / "runs" / name)
    return analyze(run, choose_profile(run, None), source=profile_source(run, None))


def test_prefill_sweep_without_tiers_csv_leads_with_the_prefill_answer():
    a = _analysis("prefill")
    assert not (FIXTURE_DIR / "runs" / "prefill" / "tiers.csv").exists()
    fit = a.workload.prefill_fit
    assert a.workload.sweep and fit is not None
    # the fixture adds 50 ms per 1k tokens plus 2e-5 ms x (tokens - 2048)^2 beyond 2048 (84 ms at 4096)
    assert 48.0 <= fit.ms_per_1k_low <= fit.ms_per_1k <= fit.ms_per_1k_high <= 58.0
    assert fit.nonlinear_from_tokens == 4096 and fit.lengths == (128, 256, 512, 1024, 2048, 4096)
    items = answer_items(a)
    assert items[0][0] == "Prefill:" and "ms per 1,000 prompt tokens" in items[0][1]
    assert not any(label == "Stopped early:" for label, _ in items), "a shapeless run that ended is not cut"
    assert next(name for name, _, _ in build_figures(a)) == "prefill"
    prefill = summary.summary(a)["workload"]["prefill"]
    assert prefill["sweep"] is True and prefill["nonlinear_from_tokens"] == 4096
    assert [row["input_tokens"] for row in prefill["lengths"]] == list(fit.lengths)


def test_prefill_report_text_has_the_table_and_no_nan():
    md = make_fixtures.report_md("prefill")
    assert md.index("**Prefill:**") < md.index("**Compute saturation:**")
    assert "a prefill sweep: 1 user walking 6 prompt lengths from 128 to 4096 tokens" in md
    assert "| 4096 |" in md and not re.search(r"\bnan\b", md, re.IGNORECASE)


def test_every_workload_section_shows_on_the_workloads_fixture():
    md = make_fixtures.report_md("workloads")
    for heading in SECTIONS:
        assert heading in md, heading
    a = _analysis("workloads")
    view = a.workload
    assert not view.sweep
    repeat = view.repeat_vs_first.set_index("prompt")
    assert repeat.loc["repeated", "ttft_p50_ms"] < repeat.loc["first_seen", "ttft_p50_ms"]
    assert repeat.loc["repeated", "cached_tokens_p50"] > 0 == repeat.loc["first_seen", "cached_tokens_p50"]
    share = view.short_outputs["short"].sum() / view.short_outputs["requests"].sum()
    assert 0.15 <= share <= 0.25  # every fifth answer stopped at EOS
    assert set(view.streamed["mode"]) == {"streamed", "not_streamed"}
    assert list(view.turns["turn"]) == [1, 2, 3] and view.turns["input_tokens_p50"].is_monotonic_increasing
    assert len(view.grid) == 6
    labels = [label for label, _ in answer_items(a)]
    assert "Prefill:" in labels[1:] and "Short outputs:" in labels
    section = summary.summary(a)["workload"]
    assert set(section) == {"short_outputs", "repeat_vs_first", "turns", "grid", "reasoning", "streamed",
                            "prefill"}
    assert section["prefill"]["sweep"] is False


def test_agent_fixture_reports_its_sessions_and_nothing_twice():
    md = make_fixtures.report_md("agent")
    assert "### Agent sessions" in md and "### Per turn of a session (ms)" not in md
    a = _analysis("agent")
    view = a.workload.agent
    table = view.per_turn.set_index(["kind", "turn"])
    # a turn's prompt holds the previous turn's: the cached share of each turn is the previous prompt in blocks
    assert list(table.loc["session", "cached_tokens_p50"]) == [144, 160, 208]
    assert table.loc[("sub-agent", 1), "cached_tokens_p50"] == table.loc[("session", 2), "cached_tokens_p50"]
    assert table.loc[("sub-agent", 1), "cached_share"] > table.loc[("session", 1), "cached_share"]
    assert view.turns_max == 3 and view.session_s_p50 <= view.session_s_p95
    section = summary.summary(a)["workload"]
    assert set(section) == {"agent"} and section["agent"]["sessions"] == view.sessions
    assert section["agent"]["sentence"] == view.sentence and view.sentence in md


def test_older_runs_get_no_workload_section():
    md = make_fixtures.report_md("knee16")
    assert "## Workload" not in md and "**Prefill:**" not in md
    a = _analysis("knee16")
    assert "workload" not in summary.summary(a)
    assert "prefill" not in [name for name, _, _ in build_figures(a)]


def test_plot_prefill_draws_points_fit_and_the_nonlinear_mark():
    a = _analysis("prefill")
    ax = Figure().add_subplot()
    plots.plot_prefill(ax, a.workload.prefill_table, a.workload.prefill_fit.nonlinear_from_tokens)
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["TTFT p50", "TTFT p95", "fitted line (Theil-Sen)", "non-linear from 4096 tokens"]
