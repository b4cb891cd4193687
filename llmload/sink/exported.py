"""The run's live figures as Prometheus metrics: the cumulative counts the exporter (run/export/exporter.py) renders.

How it works: the process that writes the run's files feeds an `ExportBook` from the places it feeds the live
book (live.py), so its counts are the ones samples.csv, attempts.csv and the report count:
  * every attempt's row it counts (a local run; a master with --ship rows|both: the workers' rows, stamped with
    their tier), labelled with the row's scenario, tier and worker; or, with --ship histograms (no rows), each
    worker's shipped histogram book (histograms.py), labelled with its tier and worker (scenario '': shipped
    histograms are not kept per scenario);
  * every health.csv row (one per generator process per second): the worker's last one is kept, and shown while
    it is at most HEALTH_FRESH_S old (a run that ended, a worker lost: its gauges go, rather than stand still).
Per (scenario, tier, worker) it keeps the histograms of TTFT, ITL (the per-request mean gap between content
chunks: samples.csv `itl_mean_ms`, Locust's ITL) and e2e of the successful attempts (the report's success: no
error and a first token) and of every gap between their content chunks (the report's pooled ITL; on a master
the workers' shipped gap histograms, scenario ''), in BUCKETS_S, with their sums and counts; the attempts by outcome
(llmload.rules.outcomes.kind) and error kind; the output and input tokens of the successes. A row's value is
counted in its bucket exactly; a shipped histogram's bucket (HIST_RELATIVE_ERROR wide) by the value it stands
for, so a value within 1 % of a bound may be counted in the bucket beside it, and its sum is within 1 %. Counts
only grow during a run (Prometheus counters); a new run starts them again (a counter reset, which rate() reads).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from llmload.contract import hist_upper, hist_value
from llmload.rules.outcomes import kind
from llmload.sink.histograms import GAP_METRIC, number, succeeded

BUCKETS_S = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2,
             0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0, 300.0)
"""the histograms' upper bounds (`le`, seconds; +Inf beside them): 1-2-3-5 steps from 0.5 ms, so ms-level TTFT
and ITL are resolved (histogram_quantile interpolates within a bucket) and a 5-minute answer still has one"""
HISTOGRAMS = (("ttft", "ttft_ms"), ("itl", "itl_mean_ms"), ("e2e", "e2e_ms"))
"""(metric: llmload_<metric>_seconds, the samples.csv column in ms it counts)"""
GAPS = ("itl_gap", GAP_METRIC)
"""(metric: llmload_itl_gap_seconds, the shipped histograms' metric of every inter-token gap)"""
NO_ERROR = "none"
"""the `kind` label of an attempt without an error"""
BUCKETS_MS = tuple(round(bound * 1000.0, 6) for bound in BUCKETS_S)
HEALTH_GAUGES = (("inflight_requests", "inflight", 1.0),
                 ("loop_lag_seconds", "loop_lag_ms_max", 0.001), ("cpu_percent", "cpu_percent", 1.0),
                 ("machine_cpu_percent", "machine_cpu_percent", 1.0),
                 ("cpu_pressure_percent", "cpu_pressure_percent", 1.0), ("steal_percent", "steal_percent", 1.0))
"""(gauge: llmload_<gauge>, the health.csv column, its scale)"""
HEALTH_FRESH_S = 3.0
"""a worker's last health row is shown this long (it sends one a second)"""
Labels = tuple[str, int, str]
"""(scenario, tier, worker)"""


@dataclass
class Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS_S) + 1))
    """per bucket of BUCKETS_S, not cumulative (the last one: beyond the top bound)"""
    sum_s: float = 0.0
    count: int = 0

    def add(self, value_s: float, n: int = 1) -> None:
        self.counts[bisect.bisect_left(BUCKETS_S, value_s)] += n
        self.sum_s += value_s * n
        self.count += n

    def add_sorted_ms(self, values_ms: list[float]) -> None:
        """Ascending values in ms (an attempt's gaps, as timing.figures sorts them): one walk up the bounds."""
        bucket, bounds, top = 0, BUCKETS_MS, len(BUCKETS_MS)
        for value in values_ms:
            while bucket < top and value > bounds[bucket]:
                bucket += 1
            self.counts[bucket] += 1
        self.sum_s += sum(values_ms) / 1000.0
        self.count += len(values_ms)

    def cumulative(self) -> list[int]:
        """Counts of values <= each bound of BUCKETS_S, then of all (+Inf)."""
        out, total = [], 0
        for n in self.counts:
            total += n
            out.append(total)
        return out


class ExportBook:
    def __init__(self) -> None:
        self.hists: dict[tuple[str, Labels], Histogram] = {}
        """(metric of HISTOGRAMS, labels) -> its histogram"""
        self.requests: dict[tuple[Labels, str, str], int] = {}
        """(labels, outcome, error kind or NO_ERROR) -> attempts"""
        self.tokens: dict[tuple[Labels, str], int] = {}
        """(labels, 'output' | 'input') -> tokens of the successful attempts"""
        self.health: dict[str, dict] = {}
        """worker -> its last health.csv row"""

    def reset(self) -> None:
        """A new run starts."""
        self.hists, self.requests, self.tokens, self.health = {}, {}, {}, {}

    def _hist(self, metric: str, labels: Labels) -> Histogram:
        hist = self.hists.get((metric, labels))
        if hist is None:
            hist = self.hists[(metric, labels)] = Histogram()
        return hist

    def _count(self, labels: Labels, status: int, error: str, n: int) -> None:
        key = (labels, kind(status, error), error or NO_ERROR)
        self.requests[key] = self.requests.get(key, 0) + n

    def _tokens(self, labels: Labels, output: int, input_: int) -> None:
        for direction, n in (("output", output), ("input", input_)):
            self.tokens[(labels, direction)] = self.tokens.get((labels, direction), 0) + n

    def note(self, row: dict, tier: int, gaps_ms: list[float] | None = None) -> None:
        """One attempt's samples.csv row, in its tier, and its ascending inter-token gaps when it has them."""
        labels = (str(row.get("scenario") or ""), tier, str(row.get("worker") or ""))
        self._count(labels, int(number(row.get("status")) or 0), str(row.get("error") or ""), 1)
        if not succeeded(row):
            return
        self._tokens(labels, int(number(row.get("output_tokens")) or 0), int(number(row.get("input_tokens")) or 0))
        if gaps_ms:
            self._hist(GAPS[0], labels).add_sorted_ms(gaps_ms)
        for metric, column in HISTOGRAMS:
            value_ms = number(row.get(column))
            if value_ms is not None:
                self._hist(metric, labels).add(value_ms / 1000.0)

    def note_shipped(self, worker: str, taken: dict, figures: bool) -> None:
        """A worker's shipped histogram book (HistogramBook.take()), every phase of each tier: its inter-token
        gaps, and with `figures` (--ship histograms: no rows) its figures and attempt counts."""
        columns = dict([(GAPS[1], GAPS[0]), *((column, metric) for metric, column in HISTOGRAMS if figures)])
        for tier, _phase, column, pairs in taken.get("hists", ()):
            if column not in columns:
                continue
            hist = self._hist(columns[column], ("", int(tier), worker))
            for bucket, n in pairs:
                hist.add(hist_value(hist_upper(int(bucket))) / 1000.0, int(n))
        for tier, _phase, status, error, *numbers in taken.get("attempts", ()) if figures else ():
            labels = ("", int(tier), worker)
            self._count(labels, int(status), str(error), int(numbers[0]))
            self._tokens(labels, int(numbers[4]), int(numbers[5]))

    def note_health(self, row: dict) -> None:
        """One health.csv row (a generator process's second)."""
        self.health[str(row.get("worker") or "")] = row

    def gauges(self, now_s: float) -> dict[str, dict[str, float]]:
        """gauge of HEALTH_GAUGES -> worker -> its value in the worker's last health row, if that is fresh at unix
        time `now_s` (absent: not measured)."""
        out: dict[str, dict[str, float]] = {}
        fresh = {worker: row for worker, row in self.health.items()
                 if (number(row.get("ts_s")) or 0.0) >= now_s - HEALTH_FRESH_S}
        for gauge, column, scale in HEALTH_GAUGES:
            for worker, row in sorted(fresh.items()):
                value = number(row.get(column))
                if value is not None:
                    out.setdefault(gauge, {})[worker] = value * scale
        return out

