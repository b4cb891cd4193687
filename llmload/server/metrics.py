"""`GET /metrics`: the engine's state in Prometheus text format, with vLLM's metric names.

How it works: gauges (`vllm:num_requests_running|waiting`, `vllm:gpu_cache_usage_perc`) are
read from the engine and the prefix cache when scraped; counters and histograms are bumped
once per request at the moments vLLM records them (service start: queue time; first
generated token: TTFT from arrival; end: prompt/generation tokens, success by finish
reason). Nothing happens per token, and rendering costs one string join per scrape.
Every sample carries `model_name`, as vLLM's do. Buckets are vLLM's.
"""

from __future__ import annotations

from bisect import bisect_left

TTFT_BUCKETS_S = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                  7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
QUEUE_BUCKETS_S = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
                   120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Histogram:
    def __init__(self, bounds_s: tuple[float, ...]):
        self.bounds_s = bounds_s
        self.counts = [0] * (len(bounds_s) + 1)
        """per bucket, not cumulative; the last is above every bound"""
        self.sum_s = 0.0
        self.count = 0

    def observe(self, value_s: float) -> None:
        self.counts[bisect_left(self.bounds_s, value_s)] += 1
        self.sum_s += value_s
        self.count += 1

    def lines(self, name: str, label: str) -> list[str]:
        out, total = [], 0
        for bound, count in zip((*self.bounds_s, float("inf")), self.counts, strict=True):
            total += count
            le = "+Inf" if bound == float("inf") else repr(float(bound))
            out.append(f'{name}_bucket{{le="{le}",{label}}} {total}')
        out.append(f"{name}_sum{{{label}}} {self.sum_s!r}")
        out.append(f"{name}_count{{{label}}} {self.count}")
        return out


class ServerMetrics:
    def __init__(self, model: str):
        escaped = model.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        self.label = f'model_name="{escaped}"'
        self.queue_time = Histogram(QUEUE_BUCKETS_S)
        self.ttft = Histogram(TTFT_BUCKETS_S)
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success_by_reason: dict[str, int] = {}

    def served(self, prompt_tokens: int, generated_tokens: int, finish_reason: str | None) -> None:
        """A request left the engine; `finish_reason` None if it did not complete."""
        self.prompt_tokens += prompt_tokens
        self.generation_tokens += generated_tokens
        if finish_reason is not None:
            self.success_by_reason[finish_reason] = self.success_by_reason.get(finish_reason, 0) + 1

    def render(self, running: int, waiting: int, cache_usage: float) -> bytes:
        label = self.label
        lines = [
            *_family("vllm:num_requests_running", "gauge", "Requests in service (in the batch).",
                     [f"vllm:num_requests_running{{{label}}} {running}"]),
            *_family("vllm:num_requests_waiting", "gauge", "Requests waiting for a slot.",
                     [f"vllm:num_requests_waiting{{{label}}} {waiting}"]),
            *_family("vllm:gpu_cache_usage_perc", "gauge", "Prefix-cache fill, 0 to 1.",
                     [f"vllm:gpu_cache_usage_perc{{{label}}} {cache_usage!r}"]),
            *_family("vllm:request_queue_time_seconds", "histogram", "Time from arrival to service start.",
                     self.queue_time.lines("vllm:request_queue_time_seconds", label)),
            *_family("vllm:time_to_first_token_seconds", "histogram",
                     "Time from arrival to the first generated token.",
                     self.ttft.lines("vllm:time_to_first_token_seconds", label)),
            *_family("vllm:prompt_tokens_total", "counter", "Prompt tokens of served requests.",
                     [f"vllm:prompt_tokens_total{{{label}}} {self.prompt_tokens}"]),
            *_family("vllm:generation_tokens_total", "counter", "Generated tokens.",
                     [f"vllm:generation_tokens_total{{{label}}} {self.generation_tokens}"]),
            *_family("vllm:request_success_total", "counter", "Requests completed, by finish reason.",
                     [f'vllm:request_success_total{{finished_reason="{reason}",{label}}} {count}'
                      for reason, count in sorted(self.success_by_reason.items())]),
        ]
        return ("\n".join(lines) + "\n").encode()


def _family(name: str, kind: str, help_text: str, samples: list[str]) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *samples]
