"""The default locustfile as a new user runs it, plus every loop-lag sample of llmload's own health monitor.

The bench (unpinned mode) runs llmload with this file instead of `locustfile.py`: the same user class
and installation (imported from it), and `LagWindow.add` - where the health monitor records how late
each of its 10 ms sleeps woke - also keeps (perf_counter s, lateness ms), written to
$LLMLOAD_BENCH_LAGS when Locust quits. The bench takes exact percentiles of the sleeps' lateness
from it (health.csv keeps only each second's max and p50). Cost: one list append per 10 ms.
"""

from __future__ import annotations

import os
import time

from locust import events

from bench.reference_client import write_lags
from llmload.run.watch import health
from locustfile import StreamingChat  # noqa: F401  (the default user: Locust collects it from here)

_lags: list[tuple[float, float]] = []
_add = health.LagWindow.add


def _add_and_keep(self: health.LagWindow, lag_ms: float, cpu_ms: float = 0.0) -> None:
    _lags.append((time.perf_counter(), lag_ms))
    _add(self, lag_ms, cpu_ms)


health.LagWindow.add = _add_and_keep  # type: ignore[method-assign]


@events.quitting.add_listener
def _write_lags(**_kw) -> None:
    path = os.environ.get("LLMLOAD_BENCH_LAGS")
    if path:
        write_lags(path, _lags)
