"""The report's splits: retries, tokens, ITL/TPOT/stalls, connections, open loop, p99.9, downgrade."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.document import to_markdown
from llmload.analysis.report.layout import blocks
from llmload.analysis.tables import splits, tokens
from llmload.contract import SAMPLE_COLUMNS

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURES = FIXTURE_DIR / "runs"
sys.path.insert(0, str(FIXTURE_DIR))
T0 = 1_767_225_600.0

import make_fixtures  # noqa: E402


def analysis_of(path: Path, stall_ms: float = 1000.0):
    run = load_run(path)
    return analyze(run, choose_profile(run, None), stall_ms=stall_ms)


def edited(tmp_path: Path, name: str, edit) -> Path:
    """A copy of a fixture run whose samples.csv went through `edit(frame)`."""
    run_dir = Path(shutil.copytree(FIXTURES / name, tmp_path / name))
    frame = pd.read_csv(run_dir / "samples.csv", keep_default_na=False)
    edit(frame)
    frame.to_csv(run_dir / "samples.csv", index=False)
    return run_dir


def measured_ok(frame: pd.DataFrame, tier: int) -> pd.Index:
    return frame.index[(frame["tier"] == tier) & (frame["phase"] == "measure") & (frame["error"] == "")]


def folder(path: Path, rows: list[dict], tiers: list[dict]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).reindex(columns=list(SAMPLE_COLUMNS)).to_csv(path / "samples.csv", index=False)
    pd.DataFrame(tiers).to_csv(path / "tiers.csv", index=False)
    (path / "run.json").write_text(json.dumps({"run_id": path.name, "ended_unix": T0 + 100}))
    return path


def ok_row(ts: float, tier: int, ttft: float = 40.0, **extra) -> dict:
    return {"ts_start_s": ts, "request_id": f"r{ts:.4f}", "tier": tier, "phase": "measure", "status": 200,
            "error": "", "ttft_ms": ttft, "e2e_ms": 300.0, "output_tokens": 20, "output_tokens_client": 20,
            "users_now": 4, "out_tps": 300.0, "tpot_ms": 3.3, **extra}


def test_every_retry_waited_its_retry_after_and_the_table_shows_it():
    run = load_run(FIXTURES / "shed429")  # 429 with Retry-After: 1 s, the simulated client honours it
    s = run.samples.assign(root=splits._roots(run.samples).to_numpy(),
                           done_s=splits.completions(run.samples))
    waits = splits._waits(s)
    assert len(waits) > 50 and (waits["wait_s"] >= 1.0 - 1e-6).all() and not waits["ignored"].any()
    frame = splits.retry_table(run).set_index("tier")
    assert frame.loc[4, "retried"] > 0 and frame.loc[4, "retry_wait_mean_ms"] == pytest.approx(1000.0, abs=1.0)
    assert frame.loc[1, "retried"] == 0
    md = to_markdown(blocks(analysis_of(FIXTURES / "shed429"), []))
    assert "### Latency with and without retries" in md


def test_final_outcome_includes_the_wait_and_early_retries_are_caught(tmp_path):
    rows = [ok_row(T0 + 1 + i * 0.1, 1, request_id=f"a{i}") for i in range(4)]
    rows += [{"ts_start_s": T0 + 3.0, "request_id": "x0", "tier": 1, "phase": "measure", "status": 429,
              "error": "rate_limited", "headers_ms": 10.0, "retry_after_s": 2.0, "users_now": 4},
             ok_row(T0 + 3.51, 1, ttft=50.0, request_id="x1", retry_of="x0")]  # retried after 0.5 s, hint 2 s
    tiers = [{"tier": 1, "start_s": T0, "end_s": T0 + 10, "target_users": 4, "warmup_s": 0}]
    row = splits.retry_table(load_run(folder(tmp_path / "r", rows, tiers))).iloc[0]
    assert row["chains"] == 5 and row["retried"] == 1 and row["ignored_hint"] == 1
    assert row["retry_wait_s"] == pytest.approx(0.5, abs=1e-3)
    assert row["first_ttft_p50_ms"] == pytest.approx(40.0)
    assert row["final_ttft_p95_ms"] > 400.0  # the retried request's 560 ms (wait included) is in the tail
    assert row["first_ttft_p95_ms"] == pytest.approx(40.0)


BILLED = "Does billed usage match the output tokens received?"


def test_usage_above_a_chunk_count_is_counted_but_no_accusation(tmp_path):
    def overbill(frame):
        idx = measured_ok(frame, 3)[:5]
        frame["output_tokens"] = pd.to_numeric(frame["output_tokens"], errors="coerce")
        frame.loc[idx, "output_tokens"] = pd.to_numeric(frame.loc[idx, "output_tokens_client"]) + 10
    a = analysis_of(edited(tmp_path, "shed429", overbill))
    frame = tokens.token_table(a.run).set_index("tier")
    assert frame.loc[3, "usage_above"] == 5 and frame["usage_above"].sum() == 5 and frame["unexplained"].sum() == 0
    answer = dict(a.checklist)[BILLED]
    assert answer.startswith("Yes, as far as chunks show: no request was billed fewer tokens than the text chunks")
    assert "5 were billed more tokens than chunks, as expected" in answer and "give --tokenizer" in answer
    assert dict(analysis_of(FIXTURES / "shed429").checklist)[BILLED].startswith("Yes: usage matched the text chunks")


def test_a_vllm_like_chunk_count_below_usage_is_explained_and_the_table_says_what_was_compared():
    a = analysis_of(FIXTURES / "randomweights")
    frame = tokens.token_table(a.run)
    assert frame["usage_above"].sum() > 50 and frame["usage_below"].sum() == 0 and frame["unexplained"].sum() == 0
    assert dict(a.checklist)[BILLED].startswith("Yes, as far as chunks show")
    md = to_markdown(blocks(a, []))
    assert "| text chunks received | usage above | usage below | above max_tokens | unexplained |" in md
    assert "Chunks, not tokens, were counted (no --tokenizer): usage above the chunk count is expected" in md
    assert "billing problem" not in md


@pytest.mark.parametrize("fault, expected", [
    ("over_max", "3 billed more output tokens than their max_tokens"),
    ("more_chunks", "3 billed fewer than the text chunks received"),
    ("tokenizer_above", "3 billed more than the tokens the run's --tokenizer counts in the text received"),
])
def test_a_real_billing_problem_still_says_no(tmp_path, fault, expected):
    def edit(frame):
        idx = measured_ok(frame, 2)[:3]
        usage = pd.to_numeric(frame["output_tokens"], errors="coerce")
        client = pd.to_numeric(frame["output_tokens_client"], errors="coerce")
        if fault == "over_max":
            usage.loc[idx] = pd.to_numeric(frame.loc[idx, "max_tokens"]) + 5
        elif fault == "more_chunks":
            client.loc[idx] = usage.loc[idx] + 10
        else:
            frame["output_tokens_client_source"] = frame["output_tokens_client_source"].replace("chunks", "tokenizer")
            client = usage.copy()  # a tokenizer that agrees with usage on every other request
            usage.loc[idx] = usage.loc[idx] + 10
        frame["output_tokens"], frame["output_tokens_client"] = usage, client
    a = analysis_of(edited(tmp_path, "randomweights", edit))
    answer = dict(a.checklist)[BILLED]
    assert answer.startswith("NO: 3 of ") and "(tier 2: 3)" in answer and expected in answer
    assert answer.endswith("a billing problem to raise with the provider.")
    assert tokens.token_table(a.run)["unexplained"].sum() == 3


def test_stalls_tpot_and_itl_percentiles_per_tier(tmp_path):
    def stall(frame):
        frame.loc[measured_ok(frame, 2)[:3], "itl_max_ms"] = 1500.0
    run_dir = edited(tmp_path, "knee16", stall)
    table = analysis_of(run_dir).table.set_index("tier")
    assert list(table["stalls"]) == [0, 3, 0, 0, 0, 0]
    assert (analysis_of(run_dir, stall_ms=2000).table["stalls"] == 0).all()
    assert (table["tpot_p50_ms"] <= table["tpot_p95_ms"]).all() and table["itl_mean_p99_ms"].notna().all()
    code, _out = make_fixtures.run_cli(["report", str(run_dir), "--stall-ms", "1200"])
    md = (run_dir / "report.md").read_text()
    assert code == 0 and "stalls (gap > 1200 ms)" in md and "no pooled distribution of every gap" in md


def test_new_and_reused_connections_split_where_both_occur(tmp_path):
    def reconnect(frame):
        idx = measured_ok(frame, 3)[:10]
        frame.loc[idx, ["conn_reused", "connect_ms"]] = [0, 5.0]
    frame = splits.connection_table(load_run(edited(tmp_path, "knee16", reconnect)))
    assert set(frame["tier"]) == {3}
    new = frame[frame["connection"] == "new"].iloc[0]
    assert new["n"] == 10 and new["connect_mean_ms"] == pytest.approx(5.0)
    assert splits.connection_table(load_run(FIXTURES / "knee16")).empty  # measured rows all reused


def test_open_loop_verdicts_use_latency_from_the_intended_send():
    a = analysis_of(FIXTURES / "openloop")
    rows = a.run.samples[a.run.samples["measured"] & a.run.samples["ok"] & (a.run.samples["tier"] == 2)]
    corrected = (rows["ttft_ms"] + rows["schedule_lag_ms"]).quantile(0.95)
    top = a.table.set_index("tier").loc[2]
    assert top["ttft_p95_ms"] == pytest.approx(corrected)
    assert top["ttft_sent_p95_ms"] == pytest.approx(rows["ttft_ms"].quantile(0.95))
    md = to_markdown(blocks(a, []))
    assert "Open loop: from the intended send / from the actual send" in md and "use it" in md
    assert "from the intended send" not in to_markdown(blocks(analysis_of(FIXTURES / "knee16"), []))


@pytest.mark.parametrize(("n", "shown"), [(1200, True), (999, False)])
def test_p999_appears_from_1000_successes(tmp_path, n, shown):
    rng = np.random.default_rng(1)
    rows = [ok_row(T0 + 0.5 + i * 0.008, 1, ttft=float(v)) for i, v in enumerate(rng.lognormal(3.5, 0.3, n))]
    tiers = [{"tier": 1, "start_s": T0, "end_s": T0 + 10, "target_users": 4, "warmup_s": 0}]
    a = analysis_of(folder(tmp_path / "big", rows, tiers))
    p999 = a.table.iloc[0]["ttft_p999_ms"]
    assert bool(p999 == p999) is shown
    if shown:
        assert p999 > a.table.iloc[0]["ttft_p99_ms"]
        assert "p99.9 where a tier has 1000+" in dict(a.checklist)["Are TTFT percentiles given (not only means)?"]


def test_model_change_with_timestamps_and_decode_drift_at_equal_load(tmp_path):
    rows, tiers = [], []
    for t, (users, tps) in enumerate(((2, 300.0), (4, 300.0), (4, 200.0))):
        start = T0 + 10 * t
        tiers.append({"tier": t + 1, "start_s": start, "end_s": start + 10, "target_users": users, "warmup_s": 0})
        model = "big" if t < 2 else "small"
        rows += [ok_row(start + 0.5 + i * 0.08, t + 1, out_tps=tps, model_requested="big", model_returned=model)
                 for i in range(100)]
    a = analysis_of(folder(tmp_path / "drift", rows, tiers))
    answers = dict(a.checklist)
    model = answers["Does the response's model field state the model that really ran?"]
    assert model.startswith("NO: 100 of 300") and "small x100 (tiers 3; first 2026-01-01 00:00:20 UTC" in model
    drift = answers["Does decode speed hold at equal load (no silent downgrade)?"]
    assert drift.startswith("NO: at 4 users, tier 3 (2026-01-01 00:00:20 UTC) decoded 200 tok/s per request, -33%")
    steady = dict(analysis_of(FIXTURES / "knee16").checklist)
    assert steady["Does decode speed hold at equal load (no silent downgrade)?"].startswith("Not answerable")
