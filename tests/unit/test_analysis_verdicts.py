"""The verdicts: two knees, header mode, one saturation classifier; a fixture and a golden sentence per
decision-table branch; never "nan" in prose."""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report.document import to_markdown
from llmload.analysis.report.layout import blocks
from llmload.analysis.tables.judged import add_wait, tiers_of
from llmload.analysis.verdicts import headers
from llmload.rules import knees
from llmload.rules.capacity import Capacity
from llmload.rules.limits import DEFAULT_HEADROOM
from llmload.rules.saturation import classify, peak_within_slo, throughput_drop
from llmload.rules.slo import PROFILES

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
sys.path.insert(0, str(FIXTURE_DIR))

import make_fixtures  # noqa: E402


@functools.cache
def run_of(name: str):
    """A fixture's analysis, once per module (no test here changes one: they copy a table before editing it)."""
    run = load_run(FIXTURE_DIR / "runs" / name)
    return analyze(run, choose_profile(run, None))


@pytest.mark.parametrize("name", sorted(make_fixtures.VERDICTS))
def test_fixture_verdicts(name):
    a = run_of(name)
    known = make_fixtures.VERDICTS[name]
    assert a.compute.load == known["compute"], a.compute.sentence
    assert (a.onset.load if a.onset.status == "within" else None) == known["onset"], a.onset.sentence
    assert a.saturation.kind == known["saturation"], a.saturation.sentence
    assert a.header_mode.mode == known["headers"], a.header_mode.sentence


def vllm_table() -> pd.DataFrame:
    """The issue's vLLM run (4 seqs): 3.6 -> 5.1 -> 5.3 -> 5.6 -> 5.5 req/s at 1/2/4/8/16 users; batches slow
    down up to 4 running, then requests wait (e2e = N / X; the wait is e2e above the 4-user service time)."""
    loads = np.array([1, 2, 4, 8, 16], dtype=float)
    x = np.array([3.6, 5.1, 5.3, 5.6, 5.5])
    e2e = 1000 * loads / x
    wait = np.clip(e2e - e2e[2], 0, None)
    ttft = np.array([30.0, 40.0, 60.0, 60.0, 60.0]) + wait
    table = pd.DataFrame({"tier": np.arange(1, 6), "load": loads, "sent": 500, "ok": 500, "ok_rps": x,
                          "e2e_mean_ms": e2e, "ttft_mean_ms": ttft, "tpot_mean_ms": [6.0, 8.5, 17.0, 17.0, 17.0],
                          "drop_rate": 0.0})
    add_wait(table)
    return table


def test_issue_vllm_curve_two_knees():
    table = vllm_table()
    compute = knees.compute_saturation(tiers_of(table), "users")
    onset = knees.queueing_onset(tiers_of(table), "users")
    assert (compute.status, compute.load, compute.next_load) == ("within", 2.0, 1.0)
    assert (onset.status, onset.load, onset.next_load) == ("within", 4.0, 8.0)
    assert list(table["waits"]) == [False, False, False, True, True]


def test_a_plateau_is_called_an_admission_limit_only_where_the_server_starts_refusing():
    """A gateway's rate limit (LiteLLM at 2 users: 99.9% 429, nothing in service) is a rate limiter: its tiers show
    its quota, no compute plateau. A concurrency cap refusing only above the 1-user plateau gets no admission
    clause; a plateau whose own tier refuses (shed503) gets it."""
    table = pd.DataFrame({"tier": [1, 2, 3], "load": [1.0, 2.0, 4.0], "sent": [60, 700, 800], "ok": [60, 1, 0],
                          "ok_rps": [2.1, 0.07, 0.0], "n_shed": [0, 699, 800], "n_429": [0, 690, 800],
                          "n_503": [0, 0, 0], "n_stream_error": [0, 0, 0]})
    compute = knees.compute_saturation(tiers_of(table), "users")
    assert compute.status == "none" and compute.sentence.startswith(
        "not measured: a rate limiter caps throughput: its quota ran out at 2 users (tier 2)"), compute.sentence
    capped = table.assign(ok=[60, 600, 600], ok_rps=2.1, e2e_mean_ms=476.0, n_shed=[0, 100, 200],
                          n_429=[0, 100, 200])  # one request in service at every tier: a cap of one
    compute = knees.compute_saturation(tiers_of(capped), "users")
    assert compute.load == 1.0 and "admission limit" not in compute.sentence
    assert "Refusals began only above it (from 2 users on; 14.3% there: 100 x 429)" in compute.sentence
    calm = table.assign(n_shed=0, n_429=0, ok_rps=[2.1, 2.1, 2.1], ok=[60, 700, 800])
    assert "refused" not in knees.compute_saturation(tiers_of(calm), "users").sentence
    # the plateau's own tier already refusing (shed503: 29.9% of 503s at 8 users, the saturation tier) counts too
    own = table.assign(ok_rps=[1.0, 2.1, 2.1], ok=[30, 500, 500], n_shed=[0, 210, 400],
                       n_429=0, n_503=[0, 210, 400])
    sentence = knees.compute_saturation(tiers_of(own), "users").sentence
    assert sentence.startswith("at 2 users") and "refused requests from 2 users on (30.0% there: 210 x 503)" in sentence


def test_a_plateau_within_counting_noise_of_the_line_is_not_pushed_onto_the_refusing_tier():
    """noisyplateau (vLLM CPU with a queue cap): 4 users read 84 % of the plateau, refusals start at 8.
    Under the 85 % line alone saturation would land at 8 and be called an admission limit."""
    a = run_of("noisyplateau")
    by_load = a.table.set_index("load")
    assert by_load.loc[4.0, "shed_rate"] == 0 and by_load.loc[8.0, "shed_rate"] > 0.5
    assert 0.80 < by_load.loc[4.0, "ok_rps"] / by_load["ok_rps"].max() < 0.85
    assert (a.compute.status, a.compute.load, a.compute.next_load) == ("within", 4.0, 2.0), a.compute.sentence
    assert "admission limit" not in a.compute.sentence
    assert ("(0.80 req/s, under the 85% line at 0.81, but within 2 standard deviations of its count (the window's "
            "edges, half a request per user), and a higher tier read as little again: not measurably below it)") \
        in a.compute.sentence
    assert "Refusals began only above it (from 8 users on; 80.8% there: 80 x 503)" in a.compute.sentence


def test_throughput_that_grew_at_a_refusing_top_tier_is_not_advice_to_test_higher_loads():
    """LiteLLM's rpm limit (realtest): 99.6% refused at 2 users, then a new minute's quota let 3.3 req/s through
    at 4 users while 84.9% were refused. Throughput 'grew' to the top tier, but higher loads would be refused."""
    table = pd.DataFrame({"tier": [1, 2, 3], "load": [1.0, 2.0, 4.0], "sent": [32, 545, 331], "ok": [32, 2, 50],
                          "ok_rps": [2.1, 0.1, 3.3], "n_shed": [0, 543, 281], "n_429": [0, 543, 281],
                          "n_503": [0, 0, 0], "n_stream_error": [0, 0, 0], "drop_rate": 0.0})
    compute = knees.compute_saturation(tiers_of(table), "users")
    assert compute.status == "beyond"
    assert "Test higher loads" not in compute.sentence
    assert "But the server refused 84.9% of its requests (281 x 429) there" in compute.sentence
    calm = table.assign(n_shed=0, n_429=0, ok_rps=[1.0, 2.0, 3.3])
    assert knees.compute_saturation(tiers_of(calm), "users").sentence.endswith("Test higher loads.")
    failing = calm.assign(sent=[32, 545, 500], n_other_fail=[0, 0, 64])  # the failing fixture's top tier: 12.8%
    assert knees.compute_saturation(tiers_of(failing), "users").sentence.endswith(
        "But 12.8% of its requests failed there (timeouts or errors, not refusals): find why before testing higher "
        "loads.")
    queued = calm.assign(waits=[False, False, True])  # vLLM, 4 slots: still 6.6 -> 8.0 req/s at 8 -> 16 users
    assert knees.compute_saturation(tiers_of(queued), "users").sentence.endswith(
        "Its requests already waited there (the server queues): higher loads would mostly add waiting; test them "
        "only to see where throughput stops growing.")


def test_batch_slowdown_alone_is_not_waiting():
    table = vllm_table().iloc[:3].copy()
    add_wait(table)
    assert not table["waits"].any()
    assert (table["wait_ms"] == 0).all()


def test_server_queue_metric_decides_over_the_client_estimate():
    table = vllm_table()
    table["srv_waiting_mean"] = [0.0, 0.0, 0.0, 0.0, 3.0]
    add_wait(table)
    assert list(table["wait_source"]) == ["", "", "", "", "server"]
    assert knees.queueing_onset(tiers_of(table), "users").load == 8.0


GOLDEN = {
    1: ("", ""),  # no requests: covered below on an empty table
    2: ("timeouts", "At the highest load (4 users, tier 2) it times out: 147 of 147 requests (100.0%) hit the "
        "client timeout and 0 succeeded; the server neither answered in time nor refused."),
    3: ("shedhint", "At the highest load (16 users, tier 5) it sheds load: 39.0% of requests refused (96 x 429), "
        "with Retry-After (via llm_provider-retry-after); accepted requests did not wait (estimated wait 0 ms)."),
    4: ("batchslow", "At the highest load (16 users, tier 5) it queues: requests waited about 1812 ms each (11.6 "
        "waiting on average, TTFT growth beyond what slower batches explain); waiting starts between 4 and 8."),
    5: ("failing", "At the highest load (4 users, tier 3) it fails instead of queueing or shedding: 12.8% of "
        "requests failed (19 other errors (5xx, broken streams, protocol)), none refused, no wait measured."),
    6: ("single", "At 8 users (tier 1, the only load tested): cannot tell whether the server is saturated: one load "
        "level gives no low-load baseline to see a wait against, and no request was refused. Test several "
        "loads, or record the server's queue metrics."),
    7: ("thrash", "At the highest load (32 users, tier 5) no request waited, was refused or failed, yet throughput "
        "fell from 36.9 req/s at 8 users to 21.5 at 32 users (42% below): the server degrades under overload; "
        "requests took longer without waiting in a queue (the engine itself slowed down: preemption, swapping)."),
    8: ("noknee", "At the highest load (8 users, tier 4) no request waited, was refused or failed: not "
        "saturated in the tested range."),  # tier 5's generator was overloaded: left out (health.py)
}


@pytest.mark.parametrize("rule", sorted(r for r in GOLDEN if GOLDEN[r][0]))
def test_golden_sentence_per_branch(rule):
    name, sentence = GOLDEN[rule]
    sat = run_of(name).saturation
    assert sat.rule == rule
    assert sat.sentence == sentence


def test_no_requests_cannot_tell():
    none = knees.KneePoint("none", None, None, None, None, "")
    assert classify(tiers_of(vllm_table().iloc[0:0]), none, none, "users").kind == "cannot tell"


@pytest.mark.parametrize(("name", "phrase"), [
    ("shed503", "(192 x 503), without a retry hint"),
    ("shedstream", "(192 in-stream error events), without a retry hint"),
    ("shed429", "(96 x 429), with Retry-After;"),
    ("vllmmetrics", "the server's queue held 12.1 requests on average (its metrics)"),
    ("singlemetrics", "it queues: the server's queue held 4.0 requests on average"),
])
def test_shedding_and_server_queue_phrases(name, phrase):
    assert phrase in run_of(name).saturation.sentence


OVERLOAD = ("At the highest load (32 users, tier 5) it queues: requests waited about 1160 ms each (23.9 waiting on "
            "average, TTFT growth beyond what slower batches explain); waiting starts between 8 and 16; throughput "
            "fell from 36.2 req/s at 8 users to 20.6 at 32 users (43% below): the server degrades under overload.")


def test_a_throughput_drop_past_the_plateau_is_said_in_the_verdict_and_the_checklist():
    a = run_of("overload")
    assert a.saturation.kind == "queues" and a.saturation.sentence == OVERLOAD
    assert dict(a.checklist)["At full load: does it queue or return 429 (with Retry-After)?"] == OVERLOAD
    by_load = a.table.set_index("load")["ok_rps"].round(1)
    assert (by_load[8.0], by_load[32.0]) == (36.2, 20.6)  # the figures of the sentence are the table's


def test_capacity_within_the_slo_names_a_throughput_drop_and_counts_one_user_as_one():
    from llmload.analysis.report.answer import capacity_sentence

    thrash = capacity_sentence(run_of("thrash"))
    assert thrash.startswith("under the chat SLO") and "at least 32 users (21.5 req/s" in thrash
    assert ("Within the SLO, but throughput fell from 36.9 req/s at 8 users to 21.5 at 32 users (42% below): the "
            "server degrades under overload: plan on the load of the peak") in thrash
    assert "throughput fell" not in capacity_sentence(run_of("knee16"))  # no drop: no such note
    assert "at least 1 user (" in capacity_sentence(run_of("prefill"))


def test_a_capacity_past_a_throughput_peak_points_the_plan_at_the_peak():
    """overload: the SLO breaks at 32 users, so the capacity is 16 users (28.6 req/s), past the 8-user peak
    (36.2 req/s): more work at less load. The sentence says so, plans on the peak only, and so do the replicas."""
    from llmload.analysis.report.answer import answer_items, capacity_sentence

    a = run_of("overload")
    assert a.capacity.status == "within" and (a.capacity.load, round(a.capacity.ok_rps, 1)) == (16, 28.6)
    sentence = capacity_sentence(a)
    assert "plan on the measured" not in sentence and "plan on 16" not in sentence  # one plan: the peak's
    assert ("But throughput fell from 36.2 req/s at 8 users to 20.6 at 32 users (43% below): the server degrades "
            "under overload: plan on the load of the peak (8 users, 36.2 req/s, within the SLO), not the capacity "
            "load.") in sentence
    planned = a.planning_capacity
    assert planned is not None and (planned.load, round(planned.ok_rps, 1)) == (8.0, 36.2)
    plan = dict(answer_items(a))["Plan:"]
    assert plan.startswith(f"{planned.ok_rps * (1 - DEFAULT_HEADROOM):.2f} req/s per replica")
    assert "30% below its throughput at the peak within the SLO (8 users, 36.2 req/s)" in plan
    knee16 = run_of("knee16")  # no drop: planned on the capacity point, as before
    assert knee16.basis is not None and knee16.basis.kind == "capacity" and knee16.basis.load == 16


def test_a_throughput_drop_within_noise_or_under_15_percent_is_not_one():
    table = pd.DataFrame({"load": [1.0, 2.0, 4.0], "ok": [20, 40, 34], "sent": [20, 40, 34], "rate_window_s": 10.0,
                          "ok_rps": [2.0, 4.0, 3.4], "under_applied": False})
    assert throughput_drop(tiers_of(table), "users") == ""  # 15 % below, but 40 vs 34 requests is noise
    many = table.assign(ok=[2000, 4000, 3400], sent=[2000, 4000, 3400], ok_rps=[200.0, 400.0, 340.0])
    assert throughput_drop(tiers_of(many), "users").startswith(
        "throughput fell from 400.0 req/s at 2 users to 340.0 at 4")
    assert throughput_drop(tiers_of(many.assign(ok=[2000, 4000, 3500], ok_rps=[200.0, 400.0, 350.0])), "users") == ""
    assert throughput_drop(tiers_of(many.assign(under_applied=[False, False, True])), "users") == ""


def test_503_and_stream_errors_are_counted_once():
    for name, column, words in (("shed503", "n_503", "x 503"), ("shedstream", "n_stream_error", "in-stream error")):
        a = run_of(name)
        top = a.table.iloc[-1]
        refused, sent = int(top[column]), int(top["sent"])
        assert refused > 0 and int(top["ok"]) + refused == sent  # every attempt is a success or one refusal
        sentence = a.saturation.sentence
        # the refusals named once, with the table's count and share; nothing counted again as another failure
        assert f"{refused / sent:.1%} of requests refused ({refused} {words}" in sentence, sentence
        assert sentence.count(str(refused)) == 1
        assert "failed otherwise" not in sentence and "besides" not in sentence


def test_concurrency_cap_with_cpu_contention_is_not_a_queue():
    a = run_of("cap429")
    top = a.table.iloc[-1]
    assert top["ttft_mean_ms"] > 1.3 * a.table.iloc[0]["ttft_mean_ms"]  # TTFT did rise (CPU contention)
    assert "queue" not in a.saturation.sentence and a.saturation.kind == "sheds"


def test_headers_on_arrival_labels_the_wait_after_headers():
    a = run_of("batchslow")
    assert a.header_mode.labels == ("gateway", "after headers (queue, prefill, first token)")
    assert run_of("knee16").header_mode.labels[0] == "gateway+queue"


def test_headers_that_grow_while_the_engine_never_queues_went_to_the_gateway():
    """A gateway in front of the engine: the time to headers grew 188 ms with TTFT while the engine's queue
    metric stayed at 0, so the time is the gateway's, never 'waiting shows before the headers'; the queueing
    onset and the saturation verdict take the server's queue too (no request waited)."""
    a = run_of("gateway")
    assert a.header_mode.sentence == (
        "Headers: the time to headers grew with TTFT (median TTFT grew 188 ms from 1 to 16 while the median time to "
        "headers grew 188 ms), yet the engine's queue stayed empty (server metrics at 16: 0.0 requests waiting on "
        "average, queue time 0 ms): the time went to the gateway or proxy in front of the engine (or the network "
        "between), not to requests waiting in the engine.")
    assert a.header_mode.labels == ("gateway (in front of the engine)", "after headers (prefill, first token)")
    assert "the server's queue stayed empty" in a.onset.sentence and "no request waited" in a.saturation.sentence
    queued = a.table.copy()  # the same growth with the engine's queue behind it: waiting before the headers
    queued["srv_waiting_mean"] = queued["srv_queue_len"] = 3.0  # the gauge and the queue time's Little figure
    assert headers.header_mode(queued).mode == "service"
    queued["srv_queue_len"] = 0.0
    assert headers.header_mode(queued).mode == "gateway"  # the histogram's figure wins over the sampled gauge
    queued["srv_waiting_mean"], queued["srv_queue_time_ms"] = 0.0, queued["gateway_queue_ms"]
    assert headers.header_mode(queued).mode == "service"  # a queue time that explains the headers' growth
    assert headers.header_mode(a.table.drop(columns=["srv_waiting_mean", "srv_queue_len"])).mode == "service"  # none


def test_fitted_model_agrees_with_the_onset():
    for name in ("knee16", "batchslow", "partial"):
        a = run_of(name)
        assert a.agreement.startswith("It agrees with the queueing onset"), (name, a.agreement)


def test_quota_draining_and_two_truths_in_the_report():
    a = run_of("shedhint")
    md = to_markdown(blocks(a, []))
    assert "Rate-limit quota left (lowest x-ratelimit-remaining-* per tier, by load): requests 1: 60, 2: 45" in md
    assert "samples.csv is authoritative" in md and "stop drain" in md
    assert "differs from" not in md


def test_starved_generator_advice():
    warnings = run_of("shed503").warnings
    starved = [w for w in warnings if w.startswith("Tier 3")]
    assert starved and "more workers would not help" in starved[0] and "quieter machine" in starved[0]


def test_server_metrics_table_in_report():
    md = to_markdown(blocks(run_of("vllmmetrics"), []))
    assert "Server-side metrics beside client figures" in md
    assert "waiting = vllm:num_requests_waiting" in md and "KV cache = vllm:gpu_cache_usage_perc" in md


@pytest.mark.parametrize("name", sorted(make_fixtures.FIXTURES))
def test_no_nan_in_any_report_or_cli_text(name):
    a = run_of(name)
    texts = [to_markdown(blocks(a, []))]
    for command in ("knee", "tiers"):
        code, out = make_fixtures.run_cli([command, f"runs/{name}"])
        assert code == 0
        texts.append(out)
    for text in texts:
        assert not re.search(r"\bnan\b", text, re.IGNORECASE), re.search(r".{60}\bnan\b.{20}", text, re.I)


def test_plots_throughput_from_zero_labelled_model_and_a_timeline_in_panels_of_their_own_units():
    from matplotlib.figure import Figure

    from llmload.analysis.report import plots, timeline_plot
    from llmload.analysis.tables import timeline

    a = run_of("batchslow")
    fig = Figure()
    ax = fig.add_subplot()
    plots.plot_throughput(ax, a.table, a.fit, (a.compute, a.onset), "users")
    assert all(axis.get_ylim()[0] == 0 for axis in fig.axes)
    labels = ax.get_legend_handles_labels()[1]
    assert any(label.startswith("fitted queueing model: 4.0 slots") for label in labels)
    assert "compute saturation (2)" in labels and "queueing onset (4)" in labels
    fig = Figure()
    window_s = timeline.pick_window_s(a.run)
    series = timeline.windows(a.run, window_s)
    axes = fig.subplots(timeline_plot.PANELS, 1, sharex=True)
    timeline_plot.plot_timeline(axes, series, window_s, a.run.tiers, a.run.history)
    users, ttft, tokens, failures = axes
    requests = next(ax for ax in fig.axes if ax not in axes)  # the throughput panel's right axis
    assert [ax.get_ylabel() for ax in (users, ttft, tokens, requests, failures)] == [
        "users", "TTFT (ms)", "output tokens/s", "requests/s", "failures/s"]
    assert all(ax.get_ylim()[0] == 0 for ax in fig.axes)
    assert not any("scaled" in label or "x0" in label for ax in fig.axes for label in ax.get_legend_handles_labels()[1])
    requests_drawn = requests.get_lines()[0].get_ydata()
    assert list(requests_drawn) == list(series["ok"] / window_s)  # req/s drawn as measured, on its own axis
    assert list(tokens.get_lines()[0].get_ydata()) == list(series["out_tok_s"])
    assert series["failed"].sum() == (~a.run.samples["ok"]).sum()


def test_throughput_lost_to_refusals_is_not_called_a_degrading_server():
    """LiteLLM's rpm limit (realtest): 2.1 req/s at 1 user, every request refused at 4. Throughput fell because
    the quota was spent, not because an engine slowed down; and a capacity at the peak gets no 'plan on the peak'."""
    rows = pd.DataFrame({"tier": [1, 2, 3], "load": [1.0, 2.0, 4.0], "sent": [40, 500, 628], "ok": [40, 12, 0],
                         "ok_rps": [2.1, 0.8, 0.0], "rate_window_s": 20.0, "n_shed": [0, 488, 628]})
    assert throughput_drop(tiers_of(rows), "users") == (
        "throughput fell from 2.1 req/s at 1 user to 0.0 at 4 users (100% below): more load got less through "
        "(refused at 4 users, not slowed down)")
    slowed = rows.assign(n_shed=0, ok_rps=[2.1, 2.0, 0.9], ok=[40, 40, 18])
    assert throughput_drop(tiers_of(slowed), "users").endswith("(57% below): the server degrades under overload")
    at_peak = Capacity(PROFILES["chat"], "within", 1.01, 2.09, 67.0, "429 rate 97.6% > 1.0% at tier 2",
                       goodput_rps=2.1, goodput_load=1.0, tiers=3)
    assert peak_within_slo(tiers_of(rows), at_peak, "users") == ("", None)  # the peak is the capacity point


def test_the_timelines_failure_panel_counts_every_failure_and_every_429_of_the_run():
    from matplotlib.figure import Figure

    from llmload.analysis.report import timeline_plot
    from llmload.analysis.tables import timeline

    run = run_of("shed429").run
    window_s = timeline.pick_window_s(run)
    series = timeline.windows(run, window_s)
    refused = int(run.samples["error"].eq("rate_limited").sum())
    assert refused > 0 and int(series["refused"].sum()) == refused
    assert int(series["failed"].sum()) == int((~run.samples["ok"]).sum()) >= refused
    axes = Figure().subplots(timeline_plot.PANELS, 1, sharex=True)
    timeline_plot.plot_timeline(axes, series, window_s, run.tiers)
    failed, of_them_429 = axes[3].get_lines()
    assert sum(of_them_429.get_ydata()) * window_s == pytest.approx(refused)
    assert sum(failed.get_ydata()) * window_s == pytest.approx(series["failed"].sum())
