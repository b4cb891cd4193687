"""Acceptance-audit regressions: open-loop drops, Little's law with fast 429s, when the
queueing model is identifiable, run totals, watch's tier/load columns, per-scenario figures,
shape awareness (spike/soak/schedule) and where the SLO profile comes from."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmload.analysis.analyze import Target, analyze, choose_profile, profile_source
from llmload.analysis.read.run import load_run
from llmload.analysis.read.shape import kind_from_loads, shape_kind
from llmload.analysis.report import summary
from llmload.analysis.report.figures import build_figures
from llmload.analysis.report.layout import answer_items
from llmload.analysis.report.watch import watch, watch_text
from llmload.analysis.tables.judged import tiers_of
from llmload.analysis.verdicts.queueing import not_identifiable
from llmload.contract import SAMPLE_COLUMNS
from llmload.rules import knees, limiter

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
T0 = 1_767_225_600.0


def run_of(name: str, slo: str | None = None):
    run = load_run(FIXTURES / name)
    return analyze(run, choose_profile(run, slo), source=profile_source(run, slo))


def write_folder(path: Path, rows: list[dict], tiers: list[dict], info: dict | None = None) -> Path:
    """A minimal run folder from explicit rows (unknown sample columns left empty)."""
    path.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows).reindex(columns=list(SAMPLE_COLUMNS))
    frame.to_csv(path / "samples.csv", index=False)
    pd.DataFrame(tiers).to_csv(path / "tiers.csv", index=False)
    (path / "run.json").write_text(json.dumps(info or {"run_id": path.name, "ended_unix": T0 + 100}))
    return path


def ok_row(ts: float, tier: int, ttft: float = 40.0, e2e: float = 384.0, **extra) -> dict:
    return {"ts_start_s": ts, "tier": tier, "phase": "measure", "status": 200, "error": "", "ttft_ms": ttft,
            "e2e_ms": e2e, "output_tokens": 20, "users_now": 8, "scenario": "chat", **extra}


def r429_row(ts: float, tier: int) -> dict:
    return {"ts_start_s": ts, "tier": tier, "phase": "measure", "status": 429, "error": "rate_limited",
            "headers_ms": 1.0, "users_now": 8, "scenario": "chat"}


# 1. open loop: dropped arrivals ------------------------------------------------------------------
def test_open_loop_drops_count_against_the_slo_and_show_everywhere():
    a = run_of("openloop")
    top = a.table.set_index("tier").loc[2]
    assert top["dropped"] > 0 and top["drop_rate"] > 0.3
    # 5 req/s meets the SLO on 29 successes only: not shown (too few to bound its p95); 40 req/s misses it by drops
    assert a.capacity.status == "unshown" and "drop rate" in a.capacity.limited_by
    assert a.onset.status == "within" and a.onset.load == 5  # requests pile up to the cap at 40 req/s
    assert "could not send what was asked" in a.saturation.sentence
    assert f"{top['rps']:.1f} req/s of the 40 asked" in a.saturation.sentence
    assert a.saturation.kind != "not saturated"
    assert any("dropped at the in-flight cap" in w for w in a.warnings)
    answers = " ".join(text for _, text in answer_items(a))
    assert "at least 40" not in answers and "nothing broke" not in answers


def test_schedule_lag_is_warned(tmp_path):
    rows = [ok_row(T0 + 1 + i * 0.05, 1, schedule_lag_ms=25.0) for i in range(150)]
    tiers = [{"tier": 1, "start_s": T0, "end_s": T0 + 10, "target_users": "", "target_rps": 20, "warmup_s": 0,
              "dropped": 0}]
    run = load_run(write_folder(tmp_path / "lag", rows, tiers))
    a = analyze(run, choose_profile(run, None))
    assert any("schedule lag p99 25 ms" in w for w in a.warnings)


# 2. Little's law with fast failures ------------------------------------------------------------
def test_in_flight_uses_successful_requests_only(tmp_path):
    rows = [ok_row(T0 + 0.5 + i * 0.7, 1) for i in range(13)]
    rows += [r429_row(T0 + 0.01 + i * 0.024, 1) for i in range(403)]
    tiers = [{"tier": 1, "start_s": T0, "end_s": T0 + 10, "target_users": 8, "target_rps": "", "warmup_s": 0}]
    a = analyze(run := load_run(write_folder(tmp_path / "rl", rows, tiers)), choose_profile(run, None))
    row = a.table.iloc[0]
    assert row["ok_rps"] == pytest.approx(1.3)
    assert row["inflight"] == pytest.approx(1.3 * 0.384, rel=1e-6)  # not 41.6 req/s x 384 ms = 16


def test_fixture_in_flight_never_exceeds_the_slots():
    a = run_of("shed429")  # 4 slots; its 429 rows have no e2e, like llmload writes them
    assert (a.table["inflight"] <= 4.3).all()


# 3. the queueing model only where it is identifiable ---------------------------------------------
def test_queueing_model_not_fitted_without_a_plateau():
    a = run_of("noknee")
    assert a.fit is None and a.fit_note.startswith("not identifiable: no throughput plateau reached")
    assert run_of("knee16").fit is not None and 14 <= run_of("knee16").fit.slots <= 18
    assert 3.5 <= run_of("shed429").fit.slots <= 4.5  # sheds once its 4 slots are full: a slots limit


def test_queueing_model_not_fitted_on_a_rate_limited_server():
    # a 512-slot server behind a 1 req/s limit: ok throughput flat from the first tier, 429s above it
    loads = [1, 2, 4, 8]
    table = pd.DataFrame({
        "tier": [1, 2, 3, 4], "load": loads, "ok": 10, "sent": [10, 200, 400, 800], "ok_rps": [1.0, 1.0, 1.0, 1.0],
        "n_429": [0, 190, 390, 790], "n_503": 0, "ttft_p99_ms": 60.0, "ttft_p99_ci_lo_ms": 55.0,
        "ttft_p99_ci_hi_ms": 65.0, "e2e_mean_ms": 384.0, "queue_delay_mean_ms": 0.0, "ttft_mean_ms": 40.0,
        "inflight": 0.384,
    })
    compute = knees.compute_saturation(tiers_of(table), "users")  # fewer than one request in service: a limiter
    lim = limiter.recognise(tiers_of(table), "users")
    assert lim is not None and lim.sustained_rps == 1.0 and not compute.reached
    assert compute.sentence.startswith(
        "not measured: a rate limiter caps throughput: it sustains 1.0 req/s (60 requests")
    reason = not_identifiable(table, "users", compute, sheds=True, limiter=lim)
    assert reason == ("not identifiable: a rate limiter (1.0 req/s sustained) caps requests per second, not requests "
                      "in service, so the tiers show its quota, not slots")
    plateau = knees.KneePoint("within", 2.0, 2, 1.0, 1, "")  # shedding that is not told a rate limiter's
    assert not_identifiable(table, "users", plateau, sheds=True) == \
        "not identifiable: the server sheds (rate limit), not a slots limit"


def test_replica_plan_on_a_lower_bound_capacity_says_the_capacity_may_be_higher():
    """Nothing broke up to 16 users and the run recorded no confirmation: the replica count is on the planned rate,
    unconfirmed, and the capacity may be higher (the count then an upper bound, as summary.json says)."""
    run = load_run(FIXTURES / "noknee")
    a = analyze(run, choose_profile(run, None), Target(100.0, "rps"))
    assert a.basis is not None and a.basis.lower_bound and a.per_replica is not None
    text = dict(answer_items(a))["Replica plan:"]
    assert "each loaded to the planned (unconfirmed)" in text and "The capacity may be higher: nothing broke" in text
    assert a.plan is not None and a.plan.replicas == math.ceil(100.0 / a.per_replica.rps)
    assert summary.summary(a)["replicas"]["upper_bound"] is True


# 4. run totals reconciled ------------------------------------------------------------------------
def test_run_totals_count_every_row_and_reconcile(tmp_path):
    run_dir = Path(shutil.copytree(FIXTURES / "shed429", tmp_path / "shed429"))
    samples = pd.read_csv(run_dir / "samples.csv", keep_default_na=False)
    late = samples[samples["error"] == "rate_limited"].tail(5).copy()
    late["ts_start_s"] = float(pd.read_csv(run_dir / "tiers.csv")["end_s"].max()) + 1
    pd.concat([samples, late]).to_csv(run_dir / "samples.csv", index=False)
    total = int((samples["error"] == "rate_limited").sum()) + 5
    pd.DataFrame({"Method": ["LLM"], "Name": ["chat"], "Error": ["RateLimited('HTTP 429')"],
                  "Occurrences": [total]}).to_csv(run_dir / "locust_failures.csv", index=False)
    a = analyze(run := load_run(run_dir), choose_profile(run, None))
    row = a.totals.by_kind.loc["rate_limited"]
    assert row["total"] == total and row["after the last tier"] == 5
    assert row["measured"] == a.table["n_429"].sum()
    assert row["measured"] + row["warm-up"] + row["after the last tier"] == total
    text = " ".join(t for lead, t in answer_items(a) if lead == "Failures in the run:")
    assert f"{total} x 429 in the run, {int(row['measured'])} in measured windows" in text
    assert f"{total} LLM failures, the same as the {total} failed rows of samples.csv." in text


# 5. watch: tier and load from one source ---------------------------------------------------------
def test_watch_windows_show_every_tier_they_overlap_with_its_load():
    run = load_run(FIXTURES / "spike")
    w = watch(run, 300, "ttft", 4.0)
    loads = run.tiers.set_index("tier")["load"]
    for r in w.frame.itertuples():
        tiers = [int(t) for t in r.tiers.split("->")]
        assert r.load.split("->") == [f"{loads[t]:g}" for t in tiers]
    spanning = w.frame[w.frame["tiers"] == "1->2"]
    assert len(spanning) == 1 and spanning.iloc[0]["load"] == "2->16"
    assert "tier  users" in watch_text(w, None, run.load_unit)


# 6. per-scenario figures ---------------------------------------------------------------------------
def test_per_scenario_table_and_speculative_decoding_line():
    a = run_of("structured")
    frame = a.scenario_table
    assert set(frame["scenario"]) == {"json", "prose"} and set(frame["tier"]) == {1, 2}
    for column in ("ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "out_tps_p50", "tpot_p50_ms", "itl_p50_ms"):
        assert frame[column].notna().all()
    assert "json decodes 3.0x faster than prose" in a.scenario_sentence
    assert "speculative decoding likely" in a.scenario_sentence
    assert run_of("knee16").scenario_table.empty
    assert run_of("knee16").checklist[3][1].startswith("Yes")  # cache split kept


# 7. shape awareness ---------------------------------------------------------------------------------
def test_spike_run_compares_phases_instead_of_calling_a_knee():
    a = run_of("spike")
    assert a.kind == "spike" and a.fit is None
    assert list(a.phases["phase"]) == ["before (baseline)", "during the spike", "after"]
    assert any(s.startswith("Recovered ") for s in a.phase_sentences)
    answers = dict(answer_items(a))
    assert "Compute saturation:" not in answers and "Queueing onset:" not in answers
    assert "has no knee" in answers["Spike:"]
    assert [name for name, _, _ in build_figures(a)] == ["errors", "ttft_cdf", "timeline"]


@pytest.mark.parametrize(("loads", "kind"), [([1, 2, 4, 8], "step"), ([2, 16, 2], "spike"), ([4, 4, 4], "soak"),
                                             ([2, 8, 4], "schedule"), ([4], "step")])
def test_kind_from_loads(loads, kind):
    assert kind_from_loads(pd.Series(loads, dtype=float)) == kind


def test_shape_class_and_open_loop_flag_decide_first(tmp_path):
    run_dir = Path(shutil.copytree(FIXTURES / "knee16", tmp_path / "k"))
    info = json.loads((run_dir / "run.json").read_text())
    info["shape"]["class"] = "MySoak"
    (run_dir / "run.json").write_text(json.dumps(info))
    assert shape_kind(load_run(run_dir)) == "soak"
    assert shape_kind(load_run(FIXTURES / "openloop")) == "rate"


def test_soak_reports_drift_not_a_knee(tmp_path):
    rows, tiers = [], []
    for t in range(4):
        start = T0 + 10 * t
        tiers.append({"tier": t + 1, "start_s": start, "end_s": start + 10, "target_users": 4, "target_rps": "",
                      "warmup_s": 0})
        rows += [ok_row(start + 0.1 * i, t + 1, ttft=40.0 * (1 + t), e2e=300.0) for i in range(100)]
    run = load_run(write_folder(tmp_path / "soak", rows, tiers))
    a = analyze(run, choose_profile(run, None))
    assert a.kind == "soak" and "Queueing onset:" not in dict(answer_items(a))
    assert any("window 1 to window 4" in s and "drifts" in s for s in a.phase_sentences)


# 8. the SLO profile's source ---------------------------------------------------------------------
def test_slo_profile_source(tmp_path):
    assert profile_source(load_run(FIXTURES / "noknee"), None) == "default"  # run.json slo_profile ''
    assert run_of("noknee").profile.name == "chat"
    assert profile_source(load_run(FIXTURES / "knee16"), None) == "run.json"
    assert profile_source(load_run(FIXTURES / "knee16"), "voice") == "--slo"
    run_dir = Path(shutil.copytree(FIXTURES / "noknee", tmp_path / "n"))
    info = json.loads((run_dir / "run.json").read_text())
    info["slo_profile"] = "gold"
    (run_dir / "run.json").write_text(json.dumps(info))
    a = analyze(run := load_run(run_dir), choose_profile(run, None))
    assert a.profile.name == "chat" and any("unknown SLO profile 'gold'" in w for w in a.warnings)
    assert "[profile the default; choose with --slo]" in dict(answer_items(a))["Capacity:"]


def test_no_numpy_warnings_on_empty_drop_columns():
    assert np.isfinite(run_of("knee16").table["drop_rate"]).all()


def test_a_declared_shape_kind_wins_over_the_class_name(tmp_path):
    run_dir = Path(shutil.copytree(FIXTURES / "knee16", tmp_path / "k"))
    info = json.loads((run_dir / "run.json").read_text())
    info["shape"].update({"class": "Burst", "kind": "spike"})
    (run_dir / "run.json").write_text(json.dumps(info))
    assert shape_kind(load_run(run_dir)) == "spike"
