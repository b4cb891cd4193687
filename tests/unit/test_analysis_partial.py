"""Killed runs, load not applied, and sentences that read true."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.layout import answer_items
from llmload.analysis.text import outcome_rows
from llmload.contract import SAMPLE_COLUMNS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
T0 = 1_767_225_600.0


def run_of(path: Path):
    run = load_run(path)
    return analyze(run, choose_profile(run, None))


def answers(a) -> dict[str, str]:
    return dict(answer_items(a))


def test_a_killed_tier_measured_for_a_second_is_excluded_and_its_rate_sane():
    a = run_of(FIXTURES / "killed")
    last = a.table.iloc[-1]
    assert bool(last["short"]) and not bool(last["judged"])
    assert 0.9 < last["measure_s"] < 1.3  # up to the last completion, not the last send
    assert last["ok_rps"] < 20  # the 4-slot server serves ~19 req/s; a 2 ms window claimed hundreds
    assert a.capacity.status == "beyond" and a.capacity.load == 4.0 and a.capacity.ok_rps < 20
    assert a.saturation.tier == 3
    assert answer_items(a)[0][0] == "Plan:"  # the plan leads; what qualifies it comes next
    first_lead, first = answer_items(a)[1]
    assert first_lead == "Stopped early:"
    assert first.startswith("the run was killed (run.json records no end) during tier 4 (8 users), 1.0 s into its "
                            "measure window of 8 s; 1 planned tier(s) never ran (16 users). Tier 4 ran too briefly")
    assert "Unsafe because of the early stop: the saturation verdict (it describes 4 users" in first
    assert "the capacity ('at least' counts only the tiers that ran)" in first


def test_a_rate_is_never_divided_by_a_window_shorter_than_a_request(tmp_path):
    run_dir = Path(shutil.copytree(FIXTURES / "killed", tmp_path / "killed"))
    samples = pd.read_csv(run_dir / "samples.csv", keep_default_na=False)
    tier4 = samples["ts_start_s"] >= T0 + 32.0
    keep = samples[~tier4 | (samples.index == samples[tier4].index[0])]
    keep.to_csv(run_dir / "samples.csv", index=False)
    last = run_of(run_dir).table.iloc[-1]
    assert last["rate_window_s"] >= last["e2e_p50_ms"] / 1000
    assert last["ok_rps"] <= 1000 / last["e2e_p50_ms"] + 1e-9


def test_a_run_that_finished_has_no_stopped_line_and_a_signalled_one_does(tmp_path):
    run_dir = Path(shutil.copytree(FIXTURES / "knee16", tmp_path / "knee16"))
    info = json.loads((run_dir / "run.json").read_text())
    info["end"] = {"reason": "shape finished", "planned": True}
    (run_dir / "run.json").write_text(json.dumps(info))
    assert "Stopped early:" not in answers(run_of(run_dir))
    info["end"] = {"reason": "SIGTERM", "planned": False}
    (run_dir / "run.json").write_text(json.dumps(info))
    stopped = answers(run_of(run_dir))["Stopped early:"]
    assert stopped.startswith("the run was interrupted (SIGTERM) during tier 6 (32 users).")
    assert "compute saturation" not in stopped  # reached inside the tested range: still safe


def test_users_parked_in_retry_after_are_not_credited_as_load():
    a = run_of(FIXTURES / "parked")
    top = a.table.iloc[-1]
    assert bool(top["under_applied"]) and top["load_target"] == 4 and top["load"] == 2
    assert a.capacity.load == 2.0
    capacity = answers(a)["Capacity:"].split("): ", 1)[1]  # not 4: only 2 were applied; 4 were asked
    assert capacity.startswith("between 2 and 4 users: 2 users meet it (")
    assert "4 users asked (2 applied) miss" in capacity
    note = next(w for w in a.warnings if w.startswith("Tier 3: the load applied fell below its target: only 2 of 4 "
                                                       "users sent requests"))
    assert "2 were refused before it (2 x 429) and slept through it on a retry hint" in note
    assert "lost worker" not in note  # one local process: no worker to lose
    assert outcome_rows(a.table)[1][-1][1] == "2 of 4"


def test_users_refused_before_the_window_are_the_servers_refusal_not_a_quiet_tier():
    """The parked fixture's server (2 slots, no queue) refused 2 of the 4 users with Retry-After 999999 in tier
    3's warm-up: no refusal fell in the measure window, yet the server shed that load. Every verdict says so."""
    a = run_of(FIXTURES / "parked")
    top = a.table.iloc[-1]
    assert top["parked_refused"] == 2 and top["parked_codes"] == "2 x 429" and top["refused_load_share"] == 0.5
    assert top["parked_retry_after_s"] == 999999.0 and top["shed_rate"] == 0  # nothing refused in the window
    assert a.saturation.kind == "sheds" and a.saturation.rule == 3
    assert a.saturation.sentence.startswith("At the highest load asked (4 users, tier 3) it sheds load: it refused "
                                            "2 of the 4 users (2 x 429, Retry-After up to 999999 s)")
    assert "was refused" not in a.saturation.sentence and "not saturated" not in a.saturation.sentence
    assert a.capacity.status == "within" and "2 of the 4 users asked refused (2 x 429)" in a.capacity.limited_by
    assert "nothing broke" not in answers(a)["Capacity:"]
    assert a.compute.tier == 2 and a.compute.load == 2.0  # the 2 slots
    assert a.fit is not None and round(a.fit.slots) == 2
    compute = answers(a)["Compute saturation:"]
    assert "more load (up to 4 users asked, 2 applied)" in compute  # the plateau came at 2, before any refusal
    assert "Refusals began only above it (from 4 users on; 2 of the 4 users refused, 2 x 429)" in compute
    others = [row for row in a.table.itertuples() if row.tier < 3]
    assert all(row.parked_refused == 0 and row.refused_load_share == 0 for row in others)
    # the load levels named are the shape's (1, 2, 4), with what was applied where it fell short
    window = next(answer for question, answer in a.checklist if question.startswith("At which time window"))
    assert "tiers at 1, 2, 4 users (2 applied at tier 3)" in window
    from llmload.analysis.report import layout as report

    assert "raised tier by tier from 1 to 4 users" in report._load_story(a)


def test_a_tier_whose_users_were_all_parked_is_refused_load_never_dropped():
    """parkedall: an rpm quota answers 429 with a fixed 60 s hint; every user of tiers 2 and 3 (2 and 4 users) was
    refused before its measure window and slept through it, and 7 of tier 4's 8. No tier vanishes from any table
    or verdict, and each is judged at 0 req/s as load the server refused."""
    a = run_of(FIXTURES / "parkedall")
    rows = a.table.set_index("tier")
    assert list(rows.index) == [1, 2, 3, 4]
    for tier, users in ((2, 2), (3, 4)):
        row = rows.loc[tier]
        assert row["sent"] == 0 and bool(row["tested"]) and bool(row["under_applied"]) and bool(row["judged"])
        assert row["parked_refused"] == users and row["parked_codes"] == f"{users} x 429" and row["load"] == 0
    from llmload.analysis.text import knee_rows

    assert [r[:2] for r in knee_rows(a.table)[1]] == [("1", "1"), ("2", "0 of 2"), ("3", "0 of 4"), ("4", "1 of 8")]
    assert outcome_rows(a.table)[1][1][-1].startswith("all users refused and parked (2 x 429)")
    assert a.saturation.sentence.startswith("At the highest load asked (8 users, tier 4) it sheds load")
    # the quota's true rate is 1 req/s: the 60 requests accepted from its first refusal to the end of the tiers
    assert a.saturation.kind == "rate limited" and ("A rate limiter: it sustains 0.9 req/s (54 requests a minute, "
                                                    "from its first refusal, in tier 1, to the end of the tiers)"
                                                    in a.saturation.sentence)
    assert "no request was sent at tier 2 (2 users asked, 0 applied: the server refused its users" \
        in a.onset.sentence
    assert a.capacity.status == "below"  # the quota ran out in tier 1 already (1 x 429 there)
    assert not any("only 0 successful" in w for w in a.warnings)  # holding a refused tier longer is no help
    notes = [w for w in a.warnings if "the load applied fell below its target" in w]
    assert [w.split(":", 1)[0] for w in notes] == ["Tier 2", "Tier 3", "Tier 4"]
    assert all("slept through it on a retry hint (up to 60 s)" in w and "lost worker" not in w for w in notes)


def test_summary_json_calls_a_fully_parked_tier_under_applied():
    from llmload.analysis.report.summary import summary

    tiers = {t["tier"]: t for t in summary(run_of(FIXTURES / "parkedall"))["tiers"]}
    assert [(tiers[n]["active_users"], tiers[n]["under_applied"], tiers[n]["parked_refused"]) for n in (2, 3)] \
        == [(0.0, True, 2), (0.0, True, 4)]
    assert tiers[1]["under_applied"] is False and tiers[1]["parked_refused"] == 0


def test_users_inside_a_long_first_token_timeout_were_busy_not_idle(tmp_path):
    """vLLM sends its headers and a role chunk on arrival; a request that then times out after 60 s has an e2e_ms
    of a few ms (to that chunk). Its user was busy the whole time: elapsed_ms says so, and the tier's load is
    applied (one local process: no lost worker named)."""
    run_dir = Path(shutil.copytree(FIXTURES / "single", tmp_path / "single"))
    samples = pd.read_csv(run_dir / "samples.csv", keep_default_na=False)
    stuck = samples["user"].isin([6, 7])
    first = samples[stuck].groupby("user").head(1).index
    samples["ttft_ms"] = samples["ttft_ms"].astype(object)
    samples.loc[first, ["status", "error", "ttft_ms", "e2e_ms", "headers_ms"]] = [200, "timeout", "", 4.0, 3.0]
    samples = samples[~stuck | samples.index.isin(first)].copy()  # nothing else: each waited out its timeout
    samples.to_csv(run_dir / "samples.csv", index=False)
    idle = run_of(run_dir)
    assert bool(idle.table.iloc[0]["under_applied"]) and idle.table.iloc[0]["active_users"] == 6  # e2e only
    samples["elapsed_ms"] = samples["e2e_ms"]
    samples.loc[first, "elapsed_ms"] = 60_000.0
    samples.to_csv(run_dir / "samples.csv", index=False)
    busy = run_of(run_dir).table.iloc[0]
    assert busy["active_users"] == 8 and not bool(busy["under_applied"]) and busy["load"] == 8


def test_shedding_sentence_counts_each_503_once():
    sentence = run_of(FIXTURES / "shed503").saturation.sentence
    assert sentence == ("At the highest load (16 users, tier 5) it sheds load: 56.1% of requests refused (192 x "
                        "503), without a retry hint (no Retry-After or rate-limit reset header); accepted requests "
                        "did not wait (estimated wait 0 ms).")


def test_capacity_below_the_lowest_tier_reads_as_a_sentence():
    a = run_of(FIXTURES / "timeouts")
    assert answers(a)["Capacity:"].startswith(
        "under the chat SLO (p95 TTFT <= 500 ms, errors <= 1%, 429s <= 1%): below the lowest tested load of 2 "
        "users: at tier 1 no request succeeded, so p95 TTFT is unknown (limit 500 ms).")
    assert "n/a" not in answers(a)["Capacity:"]


def write_failed_run(path: Path, rows: int = 48) -> Path:
    """A run killed in tier 1's warm-up after `rows` connect failures."""
    path.mkdir()
    frame = pd.DataFrame([{"ts_start_s": T0 + 0.02 * i, "request_id": f"r{i}", "worker": "local", "user": "u1",
                           "users_now": 1, "tier": 1, "phase": "warmup", "status": 0, "error": "connect",
                           "e2e_ms": 5.0} for i in range(rows)]).reindex(columns=list(SAMPLE_COLUMNS))
    frame.to_csv(path / "samples.csv", index=False)
    pd.DataFrame([{"tier": 1, "start_s": T0, "end_s": None, "target_users": 1, "warmup_s": 2.0}]).to_csv(
        path / "tiers.csv", index=False)
    return path


def test_all_failed_and_none_measured_says_what_was_recorded(tmp_path):
    a = run_of(write_failed_run(tmp_path / "run"))
    assert a.saturation.sentence == ("48 attempts were recorded (48 in warm-up), none in a tier that can be "
                                     "judged, and all 48 failed (48 x connect): saturation behaviour unknown.")


@pytest.mark.parametrize("kind", ["retry_after_too_long"])
def test_retry_after_too_long_counts_as_shedding(tmp_path, kind):
    run_dir = Path(shutil.copytree(FIXTURES / "shed429", tmp_path / "shed"))
    samples = pd.read_csv(run_dir / "samples.csv", keep_default_na=False)
    refused = samples["error"] == "rate_limited"
    samples.loc[refused, ["error", "status"]] = [kind, 0]  # the kind alone decides, not a 429 status
    samples.to_csv(run_dir / "samples.csv", index=False)
    a = run_of(run_dir)
    top = a.table.iloc[-1]
    assert top["n_shed"] > 0 and top["n_other_fail"] == 0
    assert a.saturation.kind == "sheds"


def test_an_open_loop_top_tier_that_dropped_arrivals_is_not_told_to_test_higher_rates():
    """openloop: 40 req/s asked, 19 sent (55% dropped at --max-inflight). Throughput still grew, but a higher
    rate would only drop more: the advice is the rates in between or a higher in-flight cap."""
    compute = answers(run_of(FIXTURES / "openloop"))["Compute saturation:"]
    assert compute.startswith("not reached: throughput still grew up to 40 req/s (tier 2), 19.0 req/s.")
    assert "Test higher loads" not in compute
    assert "sent only 19.0 of the 40 req/s asked (55% of arrivals dropped at the in-flight cap)" in compute
    assert "Test rates between 5 and 40 req/s, or raise --max-inflight" in compute
    grew = answers(run_of(FIXTURES / "noknee"))["Compute saturation:"]  # closed loop, nothing dropped
    assert grew.startswith("not reached: throughput still grew") and grew.endswith("Test higher loads.")


def test_a_last_tier_the_shape_closed_at_an_interrupt_is_cut_not_complete(tmp_path):
    """Ctrl-C: the shape writes the last tier's end_s at the stop; 4 of its 8 planned seconds were measured."""
    run_dir = Path(shutil.copytree(FIXTURES / "knee16", tmp_path / "knee16"))
    info = json.loads((run_dir / "run.json").read_text())
    info["end"] = {"reason": "SIGINT", "planned": False}
    (run_dir / "run.json").write_text(json.dumps(info))
    tiers = pd.read_csv(run_dir / "tiers.csv", keep_default_na=False)
    tiers.loc[tiers.index[-1], "end_s"] = T0 + 56.0  # tier 6: started at +50, 2 s warm-up, 4 s measured
    tiers.to_csv(run_dir / "tiers.csv", index=False, float_format="%.3f")
    samples = pd.read_csv(run_dir / "samples.csv", keep_default_na=False)
    samples[samples["ts_start_s"] < T0 + 56.0].to_csv(run_dir / "samples.csv", index=False)
    stopped = answers(run_of(run_dir))["Stopped early:"]
    assert stopped.startswith("the run was interrupted (Ctrl-C, SIGINT) during tier 6 (32 users), 4.0 s into its "
                              "measure window of 8 s."), stopped
    info["end"] = {"reason": "shape finished", "planned": True}  # a planned end keeps the tier as it was written
    (run_dir / "run.json").write_text(json.dumps(info))
    assert "Stopped early:" not in answers(run_of(run_dir))
