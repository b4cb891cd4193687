"""Per-request timing points of a streamed completion -> the millisecond figures we report.

How it works: a transport owns one `StreamTiming` per attempt. It calls `start()` just
before the request bytes go out (t0), `headers()` when the status line and headers are in,
and, for every data chunk, `chunk(t, has_content, has_reasoning)` with the time `t` taken
right at the read that delivered the line (before any JSON decoding). `figures(n_out)`
then derives, all in ms:

- ttft = t1 - t0, t1 = first chunk with non-empty answer text (role-only / empty deltas /
  usage-only chunks / comments never count);
- reasoning_ttft = first chunk with reasoning text - t0;
- e2e = t2 - t0, t2 = the last data chunk before `[DONE]`;
- headers = t_headers - t0 (queueing + gateway + auth, as the client sees it);
- itl mean/p50/p99/max over the gaps between consecutive text chunks (answer or reasoning:
  both are decoded tokens); a chunk holding several tokens is one arrival; the gaps
  themselves, sorted, stay on the figures (`itl_gaps_ms`) for the run's pooled histogram;
- tpot = (t2 - tf) / (n_out - 1) and out_tps = n_out / (t2 - tf), tf = first text chunk of
  any kind (server token counts include reasoning tokens).

The clock is injectable (tests pass a fake); production uses `time.perf_counter`, which
on Linux is CLOCK_MONOTONIC like the embedded server's truth log.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(slots=True)
class TimingFigures:
    ttft_ms: float | None = None
    reasoning_ttft_ms: float | None = None
    e2e_ms: float | None = None
    headers_ms: float | None = None
    itl_mean_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None
    itl_max_ms: float | None = None
    tpot_ms: float | None = None
    out_tps: float | None = None
    itl_gaps_ms: list[float] | None = None
    """every gap between consecutive text chunks, ms, ascending (None with fewer than two text chunks)"""


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default) of an ascending list; q in [0, 100]."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class StreamTiming:
    __slots__ = ("clock", "t0", "t_first_content", "t_first_reasoning", "t_headers", "t_last", "text_times")

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.t0: float | None = None
        self.t_headers: float | None = None
        self.t_first_content: float | None = None
        self.t_first_reasoning: float | None = None
        self.t_last: float | None = None
        self.text_times: list[float] = []
        """arrival time of every chunk that carried text (answer or reasoning)"""

    def start(self) -> float:
        self.t0 = self.clock()
        return self.t0

    def headers(self) -> float:
        self.t_headers = self.clock()
        return self.t_headers

    def chunk(self, t: float, has_content: bool, has_reasoning: bool) -> None:
        """A data chunk read at time `t` (taken at the read, before decoding)."""
        self.t_last = t
        if has_content or has_reasoning:
            self.text_times.append(t)
            if has_content and self.t_first_content is None:
                self.t_first_content = t
            if has_reasoning and self.t_first_reasoning is None:
                self.t_first_reasoning = t

    def figures(self, output_tokens: int | None) -> TimingFigures:
        out = TimingFigures()
        t0 = self.t0
        if t0 is None:
            return out
        if self.t_headers is not None:
            out.headers_ms = (self.t_headers - t0) * 1000.0
        if self.t_first_content is not None:
            out.ttft_ms = (self.t_first_content - t0) * 1000.0
        if self.t_first_reasoning is not None:
            out.reasoning_ttft_ms = (self.t_first_reasoning - t0) * 1000.0
        if self.t_last is not None:
            out.e2e_ms = (self.t_last - t0) * 1000.0
        times = self.text_times
        if len(times) >= 2:
            gaps = sorted((b - a) * 1000.0 for a, b in itertools.pairwise(times))
            out.itl_mean_ms = (times[-1] - times[0]) * 1000.0 / (len(times) - 1)
            out.itl_p50_ms = percentile(gaps, 50)
            out.itl_p99_ms = percentile(gaps, 99)
            out.itl_max_ms = gaps[-1]
            out.itl_gaps_ms = gaps
        if times and self.t_last is not None and output_tokens:
            decode_s = self.t_last - times[0]
            if output_tokens > 1 and decode_s > 0:
                out.tpot_ms = decode_s * 1000.0 / (output_tokens - 1)
                out.out_tps = output_tokens / decode_s
        return out
