"""Mergeable log-bucketed histograms per (tier, phase): every inter-token gap, and with `--ship histograms`
every latency figure and the attempt counts.

How it works: a `HistogramBook` holds what was recorded since it was last taken: bucket counts per
(tier, phase, metric) and attempt counts per (tier, phase, status, error). Buckets are
`llmload.contract.hist_bucket`'s: logarithmic, each value within HIST_RELATIVE_ERROR (1 %) of the
value its bucket stands for (below 1 us: 0). `record(row, gaps, tier, phase)` adds one attempt
(its samples.csv row and its inter-token gaps): the gaps of a success always (samples.csv keeps
only per-request gap figures, so this is the one place every gap is kept); with `full` also its
TTFT, e2e, TPOT, mean ITL and out tok/s (open loop: TTFT and e2e from the intended send, the
figures the report judges) and its counts. Books merge by adding counts, so a worker ships
`take()` (the counts since its last shipment) and the master `merge`s them; the process that
writes the run folder writes `take()` as delta rows of histograms.csv and attempts.csv every
second (`delta_rows`), so a killed run keeps what it measured up to its last second.
Cost per gap: the gaps come sorted (timing.figures sorts them), so a gap in the bucket of the one
before costs one comparison, one a few buckets further a short walk up HIST_UPPERS, and only a jump a
logarithm: measured here (2 shared cores, loaded) 0.05 us per gap for a steady decode, 0.1-0.3 us
when the gaps spread over many buckets.
"""

from __future__ import annotations

import math
from typing import Any

from llmload.contract import HIST_TOP_BUCKET, HIST_UPPERS, NOT_GENERATING_APIS, hist_bucket, hist_upper, hist_value
from llmload.rules import bounds

FULL_METRICS = ("ttft_ms", "e2e_ms", "tpot_ms", "itl_mean_ms", "out_tps")
"""per-attempt figures recorded with --ship histograms|both (samples.csv columns)"""
GAP_METRIC = "itl_gap_ms"
WALK = 8
"""add_sorted walks up to this many buckets from the last one before it takes a logarithm"""
HistKey = tuple[int, str, str]
AttemptKey = tuple[int, str, int, str]


def number(value: Any) -> float | None:
    """A row's figure as a float; None for '' / None / NaN."""
    if value.__class__ is float:
        return value if value == value else None
    if value is None or value == "":
        return None
    number = float(value)
    return None if math.isnan(number) else number


def add_sorted(counts: dict[int, int], values: list[float]) -> None:
    """Count ascending values into `counts` (bucket -> count), in `hist_bucket`'s buckets: a value in the
    bucket of the one before costs a comparison; a few buckets further, a short walk up HIST_UPPERS."""
    uppers, top = HIST_UPPERS, HIST_TOP_BUCKET
    bucket, upper, run = -1, -1.0, 0
    for value in values:
        if value < upper:
            run += 1
            continue
        if run:
            counts[bucket] = counts.get(bucket, 0) + run
        run = 1
        if 0 < bucket < top - WALK and value < uppers[bucket + WALK]:
            bucket += 1
            upper = uppers[bucket]
            while value >= upper:
                bucket += 1
                upper = uppers[bucket]
        else:
            bucket = hist_bucket(value)
            upper = uppers[bucket] if bucket < top else math.inf
    if run:
        counts[bucket] = counts.get(bucket, 0) + run


def upper_p95(counts: dict[int, int]) -> float:
    """The 95 % upper bound of the p95 over a histogram (llmload.rules.bounds): +inf with too few values."""
    items = sorted(counts.items())
    total = sum(n for _, n in items)

    def at_rank(rank: int) -> float:
        seen = 0
        for bucket, n in items:
            seen += n
            if seen >= rank:
                return hist_value(hist_upper(bucket))
        return math.nan

    return bounds.upper_bound(total, 0.95, at_rank)


def succeeded(row: dict) -> bool:
    """The analysis' success: no error and a first token, or an answer of an API that generates none
    (embeddings, rerank: answered whole)."""
    if row.get("error"):
        return False
    return number(row.get("ttft_ms")) is not None or row.get("endpoint") in NOT_GENERATING_APIS


class HistogramBook:
    def __init__(self, full: bool = False) -> None:
        self.full = full
        """also record every per-attempt figure and the attempt counts (--ship histograms|both)"""
        self.hists: dict[HistKey, dict[int, int]] = {}
        self.attempts: dict[AttemptKey, list[int]] = {}
        """(tier, phase, status, error) -> [attempts, ok, retries, hinted, output_tokens, input_tokens]"""

    def __bool__(self) -> bool:
        return bool(self.hists or self.attempts)

    def _hist(self, tier: int, phase: str, metric: str) -> dict[int, int]:
        key = (tier, phase, metric)
        counts = self.hists.get(key)
        if counts is None:
            counts = self.hists[key] = {}
        return counts

    def record(self, row: dict, gaps: list[float], tier: int, phase: str) -> None:
        """One attempt: its samples.csv row (figures, status, error) and its ascending inter-token gaps."""
        ok = succeeded(row)
        if ok and gaps:
            add_sorted(self._hist(tier, phase, GAP_METRIC), gaps)
        if not self.full:
            return
        key = (tier, phase, int(number(row.get("status")) or 0), str(row.get("error") or ""))
        counts = self.attempts.get(key)
        if counts is None:
            counts = self.attempts[key] = [0, 0, 0, 0, 0, 0]
        counts[0] += 1
        counts[2] += 1 if row.get("retry_of") else 0
        counts[3] += 1 if number(row.get("retry_after_s")) is not None else 0
        if not ok:
            return
        counts[1] += 1
        counts[4] += int(number(row.get("output_tokens")) or 0)
        counts[5] += int(number(row.get("input_tokens")) or 0)
        lag_ms = max(number(row.get("schedule_lag_ms")) or 0.0, 0.0)
        for metric in FULL_METRICS:
            value = number(row.get(metric))
            if value is None:
                continue
            if metric in ("ttft_ms", "e2e_ms"):
                value += lag_ms
            hist = self._hist(tier, phase, metric)
            bucket = hist_bucket(value)
            hist[bucket] = hist.get(bucket, 0) + 1

    def take(self) -> dict:
        """Everything recorded since the last take, as plain lists (a message or `merge`'s input)."""
        out = {"hists": [[tier, phase, metric, [[b, n] for b, n in sorted(counts.items())]]
                         for (tier, phase, metric), counts in self.hists.items()],
               "attempts": [[*key, *counts] for key, counts in self.attempts.items()]}
        self.hists, self.attempts = {}, {}
        return out

    def merge(self, taken: dict) -> None:
        """Add another book's `take()` (a worker's shipment) to this one."""
        for tier, phase, metric, pairs in taken.get("hists", ()):
            counts = self._hist(int(tier), str(phase), str(metric))
            for bucket, n in pairs:
                counts[int(bucket)] = counts.get(int(bucket), 0) + int(n)
        for tier, phase, status, error, *numbers in taken.get("attempts", ()):
            key = (int(tier), str(phase), int(status), str(error))
            kept = self.attempts.get(key)
            if kept is None:
                kept = self.attempts[key] = [0, 0, 0, 0, 0, 0]
            for i, n in enumerate(numbers[:6]):
                kept[i] += int(n)


def delta_rows(taken: dict) -> tuple[list[dict], list[dict]]:
    """A `take()` as histograms.csv and attempts.csv rows (llmload.contract's columns)."""
    hists = [{"tier": tier, "phase": phase, "metric": metric, "bucket_upper": f"{hist_upper(b):.7g}", "count": n}
             for tier, phase, metric, pairs in taken.get("hists", ()) for b, n in pairs]
    attempts = [dict(zip(("tier", "phase", "status", "error", "attempts", "ok", "retries", "hinted",
                          "output_tokens", "input_tokens"), values)) for values in taken.get("attempts", ())]
    return hists, attempts
