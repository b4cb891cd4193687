"""--server-metrics against the embedded server's /metrics (vLLM names) on loopback: scraped every
second into server_metrics.csv during a short LocalRunner run; off and non-Prometheus hosts
leave no file."""

import itertools
import logging
from collections import defaultdict

import pytest

from llmload.users import ChatUser
from tests.helpers import JSON_BODY, canned_server, read_csv, run_locally

pytestmark = pytest.mark.integration


class Chat(ChatUser):
    scenario = "scrape"
    prompt_tokens = 8


def test_auto_scrapes_the_embedded_servers_metrics_every_second(tmp_path, embedded_server):
    server = embedded_server("--preset", "exact", truth_log=False)
    run_locally(Chat, server.url, tmp_path / "run", ["--max-tokens", "8"], users=2, seconds=3.5)
    rows = read_csv(tmp_path / "run" / "server_metrics.csv")
    by_name = defaultdict(list)
    for row in rows:
        by_name[row["name"]].append(float(row["value"]))
    scrapes = sorted({float(r["ts_s"]) for r in rows})
    assert 3 <= len(scrapes) <= 5, scrapes
    assert all(0.5 < b - a < 1.5 for a, b in itertools.pairwise(scrapes)), scrapes
    label = '{model_name="llmload-sim"}'
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:request_queue_time_seconds_sum",
                 "vllm:request_queue_time_seconds_count", "vllm:gpu_cache_usage_perc"):
        assert len(by_name[name + label]) == len(scrapes), name
    assert max(by_name["vllm:generation_tokens_total" + label]) > 0
    assert not [n for n in by_name if "_bucket" in n]


@pytest.mark.parametrize("setting", ["off", "auto"])
def test_no_file_when_off_or_the_host_has_no_prometheus_metrics(tmp_path, caplog, setting):
    caplog.set_level(logging.INFO, logger="llmload")
    server = canned_server("application/json", JSON_BODY)  # answers every path with JSON
    try:
        run_locally(Chat, f"http://127.0.0.1:{server.server_port}", tmp_path / "run",
                    ["--server-metrics", setting], users=1, seconds=1.5)
    finally:
        server.stop()
    assert read_csv(tmp_path / "run" / "samples.csv")  # the run ran (an absence below is not a run that never did)
    assert not (tmp_path / "run" / "server_metrics.csv").exists()
    assert not [r for r in caplog.records if "server-metrics scrapes" in r.getMessage()]
    lines = [r.getMessage() for r in caplog.records if "server metrics" in r.getMessage()]
    if setting == "auto":  # it looked, found no Prometheus text, and said so once
        assert len(lines) == 1 and lines[0].startswith(
            f"llmload: server metrics off (http://127.0.0.1:{server.server_port}/metrics: "), lines
        assert lines[0].endswith("give --server-metrics URL to insist")
    else:  # off: it never looked
        assert lines == []
