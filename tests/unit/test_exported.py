"""The exporter's book and page (sink/exported.py, run/export/exporter.py): shipped histograms (--ship histograms) count
what the rows count, the page is valid Prometheus text (prometheus_client's parser), every family it declares is on
it, and health gauges go once stale."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from llmload.contract import HIST_RELATIVE_ERROR
from llmload.run.export.exporter import FAMILIES, render
from llmload.run.state import run_state
from llmload.sink.exported import BUCKETS_S, HEALTH_FRESH_S, ExportBook
from llmload.sink.histograms import HistogramBook
from llmload.sink.timeline import Tier


def rows(seed: int = 3, n: int = 400) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ttft = float(rng.lognormal(np.log(40), 0.8))
        failed = i % 9 == 0
        out.append({"scenario": "chat", "worker": "w1", "status": 429 if failed else 200,
                    "error": "rate_limited" if failed else "", "ttft_ms": "" if failed else ttft,
                    "e2e_ms": ttft + 300.0, "itl_mean_ms": "" if failed else 9.0 + i % 5,
                    "output_tokens": "" if failed else 32, "input_tokens": 100, "tpot_ms": 9.0, "out_tps": 110.0})
    return out


def test_shipped_histograms_count_what_the_rows_count():
    by_rows, by_book, shipped = ExportBook(), ExportBook(), HistogramBook(full=True)
    columns = {"ttft": "ttft_ms", "itl": "itl_mean_ms", "e2e": "e2e_ms"}
    near: dict[tuple, int] = {}
    """(metric, tier) -> values within HIST_RELATIVE_ERROR of a bucket bound (they may be counted beside it)"""
    for i, row in enumerate(rows()):
        tier = 1 + i // 200
        gaps_ms = [8.0, 9.0, 9.5, 31.0 + i % 15, 250.0]  # ascending, each over 3 % from every bound
        by_rows.note(dict(row, scenario=""), tier, gaps_ms)
        shipped.record(row, gaps_ms, tier, "warmup" if i % 200 < 20 else "measure")
        for metric, column in columns.items():
            value_s = row[column] / 1000 if row["error"] == "" else math.nan
            if any(abs(value_s - b) <= 2 * HIST_RELATIVE_ERROR * b for b in BUCKETS_S):
                near[(metric, tier)] = near.get((metric, tier), 0) + 1
    taken, gaps_only = shipped.take(), ExportBook()
    by_book.note_shipped("w1", taken, figures=True)
    gaps_only.note_shipped("w1", taken, figures=False)  # --ship rows|both: the rows bring the rest
    assert gaps_only.requests == {} and gaps_only.tokens == {}
    assert gaps_only.hists == {key: hist for key, hist in by_book.hists.items() if key[0] == "itl_gap"} != {}
    assert by_book.requests == by_rows.requests and by_book.tokens == by_rows.tokens
    assert {key for key in by_book.requests if key[1] == "shed"} == {(("", t, "w1"), "shed", "rate_limited")
                                                                     for t in (1, 2)}
    assert by_book.hists.keys() == by_rows.hists.keys()
    for (metric, labels), hist in by_rows.hists.items():
        theirs = by_book.hists[(metric, labels)]
        assert theirs.count == hist.count > 0
        assert theirs.sum_s == pytest.approx(hist.sum_s, rel=HIST_RELATIVE_ERROR)
        differ = max(abs(a - b) for a, b in zip(theirs.cumulative(), hist.cumulative()))
        assert differ <= near.get((metric, labels[1]), 0), (metric, labels)


def test_a_value_on_a_bound_is_counted_at_or_below_it():
    book = ExportBook()
    book.note({"scenario": "s", "worker": "local", "status": 200, "error": "", "ttft_ms": 10.0}, 1)
    hist = book.hists[("ttft", ("s", 1, "local"))]
    assert hist.cumulative()[BUCKETS_S.index(0.01)] == 1 and hist.cumulative()[BUCKETS_S.index(0.0075)] == 0


def environment_with(book_rows: list[dict]) -> SimpleNamespace:
    environment = SimpleNamespace(runner=SimpleNamespace(user_count=7))
    state = run_state(environment)
    for row in book_rows:
        state.sink.live.exported.note(row, 2)
    state.timeline.begin_tier(Tier(tier=2, start_s=time.time() - 5, warmup_s=1.0, target_users=8))
    return environment


def test_the_page_parses_and_has_every_family():
    environment = environment_with([dict(r, scenario='a "quoted"\\name') for r in rows(n=50)])
    exported = run_state(environment).sink.live.exported
    exported.note_health({"ts_s": time.time(), "worker": "w1", "loop_lag_ms_max": 12.5, "cpu_percent": 40.0,
                          "inflight": 3, "machine_cpu_percent": ""})
    families = {f.name: f for f in text_string_to_metric_families(render(environment))}
    for name, (kind, _help) in FAMILIES.items():
        family = families[name.removesuffix("_total") if kind == "counter" else name]
        assert family.type == kind, name
    ttft = families["llmload_ttft_seconds"].samples
    assert {s.labels["scenario"] for s in ttft} == {'a "quoted"\\name'}
    buckets = [s for s in ttft if s.name.endswith("_bucket")]
    assert [s.labels["le"] for s in buckets][-1] == "+Inf" and len(buckets) == len(BUCKETS_S) + 1
    assert [s.value for s in buckets] == sorted(s.value for s in buckets)  # cumulative
    (count,) = [s.value for s in ttft if s.name.endswith("_count")]
    assert count == buckets[-1].value == sum(1 for r in rows(n=50) if r["error"] == "")
    (lag,) = families["llmload_loop_lag_seconds"].samples
    assert lag.labels == {"worker": "w1"} and lag.value == pytest.approx(0.0125)
    assert families["llmload_machine_cpu_percent"].samples == []  # not measured: absent, never NaN
    (tier,) = families["llmload_tier"].samples
    assert tier.value == 2 and tier.labels == {"phase": "measure"}
    assert families["llmload_tier_target_users"].samples[0].value == 8
    assert families["llmload_users"].samples[0].value == 7
    assert not any(math.isnan(s.value) for f in families.values() for s in f.samples)


def test_stale_health_gauges_go():
    book = ExportBook()
    now_s = time.time()
    book.note_health({"ts_s": now_s - HEALTH_FRESH_S - 1, "worker": "w0", "cpu_percent": 50.0})
    book.note_health({"ts_s": now_s, "worker": "w1", "cpu_percent": 20.0})
    assert book.gauges(now_s) == {"cpu_percent": {"w1": 20.0}}
