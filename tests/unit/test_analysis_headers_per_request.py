"""When the server sends its headers, decided request by request (issue 44 item 1).

A generator that shares two cores with vLLM reads the headers of every request of a busy tier a little later: the
tiers' means then grow in between ("mean TTFT grew 139 ms from 1 to 16 while the time to headers grew 45 ms:
neither on arrival nor on service"). Within one tier that delay is common to every request, while the waiting
differs from request to request: the requests still say where the waiting was. Checked on vLLM's own recorded run
(tests/fixtures/recorded/vllm-slots) with such a tier-wide delay added, and on a fixture that sends its headers
on service with the headers' tier-wide growth taken out.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import Run, load_run
from llmload.analysis.verdicts import headers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def shifted(run: Run, ms_per_tier: dict[int, float]) -> Run:
    """The run with every row's headers (and TTFT alike: it comes after them) of a tier later by that tier's ms:
    what a busy client reading the same answers would record."""
    samples = run.samples.copy()
    shift = samples["tier"].map(ms_per_tier).fillna(0.0)
    samples["headers_ms"] = samples["headers_ms"] + shift
    samples["ttft_ms"] = samples["ttft_ms"] + shift
    samples["e2e_ms"] = samples["e2e_ms"] + shift
    return dataclasses.replace(run, samples=samples)


def mode_of(run: Run) -> headers.HeaderMode:
    return analyze(run, choose_profile(run, None)).header_mode


def test_vllm_headers_on_arrival_are_seen_through_a_busy_generators_delay():
    run = load_run(FIXTURES / "recorded" / "vllm-slots")
    table = analyze(run, choose_profile(run, None)).table
    d_ttft = float(table["ttft_mean_ms"].iloc[-1] - table["ttft_mean_ms"].iloc[0])
    top = int(table["tier"].iloc[-1])
    # the headers of the busiest tier 30 % of the TTFT growth later: the means alone cannot tell any more
    busy = shifted(run, {top: 0.3 * d_ttft / 0.7})
    means = headers.by_means(analyze(busy, choose_profile(busy, None)).table, None)
    assert means.mode == "unknown" and "neither on arrival nor on service" in means.sentence, means.sentence
    mode = mode_of(busy)
    assert mode.mode == "arrival", mode.sentence
    assert mode.sentence.startswith("Headers: sent on arrival, by the requests (within the tier(s) at "), mode.sentence
    assert "the tiers' means: mean TTFT grew" in mode.sentence and "neither on arrival nor on service" in mode.sentence


def test_the_requests_overrule_means_that_a_tier_wide_delay_made_look_like_service():
    run = load_run(FIXTURES / "recorded" / "vllm-queued")
    table = analyze(run, choose_profile(run, None)).table
    d_ttft = float(table["ttft_mean_ms"].iloc[-1] - table["ttft_mean_ms"].iloc[0])
    busy = shifted(run, {int(t): d_ttft for t in table["tier"].iloc[1:]})  # every loaded tier, its headers late
    assert headers.by_means(analyze(busy, choose_profile(busy, None)).table, None).mode == "service"
    assert mode_of(busy).mode == "arrival", mode_of(busy).sentence


def test_headers_on_service_are_seen_when_the_means_grew_in_between():
    run = load_run(FIXTURES / "runs" / "overload")
    assert mode_of(run).mode == "service"
    table = analyze(run, choose_profile(run, None)).table
    d_ttft = float(table["ttft_mean_ms"].iloc[-1] - table["ttft_mean_ms"].iloc[0])
    top = int(table["tier"].iloc[-1])
    # the headers' tier-wide growth mostly taken out (a request's own wait still shows in its headers)
    samples = run.samples.copy()
    at_top = samples["tier"] == top
    samples.loc[at_top, "headers_ms"] = samples.loc[at_top, "headers_ms"] - 0.7 * d_ttft
    early = dataclasses.replace(run, samples=samples)
    means = headers.by_means(analyze(early, choose_profile(early, None)).table, None)
    assert means.mode == "unknown", means.sentence
    mode = mode_of(early)
    assert mode.mode == "service" and "by the requests" in mode.sentence, mode.sentence


def test_without_rows_or_a_spread_the_means_decide():
    run = load_run(FIXTURES / "runs" / "knee16")  # every request waits alike: no spread beyond the lowest tier's
    table = analyze(run, choose_profile(run, None)).table
    assert headers.per_request(table, run.samples[run.samples["measured"]]) is None
    assert headers.header_mode(table, None, None) == headers.header_mode(table, None, run.samples)
    assert headers.per_request(table, pd.DataFrame()) is None
