"""--server-metrics without sockets: the Prometheus text parser, what is kept, the URL a setting
means, and a scraper whose fetch is injected (errors counted, never raised; auto turns off)."""

import argparse
import math

import pytest

from llmload.run.export import prometheus, server_metrics
from llmload.run.options.settings import OptionError, check_values
from tests.helpers import read_csv

PAGE = """# HELP vllm:num_requests_running Requests in service.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3.0
vllm:num_requests_waiting{model_name="m, \\"quoted\\" {x}"} 7
vllm:request_queue_time_seconds_bucket{le="0.3",model_name="m"} 4
vllm:request_queue_time_seconds_sum{model_name="m"} 1.25
vllm:request_queue_time_seconds_count{model_name="m"} 4 1700000000000
vllm:request_queue_time_seconds_created{model_name="m"} 1.7e9
llamacpp:requests_deferred 2
tgi_queue_size 0
sglang:num_queue_reqs{engine="0"} NaN
python_gc_objects_collected_total{generation="0"} 391.0
process_open_fds 12
this is not a sample
vllm:broken{model_name="m" 1
vllm:novalue{a="b"}
"""


def test_parser_reads_names_with_labels_values_and_skips_comments_and_bad_lines():
    samples, bad = prometheus.parse(PAGE)
    assert bad == 3
    found = dict(samples)
    assert found['vllm:num_requests_running{model_name="m"}'] == 3.0
    assert found['vllm:num_requests_waiting{model_name="m, \\"quoted\\" {x}"}'] == 7.0
    assert found['vllm:request_queue_time_seconds_count{model_name="m"}'] == 4.0  # timestamp ignored
    assert found["tgi_queue_size"] == 0.0 and math.isnan(found['sglang:num_queue_reqs{engine="0"}'])
    assert prometheus.parse_line('x{le="+Inf"} +Inf') == ('x{le="+Inf"}', math.inf)


def test_only_engine_families_are_kept_without_buckets():
    names = [name for name, _ in prometheus.kept_samples(PAGE)]
    assert names == ['vllm:num_requests_running{model_name="m"}',
                     'vllm:num_requests_waiting{model_name="m, \\"quoted\\" {x}"}',
                     'vllm:request_queue_time_seconds_sum{model_name="m"}',
                     'vllm:request_queue_time_seconds_count{model_name="m"}',
                     "llamacpp:requests_deferred", "tgi_queue_size", 'sglang:num_queue_reqs{engine="0"}']


@pytest.mark.parametrize(("setting", "host", "url", "auto"), [
    ("auto", "http://127.0.0.1:8000", "http://127.0.0.1:8000/metrics", True),
    ("", "https://user:k@api.example.com/v1", "https://user:k@api.example.com/metrics", True),
    ("off", "http://h:1", None, False),
    ("http://m:9090/metrics", "http://h:1", "http://m:9090/metrics", False),
    ("auto", "embedded", None, True),
])
def test_metrics_url(setting, host, url, auto):
    assert server_metrics.metrics_url(setting, host) == (url, auto)


def test_a_bad_setting_is_one_line():
    with pytest.raises(OptionError, match="--server-metrics must be auto, off or an http"):
        check_values(argparse.Namespace(server_metrics="localhost:9090"))
    check_values(argparse.Namespace(server_metrics="OFF"))


class Fetches:
    def __init__(self, *answers):
        self.answers = list(answers)

    def __call__(self, url):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_scraper_writes_kept_rows_and_counts_errors(tmp_path):
    fetch = Fetches((200, "text/plain; version=0.0.4", PAGE), OSError("connection refused"),
                    (503, "text/plain", ""), (200, "text/html", "<html>"), (200, "text/plain", PAGE))
    scraper = server_metrics.Scraper("http://h/metrics", tmp_path, fetch, auto=False, clock=iter([10.0, 11.0]).__next__)
    results = [scraper.scrape_once() for _ in range(5)]
    assert [r is None for r in results] == [False, True, True, True, False]
    assert scraper.errors == 3 and scraper.last_error.startswith("not Prometheus text")
    scraper.stop()
    rows = read_csv(tmp_path / "server_metrics.csv")
    assert len(rows) == 14 and {r["ts_s"] for r in rows} == {"10.0", "11.0"}
    assert rows[0] == {"ts_s": "10.0", "name": 'vllm:num_requests_running{model_name="m"}', "value": "3.0"}


def test_auto_turns_off_quietly_when_there_is_no_engine_metrics_page(tmp_path):
    for answer in ((404, "text/plain", "Not Found"), (200, "text/plain", "process_open_fds 12\n"),
                   OSError("connection refused")):
        scraper = server_metrics.Scraper("http://h/metrics", tmp_path, Fetches(answer), auto=True)
        scraper._run()  # returns at once: no loop when the first scrape finds nothing to keep
        assert scraper.off and scraper.log is None
    assert not (tmp_path / "server_metrics.csv").exists()


def test_several_urls_are_each_scraped_into_one_file(tmp_path):
    assert server_metrics.metrics_urls("auto, http://127.0.0.1:9400/metrics,auto", "http://h:8000") == [
        ("http://h:8000/metrics", True), ("http://127.0.0.1:9400/metrics", False)]
    assert server_metrics.metrics_urls("off", "http://h:8000") == []
    with pytest.raises(OptionError, match="comma-separated"):
        check_values(argparse.Namespace(server_metrics="auto,localhost:9400"))
    dcgm = 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 91\nDCGM_FI_DEV_POWER_USAGE{gpu="0"} 250.5\ngo_goroutines 3\n'
    file = server_metrics.MetricsFile(tmp_path)
    engine = server_metrics.Scraper("http://h/metrics", tmp_path, Fetches((200, "text/plain", PAGE)), auto=True,
                                    clock=lambda: 10.0, file=file)
    gpus = server_metrics.Scraper("http://g/metrics", tmp_path, Fetches((200, "text/plain", dcgm)), auto=False,
                                  clock=lambda: 10.5, file=file)
    group = server_metrics.Scrapers([engine, gpus], file)
    engine.scrape_once()
    gpus.scrape_once()
    group.stop()
    rows = read_csv(tmp_path / "server_metrics.csv")
    assert [r["name"] for r in rows if r["ts_s"] == "10.5"] == ['DCGM_FI_DEV_GPU_UTIL{gpu="0"}',
                                                               'DCGM_FI_DEV_POWER_USAGE{gpu="0"}']
    assert len([r for r in rows if r["ts_s"] == "10.0"]) == 7  # the engine's kept samples
    assert engine.waiting and not gpus.waiting  # the target's queue comes from the engine's page
    assert math.isnan(group.waiting_mean(0, 20))  # one scrape: fewer than SERVER_MIN_SCRAPES
