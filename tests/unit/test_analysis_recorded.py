"""Runs recorded against real serving stacks by `make realtest` (docs/realtest.md, 2026-12-01; vllm-queued-busy
2026-12-06), committed
small (tests/fixtures/recorded/; server_metrics.csv cut to the queue/running/queue-time/KV families):
vLLM 0.32 CPU with --max-num-seqs 4, the same with --max-num-queued-reqs 6 (sheds with 503 and in-stream
error events), and a LiteLLM 1.108 proxy with rpm 60 (429 + llm_provider-retry-after). The verdicts the
analysis gives on them are checked against what the servers' own logs and metrics showed."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.report import summary
from llmload.analysis.report.document import to_markdown
from llmload.analysis.report.layout import blocks
from llmload.analysis.verdicts import headers, queueing
from llmload.rules.knees import KneePoint

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def run_of(name: str):
    run = load_run(RECORDED / name)
    return analyze(run, choose_profile(run, None))


@pytest.mark.parametrize("name", ["vllm-slots", "vllm-queued"])
def test_vllm_queueing_onset_is_the_slot_count_and_headers_come_on_arrival(name):
    a = run_of(name)
    assert a.onset.status == "within" and a.onset.load == 4, a.onset.sentence  # --max-num-seqs 4
    assert a.header_mode.mode == "arrival", a.header_mode.sentence  # vLLM answers headers before scheduling
    assert a.agreement.startswith("It agrees with the queueing onset"), a.agreement


def test_vllm_that_idles_between_rare_requests_still_shows_headers_on_arrival():
    """vllm-queued-busy: the queued variant re-run on 2026-12-06 (issue 44). At 1 and 2 users vLLM's typical request
    took 170 ms with its headers sent together with its first token (an engine idle between rare requests), at 4
    users 30 ms with its headers at 15 ms: measured from the lowest load, TTFT grew 5 ms and the mode could not be
    told; measured from the fastest typical request (4 users), TTFT grew 145 ms and the headers 6 ms: on arrival.
    Its queue stayed short (0.6 waiting at 8 users) while it shed 25 % of requests there: the onset is still 4."""
    run = load_run(RECORDED / "vllm-queued-busy")
    a = analyze(run, choose_profile(run, None))
    assert a.header_mode.mode == "arrival", a.header_mode.sentence  # from vLLM's own queue time (next test)
    blind = dataclasses.replace(run, server_metrics=None)  # the client's figures alone
    b = analyze(blind, choose_profile(blind, None))
    assert b.header_mode.mode == "arrival", b.header_mode.sentence
    assert "from 4 to 16 (the fastest typical request; at 1 it took 170 ms" in b.header_mode.sentence
    assert (a.onset.status, a.onset.load, a.onset.next_load) == ("within", 4.0, 8.0), a.onset.sentence
    assert "the server shed 25% of requests (66 x 503, 28 in-stream errors)" in a.onset.sentence
    onset = summary.knee_point(a.onset, "onset")  # summary.json says what starts there
    assert onset is not None and onset["how"] == a.onset.how in ("waits", "sheds")
    assert summary.knee_point(a.compute, "compute")["how"] is None
    assert "sheds" in a.saturation.kind, a.saturation.sentence


def test_vllm_headers_on_arrival_are_told_by_where_the_engines_own_queue_time_shows():
    """vLLM's request_queue_time histogram says how long its requests waited in the engine; on arrival that wait
    lands after the headers. vllm-queued-busy: 64 ms more queue time at 16 users than at 1, 68 ms more after the
    headers, 10 ms more before them. The same run with the wait moved before the headers reads 'service'."""
    run = load_run(RECORDED / "vllm-queued-busy")
    a = analyze(run, choose_profile(run, None))
    assert a.header_mode.sentence.startswith("Headers: sent on arrival: from 1 to 16 the engine's own queue time "
                                             "grew 64 ms (its metrics), the mean time after the headers +68 ms"), \
        a.header_mode.sentence
    moved = a.table.copy()  # each tier's queue time taken from after the headers and put before them
    shift = moved["srv_queue_time_ms"].fillna(0.0)
    moved["gateway_queue_ms"] += shift
    moved["after_headers_ms"] = (moved["after_headers_ms"] - shift).clip(lower=0.0)
    assert headers.header_mode(moved).mode == "service", headers.header_mode(moved).sentence
    still = moved.assign(srv_queue_time_ms=moved["srv_queue_time_ms"] * 0.0 + 5.0)  # an engine that never waited
    assert not headers.header_mode(still).sentence.startswith("Headers: sent when a request gets a slot: from")


@pytest.mark.parametrize("name", ["vllm-slots", "vllm-queued", "vllm-queued-busy"])
def test_vllm_names_its_slots_from_its_own_running_count(name):
    """Issue 44 item 3: the fitted model read 1.7 to 4.5 'requests in service' on vLLM with 4 sequences (its batch
    slows with load); vLLM's own num_requests_running peaks at 4 at every tier where requests waited in its queue."""
    a = run_of(name)
    assert a.agreement.endswith("The server's own metrics: at most 4 requests running at once, at a tier where "
                                "others waited in its queue: 4 slots."), a.agreement
    assert (a.table["srv_running_max"] <= 4).all()
    nothing_waited = a.table.assign(srv_waiting_max=0.0)
    assert queueing.server_slots(nothing_waited).endswith("none waited in its queue beside them, so it may have more "
                                                          "slots.")
    assert queueing.server_slots(a.table.drop(columns=["srv_running_max"])) == ""


def test_a_lower_bound_of_the_slots_is_never_read_where_requests_waited():
    """'at least 9.7 requests were in service at once' was Little's law at 16 users where vLLM ran 4 and 5.7
    waited: the lower bound is taken where none waited."""
    a = run_of("vllm-slots")
    no_plateau = KneePoint("beyond", None, None, None, None, "not reached")
    note = queueing.not_identifiable(a.table, "users", no_plateau, False)
    assert note is not None and "no throughput plateau reached" in note, note
    free = a.table[(a.table["ok"] > 0) & ~a.table["waits"]]
    top = free.loc[free["inflight"].idxmax()]
    assert f"(at least {top['inflight']:.1f} requests were in service at once, at {top['load']:g} users where none " \
           "waited)" in note, note
    assert top["inflight"] < a.table["inflight"].max()  # the waiting tiers held more in flight


def test_vllm_with_free_slots_queues():
    a = run_of("vllm-slots")
    assert a.saturation.kind == "queues", a.saturation.sentence
    assert "the server's queue held" in a.saturation.sentence  # from vLLM's own num_requests_waiting


def test_vllm_queue_limit_sheds_with_503_and_in_stream_errors_counted_once():
    a = run_of("vllm-queued")
    sentence = a.saturation.sentence
    assert "sheds load" in sentence and "68 x 503" in sentence and "13 in-stream error events" in sentence
    assert "without a retry hint" in sentence


def test_vllm_queue_limits_plateau_is_its_first_refusing_tier():
    """--max-num-queued-reqs 6: 5.3 req/s at 4 users, 6.6 at 8, where it starts refusing. The 4-user tier is 0.31
    req/s (7.7 requests over its 25 s window) under the 85 % line, beyond its counting noise (2 requests at 2
    standard deviations of 4 users' window edges): saturation stays at 8, the refusing tier, an admission limit."""
    a = run_of("vllm-queued")
    assert (a.compute.status, a.compute.load) == ("within", 8.0), a.compute.sentence
    assert "The server refused requests from 8 users on" in a.compute.sentence
    assert "admission limit" in a.compute.sentence


def test_litellm_rpm_limit_is_a_rate_limiter_with_its_provider_retry_header():
    """LiteLLM rpm 60, a 60 s window: 60 requests through, then every request refused for the rest of the run.
    x-ratelimit-remaining-requests fell to 1 and 0.1 requests were in service while it refused: a rate limiter,
    whose window outlasts the tiers, so its sustained rate is not measured and nothing is planned on it."""
    a = run_of("litellm-rpm")
    sentence = a.saturation.sentence
    assert a.saturation.kind == "rate limited" and "a rate limiter refuses load" in sentence
    assert "620 x 429" in sentence and "via llm_provider-retry-after" in sentence
    assert a.limiter is not None and not a.limiter.measured and a.limiter.first.tier == 2
    assert "x-ratelimit-remaining-requests fell to 1" in a.limiter.evidence
    assert "its sustained rate is not measured" in sentence and "more load got less through" not in sentence
    assert a.fit is None and "a rate limiter" in (a.fit_note or "")
    assert a.compute.status == "none" and a.compute.sentence.startswith("not measured: a rate limiter")


@pytest.mark.parametrize("name", ["vllm-slots", "vllm-queued", "litellm-rpm"])
def test_no_nan_in_reports_of_real_stacks(name):
    text = to_markdown(blocks(run_of(name), []))
    assert not re.search(r"\bnan\b", text, re.IGNORECASE), re.search(r".{60}\bnan\b.{20}", text, re.I)


@pytest.mark.parametrize("name", ["vllm-slots", "vllm-queued"])
def test_vllm_random_weights_chunk_count_below_usage_is_no_billing_accusation(name):
    """vLLM generated exactly max_tokens (64) every time (its own metrics); random weights send tokens in empty and
    partial-UTF-8 chunks, so the client's count (chunks, recorded before llmload said so) is below usage."""
    a = run_of(name)
    answer = dict(a.checklist)["Does billed usage match the output tokens received?"]
    assert answer.startswith("Yes, as far as the client's count shows: no request was billed more than its "
                             "max_tokens"), answer
    assert "this run does not record which" in answer and "give --tokenizer" in answer
    text = to_markdown(blocks(a, []))
    assert "billing problem" not in text and "only usage above max_tokens is unexplained" in text


@pytest.mark.parametrize("name", ["vllm-slots", "vllm-queued", "litellm-rpm"])
def test_reports_of_real_stacks_warn_about_no_optional_file(name):
    warnings = run_of(name).warnings
    assert not [w for w in warnings if "locust_stats_history.csv" in w], warnings
    assert len(warnings) == len(set(warnings))
