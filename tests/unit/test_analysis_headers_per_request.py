"""When the server sends its headers, judged on the typical request (issue 44 item 1).

A generator or an API server that shares two cores with vLLM stalls now and then, and the requests it stalls get
their headers and their first token late alike: a few of them move the means ("mean TTFT grew 139 ms from 1 to 16
while the time to headers grew 45 ms: neither on arrival nor on service") while the typical request still gets its
headers at once. Checked on vLLM's own recorded run (tests/fixtures/recorded/vllm-slots) with such stalls added,
on a fixture that sends its headers on service with stalls too, and on a run shipped as histograms (the means).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import Run, load_run
from llmload.analysis.verdicts import headers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def stalled(run: Run, tier: int, share: float, stall_ms: float) -> Run:
    """`share` of `tier`'s successful rows stalled `stall_ms` before their headers (and so their first token)."""
    samples = run.samples.copy()
    rows = samples.index[(samples["tier"] == tier) & samples["ok"] & samples["measured"]]
    hit = np.random.default_rng(7).choice(rows, size=int(len(rows) * share), replace=False)
    for column in ("headers_ms", "ttft_ms", "e2e_ms"):
        samples.loc[hit, column] = samples.loc[hit, column] + stall_ms
    return dataclasses.replace(run, samples=samples)


def judged(run: Run):
    a = analyze(run, choose_profile(run, None))
    return a, a.table[a.table["judged"]]


def test_vllm_headers_on_arrival_are_seen_through_stalls_that_move_the_means():
    """The client's figures alone (vLLM's metrics left out: with them its own queue time decides,
    test_analysis_recorded.py)."""
    run = dataclasses.replace(load_run(FIXTURES / "recorded" / "vllm-slots"), server_metrics=None)
    _, table = judged(run)
    busy = stalled(run, int(table["tier"].iloc[-1]), 0.25, 2500.0)
    a, table = judged(busy)
    means = headers.header_mode(table, None, None)
    assert means.mode == "unknown" and "neither on arrival nor on service" in means.sentence, means.sentence
    assert means.sentence.startswith("Headers: mean TTFT grew")
    assert a.header_mode.mode == "arrival", a.header_mode.sentence
    assert a.header_mode.sentence.startswith("Headers: sent on arrival (median TTFT grew "), a.header_mode.sentence


def test_headers_on_service_stay_on_service_through_stalls():
    run = load_run(FIXTURES / "runs" / "overload")
    _, table = judged(run)
    busy = stalled(run, int(table["tier"].iloc[-1]), 0.25, 3000.0)
    a, _ = judged(busy)
    assert a.header_mode.mode == "service", a.header_mode.sentence


def test_the_means_decide_without_rows_and_say_so():
    a, table = judged(load_run(FIXTURES / "runs" / "knee16"))
    assert a.header_mode.mode == headers.header_mode(table, None, None).mode == "service"
    assert "(median TTFT grew" in a.header_mode.sentence
    assert "(mean TTFT grew" in headers.header_mode(table, None, None).sentence
    figures = headers.typical(table, None)
    assert list(figures["measure"].unique()) == ["mean"]
    assert figures["ttft_ms"].tolist() == table["ttft_mean_ms"].tolist()
