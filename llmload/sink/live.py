"""The tiers measured so far, as the rule book judges them: the live web UI's and --stop-at-knee's figures.

How it works: the process that writes the run's files keeps a `LiveBook`, a cumulative histogram book
(histograms.py, every figure and the attempt counts) of the whole run: every sample row it writes (local runs; a
master with --ship rows), stamped with the tier and phase of samples.csv, or the workers' shipped books (--ship
histograms|both). `tiers(records, ...)` turns it into one `llmload.rules.Tier` per tier of the timeline, with the
figures the report computes from histograms (llmload/analysis/tables/hist_figures.py): attempts, successes, empty
answers and failures by kind (the rule book's outcomes), req/s and output tokens/s per second of the measure window
so far (the tokens delivered in it by every successful attempt, each one's spread from its first token to its last:
llmload.rules.delivery, as the report counts them; by the send of their attempt when the run keeps no rows), TTFT
p95/p99, the means of TTFT, TPOT and e2e (each within HIST_RELATIVE_ERROR), the longest decode when rows are kept,
open-loop drops, the target's queue when its metrics are scraped, and the users really applied over a closed-loop
tier's measure window (the worker book's `users_mean`, tiers.csv's figure: below UNDER_APPLIED x its target the tier
is judged at them, llmload.rules.applied); `measured(tier, metric, q)` reads any other figure of the book the same
way (the web UI's ITL mean percentiles). The rows of requests still in flight arrive when they end, so a tier's
figures settle a request's length after the tier ends. It feeds the Prometheus exporter's book (exported.py) the same.
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from collections.abc import Callable, Iterable
from typing import Any

from llmload.contract import hist_upper, hist_value
from llmload.rules.applied import applied_users, under_applied
from llmload.rules.delivery import decode_span, share_in
from llmload.rules.outcomes import is_429, kind
from llmload.rules.tier import NAN, Tier
from llmload.rules.trust import lag_material
from llmload.sink.exported import ExportBook
from llmload.sink.histograms import HistogramBook, number, succeeded, upper_p95
from llmload.sink.refusals import RefusalBook

Waiting = Callable[[float, float], float]
"""(start_s, end_s) -> the target's mean queue over it (NaN: not known): its waiting gauge's mean, or by Little's law
on its queue-time histogram"""
Applied = Callable[[float, float], dict]
"""(start_s, end_s) -> tiers.csv's applied-load columns over it (run/distributed/applied.py: `users_mean`, ...)"""


def percentile(counts: dict[int, int], q: float) -> float:
    """q (0..1) over a histogram's bucket counts, as the analysis reads histograms.csv: linear between the two
    order statistics around rank (n - 1) q, each the value its bucket stands for (NaN when empty)."""
    items = sorted(counts.items())
    total = sum(n for _, n in items)
    if total == 0:
        return NAN
    pos = (total - 1) * q
    lo = math.floor(pos)
    ranks, seen = (lo, min(lo + 1, total - 1)), 0
    values: list[float] = []
    for bucket, n in items:
        seen += n
        while len(values) < 2 and ranks[len(values)] < seen:
            values.append(hist_value(hist_upper(bucket)))
    return values[0] + (values[1] - values[0]) * (pos - lo)


def quantile(values: list[float], q: float) -> float:
    """q (0..1) of raw values, linear between order statistics (as pandas; NaN when empty)."""
    if not values:
        return NAN
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def mean(counts: dict[int, int]) -> float:
    total = sum(counts.values())
    return sum(hist_value(hist_upper(b)) * n for b, n in counts.items()) / total if total else NAN


class LiveBook:
    def __init__(self) -> None:
        self.book = HistogramBook(full=True)
        """every attempt of the run so far (never taken)"""
        self.health: dict[int, tuple[list[float], list[float]]] = {}
        """per tier, health.csv's loop_lag_ms_max and cpu_percent of the seconds in its measure window"""
        self.lags: dict[int, tuple[array, array, array]] = {}
        """per tier, of its measured attempts: when each ended (unix s), its loop_lag_ms, its schedule_lag_ms"""
        self._generator: dict[int, tuple[tuple, tuple[float, float, float, float]]] = {}
        """per tier, `generator`'s figures and what they were computed on (the web UI asks every second)"""
        self.rows_kept = True
        """samples.csv keeps the rows (--ship rows|both): output tokens are counted where they were delivered, as
        the report counts them; else (--ship histograms) by the send of their attempt, as it does then"""
        self.decodes: tuple[array, array, array] = (array("d"), array("d"), array("d"))
        """every successful attempt's first and last token (unix s) and its output tokens (llmload.rules.delivery)"""
        self._delivered: dict[int, tuple[float | None, int, float]] = {}
        self.decode_max_ms: dict[int, float] = {}
        """per tier, the longest decode (e2e - TTFT) of its successful measured attempts (llmload.rules.delivery)"""
        """per tier, (the window end it was summed to, decodes summed, tokens delivered)"""
        self.exported = ExportBook()
        """the same attempts and health rows, kept per scenario, tier and worker for Prometheus (exported.py)"""
        self.refusals = RefusalBook()
        """every success's and refusal's send time (refusals.py: the model-free ceiling)"""

    def reset(self) -> None:
        """A new run starts."""
        self.book = HistogramBook(full=True)
        self.health, self.lags, self._generator, self._delivered, self.decode_max_ms = {}, {}, {}, {}, {}
        self.decodes = (array("d"), array("d"), array("d"))
        self.exported.reset()
        self.refusals = RefusalBook()

    def note_health(self, row: dict, tier: Any, phase: str) -> None:
        """One health.csv row (a generator's second), stamped like a sample sent at its time."""
        self.exported.note_health(row)
        if phase == "measure" and tier.tier > 0:
            lags, cpus = self.health.setdefault(tier.tier, ([], []))
            for values, key in ((lags, "loop_lag_ms_max"), (cpus, "cpu_percent")):
                value = row.get(key)
                if value not in (None, ""):
                    values.append(float(value))

    def note(self, row: dict, tier: int, phase: str, gaps_ms: list[float] | None = None) -> None:
        """One attempt's row, in its tier and phase (and its inter-token gaps, for the exporter)."""
        self.book.record(row, [], tier, phase)
        self.exported.note(row, tier, gaps_ms)
        self.refusals.note(row, tier)
        self._note_decode(row, tier, phase)
        if phase == "measure":
            ended, lags, scheduled = self.lags.setdefault(tier, (array("d"), array("d"), array("d")))
            took_ms = number(row.get("elapsed_ms"))  # to the attempt's end, as the report's windows.completions
            took_ms = number(row.get("e2e_ms")) if took_ms is None else took_ms
            took_ms = number(row.get("headers_ms")) if took_ms is None else took_ms
            ended.append(float(row["ts_start_s"]) + max(took_ms or 0.0, 0.0) / 1000.0)
            for values, key in ((lags, "loop_lag_ms"), (scheduled, "schedule_lag_ms")):
                value = number(row.get(key))
                values.append(NAN if value is None else value)

    def note_received(self, rows: list[dict], taken: dict | None, full: bool, worker: str = "") -> None:
        """Master: a worker's shipment. `full` (--ship histograms|both): its book counted every figure and
        attempt, else (--ship rows) its book holds gaps only and the rows (stamped) are counted here."""
        if taken:  # the exporter: the gaps, and without rows (--ship histograms) every figure and count
            self.exported.note_shipped(worker, taken, figures=not self.rows_kept)
        if full:
            if taken:
                self.book.merge(taken)
            for row in rows:  # --ship both: the rows' decodes (--ship histograms ships none)
                self._note_decode(row, int(row["tier"]), str(row["phase"]))
                self.refusals.note(row, int(row["tier"]))
                self.exported.note(row, int(row["tier"]))
            return
        for row in rows:
            self.note(row, int(row["tier"]), str(row["phase"]))

    def _note_decode(self, row: dict, tier: int, phase: str) -> None:
        """A success's decode: its tier's longest (measured), and when its tokens arrived."""
        tokens, ttft_ms, e2e_ms = (number(row.get(key)) for key in ("output_tokens", "ttft_ms", "e2e_ms"))
        if not succeeded(row) or ttft_ms is None or e2e_ms is None:
            return
        if phase == "measure":
            self.decode_max_ms[tier] = max(self.decode_max_ms.get(tier, -math.inf), e2e_ms - ttft_ms)
        if not tokens or tokens <= 0:
            return
        first_s, last_s = decode_span(float(row["ts_start_s"]), ttft_ms, e2e_ms)
        for values, value in zip(self.decodes, (first_s, last_s, tokens)):
            values.append(value)

    def delivered(self, tier_no: int, start_s: float, end_s: float | None) -> float:
        """Output tokens delivered in [start_s, end_s) by every successful attempt so far (a tier still running:
        up to now, `end_s` None), summed once per decode and again when the tier's end becomes known."""
        cached = self._delivered.get(tier_no)
        done, total = (cached[1], cached[2]) if cached is not None and cached[0] == end_s else (0, 0.0)
        firsts, lasts, tokens = self.decodes
        stop_s = math.inf if end_s is None else end_s
        for i in range(done, len(firsts)):
            total += tokens[i] * share_in(firsts[i], lasts[i], start_s, stop_s)
        self._delivered[tier_no] = (end_s, len(firsts), total)
        return total

    def tiers(self, records: Iterable[Any], now_s: float, dropped: dict[int, int] | None = None,
              waiting: Waiting | None = None, applied: Applied | None = None,
              empty_is_error: bool = False, queue_len: Waiting | None = None) -> list[Tier]:
        """One Tier per timeline record (sink/timeline.py TierRecord), its measure window up to its end or
        `now_s`; `dropped`: open-loop arrivals dropped per tier (the whole tier); `applied`: the users really
        running (a closed-loop tier below its target is judged at them, as the report does); `empty_is_error`:
        --empty-answer-is-error (empty answers count as failures); `waiting` and `queue_len`: the target's queue by
        its waiting gauge and by its queue-time histogram (Tier.srv_waiting_mean, Tier.srv_queue_len)."""
        return [_applied(self.tier(r, now_s, (dropped or {}).get(r.tier.tier, 0), waiting, empty_is_error,
                                   queue_len), r, now_s, applied) for r in records]

    def tier(self, record: Any, now_s: float, dropped: int, waiting: Waiting | None,
             empty_is_error: bool = False, queue_len: Waiting | None = None) -> Tier:
        t = record.tier
        start_s = t.start_s + t.warmup_s
        end_s = record.end_s if record.end_s is not None else now_s
        window_s = end_s - start_s if end_s > start_s else NAN
        hist = {metric: self.book.hists.get((t.tier, "measure", metric), {})
                for metric in ("ttft_ms", "tpot_ms", "e2e_ms")}
        c = _counts(self.book.attempts, t.tier)
        arrivals = c.pop("whole") + dropped
        load = t.target_rps if t.target_rps is not None else t.target_users
        return Tier(
            tier=t.tier, load=float(load) if load is not None else NAN, sent=c["sent"], ok=c["ok"], n_429=c["n_429"],
            n_503=c["n_503"], n_stream_error=c["n_stream_error"], n_shed=c["n_shed"], n_shed_hinted=c["n_shed_hinted"],
            n_timeout=c["n_timeout"], n_other_fail=c["n_other_fail"], n_empty=c["n_empty"],
            empty_is_error=empty_is_error, rate_window_s=window_s,
            rps=c["sent"] / window_s, ok_rps=c["ok"] / window_s,
            out_tok_s=(self.delivered(t.tier, start_s, record.end_s) if self.rows_kept
                       else _out_tokens(self.book.attempts, t.tier)) / window_s,
            dropped=dropped, drop_rate=dropped / arrivals if arrivals else 0.0,
            ttft_p50_ms=percentile(hist["ttft_ms"], 0.5), ttft_p95_ms=percentile(hist["ttft_ms"], 0.95),
            ttft_p99_ms=percentile(hist["ttft_ms"], 0.99), ttft_p95_upper_ms=upper_p95(hist["ttft_ms"]),
            e2e_p95_upper_ms=upper_p95(hist["e2e_ms"]),
            ttft_mean_ms=mean(hist["ttft_ms"]), tpot_mean_ms=mean(hist["tpot_ms"]), e2e_mean_ms=mean(hist["e2e_ms"]),
            e2e_p50_ms=percentile(hist["e2e_ms"], 0.5), e2e_p95_ms=percentile(hist["e2e_ms"], 0.95),
            e2e_p99_ms=percentile(hist["e2e_ms"], 0.99),
            decode_max_ms=self.decode_max_ms.get(t.tier, NAN) if self.rows_kept else NAN,
            srv_waiting_mean=waiting(start_s, end_s) if waiting is not None else NAN,
            srv_queue_len=queue_len(start_s, end_s) if queue_len is not None else NAN)

    def landed(self) -> int:
        """Attempts counted so far, every tier and phase (a row lands when its request ends)."""
        return sum(numbers[0] for numbers in self.book.attempts.values())

    def measured(self, tier_no: int, metric: str, q: float) -> float:
        """Percentile q (0..1) of a per-attempt figure (histograms.py FULL_METRICS, e.g. itl_mean_ms) over the
        tier's successful measured attempts, as the report reads histograms.csv (NaN: none yet)."""
        return percentile(self.book.hists.get((tier_no, "measure", metric), {}), q)

    def generator(self, tier_no: int, end_s: float | None = None) -> tuple[float, float, float, float]:
        """The generator's lag in a tier as the report reads it: p99 of the loop lag of its attempts that ended
        in it (by `end_s`), p99 of their schedule lag, p95 of health.csv's per-second loop lag maximum, and
        its CPU p95."""
        ended, lags, scheduled = self.lags.get(tier_no, ((), (), ()))
        health_lags, cpus = self.health.get(tier_no, ([], []))
        key = (len(ended), end_s, len(health_lags))
        cached = self._generator.get(tier_no)
        if cached is not None and cached[0] == key:
            return cached[1]
        inside = [i for i, t in enumerate(ended) if end_s is None or t <= end_s]
        figures = (quantile([lags[i] for i in inside if lags[i] == lags[i]], 0.99),
                   quantile([scheduled[i] for i in inside if scheduled[i] == scheduled[i]], 0.99),
                   quantile(health_lags, 0.95), quantile(cpus, 0.95))
        self._generator[tier_no] = (key, figures)
        return figures

    def trusted(self, tier: Tier, end_s: float | None = None) -> bool:
        """The generator kept up in the tier (llmload.rules.trust)."""
        return not lag_material(*self.generator(tier.tier, end_s), tier.ttft_p50_ms)


def _applied(tier: Tier, record: Any, now_s: float, applied: Applied | None) -> Tier:
    """The tier with the users applied over its measure window so far (`users_mean`); under-applied
    (llmload.rules.applied), its load is theirs and `load_target` the users asked."""
    t = record.tier
    if applied is None or t.target_rps is not None or t.target_users is None:
        return tier
    start_s = t.start_s + t.warmup_s
    users = applied(start_s, max(start_s, record.end_s if record.end_s is not None else now_s)).get("users_mean")
    if users is None:
        return tier
    if not under_applied(float(users), tier.load, tier.sent):
        return dataclasses.replace(tier, applied_users=float(users))
    return dataclasses.replace(tier, applied_users=float(users), load=applied_users(float(users)),
                               load_target=tier.load, under_applied=True)


def _counts(attempts: dict, tier_no: int) -> dict[str, int]:
    """The tier's measured attempts by outcome (llmload.rules.outcomes), and `whole`: its attempts, warm-up
    included (the denominator of the drop rate, as in the report)."""
    out = dict.fromkeys(("sent", "ok", "n_429", "n_503", "n_stream_error", "n_shed", "n_shed_hinted", "n_timeout",
                         "n_other_fail", "n_empty", "whole"), 0)
    for (tier, phase, status, error), numbers in attempts.items():
        if tier != tier_no or phase == "after":
            continue
        out["whole"] += numbers[0]
        if phase != "measure":
            continue
        n, outcome = numbers[0], kind(status, error)
        out["sent"] += n
        out["ok"] += numbers[1]
        out["n_429"] += n if is_429(status, error) else 0
        out["n_503"] += n if status == 503 else 0
        out["n_stream_error"] += n if error == "stream_error" else 0
        if outcome == "shed":
            out["n_shed"] += n
            out["n_shed_hinted"] += numbers[3]
        elif outcome == "timeout":
            out["n_timeout"] += n
        elif outcome == "other":
            out["n_other_fail"] += n
        elif outcome == "empty":
            out["n_empty"] += n
    return out


def _out_tokens(attempts: dict, tier_no: int) -> int:
    return sum(numbers[4] for (tier, phase, _s, _e), numbers in attempts.items()
               if tier == tier_no and phase == "measure")
