"""The Prometheus page of the embedded server, rendered without sockets."""

import math

from llmload.server.metrics import QUEUE_BUCKETS_S, Histogram, ServerMetrics
from llmload.server.prefix_cache import PrefixCache


def samples(page: bytes) -> dict[str, float]:
    """`name{labels}` -> value, for every sample line."""
    out = {}
    for line in page.decode().splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def test_histogram_buckets_are_cumulative_with_le_semantics():
    hist = Histogram((0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 3.0):
        hist.observe(value)
    lines = dict(line.rsplit(" ", 1) for line in hist.lines("h", 'model_name="m"'))
    assert lines['h_bucket{le="0.1",model_name="m"}'] == "2"  # 0.1 falls in le=0.1
    assert lines['h_bucket{le="1.0",model_name="m"}'] == "3"
    assert lines['h_bucket{le="+Inf",model_name="m"}'] == "4"
    assert float(lines['h_sum{model_name="m"}']) == 3.65 and lines['h_count{model_name="m"}'] == "4"


def test_page_has_vllm_names_types_and_values():
    metrics = ServerMetrics("sim")
    metrics.queue_time.observe(0.4)
    metrics.ttft.observe(0.05)
    metrics.served(10, 7, "length")
    metrics.served(5, 2, None)  # aborted: tokens count, success does not
    metrics.served(3, 4, "stop")
    page = metrics.render(running=3, waiting=2, cache_usage=0.25)
    text = page.decode()
    for name, kind in (("vllm:num_requests_running", "gauge"), ("vllm:num_requests_waiting", "gauge"),
                       ("vllm:gpu_cache_usage_perc", "gauge"), ("vllm:request_queue_time_seconds", "histogram"),
                       ("vllm:time_to_first_token_seconds", "histogram"), ("vllm:prompt_tokens_total", "counter"),
                       ("vllm:generation_tokens_total", "counter"), ("vllm:request_success_total", "counter")):
        assert f"# TYPE {name} {kind}\n" in text
    values = samples(page)
    label = 'model_name="sim"'
    assert values[f"vllm:num_requests_running{{{label}}}"] == 3
    assert values[f"vllm:num_requests_waiting{{{label}}}"] == 2
    assert values[f"vllm:gpu_cache_usage_perc{{{label}}}"] == 0.25
    assert values[f"vllm:prompt_tokens_total{{{label}}}"] == 18
    assert values[f"vllm:generation_tokens_total{{{label}}}"] == 13
    assert values[f'vllm:request_success_total{{finished_reason="length",{label}}}'] == 1
    assert values[f'vllm:request_success_total{{finished_reason="stop",{label}}}'] == 1
    assert values[f'vllm:request_queue_time_seconds_bucket{{le="0.3",{label}}}'] == 0
    assert values[f'vllm:request_queue_time_seconds_bucket{{le="0.5",{label}}}'] == 1
    assert values[f"vllm:time_to_first_token_seconds_count{{{label}}}"] == 1
    buckets = [k for k in values if k.startswith("vllm:request_queue_time_seconds_bucket")]
    assert len(buckets) == len(QUEUE_BUCKETS_S) + 1


def test_model_name_label_is_escaped():
    assert 'model_name="a\\"b"' in ServerMetrics('a"b').render(0, 0, 0.0).decode()


def test_cache_usage_is_the_filled_share():
    cache = PrefixCache(block_tokens=4, capacity_tokens=16)  # 4 blocks
    assert cache.usage() == 0.0
    cache.insert(["w"] * 8)
    assert math.isclose(cache.usage(), 0.5)
    assert PrefixCache(4, 0).usage() == 0.0
