"""The server's queue as the rule book reads it: by Little's law on its queue-time histogram when scraped, else its
waiting gauge's mean (issue 44). vLLM's gauge, read once a second, averaged 0.4 at a tier whose requests waited 69 ms
each at 10 req/s (0.7 waiting): the sample misses waits shorter than the scrape period, the histogram's sum counts
every one. Checked in the report's table (analysis/tables/server_metrics.py), in the live scraper the web UI and the
gate read (run/export/server_metrics.py), and in the waiting rule both feed; and the time to headers is measured per
request (a reused connection has no connect time, it does not take the new connections' mean off every request)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest

from llmload.analysis.analyze import analyze, choose_profile
from llmload.analysis.read.run import load_run
from llmload.analysis.tables import server_metrics as table_metrics
from llmload.rules import waiting
from llmload.rules.tier import Tier
from llmload.run.export import server_metrics

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
WAIT_S = 0.069
RATE = 10.0


def scrapes(start_s: float, end_s: float, rate: float, gauge: float) -> list[dict]:
    """One scrape a second: the waiting gauge at `gauge`, the queue-time histogram's requests and seconds growing
    at `rate` requests a second that waited WAIT_S each."""
    out = []
    for i in range(int(end_s - start_s)):
        ts = start_s + i + 0.5
        out += [{"ts_s": ts, "name": 'vllm:num_requests_waiting{model_name="m"}', "value": gauge},
                {"ts_s": ts, "name": 'vllm:request_queue_time_seconds_sum{model_name="m"}', "value": i * rate * WAIT_S},
                {"ts_s": ts, "name": 'vllm:request_queue_time_seconds_count{model_name="m"}', "value": i * rate}]
    return out


def test_the_report_takes_the_queue_from_the_histogram_where_the_gauge_missed_it():
    run = load_run(RUNS / "knee16")
    rows = [row for t in run.tiers.itertuples() for row in scrapes(t.measure_start_s, t.end_s, RATE / 2 * t.tier, 0.0)]
    seen = dataclasses.replace(run, server_metrics=pd.DataFrame(rows))
    figures = table_metrics.per_tier(seen)
    for tier, row in figures.iterrows():
        assert row["srv_waiting_mean"] == 0.0  # the gauge never caught a request waiting
        assert row["srv_queue_time_ms"] == pytest.approx(1000 * WAIT_S)
        assert row["srv_queue_len"] == pytest.approx(RATE / 2 * tier * WAIT_S)  # Little: rate x wait
    a = analyze(seen, choose_profile(seen, None))
    by_tier = a.table.set_index("tier")
    assert by_tier.loc[1, "wait_source"] == "" and by_tier.loc[2, "wait_source"] == "server"  # 0.35 vs 0.69
    assert "At 2, the server's queue held 0.7 requests on average" in a.onset.sentence, a.onset.sentence
    blind = dataclasses.replace(run, server_metrics=pd.DataFrame(
        [r for r in rows if "queue_time" not in r["name"]]))  # the gauge alone: no request ever waited
    assert not analyze(blind, choose_profile(blind, None)).table["waits"].any()


class Pages:
    """A vLLM /metrics page per call, one second apart: 0 waiting, `RATE` requests a second waiting WAIT_S each."""

    def __init__(self):
        self.i = 0

    def __call__(self, url):
        self.i += 1
        text = (f'vllm:num_requests_waiting{{model_name="m"}} 0\n'
                f'vllm:request_queue_time_seconds_sum{{model_name="m"}} {self.i * RATE * WAIT_S}\n'
                f'vllm:request_queue_time_seconds_count{{model_name="m"}} {self.i * RATE}\n')
        return 200, "text/plain", text


def test_the_live_scraper_reads_the_queue_as_the_report_does(tmp_path):
    clock = iter(float(t) for t in range(100, 200))
    scraper = server_metrics.Scraper("http://h/metrics", tmp_path, Pages(), auto=True, clock=lambda: next(clock))
    group = server_metrics.Scrapers([scraper], scraper.file)
    for _ in range(10):
        scraper.scrape_once()
    group.stop()
    assert group.waiting_mean(100, 110) == 0.0
    assert group.queue_len(100, 110) == pytest.approx(RATE * WAIT_S)
    assert math.isnan(group.queue_len(100, 101))  # one scrape in the window: no rate
    gauge_only = Tier(tier=1, load=8, sent=300, ok=300, ok_rps=RATE, srv_waiting_mean=0.0)
    both = dataclasses.replace(gauge_only, srv_queue_len=group.queue_len(100, 110))
    assert both.srv_queue == pytest.approx(0.69) and gauge_only.srv_queue == 0.0
    assert waiting.judge(both, 0.0).waits and not waiting.judge(gauge_only, 0.0).waits


def test_the_time_to_headers_is_per_request_with_reused_connections_at_zero():
    run = load_run(RUNS / "knee16")
    samples = run.samples.copy()
    fresh = samples.index[::10]  # one request in ten opened a connection, 300 ms to set up; the rest reused one
    samples["connect_ms"] = math.nan
    samples.loc[fresh, "connect_ms"] = 300.0
    samples.loc[fresh, "headers_ms"] += 300.0
    a = analyze(dataclasses.replace(run, samples=samples), choose_profile(run, None))
    before = analyze(run, choose_profile(run, None)).table.set_index("tier")["gateway_queue_ms"]
    after = a.table.set_index("tier")
    assert (after["connect_ms"] == 300.0).all()  # the mean set-up of a new connection
    assert after["gateway_queue_ms"].to_numpy() == pytest.approx(before.reindex(after.index).to_numpy(), abs=0.5)
